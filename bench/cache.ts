/**
 * `deno task bench:cache`: how long a cache takes to sync N ConfigMaps of about 1 KiB each and
 * how much resident memory each cached object costs, for Rudder on Deno and on Bun side by side
 * with controller-runtime's cache (Go), `@kubernetes/client-node`'s informer (Node) and the
 * floor (one GET of the whole list, body read and discarded).
 *
 * One control plane on loopback serves every contender. Each contender is its own process, run
 * one at a time (round by round, so drift spreads evenly), and prints one JSON line (see
 * contenders/measure.ts). The results go to bench/results/cache-<date>.md and
 * bench/results/cache-latest.md, and to stdout. See bench/README.md.
 *
 * Usage: deno run -A bench/cache.ts [--objects N] [--runs R] [--only name,name]
 *
 * @module
 */

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { newClient } from "../lib/client/client.ts";
import { VERSION } from "../lib/version.ts";
import { ConfigMap } from "../lib/api/mod.ts";
import { ENVTEST_KUBERNETES_VERSION } from "../lib/testing/assets.ts";
import { Environment } from "../lib/testing/envtest.ts";
import { ROOT, setup } from "../tools/setup.ts";
import type { ContenderResult } from "./contenders/measure.ts";

const BENCH = dirname(fileURLToPath(import.meta.url));
const RESULTS = join(BENCH, "results");
const GO_PEER = join(BENCH, "peers", "controller-runtime");
const NODE_PEER = join(BENCH, "peers", "client-node");
const BUN = join(ROOT, "node_modules", "bun", "bin", "bun.exe");
/** The peer's own Node (the `node` package): client-node 2.x needs Node 22.19 or later. */
const NODE = join(NODE_PEER, "node_modules", ".bin", "node");
const DENO = process.execPath;

/** Concurrent creates while filling the namespace; the API server takes this easily. */
const CREATE_CONCURRENCY = 32;
/** Random bytes per ConfigMap; base64 makes them 1 KiB of data, distinct per object. */
const PAYLOAD_BYTES = 768;
/** A contender run that has not reported after this long is killed and counted as failed. */
const RUN_TIMEOUT_MS = 5 * 60_000;
/** Output that means the contender could not load its code (e.g. `newCache` not there yet). */
const IMPORT_FAILURE =
  /does not provide an export named|Export named .* not found|Cannot find module|Module not found|ERR_MODULE_NOT_FOUND/;

function log(message: string): void {
  process.stderr.write(`bench:cache: ${message}\n`);
}

/** One implementation under test: how to build it, and the command that runs it once. */
interface Contender {
  /** Name for `--only`. */
  name: string;
  /** Row label in the table. */
  label: string;
  /** Builds or installs what the contender needs; returns its command line. */
  prepare(): string[];
}

const CONTENDERS: Contender[] = [
  {
    name: "floor",
    label: "floor: one list GET, body discarded (Deno)",
    prepare: () => denoCommand(join(BENCH, "peers", "floor.ts")),
  },
  {
    name: "controller-runtime",
    label: "controller-runtime cache (Go)",
    prepare: () => [buildGoPeer()],
  },
  {
    name: "client-node",
    label: "@kubernetes/client-node informer (Node)",
    prepare: () => {
      installNodePeer();
      return [NODE, "--expose-gc", join(NODE_PEER, "informer.mjs")];
    },
  },
  {
    name: "rudder-deno",
    label: "Rudder cache (Deno)",
    prepare: () => denoCommand(join(BENCH, "contenders", "rudder.ts")),
  },
  {
    name: "rudder-bun",
    label: "Rudder cache (Bun)",
    prepare: () => [BUN, "run", join(BENCH, "contenders", "rudder.ts")],
  },
];

function denoCommand(script: string): string[] {
  return [
    DENO,
    "run",
    "--allow-all",
    "--config",
    join(ROOT, "deno.json"),
    "--v8-flags=--expose-gc",
    script,
  ];
}

/** Runs a set-up command to completion, its output on stderr; throws when it fails. */
function runSetupCommand(command: string, args: string[], cwd: string, env = process.env): void {
  const result = spawnSync(command, args, {
    cwd,
    env,
    stdio: ["ignore", process.stderr, process.stderr],
  });
  if (result.error || result.status !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} failed (${result.error?.message ?? `exit ${result.status}`})`,
    );
  }
}

function sha256(...parts: (string | Uint8Array)[]): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest("hex");
}

function commandOutput(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: "utf8" });
  if (result.error || result.status !== 0) return "unknown";
  return result.stdout.trim();
}

/** `${XDG_CACHE_HOME:-~/.cache}/rudder/bench`: built peers live outside the repository. */
function benchCacheDirectory(): string {
  const cacheHome = process.env.XDG_CACHE_HOME || join(os.homedir(), ".cache");
  return join(cacheHome, "rudder", "bench");
}

/**
 * Builds the controller-runtime peer into the bench cache, named by a hash of its sources and
 * the Go toolchain, so an unchanged peer is never rebuilt.
 */
function buildGoPeer(): string {
  const sources = ["go.mod", "go.sum", "main.go"].map((file) => readFileSync(join(GO_PEER, file)));
  const stamp = sha256(commandOutput("go", ["version"]), ...sources).slice(0, 16);
  const binary = join(benchCacheDirectory(), `controller-runtime-${stamp}`);
  if (existsSync(binary)) return binary;
  log(`building the controller-runtime peer into ${binary}`);
  mkdirSync(dirname(binary), { recursive: true });
  const partial = `${binary}.partial`;
  runSetupCommand("go", ["build", "-trimpath", "-o", partial, "."], GO_PEER);
  renameSync(partial, binary);
  for (const file of readdirSync(dirname(binary))) {
    const stale = join(dirname(binary), file);
    if (file.startsWith("controller-runtime-") && stale !== binary) rmSync(stale, { force: true });
  }
  return binary;
}

/** Runs `npm ci` in the client-node peer unless node_modules was installed from this lock file. */
function installNodePeer(): void {
  const lock = readFileSync(join(NODE_PEER, "package-lock.json"));
  const stamp = sha256(readFileSync(join(NODE_PEER, "package.json")), lock);
  const stampPath = join(NODE_PEER, "node_modules", ".rudder-bench-stamp");
  if (existsSync(stampPath) && readFileSync(stampPath, "utf8") === stamp) return;
  log("installing the client-node peer (npm ci)");
  runSetupCommand("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], NODE_PEER);
  if (!existsSync(NODE)) {
    throw new Error(`npm ci installed no ${NODE}: the node package's install script did not run`);
  }
  writeFileSync(stampPath, stamp);
}

/** Child processes running now, so a signal or a failure can stop them. */
const children = new Set<ChildProcess>();

function killChildren(): void {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

/** What one run of one contender gave. */
type Outcome =
  | { kind: "ok"; result: ContenderResult }
  | { kind: "skipped" | "failed"; reason: string };

function lastLines(text: string, count: number): string {
  // deno-lint-ignore no-control-regex
  const plain = text.replace(/\x1b\[[0-9;]*m/g, "").trim();
  return plain.split("\n").slice(-count).join("\n");
}

/** Runs a contender once and validates its JSON line. */
async function runOnce(command: string[], args: string[], objects: number): Promise<Outcome> {
  const child = spawn(command[0], [...command.slice(1), ...args], {
    cwd: ROOT,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => stdout += chunk);
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => stderr += chunk);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, RUN_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => {
    child.on("error", (err) => {
      stderr += `\n${err.message}`;
      resolve(null);
    });
    child.on("close", (exitCode) => resolve(exitCode));
  });
  clearTimeout(timer);
  children.delete(child);

  if (timedOut) return { kind: "failed", reason: `no result after ${RUN_TIMEOUT_MS / 1000} s` };
  if (code !== 0) {
    const output = lastLines(stderr, 200) || lastLines(stdout, 200);
    const importError = output.split("\n").find((line) => IMPORT_FAILURE.test(line));
    if (importError) {
      return { kind: "skipped", reason: importError.replace(/^error: (Uncaught )?/, "").trim() };
    }
    return { kind: "failed", reason: `exit ${code}: ${lastLines(output, 5)}` };
  }
  const line = stdout.trim().split("\n").reverse().find((text) => text.startsWith("{"));
  let result: ContenderResult;
  try {
    result = JSON.parse(line ?? "");
  } catch {
    return { kind: "failed", reason: `no JSON result line in: ${lastLines(stdout, 3)}` };
  }
  for (const field of ["syncMs", "rssBaselineBytes", "rssSyncedBytes", "objects"]) {
    if (!Number.isFinite(result[field])) {
      return { kind: "failed", reason: `result has no number "${field}": ${line}` };
    }
  }
  if (result.objects !== objects) {
    return { kind: "failed", reason: `synced ${result.objects} objects, expected ${objects}` };
  }
  return { kind: "ok", result };
}

/** Every run of one contender, or why it has none. */
interface ContenderRuns {
  contender: Contender;
  results: ContenderResult[];
  skipped?: string;
  failed?: string;
}

/** Median with min and max. */
interface Summary {
  median: number;
  min: number;
  max: number;
}

function summarize(values: number[]): Summary | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median = sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1] };
}

function bytesPerObject(result: ContenderResult, objects: number): number {
  return (result.rssSyncedBytes - result.rssBaselineBytes) / objects;
}

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const oneDecimal = new Intl.NumberFormat("en-US", {
  minimumFractionDigits: 1,
  maximumFractionDigits: 1,
});

function withRange(summary: Summary, format: (value: number) => string): string {
  if (summary.min === summary.max) return format(summary.median);
  return `${format(summary.median)} (${format(summary.min)}–${format(summary.max)})`;
}

function ratio(value: Summary | undefined, reference: Summary | undefined): string {
  if (!value || !reference || reference.median <= 0) return "—";
  return `${(value.median / reference.median).toFixed(2)}×`;
}

/** The facts a reader needs to compare two result files. */
function machineInfo(envtestVersion: string): string[] {
  const cpuinfo = existsSync("/proc/cpuinfo") ? readFileSync("/proc/cpuinfo", "utf8") : "";
  const cpu = cpuinfo.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? os.cpus()[0]?.model ?? "unknown";
  const release = existsSync("/etc/os-release") ? readFileSync("/etc/os-release", "utf8") : "";
  const distro = release.match(/^PRETTY_NAME="?([^"\n]*)"?$/m)?.[1];
  const goMod = readFileSync(join(GO_PEER, "go.mod"), "utf8");
  const goModule = (path: string) =>
    goMod.match(new RegExp(`^\\s*${path.replaceAll(".", "\\.")} (v\\S+)`, "m"))?.[1] ?? "?";
  const lock = JSON.parse(readFileSync(join(NODE_PEER, "package-lock.json"), "utf8"));
  const clientNode = lock.packages?.["node_modules/@kubernetes/client-node"]?.version ?? "?";
  const denoVersion = commandOutput(DENO, ["--version"]).split("\n");
  const commit = commandOutput("git", ["-C", ROOT, "rev-parse", "--short", "HEAD"]);
  const dirty = commandOutput("git", ["-C", ROOT, "status", "--porcelain"]) !== "";
  return [
    `- CPU: ${cpu}, ${os.cpus().length} cores; memory ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- OS: ${os.type()} ${os.release()} ${os.arch()}${distro ? ` (${distro})` : ""}`,
    `- Control plane: kube-apiserver ${envtestVersion} (envtest) on loopback`,
    `- Rudder ${VERSION} at ${commit}${dirty ? " with uncommitted changes" : ""}`,
    `- ${denoVersion.join(", ")}`,
    `- Bun ${commandOutput(BUN, ["--version"])}`,
    `- Node ${commandOutput(NODE, ["--version"])}, @kubernetes/client-node ${clientNode}`,
    `- ${commandOutput("go", ["version"])}, sigs.k8s.io/controller-runtime ` +
    `${goModule("sigs.k8s.io/controller-runtime")}, k8s.io/client-go ${
      goModule("k8s.io/client-go")
    }`,
  ];
}

function resultsTable(all: ContenderRuns[], objects: number): string[] {
  const summaries = new Map(all.map((runs) => [runs.contender.name, {
    sync: summarize(runs.results.map((r) => r.syncMs)),
    perObject: summarize(runs.results.map((r) => bytesPerObject(r, objects))),
    rss: summarize(runs.results.map((r) => r.rssSyncedBytes)),
  }]));
  const go = summaries.get("controller-runtime");
  const floor = summaries.get("floor");
  const lines = [
    "| contender | time to synced (ms) | memory per object (bytes) | RSS synced (MiB) " +
    "| time vs controller-runtime | memory vs controller-runtime | time vs floor |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  const notes: string[] = [];
  for (const runs of all) {
    const s = summaries.get(runs.contender.name)!;
    if (!s.sync || !s.perObject || !s.rss) {
      const state = runs.skipped ? "skipped" : "failed";
      const why = (runs.skipped ?? runs.failed ?? "no runs").replaceAll("\n", " ");
      notes.push(`${notes.length + 1}. ${runs.contender.label}, ${state}: ${why}`);
      lines.push(`| ${runs.contender.label} | ${state} [${notes.length}] | — | — | — | — | — |`);
      continue;
    }
    const isFloor = runs.contender.name === "floor";
    lines.push(
      `| ${runs.contender.label} | ${withRange(s.sync, (v) => integer.format(v))} | ${
        withRange(s.perObject, (v) => integer.format(v))
      } | ${withRange(s.rss, (v) => oneDecimal.format(v / 2 ** 20))} | ${
        ratio(s.sync, go?.sync)
      } | ${isFloor ? "—" : ratio(s.perObject, go?.perObject)} | ${ratio(s.sync, floor?.sync)} |`,
    );
  }
  return notes.length > 0 ? [...lines, "", ...notes] : lines;
}

function rawRuns(all: ContenderRuns[], objects: number): string[] {
  const lines = [
    "| contender | run | time to synced (ms) | RSS baseline (MiB) | RSS synced (MiB) | bytes per object |",
    "| --- | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const runs of all) {
    runs.results.forEach((r, i) => {
      lines.push(
        `| ${runs.contender.name} | ${i + 1} | ${oneDecimal.format(r.syncMs)} | ${
          oneDecimal.format(r.rssBaselineBytes / 2 ** 20)
        } | ${oneDecimal.format(r.rssSyncedBytes / 2 ** 20)} | ${
          integer.format(bytesPerObject(r, objects))
        } |`,
      );
    });
  }
  return lines;
}

function report(
  all: ContenderRuns[],
  options: { objects: number; runs: number; date: Date; listBytes?: number; machine: string[] },
): string {
  const { objects, runs, date, listBytes } = options;
  const wire = listBytes === undefined
    ? ""
    : ` The list is ${oneDecimal.format(listBytes / 2 ** 20)} MiB of JSON, ${
      integer.format(listBytes / objects)
    } bytes per object.`;
  return [
    `# Cache benchmark, ${date.toISOString().slice(0, 16).replace("T", " ")} UTC`,
    "",
    `Time to synced and resident memory per cached object for a cache of ${
      integer.format(objects)
    } ConfigMaps (1 KiB of data each) in one namespace, read from a local kube-apiserver over ` +
    `loopback.${wire} Median of ${runs} run${runs === 1 ? "" : "s"}, min–max in brackets. ` +
    "Each contender is its own process, run one at a time; memory is RSS after a forced GC, " +
    "synced minus baseline, divided by the number of objects. Ratios divide medians: below 1× " +
    "is faster or smaller than the reference. How to read this: bench/README.md.",
    "",
    ...resultsTable(all, objects),
    "",
    "## Machine",
    "",
    ...options.machine,
    "",
    "## Every run",
    "",
    ...rawRuns(all, objects),
    "",
  ].join("\n");
}

/** Writes the report (formatted by `deno fmt`) to the dated and the latest file; returns it. */
function writeReport(markdown: string, date: Date): string {
  mkdirSync(RESULTS, { recursive: true });
  const dated = join(RESULTS, `cache-${date.toISOString().slice(0, 10)}.md`);
  writeFileSync(dated, markdown);
  spawnSync(DENO, ["fmt", "--quiet", "--config", join(ROOT, "deno.json"), dated], {
    stdio: "ignore",
  });
  copyFileSync(dated, join(RESULTS, "cache-latest.md"));
  log(`wrote ${dated} and ${join(RESULTS, "cache-latest.md")}`);
  return readFileSync(dated, "utf8");
}

/** Creates `count` ConfigMaps with distinct 1 KiB payloads, `CREATE_CONCURRENCY` at a time. */
async function fillNamespace(
  client: ReturnType<typeof newClient>,
  namespace: string,
  count: number,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          namespace,
          name: `bench-${String(index).padStart(6, "0")}`,
          labels: { "app.kubernetes.io/name": "rudder-bench" },
        },
        data: { payload: randomBytes(PAYLOAD_BYTES).toString("base64") },
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(CREATE_CONCURRENCY, count) }, worker));
}

function parseOptions(): { objects: number; runs: number; contenders: Contender[] } {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      objects: { type: "string", default: "10000" },
      runs: { type: "string", default: "3" },
      only: { type: "string" },
    },
  });
  const objects = Number(values.objects);
  const runs = Number(values.runs);
  if (!Number.isInteger(objects) || objects < 1) throw new Error("--objects must be >= 1");
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be >= 1");
  let contenders = CONTENDERS;
  if (values.only) {
    const names = values.only.split(",").map((name) => name.trim()).filter(Boolean);
    const unknown = names.filter((name) => !CONTENDERS.some((c) => c.name === name));
    if (unknown.length > 0) {
      throw new Error(
        `unknown contender ${unknown.join(", ")}; known: ${
          CONTENDERS.map((c) => c.name).join(", ")
        }`,
      );
    }
    contenders = CONTENDERS.filter((c) => names.includes(c.name));
  }
  return { objects, runs, contenders };
}

async function main(): Promise<number> {
  const { objects, runs, contenders } = parseOptions();
  const assets = await setup();
  const all: ContenderRuns[] = contenders.map((contender) => ({ contender, results: [] }));
  const commands = new Map<string, string[]>();
  for (const runsOf of all) {
    try {
      commands.set(runsOf.contender.name, runsOf.contender.prepare());
    } catch (err) {
      runsOf.failed = `set-up: ${err instanceof Error ? err.message : String(err)}`;
      log(`${runsOf.contender.name}: ${runsOf.failed}`);
    }
  }

  const env = new Environment({ binaryAssetsDirectory: assets });
  // On a signal: start nothing more, stop what runs, stop the control plane, exit.
  let interrupted = false;
  const stop = async (signal: string) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping`);
    killChildren();
    await env.stop();
    process.exit(130);
  };
  const onSignal = (signal: string) => void stop(signal);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, onSignal);
  const date = new Date();
  let listBytes: number | undefined;
  try {
    const config = await env.start();
    const client = newClient(config);
    const namespace = `bench-cache-${date.getTime().toString(36)}`;
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    log(`creating ${objects} ConfigMaps in ${namespace}`);
    const fillStart = performance.now();
    await fillNamespace(client, namespace, objects);
    log(`created in ${((performance.now() - fillStart) / 1000).toFixed(1)} s`);
    // One untimed list first, so no contender pays for a cold watch cache.
    const warm = await client.list(ConfigMap, { namespace });
    if (warm.items.length !== objects) {
      throw new Error(`the namespace holds ${warm.items.length} ConfigMaps, not ${objects}`);
    }

    const args = ["--kubeconfig", env.kubeconfigPath, "--namespace", namespace];
    args.push("--objects", String(objects));
    for (let round = 1; round <= runs; round++) {
      for (const runsOf of all) {
        const command = commands.get(runsOf.contender.name);
        if (!command || runsOf.skipped || runsOf.failed || interrupted) continue;
        const outcome = await runOnce(command, args, objects);
        if (interrupted) break;
        const name = runsOf.contender.name;
        if (outcome.kind === "ok") {
          runsOf.results.push(outcome.result);
          if (outcome.result.bodyBytes !== undefined) listBytes = outcome.result.bodyBytes;
          log(
            `run ${round}/${runs} ${name}: ${outcome.result.syncMs.toFixed(0)} ms, ` +
              `${integer.format(bytesPerObject(outcome.result, objects))} bytes per object`,
          );
        } else {
          runsOf[outcome.kind] = outcome.reason;
          log(`run ${round}/${runs} ${name}: ${outcome.kind}: ${outcome.reason}`);
        }
      }
    }
  } finally {
    killChildren();
    await env.stop();
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.off(signal, onSignal);
  }

  const markdown = report(all, {
    objects,
    runs,
    date,
    listBytes,
    machine: machineInfo(ENVTEST_KUBERNETES_VERSION),
  });
  console.log(writeReport(markdown, date));
  return all.some((runsOf) => runsOf.failed) ? 1 : 0;
}

if (import.meta.main) {
  try {
    process.exitCode = await main();
  } catch (err) {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exitCode = 1;
  }
}
