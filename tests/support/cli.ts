// The CLI of this checkout as the integration tests run it: on the test's own runtime, the way a
// user runs it, with scaffolds that import the checkout (`--local`).
import { type ChildProcess, spawn } from "node:child_process";
import assert from "node:assert/strict";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** This checkout's directory (no trailing slash): what `--local` scaffolds import. */
export const CHECKOUT = fileURLToPath(new URL("../../", import.meta.url)).replace(/\/$/, "");

/** The CLI's entry point in this checkout. */
export const CLI = join(CHECKOUT, "cli", "main.ts");

/** How a command ended and what it printed. */
export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@linkcode run}. */
export interface RunOptions {
  cwd: string;
  /** The whole environment (default: this process's). */
  env?: Record<string, string | undefined>;
  /** Holds the child while it runs, so a test's `after` can kill what is left. */
  children?: Set<ChildProcess>;
}

/** Runs `command` to its end, collecting what it prints. */
export function run(command: string, args: string[], options: RunOptions): Promise<Run> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: (options.env ?? process.env) as Record<string, string>,
    stdio: ["ignore", "pipe", "pipe"],
  });
  options.children?.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk) => (stdout += chunk));
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on("error", (err) => {
      options.children?.delete(child);
      reject(err);
    });
    child.on("close", (code) => {
      options.children?.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The arguments that make this test's runtime (`process.execPath`) run the CLI with `args`. */
export function cliArgs(args: string[]): string[] {
  return "Deno" in globalThis ? ["run", "-A", CLI, ...args] : [CLI, ...args];
}

/** Runs the CLI of this checkout in `options.cwd`, on this test's runtime. */
export function rudder(args: string[], options: RunOptions): Promise<Run> {
  return run(process.execPath, cliArgs(args), options);
}

/**
 * `rudder init <name> --group <group> --kind <kind> --local <checkout> [extra…]` in `dir`: a new
 * project that imports this checkout (default: a Memcached of cache.example.com). Fails the test
 * when init fails; returns the project's directory.
 */
export async function initProject(
  dir: string,
  name: string,
  options: {
    kind?: string;
    group?: string;
    extra?: string[];
    children?: Set<ChildProcess>;
  } = {},
): Promise<string> {
  const { kind = "Memcached", group = "cache.example.com", extra = [], children } = options;
  const init = await rudder(
    ["init", name, "--group", group, "--kind", kind, ...extra, "--local", CHECKOUT],
    { cwd: dir, children },
  );
  assert.equal(init.code, 0, `rudder init:\n${init.stdout}\n${init.stderr}`);
  return join(dir, name);
}
