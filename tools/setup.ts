/**
 * `deno task setup`: everything a fresh clone needs before tests or the demo run — the npm
 * packages (Bun among them) in node_modules, the control-plane binaries, the PromQL checker
 * (tools/promql) and the trace backend (Jaeger). Idempotent: a second run only checks. Prints the
 * directory of the control-plane binaries on its last line.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readlinkSync, symlinkSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { ensureEnvtestBinaries } from "./envtest/build.ts";
import { ensureJaegerBinary } from "./jaeger/build.ts";
import { ensurePromqlChecker } from "./promql/build.ts";

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

function log(message: string): void {
  process.stderr.write(`setup: ${message}\n`);
}

/** True when node_modules was installed from the current package-lock.json. */
function nodeModulesCurrent(): boolean {
  const installed = join(ROOT, "node_modules", ".package-lock.json");
  if (!existsSync(installed)) return false;
  const want = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")).packages ?? {};
  const have = JSON.parse(readFileSync(installed, "utf8")).packages ?? {};
  type Entry = { version?: string; optional?: boolean };
  for (const [path, entry] of Object.entries(want as Record<string, Entry>)) {
    const present = (have as Record<string, Entry>)[path];
    // Optional packages for other platforms (bun's and deno's binaries) are never installed.
    if (path === "" || (entry.optional && !present)) continue;
    if (present?.version !== entry.version) return false;
  }
  return true;
}

/** Installs the npm packages with `npm ci` unless node_modules already matches the lock file. */
export function ensureNodeModules(): void {
  if (nodeModulesCurrent()) return;
  log("installing npm packages (npm ci)");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const args = ["ci", "--no-audit", "--no-fund", "--loglevel=error"];
  const result = spawnSync(npm, args, {
    cwd: ROOT,
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (result.error || result.status !== 0) {
    throw new Error(
      `npm ci failed (exit ${result.status ?? result.error?.message}); ` +
        "Node.js and npm are needed to install Rudder's dependencies",
    );
  }
}

/**
 * Points node_modules/.bin/deno at the deno package's JavaScript launcher. `deno task` runs
 * node_modules/.bin commands as scripts, so when the deno package's install script has pointed
 * the link at the native binary (npm 10 runs install scripts that npm 11's allowScripts
 * refuses), every `deno` in a task would fail to load the binary as a script.
 */
export function ensureDenoLauncherLink(): void {
  const link = join(ROOT, "node_modules", ".bin", "deno");
  let target: string;
  try {
    target = readlinkSync(link);
  } catch {
    return; // no link (or not a symlink): nothing shadows deno in tasks
  }
  if (target.endsWith("bin.cjs")) return;
  log("pointing node_modules/.bin/deno at the deno package's launcher");
  unlinkSync(link);
  symlinkSync(join("..", "deno", "bin.cjs"), link);
}

/** Runs the whole set-up and returns the control-plane binary directory. */
export async function setup(): Promise<string> {
  ensureNodeModules();
  ensureDenoLauncherLink();
  await ensurePromqlChecker(); // parses the dashboards' expressions in the tests
  await ensureJaegerBinary(); // the trace backend of tests/integration/tracing.test.ts
  return await ensureEnvtestBinaries();
}

if (import.meta.main) {
  try {
    console.log(await setup());
  } catch (err) {
    log(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
