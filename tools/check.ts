/**
 * `deno task check`: formatting, lint, type checks (sources, tests, tools, examples and the
 * code blocks of the JSDoc), the doc lint of every public subpath, and a publish dry run that
 * must warn nothing. Exits non-zero at the first failing step.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { ROOT } from "./setup.ts";

/** The files of every public subpath in deno.json's `exports`. */
export function exportedFiles(): string[] {
  const config = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8"));
  return Object.values(config.exports as Record<string, string>);
}

/** Directories whose sources `deno check` covers (the benchmark's peers install their own packages). */
const CHECKED = [
  "mod.ts",
  "lib/",
  "cli/",
  "tests/",
  "tools/",
  "examples/",
  "bench/cache.ts",
  "bench/contenders/",
  "bench/peers/floor.ts",
];

function step(name: string, args: string[]): void {
  process.stderr.write(`\ncheck: ${name}: deno ${args.join(" ")}\n`);
  const result = spawnSync(Deno.execPath(), args, { cwd: ROOT, stdio: "inherit" });
  if (result.status !== 0) {
    process.stderr.write(`check: ${name} failed\n`);
    process.exit(1);
  }
}

if (import.meta.main) {
  const exported = exportedFiles();
  step("format", ["fmt", "--check"]);
  step("lint", ["lint"]);
  step("types", ["check", ...CHECKED]);
  step("doc examples", ["check", "--doc-only", ...exported, "lib/"]);
  step("doc lint", ["doc", "--lint", ...exported]);
  step("docs", ["run", "-A", "tools/check_docs.ts"]);
  step("publish", ["publish", "--dry-run", "--allow-dirty", "--set-version", "0.1.0"]);
  process.stderr.write("\ncheck: all passed\n");
}
