/**
 * `deno task test`: sets up (npm packages, Bun, Node, control-plane binaries), runs `deno task
 * check` (when the whole suite runs), then the whole suite under Deno (with coverage), under Bun
 * and under Node (its own runner, `node --test`, types stripped, no transpiler), prints the line
 * coverage, names every failed test, and ends with one line `N passed, M failed` summing the three
 * runtimes. Exits non-zero when anything failed.
 *
 * Usage: deno run -A tools/test.ts [--deno-only | --bun-only | --node-only] [test paths…]
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { ROOT, setup } from "./setup.ts";

const RESULTS = join(ROOT, ".test-results");
const COVERAGE = join(ROOT, "coverage");

/** Counts of one runtime's run. */
export interface RunCounts {
  passed: number;
  failed: number;
  skipped: number;
  /** The names of the failed tests (`block > test`), so that a run's last lines name them. */
  failures: string[];
}

function attribute(tag: string, name: string): string | undefined {
  return tag.match(new RegExp(`\\b${name}="([^"]*)"`))?.[1];
}

function unescapeXml(text: string): string {
  return text.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

/**
 * Counts leaf test cases in a JUnit report. Deno reports a `describe` block as a test case
 * and its tests as steps named `block > test`; a case with steps is not counted itself, so
 * every runtime counts the same tests. Node nests a block's tests in a `testsuite` of its own,
 * so its test cases are all leaves.
 */
export function countJUnit(xml: string): RunCounts {
  const cases: { name: string; where: string; failed: boolean; skipped: boolean }[] = [];
  // Quoted attribute values may hold `>`: Node's reporter escapes `<` in them but not `>`.
  const pattern = /<testcase\b((?:[^>"]|"[^"]*")*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const match of xml.matchAll(pattern)) {
    const body = match[3] ?? "";
    cases.push({
      name: unescapeXml(attribute(match[1], "name") ?? ""),
      // Bun's class name is the describe block, Deno's the file (or, for steps, its own module).
      where: unescapeXml(attribute(match[1], "classname") ?? "").replace(/^ext:.*/, ""),
      failed: /<(failure|error)\b/.test(body),
      skipped: /<skipped\b/.test(body),
    });
  }
  const parents = new Set<string>();
  for (const { name } of cases) {
    const parts = name.split(" > ");
    for (let i = 1; i < parts.length; i++) parents.add(parts.slice(0, i).join(" > "));
  }
  const counts: RunCounts = { passed: 0, failed: 0, skipped: 0, failures: [] };
  for (const testCase of cases) {
    if (parents.has(testCase.name) && !testCase.failed) continue;
    if (parents.has(testCase.name) && testCase.failed) {
      // A block that failed on its own (a hook threw) while its steps may have passed: count
      // the failure once only when none of its steps carries it.
      const stepFailed = cases.some((c) => c.name.startsWith(`${testCase.name} > `) && c.failed);
      if (stepFailed) continue;
    }
    if (testCase.failed) {
      counts.failed++;
      counts.failures.push(testCase.where ? `${testCase.name} (${testCase.where})` : testCase.name);
    } else if (testCase.skipped) counts.skipped++;
    else counts.passed++;
  }
  return counts;
}

function run(command: string, args: string[], env: Record<string, string>): number {
  process.stderr.write(`\n$ ${command} ${args.join(" ")}\n`);
  const result = spawnSync(command, args, {
    cwd: ROOT,
    stdio: "inherit",
    env: { ...process.env, ...env },
  });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function readCounts(file: string, exitCode: number, runtime: string): RunCounts {
  let counts: RunCounts = { passed: 0, failed: 0, skipped: 0, failures: [] };
  try {
    counts = countJUnit(readFileSync(file, "utf8"));
  } catch {
    // No report: the runner failed before running anything; counted below.
  }
  if (exitCode !== 0 && counts.failed === 0) {
    process.stderr.write(`${runtime}: the test runner exited with ${exitCode}\n`);
    counts.failed = 1;
    counts.failures.push(`(the ${runtime} test runner exited with ${exitCode})`);
  }
  return counts;
}

/**
 * Milliseconds a test may take on Node when it names no timeout (Node's default is none): the
 * bound Bun's run has, for a test that hangs.
 */
export const NODE_TEST_TIMEOUT_MS = 120_000;

/**
 * Test files Node runs at once, each in its own process. Deno and Bun run one file at a time; on
 * a machine of two cores a second file at once costs the timing-sensitive tests (the servers'
 * limits, the leader election's deadlines) more than it saves.
 */
export const NODE_TEST_CONCURRENCY = 1;

/**
 * `node --test` takes files and globs, not directories: a directory becomes the glob of the test
 * files under it, as Deno and Bun find them (`*.test.ts`, `*_test.ts`).
 */
export function nodeTestPatterns(
  paths: string[],
  isDirectory: (path: string) => boolean,
): string[] {
  return paths.flatMap((path) => {
    if (!isDirectory(path)) return [path];
    const dir = path.replace(/\/+$/, "");
    return [`${dir}/**/*.test.ts`, `${dir}/**/*_test.ts`];
  });
}

function isDirectory(path: string): boolean {
  try {
    return statSync(join(ROOT, path)).isDirectory();
  } catch {
    return false;
  }
}

/** Line coverage of lib/ and mod.ts from Deno's coverage data, as a percentage. */
function lineCoverage(deno: string): number | undefined {
  const result = spawnSync(
    deno,
    ["coverage", COVERAGE, "--include=^file:.*/(lib/|mod\\.ts)", "--exclude=tests/|tools/"],
    { cwd: ROOT, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } },
  );
  const output = `${result.stdout}`;
  // deno coverage skips a file whose transpiled source it cannot find (as with
  // "verbatimModuleSyntax" in deno.json) and reports on the rest: a figure over part of lib/
  // would be no figure at all.
  if (
    /Missing transpiled source code for: "file:\/\/[^"]*\/(lib\/|mod\.ts)/.test(`${result.stderr}`)
  ) {
    return undefined;
  }
  // deno coverage prints a table whose "All files" row ends with the branch and line figures.
  const row = output.split("\n").find((line) => line.includes("All files"));
  const figures = row?.match(/\d+(\.\d+)?/g);
  return figures ? Number(figures[figures.length - 1]) : undefined;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const denoOnly = args.includes("--deno-only");
  const bunOnly = args.includes("--bun-only");
  const nodeOnly = args.includes("--node-only");
  const only = [denoOnly, bunOnly, nodeOnly].filter(Boolean).length;
  if (only > 1) throw new Error("--deno-only, --bun-only and --node-only exclude each other");
  const runDeno = !bunOnly && !nodeOnly;
  const runBun = !denoOnly && !nodeOnly;
  const runNode = !denoOnly && !bunOnly;
  const paths = args.filter((arg) => !arg.startsWith("--"));
  const tests = paths.length > 0 ? paths : ["tests/"];

  const assets = await setup();
  const env = { KUBEBUILDER_ASSETS: assets };
  const deno = process.execPath;
  const bun = join(ROOT, "node_modules", "bun", "bin", "bun.exe");
  const node = join(ROOT, "node_modules", "node", "bin", "node");
  rmSync(RESULTS, { recursive: true, force: true });
  rmSync(COVERAGE, { recursive: true, force: true });
  mkdirSync(RESULTS, { recursive: true });

  const totals: RunCounts = { passed: 0, failed: 0, skipped: 0, failures: [] };
  const lines: string[] = [];
  const add = (runtime: string, counts: RunCounts) => {
    totals.passed += counts.passed;
    totals.failed += counts.failed;
    totals.skipped += counts.skipped;
    totals.failures.push(...counts.failures.map((name) => `${runtime}: ${name}`));
    lines.push(
      `${runtime}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`,
    );
  };

  // A whole run (no paths, every runtime) starts with `deno task check`: formatting, lint, types,
  // doc examples, doc lint and the publish dry run, counted as one more test.
  if (paths.length === 0 && only === 0) {
    const code = run(deno, ["run", "-A", join(ROOT, "tools", "check.ts")], env);
    add("check", {
      passed: code === 0 ? 1 : 0,
      failed: code === 0 ? 0 : 1,
      skipped: 0,
      failures: code === 0 ? [] : ["deno task check"],
    });
  }
  if (runDeno) {
    const report = join(RESULTS, "deno.xml");
    const code = run(deno, [
      "test",
      "-A",
      `--coverage=${COVERAGE}`,
      `--junit-path=${report}`,
      ...tests,
    ], env);
    add("deno", readCounts(report, code, "deno"));
  }
  if (runBun) {
    const report = join(RESULTS, "bun.xml");
    const code = run(bun, [
      "test",
      "--timeout=120000",
      "--reporter=junit",
      `--reporter-outfile=${report}`,
      ...tests.map((path) => (path.startsWith(".") || path.startsWith("/") ? path : `./${path}`)),
    ], env);
    add("bun", readCounts(report, code, "bun"));
  }
  if (runNode) {
    const report = join(RESULTS, "node.xml");
    const started = Date.now();
    const code = run(node, [
      "--test",
      `--test-concurrency=${NODE_TEST_CONCURRENCY}`,
      `--test-timeout=${NODE_TEST_TIMEOUT_MS}`,
      "--test-reporter=spec",
      "--test-reporter-destination=stdout",
      "--test-reporter=junit",
      `--test-reporter-destination=${report}`,
      ...nodeTestPatterns(tests, isDirectory),
    ], env);
    add("node", readCounts(report, code, "node"));
    process.stderr.write(`node: ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  }

  console.log("");
  // The failed tests are named again at the end, where a log cut to its tail still shows them.
  for (const failure of totals.failures) console.log(`failed: ${failure}`);
  for (const line of lines) console.log(line);
  if (runDeno) {
    const coverage = lineCoverage(deno);
    console.log(
      coverage === undefined
        ? "line coverage: unknown (deno coverage printed no total, or skipped files of lib/)"
        : `line coverage: ${coverage.toFixed(1)} % (lib/ and mod.ts, Deno run)`,
    );
  }
  console.log(`${totals.passed} passed, ${totals.failed} failed`);
  return totals.failed > 0 ? 1 : 0;
}

if (import.meta.main) {
  try {
    process.exit(await main());
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    console.log("0 passed, 1 failed");
    process.exit(1);
  }
}
