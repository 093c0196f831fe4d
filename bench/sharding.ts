/**
 * The sharding benchmark: the sharded example operator (examples/sharded-operator) as replica
 * processes against one control plane, with `--objects` Shardlings (3,000), each owning a
 * ConfigMap. It measures:
 *
 * - the spread: objects each of 3 replicas caches (`rudder_shard_objects`), against the even
 *   share;
 * - memory: each replica's resident set against one replica of the same process type holding
 *   every object, in the same run (that replica runs once before the shards, creating the
 *   children, and once after them, taking every object over by moves as the shards did): the
 *   median of 3 rounds of readings 5 s apart, its peak (VmHWM), and, from the replica's memory
 *   probe (examples/sharded-operator/memory_probe.ts), its heap and resident set after a full
 *   collection; which replica was the sharder, and the most objects each cached while settling;
 * - the fraction of objects that move when a fourth replica joins.
 *
 * Runs alone (`deno task bench:sharding`, writing bench/results/<date>-sharding.{md,json}) or as
 * the `sharding` measure of bench/suite.ts (`--measures sharding`), against its control plane.
 *
 * Usage: deno run -A bench/sharding.ts [--objects 3000] [--replicas 3] [--runtime deno|bun]
 *   [--idle-settle-ms 3000] [--name <suffix>]
 *
 * @module
 */

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type Client, newClient } from "../lib/client/client.ts";
import { isAlreadyExists } from "../lib/kube/errors.ts";
import { Lease } from "../lib/api/builtins.ts";
import { sharderLeaseName } from "../lib/sharding/labels.ts";
import { Environment } from "../lib/testing/envtest.ts";
import type { MemoryProbe } from "../examples/sharded-operator/memory_probe.ts";
import { Shardling } from "../examples/sharded-operator/api/shardling.ts";
import { RING } from "../examples/sharded-operator/main.ts";
import {
  assignments,
  createShardlings,
  metricValue,
  type Replica,
  ShardReplicas,
  unsettled,
} from "../tests/support/shard_replicas.ts";

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, "..");
const RESULTS = join(BENCH, "results");
const BUN = join(ROOT, "node_modules", "bun", "bin", "bun.exe");

/**
 * The default shard Lease timings: a replica busy with 3,000 objects on a loaded machine missed
 * renewals of 5 s Leases and stopped (as it must when it cannot renew), and graceful stops release
 * their Lease at once anyway.
 */
const LEASE = { leaseDuration: 15_000, renewDeadline: 10_000, retryPeriod: 2_000 };
/** How long a ring may take to settle after a change, 3,000 objects on a loaded machine. */
const SETTLE_TIMEOUT_MS = 20 * 60_000;
/** Rounds of resident-memory readings per replica, the pause between rounds, samples per round and the pause between them. */
const RSS_ROUNDS = 3;
const RSS_ROUND_PAUSE_MS = 5_000;
const RSS_SAMPLES = 5;
const RSS_PAUSE_MS = 500;
/** How long a replica may take to answer its memory probe. */
const PROBE_TIMEOUT_MS = 30_000;

/** What the benchmark runs with. */
export interface ShardingBenchOptions {
  /** Shardlings (each with one ConfigMap). */
  objects: number;
  /** Replicas of the spread and memory measure (a further one joins for the move measure). */
  replicas: number;
  /** The runtime of the replica processes. */
  runtime: "deno" | "bun";
  /** Milliseconds a settled ring idles before its memory is read. */
  idleSettleMs: number;
}

/** One replica's figures. */
export interface ReplicaFigures {
  name: string;
  /** Shardlings its cache holds (`rudder_shard_objects{kind="Shardling"}`). */
  shardlings: number;
  /** ConfigMaps its cache holds (`rudder_shard_objects{kind="ConfigMap"}`). */
  configMaps: number;
  /** Median resident set over every reading, bytes. */
  rssBytes: number;
  /** The lowest and the highest reading, bytes. */
  rssRange: [number, number];
  /** The median of each round, bytes. */
  rssRounds: number[];
  /** Peak resident set of the process's life (VmHWM), bytes. */
  peakRssBytes: number;
  /** Anonymous resident memory (RssAnon) at the last reading, bytes. */
  anonBytes: number;
  /** The memory probe: heap and resident set before and after a full collection. */
  probe?: MemoryProbe;
  /** The most Shardlings its cache held while the ring settled. */
  peakShardlings: number;
  /** Whether it held the sharder's Lease when measured. */
  sharder: boolean;
}

/** What the benchmark measured. */
export interface ShardingBenchResult {
  options: ShardingBenchOptions;
  /** The replica holding every object, before the shards (it created the children). */
  soloFirst: ReplicaFigures;
  /** The replica holding every object, after the shards (every object moved to it). */
  soloLast: ReplicaFigures;
  /** Each of the `replicas` shards. */
  shards: ReplicaFigures[];
  /** The sharder (holder of the `<ring>-sharder` Lease) when the shards were measured. */
  sharder?: string;
  /**
   * Seconds after the shards were started at which each one acquired its shard Lease, and the
   * sharder its sharder Lease (`sharder`): replicas started together that join the ring further
   * apart than the sharder waits for a quiet ring find every object given to the first.
   */
  joinedAfter?: Record<string, number>;
  /** Objects whose shard changed when one more replica joined, over all objects. */
  movedFraction: number;
  /** Seconds each phase took to settle. */
  settleSeconds: Record<string, number>;
  /** /proc/loadavg (1, 5, 15 min) at the start and the end. */
  load: { before: string; after: string };
}

function loadavg(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "?";
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Installs the Shardling CRD unless it is there, and waits until it is served. */
async function installCRD(client: Client): Promise<void> {
  await client.create(Shardling.crd()).catch((err) => {
    if (!isAlreadyExists(err)) throw err;
  });
  for (let i = 0;; i++) {
    try {
      await client.list(Shardling, { limit: 1 });
      return;
    } catch (err) {
      if (i >= 100) throw err;
      await sleep(100);
    }
  }
}

/** Shardlings each replica's cache held at most while settling, by replica name. */
type Peaks = Map<string, number>;

/** Reads each running replica's Shardlings into `peaks`, keeping the most seen. */
async function notePeaks(replicas: ShardReplicas, peaks: Peaks): Promise<void> {
  await Promise.all(replicas.running.map(async (replica) => {
    try {
      const url = await Promise.race([replica.metricsURL, sleep(100).then(() => undefined)]);
      if (!url) return;
      const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) }))
        .text();
      const n = metricValue(text, "rudder_shard_objects", {
        ring: RING,
        shard: replica.name,
        kind: "Shardling",
      }) ?? 0;
      peaks.set(replica.name, Math.max(peaks.get(replica.name) ?? 0, n));
    } catch {
      // Stopping, or too busy to answer this once.
    }
  }));
}

/**
 * Waits until the objects are settled on `shards`; returns the seconds it took. Fails at once
 * when one of `replicas` has exited, with the end of its output.
 */
async function settle(
  client: Client,
  namespace: string,
  shards: string[],
  replicas: ShardReplicas,
  log: (message: string) => void,
  peaks?: Peaks,
): Promise<number> {
  const started = performance.now();
  let lastLog = started;
  for (;;) {
    if (peaks) await notePeaks(replicas, peaks);
    const gone = replicas.all.find((r) => shards.includes(r.name) && r.exitedAt !== undefined);
    if (gone) {
      throw new Error(`${gone.name} exited while settling: ${gone.output().slice(-3000)}`);
    }
    const reason = await unsettled(client, namespace, shards);
    if (reason === undefined) return (performance.now() - started) / 1000;
    if (performance.now() - started > SETTLE_TIMEOUT_MS) {
      throw new Error(`not settled on ${shards.join(", ")}: ${reason}`);
    }
    if (performance.now() - lastLog > 15_000) {
      lastLog = performance.now();
      log(`settling on ${shards.join(", ")}: ${reason}`);
    }
    await sleep(1_000);
  }
}

/** Waits until a replica serves metrics, and fails when it exits first. */
async function serving(replica: Replica): Promise<string> {
  return await Promise.race([
    replica.metricsURL,
    replica.exited.then((code) => {
      throw new Error(`${replica.name} exited with ${code}: ${replica.output().slice(-2000)}`);
    }),
  ]);
}

/** A field of `/proc/<pid>/status` in bytes. */
function statusBytes(pid: number, field: string): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"))?.[1];
    return kib ? Number(kib) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Asks `replica` for its memory probe (SIGUSR2) and waits for the answer. */
async function probe(replica: Replica, n: number): Promise<MemoryProbe | undefined> {
  process.kill(replica.pid, "SIGUSR2");
  const started = performance.now();
  while (performance.now() - started < PROBE_TIMEOUT_MS) {
    for (const line of replica.output().split("\n").reverse()) {
      if (!line.startsWith(`{"memoryProbe":`)) continue;
      try {
        const found = (JSON.parse(line) as { memoryProbe: MemoryProbe }).memoryProbe;
        if (found.n === n) return found;
      } catch {
        // Cut off at the start of the kept output.
      }
    }
    await sleep(200);
  }
  return undefined;
}

/** When each Lease of `names` was acquired (its `acquireTime`), wall-clock ms. */
async function acquired(
  client: Client,
  namespace: string,
  names: string[],
): Promise<Record<string, number>> {
  const times: Record<string, number> = {};
  for (const name of names) {
    try {
      const lease = await client.get(Lease, { namespace, name });
      const at = lease.spec?.acquireTime ? Date.parse(lease.spec.acquireTime) : NaN;
      if (Number.isFinite(at)) times[name] = at;
    } catch {
      // Never acquired.
    }
  }
  return times;
}

/** The holder of the ring's sharder Lease. */
async function sharderOf(client: Client, namespace: string): Promise<string | undefined> {
  try {
    const lease = await client.get(Lease, { namespace, name: sharderLeaseName(RING) });
    return lease.spec?.holderIdentity ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Settled replicas' figures, read side by side: their caches from their metrics, their resident
 * sets in rounds, then each one's memory probe (its full collection comes last, as it changes
 * what the replica holds).
 */
async function figures(
  replicas: Replica[],
  peaks: Peaks,
  sharder: string | undefined,
  probes: Map<Replica, number>,
): Promise<ReplicaFigures[]> {
  const samples = new Map<Replica, number[]>(replicas.map((r) => [r, []]));
  const rounds = new Map<Replica, number[]>(replicas.map((r) => [r, []]));
  for (let round = 0; round < RSS_ROUNDS; round++) {
    if (round > 0) await sleep(RSS_ROUND_PAUSE_MS);
    const thisRound = new Map<Replica, number[]>(replicas.map((r) => [r, []]));
    for (let i = 0; i < RSS_SAMPLES; i++) {
      for (const replica of replicas) {
        const rss = statusBytes(replica.pid, "VmRSS");
        if (rss === undefined) throw new Error(`${replica.name} is gone`);
        samples.get(replica)!.push(rss);
        thisRound.get(replica)!.push(rss);
      }
      await sleep(RSS_PAUSE_MS);
    }
    for (const replica of replicas) rounds.get(replica)!.push(median(thisRound.get(replica)!));
  }
  const result: ReplicaFigures[] = [];
  for (const replica of replicas) {
    const url = await serving(replica);
    const text = await (await fetch(`${url}/metrics`)).text();
    const objects = (kind: string) =>
      metricValue(text, "rudder_shard_objects", { ring: RING, shard: replica.name, kind }) ?? 0;
    const all = samples.get(replica)!;
    const n = (probes.get(replica) ?? 0) + 1;
    probes.set(replica, n);
    result.push({
      name: replica.name,
      shardlings: objects("Shardling"),
      configMaps: objects("ConfigMap"),
      rssBytes: median(all),
      rssRange: [Math.min(...all), Math.max(...all)],
      rssRounds: rounds.get(replica)!,
      peakRssBytes: statusBytes(replica.pid, "VmHWM") ?? 0,
      anonBytes: statusBytes(replica.pid, "RssAnon") ?? 0,
      probe: await probe(replica, n),
      peakShardlings: Math.max(peaks.get(replica.name) ?? 0, objects("Shardling")),
      sharder: sharder === replica.name,
    });
  }
  return result;
}

/**
 * Runs the measure against the control plane of `kubeconfig` in a namespace of its own, and
 * stops every replica it started, whatever happens.
 */
export async function runShardingBench(
  kubeconfig: string,
  client: Client,
  options: ShardingBenchOptions,
  log: (message: string) => void = (message) => process.stderr.write(`sharding: ${message}\n`),
): Promise<ShardingBenchResult> {
  const namespace = `bench-sharding-${Date.now().toString(36)}`;
  const recordDir = mkdtempSync(join(os.tmpdir(), "rudder-bench-sharding-"));
  const replicas = new ShardReplicas({
    kubeconfig,
    namespace,
    recordDir,
    ...LEASE,
    env: { MEMORY_PROBE: "1" },
    runtime: options.runtime === "bun"
      ? { executable: BUN, deno: false }
      : { executable: "Deno" in globalThis ? process.execPath : "deno", deno: true },
  });
  const load = { before: loadavg(), after: "" };
  const settleSeconds: Record<string, number> = {};
  const peaks: Peaks = new Map();
  const probes = new Map<Replica, number>();
  let sharder: string | undefined;
  try {
    await installCRD(client);
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    const fill = performance.now();
    await createShardlings(client, namespace, "s", options.objects, 32);
    log(`${options.objects} Shardlings in ${((performance.now() - fill) / 1000).toFixed(1)} s`);

    const solo = async (name: string, phase: string) => {
      const replica = replicas.start(name);
      await serving(replica);
      settleSeconds[phase] = await settle(client, namespace, [name], replicas, log, peaks);
      await sleep(options.idleSettleMs);
      const [result] = await figures([replica], peaks, name, probes);
      await replicas.stop(replica, "SIGTERM");
      log(`${phase}: ${JSON.stringify(result)} (settled in ${settleSeconds[phase].toFixed(1)} s)`);
      return result;
    };
    const soloFirst = await solo("solo-first", "solo-first");

    const names = Array.from({ length: options.replicas }, (_, i) => `shard-${i + 1}`);
    const shardsStarted = Date.now();
    const shards = names.map((name) => replicas.start(name));
    await Promise.all(shards.map(serving));
    settleSeconds.shards = await settle(client, namespace, names, replicas, log, peaks);
    await sleep(options.idleSettleMs);
    sharder = await sharderOf(client, namespace);
    const times = await acquired(client, namespace, [...names, sharderLeaseName(RING)]);
    const joinedAfter = Object.fromEntries(
      Object.entries(times).map((
        [name, at],
      ) => [name === sharderLeaseName(RING) ? "sharder" : name, (at - shardsStarted) / 1000]),
    );
    log(`joined after: ${JSON.stringify(joinedAfter)}`);
    const shardFigures = await figures(shards, peaks, sharder, probes);
    log(
      `shards: ${JSON.stringify(shardFigures)} (settled in ${settleSeconds.shards.toFixed(1)} s)`,
    );

    const before = await assignments(client, namespace);
    const joining = replicas.start(`shard-${options.replicas + 1}`);
    await serving(joining);
    // Until the sharder has seen the new replica the ring looks settled on the others already.
    const joined = performance.now();
    while (![...(await assignments(client, namespace)).values()].includes(joining.name)) {
      if (performance.now() - joined > SETTLE_TIMEOUT_MS) throw new Error("nothing moved to it");
      await sleep(250);
    }
    await settle(client, namespace, [...names, joining.name], replicas, log);
    settleSeconds.join = (performance.now() - joined) / 1000;
    const after = await assignments(client, namespace);
    const moved = [...before].filter(([name, shard]) => after.get(name) !== shard).length;
    const movedFraction = moved / before.size;
    log(`a replica joined: ${moved} of ${before.size} objects moved`);
    for (const replica of replicas.running) await replicas.stop(replica, "SIGTERM");

    const soloLast = await solo("solo-last", "solo-last");
    load.after = loadavg();
    return {
      options,
      soloFirst,
      soloLast,
      shards: shardFigures,
      sharder,
      joinedAfter,
      movedFraction,
      settleSeconds,
      load,
    };
  } finally {
    await replicas.killAll();
    await client.delete({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } })
      .catch(() => {});
    rmSync(recordDir, { recursive: true, force: true });
  }
}

const sortedEntries = (record: Record<string, number>) =>
  Object.entries(record).sort(([a], [b]) => a.localeCompare(b));
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const pct = (fraction: number) => `${(fraction * 100).toFixed(1)} %`;

/** The result as a Markdown section. */
export function shardingMarkdown(result: ShardingBenchResult): string {
  const { options } = result;
  const even = options.objects / options.replicas;
  const solo = Math.min(result.soloFirst.rssBytes, result.soloLast.rssBytes);
  const live = (f: ReplicaFigures) => f.probe?.after?.heap ?? f.probe?.before.heap;
  const soloLive = Math.min(live(result.soloFirst) ?? NaN, live(result.soloLast) ?? NaN);
  const afterGC = (f: ReplicaFigures) => f.probe?.after?.rss;
  const soloAfterGC = Math.min(afterGC(result.soloFirst) ?? NaN, afterGC(result.soloLast) ?? NaN);
  const ratio = (value: number | undefined, of: number) =>
    value === undefined || !Number.isFinite(of) ? "" : (value / of).toFixed(2);
  const row = (f: ReplicaFigures, name: string, share: string) =>
    `| ${name}${
      f.sharder && name.startsWith("shard") ? " (sharder)" : ""
    } | ${f.shardlings} | ${f.peakShardlings} | ${share} | ${f.configMaps} | ${mib(f.rssBytes)} (${
      mib(f.rssRange[0])
    }–${mib(f.rssRange[1])}) | ${(f.rssBytes / solo).toFixed(2)} | ${mib(f.peakRssBytes)} | ${
      mib(f.anonBytes)
    } | ${live(f) === undefined ? "" : mib(live(f)!)} | ${ratio(live(f), soloLive)} | ${
      f.probe?.after ? mib(f.probe.after.rss) : ""
    } | ${ratio(afterGC(f), soloAfterGC)} |`;
  const lines = [
    `## Sharding: ${options.replicas} replicas, ${options.objects} Shardlings with a ConfigMap each`,
    "",
    `Replicas on ${options.runtime === "deno" ? "Deno" : "Bun"}; load ${result.load.before} → ${
      result.load.after || "?"
    }; the sharder while the shards were measured: ${result.sharder ?? "?"}.`,
    "",
    "| replica | Shardlings cached | most while settling | vs even share | ConfigMaps cached | RSS MiB (min–max) | RSS / one replica holding all | peak RSS MiB | anonymous MiB | live heap MiB | live heap / one holding all | RSS after full GC MiB | RSS after full GC / one holding all |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...result.shards.map((f) => row(f, f.name, pct(f.shardlings / even - 1))),
    ...[result.soloFirst, result.soloLast].map((f) => row(f, `${f.name} (all objects)`, "")),
    "",
    "RSS: the median of " + `${RSS_ROUNDS} rounds of ${RSS_SAMPLES} readings, ` +
    `${RSS_ROUND_PAUSE_MS / 1000} s apart, after ${options.idleSettleMs / 1000} s idle; ` +
    "peak RSS: VmHWM, the most the process ever held; live heap: the JavaScript heap after a " +
    "full collection (Bun: JSC's heapSize; Deno: V8's heapUsed), then RSS after it. Each " +
    "ratio is to the smaller of the two replicas holding all.",
    "",
    ...(result.joinedAfter
      ? [
        `Started together, the shards acquired their Leases after ${
          sortedEntries(result.joinedAfter).filter(([n]) => n !== "sharder")
            .map(([n, s]) => `${n} ${s.toFixed(1)} s`).join(", ")
        }; the sharder Lease was acquired after ${
          result.joinedAfter.sharder?.toFixed(1) ?? "?"
        } s.`,
        "",
      ]
      : []),
    `A replica joining ${options.replicas} moved ${pct(result.movedFraction)} of the objects ` +
    `(ideal: ${pct(1 / (options.replicas + 1))}).`,
    "",
    `Settled in: ${
      Object.entries(result.settleSeconds).map(([phase, s]) => `${phase} ${s.toFixed(1)} s`)
        .join(", ")
    }.`,
    "",
  ];
  return lines.join("\n");
}

function parseOptions(args: string[]): ShardingBenchOptions & { name?: string } {
  const { values } = parseArgs({
    args,
    options: {
      objects: { type: "string", default: "3000" },
      replicas: { type: "string", default: "3" },
      runtime: { type: "string", default: "Deno" in globalThis ? "deno" : "bun" },
      "idle-settle-ms": { type: "string", default: "3000" },
      name: { type: "string" },
    },
  });
  const number = (name: "objects" | "replicas" | "idle-settle-ms") => {
    const n = Number(values[name]);
    if (!(n >= 0) || !Number.isInteger(n)) throw new Error(`--${name} must be a whole number`);
    return n;
  };
  if (values.runtime !== "deno" && values.runtime !== "bun") {
    throw new Error(`--runtime must be deno or bun, not ${values.runtime}`);
  }
  return {
    objects: number("objects"),
    replicas: number("replicas"),
    runtime: values.runtime,
    idleSettleMs: number("idle-settle-ms"),
    name: values.name,
  };
}

async function main(): Promise<void> {
  const { name, ...options } = parseOptions(process.argv.slice(2));
  const env = new Environment({ crds: [Shardling] });
  const stop = () => void env.stop().finally(() => process.exit(130));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  let result: ShardingBenchResult;
  const date = new Date();
  try {
    const config = await env.start();
    result = await runShardingBench(env.kubeconfigPath, newClient(config), options);
  } finally {
    await env.stop();
  }
  const commit = (() => {
    try {
      return execFileSync("git", ["-C", ROOT, "rev-parse", "--short", "HEAD"], { encoding: "utf8" })
        .trim();
    } catch {
      return "unknown";
    }
  })();
  const text = [
    `# Sharding benchmark, ${date.toISOString()}`,
    "",
    `- ${os.cpus()[0]?.model ?? "CPU"}, ${os.cpus().length} cores, ${
      (os.totalmem() / 2 ** 30).toFixed(1)
    } GiB; Rudder at ${commit}`,
    "",
    shardingMarkdown(result),
  ].join("\n");
  mkdirSync(RESULTS, { recursive: true });
  const base = `${date.toISOString().slice(0, 10)}-sharding${name ? `-${name}` : ""}`;
  writeFileSync(join(RESULTS, `${base}.md`), text);
  writeFileSync(
    join(RESULTS, `${base}.json`),
    JSON.stringify({ date: date.toISOString(), commit, result }, null, 2) + "\n",
  );
  console.log(text);
}

if (import.meta.main) {
  try {
    await main();
  } catch (err) {
    process.stderr.write(`sharding: ${err instanceof Error ? err.stack : err}\n`);
    process.exitCode = 1;
  }
}
