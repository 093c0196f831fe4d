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
  "bench/suite.ts",
  "bench/profile.ts",
  "bench/readme.ts",
  "bench/watch_decode.ts",
  "bench/list_replace.ts",
  "bench/relist.ts",
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

/**
 * The files a publish dry run lists, from its output; throws when the output has a warning or
 * an error, or lists no file.
 */
export function publishedFiles(output: string, root: string = ROOT): string[] {
  // deno prints ANSI colours even when piped unless NO_COLOR is set; strip them to be sure.
  // deno-lint-ignore no-control-regex
  const plain = output.replace(/\x1b\[[0-9;]*m/g, "");
  const problems = plain.split("\n").filter((line) => /^(warning|error)(\[|:)/.test(line));
  if (problems.length > 0) throw new Error(`the publish dry run reports:\n${problems.join("\n")}`);
  const prefix = `file://${root.replace(/\/?$/, "/")}`;
  const files = [...plain.matchAll(/^\s+(file:\/\/\S+)\s+\(/gm)]
    .map((m) => m[1].startsWith(prefix) ? m[1].slice(prefix.length) : m[1]);
  if (files.length === 0) throw new Error("the publish dry run listed no files");
  return files;
}

/** Only sources, README, LICENSE and the package's own config are published. */
const PUBLISHED = /^(mod\.ts|deno\.json|README\.md|LICENSE|lib\/.+\.(ts|mod|sum)|cli\/.+\.ts)$/;

function publishDryRun(): void {
  const args = ["publish", "--dry-run", "--allow-dirty", "--set-version", "0.1.0"];
  process.stderr.write(`\ncheck: publish: deno ${args.join(" ")}\n`);
  const result = spawnSync(Deno.execPath(), args, {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  const output = `${result.stdout}${result.stderr}`;
  try {
    if (result.status !== 0) throw new Error(`deno publish exited with ${result.status}`);
    const files = publishedFiles(output);
    const stray = files.filter((file) => !PUBLISHED.test(file));
    if (stray.length > 0) throw new Error(`files that must not be published: ${stray.join(", ")}`);
    process.stderr.write(`check: publish: ${files.length} files, no warning\n`);
  } catch (err) {
    process.stderr.write(`${output}\ncheck: publish failed: ${(err as Error).message}\n`);
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
  step("docs", ["run", "-A", "tools/check_docs.ts", "--api"]);
  publishDryRun();
  process.stderr.write("\ncheck: all passed\n");
}
