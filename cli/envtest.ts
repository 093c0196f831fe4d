/**
 * `rudder envtest setup|env|start`: the local control plane (etcd + kube-apiserver) that
 * `Environment`, `rudder dev` and operator tests use. `setup` builds or finds the binaries,
 * `env` prints the `KUBEBUILDER_ASSETS` to export, `start` runs a control plane in the
 * foreground until SIGINT or SIGTERM.
 *
 * @module
 */

import { ensureEnvtestBinaries } from "../lib/testing/envtest_build.ts";
import process from "node:process";
import { resolve } from "node:path";
import { Environment } from "../lib/testing/envtest.ts";
import {
  booleanFlag,
  type CommandIO,
  type CommandSpec,
  listFlag,
  parseCommandArgs,
  UsageError,
} from "./args.ts";

/** Resolves with the name of the first SIGINT or SIGTERM; stops listening after it. */
export function nextStopSignal(): { signal: Promise<string>; dispose(): void } {
  let done!: (name: string) => void;
  const signal = new Promise<string>((resolveSignal) => (done = resolveSignal));
  const onInt = () => done("SIGINT");
  const onTerm = () => done("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  // Node, unlike Deno and Bun, lets a process with only signal listeners left exit (an
  // unsettled top-level await): this timer keeps it waiting for the signal.
  const keepAlive = setInterval(() => {}, 2 ** 30);
  const dispose = () => {
    clearInterval(keepAlive);
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
  };
  signal.then(dispose);
  return { signal, dispose };
}

/** Builds or finds the binaries (honouring KUBEBUILDER_ASSETS); returns their directory. */
async function ensureBinaries(force: boolean): Promise<string> {
  return await ensureEnvtestBinaries({ force });
}

/** `rudder envtest`. */
export const envtestSpec: CommandSpec = {
  name: "envtest",
  summary: "build, locate or run the local control plane (etcd + kube-apiserver)",
  positionals: ["<setup|env|start>"],
  flags: {
    force: { type: "boolean", description: "setup: build again even when up to date." },
    crds: {
      type: "string",
      multiple: true,
      value: "<path>",
      description: "start: a CRD file or directory to install.",
    },
  },
  details: [
    "setup  builds kube-apiserver and etcd (Go needed) or finds them; prints their directory",
    "env    prints `export KUBEBUILDER_ASSETS=<dir>` for your shell",
    "start  runs a control plane until Ctrl-C; prints its kubeconfig path first",
  ],
  examples: [
    "rudder envtest setup",
    'eval "$(rudder envtest env)"',
    "rudder envtest start --crds config/crd",
  ],
};

/** Runs `rudder envtest`. */
export async function runEnvtest(args: string[], io: CommandIO): Promise<number> {
  const parsed = parseCommandArgs(envtestSpec, args);
  if (!parsed) return 0;
  const action = parsed.positionals[0];
  switch (action) {
    case "setup":
      io.out(await ensureBinaries(booleanFlag(parsed, "force")));
      return 0;
    case "env":
      io.out(`export KUBEBUILDER_ASSETS=${await ensureBinaries(false)}`);
      return 0;
    case "start":
      return await start(listFlag(parsed, "crds").map((path) => resolve(io.cwd, path)), io);
    default:
      throw new UsageError(`unknown action "${action}": use setup, env or start`, "envtest");
  }
}

async function start(crds: string[], io: CommandIO): Promise<number> {
  const stop = nextStopSignal();
  const env = new Environment({ crdDirectoryPaths: crds });
  try {
    const config = await env.start();
    io.out(env.kubeconfigPath);
    io.err(`API server ${config.server}; export KUBECONFIG=${env.kubeconfigPath}`);
    io.err("Running until Ctrl-C (SIGINT) or SIGTERM.");
    const name = await stop.signal;
    io.err(`${name}: stopping the control plane`);
  } finally {
    stop.dispose();
    await env.stop();
  }
  return 0;
}
