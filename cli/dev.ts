/**
 * `rudder dev`: the inner loop. Starts a local control plane (or uses `--kubeconfig`),
 * installs the project's CRDs, runs the operator as a child process, and on every change of
 * a source file stops it (SIGTERM), installs the CRDs again and starts it anew. SIGINT or
 * SIGTERM stops the operator and the control plane.
 *
 * @module
 */

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, watch } from "node:fs";
import { join, resolve, sep } from "node:path";
import process from "node:process";
import type { KubeConfig } from "../lib/kube/config/types.ts";
import { loadConfig } from "../lib/kube/config/load.ts";
import { Progress } from "../lib/util/progress.ts";
import { Environment, installCRDs } from "../lib/testing/envtest.ts";
import {
  choiceFlag,
  type CommandIO,
  type CommandSpec,
  parseCommandArgs,
  stringFlag,
} from "./args.ts";
import { nextStopSignal } from "./envtest.ts";
import { discoverProject } from "./manifests.ts";
import {
  findProjectDir,
  loadProject,
  PROJECT_DIR_FLAG,
  projectRuntime,
  type ProjectSettings,
  runModuleCommand,
  type Runtime,
  RUNTIMES,
} from "./project.ts";

/** Milliseconds the operator gets to stop after SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 35_000;
/** Milliseconds of quiet after a change before the restart: editors write in bursts. */
const DEBOUNCE_MS = 300;

/** Whether a changed file (relative to the project) should restart the operator. */
export function isSourceChange(path: string): boolean {
  const normalized = path.split(sep).join("/");
  if (/^(node_modules|dist|config|\.git)(\/|$)/.test(normalized)) return false;
  if (/(^|\/)\./.test(normalized)) return false; // hidden files, editor swap files
  if (/[._]test\.[mc]?[tj]s$/.test(normalized)) return false;
  return /\.([mc]?[tj]sx?|json)$/.test(normalized) && !normalized.endsWith("deno.lock");
}

/** The operator as a child process. */
class OperatorProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  #exited = false;

  constructor(command: string, args: string[], cwd: string, env: Record<string, string>) {
    // Its own process group: a terminal's Ctrl-C reaches only `rudder dev`, which then sends
    // the operator exactly one SIGTERM (a second signal would make the manager exit at once).
    this.child = spawn(command, args, {
      cwd,
      env,
      stdio: ["ignore", "inherit", "inherit"],
      detached: true,
    });
    this.exited = new Promise((resolveExit) => {
      this.child.on("error", () => resolveExit(null));
      this.child.on("exit", (code) => {
        this.#exited = true;
        resolveExit(code);
      });
    });
  }

  get running(): boolean {
    return !this.#exited;
  }

  /** SIGTERM, then SIGKILL after STOP_TIMEOUT_MS; resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.#exited || this.child.pid === undefined) return await this.exited;
    process.kill(this.child.pid, "SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const killed = new Promise<void>((r) => {
      timer = setTimeout(() => {
        if (!this.#exited) this.child.kill("SIGKILL");
        r();
      }, STOP_TIMEOUT_MS);
    });
    const code = await Promise.race([this.exited, killed.then(() => this.exited)]);
    clearTimeout(timer);
    return code;
  }

  /** Kills at once; for exit hooks. */
  killNow(): void {
    if (!this.#exited) this.child.kill("SIGKILL");
  }
}

/** `rudder dev`. */
export const devSpec: CommandSpec = {
  name: "dev",
  summary: "run the operator against a local control plane, restarting it on changes",
  positionals: [],
  flags: {
    dir: PROJECT_DIR_FLAG,
    kubeconfig: {
      type: "string",
      value: "<path>",
      description: "Use this cluster instead of starting a local control plane.",
    },
    runtime: {
      type: "string",
      value: "deno|bun|node",
      description: "The runtime that runs the operator (default: the one running rudder; " +
        "Deno when that is Node and the project has a deno.json).",
    },
  },
  details: [
    "The operator gets KUBECONFIG, LEADER_ELECTION_NAMESPACE=default, LOG_FORMAT=dev,",
    "METRICS_BIND_ADDRESS=127.0.0.1:8080 and METRICS_SERVING=insecure-http (plain HTTP for",
    "local scraping; a generated main.ts reads both) unless they are set.",
    "Changes to tests, config/, dist/ and node_modules/ are ignored.",
  ],
  examples: [
    "rudder dev",
    "rudder dev --kubeconfig ~/.kube/kind-config --runtime bun",
    "rudder dev --runtime node",
  ],
};

/** Runs `rudder dev`. */
export async function runDev(args: string[], io: CommandIO): Promise<number> {
  const parsed = parseCommandArgs(devSpec, args);
  if (!parsed) return 0;
  const dirFlag = stringFlag(parsed, "dir");
  const settings = loadProject(dirFlag ? resolve(io.cwd, dirFlag) : findProjectDir(io.cwd));
  const runtime = choiceFlag(parsed, "runtime", RUNTIMES, projectRuntime(settings.dir), "dev");
  const kubeconfigFlag = stringFlag(parsed, "kubeconfig");
  const stop = nextStopSignal();
  let env: Environment | undefined;
  try {
    let kubeconfig: string;
    if (kubeconfigFlag) {
      kubeconfig = resolve(io.cwd, kubeconfigFlag);
    } else {
      env = new Environment();
      const progress = new Progress({ write: io.err, prefix: "rudder dev: " });
      const step = progress.start("starting a local control plane (etcd + kube-apiserver)");
      const started = await Promise.race([env.start(), stop.signal.then(() => undefined)])
        .catch((err: Error) => {
          step.fail(err.message);
          throw err;
        });
      if (!started) return 0;
      step.done();
      kubeconfig = env.kubeconfigPath;
      io.err(`rudder dev: API server ${started.server}; export KUBECONFIG=${kubeconfig}`);
    }
    const config = await loadConfig({ kubeconfig });
    return await loop(settings, runtime, kubeconfig, config, stop.signal, io);
  } finally {
    stop.dispose();
    await env?.stop();
  }
}

async function loop(
  settings: ProjectSettings,
  runtime: Runtime,
  kubeconfig: string,
  config: KubeConfig,
  stopSignal: Promise<string>,
  io: CommandIO,
): Promise<number> {
  let operator: OperatorProcess | undefined;
  let stopping = false; // the operator's exit is expected, not worth a message
  const killOnExit = () => operator?.killNow();
  process.on("exit", killOnExit);

  // A change sets `pending` (so one made during a restart is not lost) and wakes the loop.
  let pending = false;
  let wake: () => void = () => {};
  let timer: ReturnType<typeof setTimeout> | undefined;
  const watcher = watch(settings.dir, { recursive: true }, (_event, filename) => {
    const file = filename ? String(filename) : "";
    if (!file || !isSourceChange(file)) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      pending = true;
      wake();
    }, DEBOUNCE_MS);
  });

  const start = async () => {
    try {
      io.err("rudder dev: loading the project's resources and controllers");
      const discovery = await discoverProject(settings, { runtime, env: io.env });
      await installCRDs(config, discovery.crds);
      const names = discovery.crds.map((crd) => crd.metadata?.name).join(", ") || "none";
      io.err(`rudder dev: CRDs installed: ${names}`);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      io.err(`rudder dev: ${message}\nrudder dev: waiting for a change to try again`);
      return;
    }
    const denoConfig = join(settings.dir, "deno.json");
    const { command, args, env } = runModuleCommand(runtime, settings.main, io.env, {
      config: runtime === "deno" && existsSync(denoConfig) ? denoConfig : undefined,
      operator: true,
    });
    io.err(`rudder dev: starting the operator: ${command} ${args.join(" ")}`);
    operator = new OperatorProcess(command, args, settings.dir, {
      ...env,
      ...io.env,
      KUBECONFIG: kubeconfig,
      LEADER_ELECTION_NAMESPACE: io.env.LEADER_ELECTION_NAMESPACE ?? "default",
      LOG_FORMAT: io.env.LOG_FORMAT ?? "dev",
      // Plain HTTP on loopback, asked for by name: a laptop has no scraper with a token.
      METRICS_BIND_ADDRESS: io.env.METRICS_BIND_ADDRESS ?? "127.0.0.1:8080",
      METRICS_SERVING: io.env.METRICS_SERVING ?? "insecure-http",
    } as Record<string, string>);
    io.err(
      `rudder dev: started the operator (pid ${operator.child.pid}): ${command} ${args.join(" ")}`,
    );
    const current = operator;
    current.exited.then((code) => {
      if (operator === current && !stopping) {
        io.err(`rudder dev: the operator exited with ${code}; waiting for a change to restart it`);
      }
    });
  };

  try {
    await start();
    for (;;) {
      const change = new Promise<"change">((r) => {
        wake = () => r("change");
        if (pending) r("change");
      });
      const event = await Promise.race([change, stopSignal]);
      if (event !== "change") {
        stopping = true;
        io.err(`rudder dev: ${event}: stopping`);
        break;
      }
      pending = false;
      io.err("rudder dev: source changed: restarting the operator");
      stopping = true;
      const code = await operator?.stop();
      stopping = false;
      if (code !== undefined) io.err(`rudder dev: the operator stopped (exit ${code})`);
      await start();
    }
  } finally {
    stopping = true;
    clearTimeout(timer);
    watcher.close();
    const code = await operator?.stop();
    if (code !== undefined) io.err(`rudder dev: the operator stopped (exit ${code})`);
    process.off("exit", killOnExit);
  }
  return 0;
}
