/**
 * The `rudder` command line: scaffold an operator, generate its manifests, compile it into one
 * self-contained executable, and run it against a local control plane.
 *
 * ```sh
 * deno run -A jsr:@rudder/operator/cli init memcached-operator --kind Memcached
 * deno task rudder manifests        # in this repository
 * ```
 *
 * | command     | what it does                                                   |
 * | ----------- | -------------------------------------------------------------- |
 * | `init`      | a new operator project (`--local <checkout>`: no registry)     |
 * | `create`    | `create api --kind <Kind>`: a resource and its controller;     |
 * |             | `create webhook --kind <Kind>`: its admission webhooks         |
 * | `manifests` | CRDs, least-privilege RBAC, Deployment, kustomization.yaml     |
 * | `build`     | `deno compile` (narrow permissions) or `bun build --compile`;  |
 * |             | `--image`: an OCI image, pushed or saved, no Docker daemon     |
 * | `dev`       | local control plane + CRDs + the operator, restarted on change |
 * | `envtest`   | build, locate (`env`) or run (`start`) the local control plane |
 *
 * Every command has `--help`. Exit codes: 0 done, 1 failed, 2 wrong usage (an unknown command
 * or flag, a missing argument), with a message naming it.
 *
 * @example Run a command in-process
 * ```ts
 * import { main } from "@rudder/operator/cli";
 *
 * const code = await main(["--version"]);
 * console.log(code); // 0, after printing the version
 * ```
 *
 * @module
 */

import process from "node:process";
import { VERSION } from "../lib/version.ts";
import {
  type CommandIO,
  type CommandSpec,
  helpText,
  processIO,
  USAGE_EXIT_CODE,
  UsageError,
} from "./args.ts";
import { buildSpec, runBuild } from "./build.ts";
import { createSpec, runCreate } from "./create.ts";
import { devSpec, runDev } from "./dev.ts";
import { envtestSpec, runEnvtest } from "./envtest.ts";
import { initSpec, runInit } from "./init.ts";
import { manifestsSpec, runManifests } from "./manifests.ts";

export type { CommandIO, CommandSpec, FlagSpec } from "./args.ts";
export { writeDiscovery } from "./discover.ts";

/** A command: its declaration (help, flags) and what runs it. */
export interface Command {
  /** Its name, flags, help and examples. */
  spec: CommandSpec;
  /** Runs it with the arguments after its name; resolves to the exit code. */
  run(args: string[], io: CommandIO): number | Promise<number>;
}

/** Every command, by name. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  init: { spec: initSpec, run: runInit },
  create: { spec: createSpec, run: runCreate },
  manifests: { spec: manifestsSpec, run: runManifests },
  build: { spec: buildSpec, run: runBuild },
  dev: { spec: devSpec, run: runDev },
  envtest: { spec: envtestSpec, run: runEnvtest },
};

/** The help of `rudder` itself. */
export function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length)) + 2;
  return [
    `rudder ${VERSION}: build Kubernetes operators with Deno or Bun`,
    "",
    "Usage: rudder <command> [flags]",
    "",
    "Commands:",
    ...Object.entries(COMMANDS).map(([name, { spec }]) => `  ${name.padEnd(width)}${spec.summary}`),
    "",
    'Run "rudder <command> --help" for its flags and examples.',
    "",
    "Examples:",
    "  rudder init memcached-operator --group cache.example.com --kind Memcached",
    "  rudder manifests && rudder build --runtime bun",
  ].join("\n");
}

/**
 * Runs the command line `args` (without the program name) and resolves to the exit code:
 * 0 done, 1 failed, 2 wrong usage.
 */
export async function main(args: string[], io: CommandIO = processIO()): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined) {
    io.err(mainHelp());
    return USAGE_EXIT_CODE;
  }
  if (name === "--help" || name === "-h") {
    io.out(mainHelp());
    return 0;
  }
  if (name === "help") {
    const topic = rest[0];
    if (topic === undefined) {
      io.out(mainHelp());
      return 0;
    }
    if (!(topic in COMMANDS)) return usageError(new UsageError(`unknown command "${topic}"`), io);
    io.out(helpText(COMMANDS[topic].spec));
    return 0;
  }
  if (name === "--version" || name === "-V") {
    io.out(VERSION);
    return 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    const what = name.startsWith("-") ? `unknown flag ${name}` : `unknown command "${name}"`;
    return usageError(new UsageError(what), io);
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.out(helpText(command.spec));
    return 0;
  }
  return await runInternal(() => command.run(rest, io), name, io);
}

/** Runs a command, turning what it throws into a message and an exit code. */
async function runInternal(
  run: () => number | Promise<number>,
  name: string,
  io: CommandIO,
): Promise<number> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof UsageError) return usageError(err, io);
    io.err(`rudder ${name}: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

function usageError(err: UsageError, io: CommandIO): number {
  const prefix = err.command ? `rudder ${err.command}` : "rudder";
  io.err(`${prefix}: ${err.message}`);
  io.err(
    err.command
      ? `Run "rudder ${err.command} --help" for its usage.`
      : `Commands: ${Object.keys(COMMANDS).join(", ")}. Run "rudder --help" for more.`,
  );
  return USAGE_EXIT_CODE;
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
  // Exit even if a library left a handle open; an unref'd timer fires only in that case.
  const timer = setTimeout(() => process.exit(code), 1_000);
  (timer as unknown as { unref?: () => void }).unref?.();
}
