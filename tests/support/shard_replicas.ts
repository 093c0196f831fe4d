// Replicas of the sharded example operator (examples/sharded-operator) as separate processes of
// the runtime running the caller, against one API server: started with a shard name, stopped
// with a signal, their metrics scraped, their reconcile records read. Every process started is
// tracked, so `killAll()` (in `after`) leaves none behind even when a test fails.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { DENO_V8_FLAGS, operatorEnv } from "../../cli/project.ts";
import { ConfigMap } from "../../lib/api/builtins.ts";
import type { Client } from "../../lib/client/client.ts";
import { Shardling } from "../../examples/sharded-operator/api/shardling.ts";
import { RING } from "../../examples/sharded-operator/main.ts";

const MAIN = fileURLToPath(new URL("../../examples/sharded-operator/main.ts", import.meta.url));

/** One replica process. */
export interface Replica {
  /** Its shard name (POD_NAME). */
  name: string;
  child: ChildProcess;
  pid: number;
  /** Its record file (RECORD_FILE). */
  recordFile: string;
  /** Wall-clock milliseconds when it was spawned. */
  startedAt: number;
  /** Wall-clock milliseconds when it was seen to exit, if it has. */
  exitedAt?: number;
  /** Resolves with its exit code (null after a signal). */
  exited: Promise<number | null>;
  /** Everything it wrote to stdout and stderr. */
  output(): string;
  /** Resolves with its metrics server's URL, once it serves. */
  metricsURL: Promise<string>;
  /** Resolves with its health server's URL, once it serves. */
  healthURL: Promise<string>;
}

/** Settings every replica of one set shares. */
export interface ShardReplicaSettings {
  kubeconfig: string;
  /** Where the shard Leases live (POD_NAMESPACE). */
  namespace: string;
  /** Directory of the record files, one per process. */
  recordDir: string;
  /** Shard Lease timings in milliseconds. */
  leaseDuration: number;
  renewDeadline: number;
  retryPeriod: number;
  /** More environment for every replica. */
  env?: Record<string, string>;
  /**
   * The runtime's executable (default: the one running the caller) and whether it is Deno
   * (default: whether the caller runs on Deno).
   */
  runtime?: { executable: string; deno: boolean };
}

/** The shard label of the example's ring. */
export const SHARD_LABEL = `shard.rudder.dev/${RING}`;
/** The drain label of the example's ring. */
export const DRAIN_LABEL = `drain.rudder.dev/${RING}`;

/** Reads `Serving <name> on <url>` from the JSON log lines a replica writes. */
function servedURL(line: string, name: string): string | undefined {
  if (!line.startsWith("{")) return undefined;
  try {
    const record = JSON.parse(line) as
      & { properties?: Record<string, unknown> }
      & Record<
        string,
        unknown
      >;
    const fields = { ...record, ...record.properties };
    if (fields.name === name && typeof fields.url === "string") return fields.url;
  } catch {
    // Not a log record.
  }
  return undefined;
}

/** The replicas of one test or benchmark. */
export class ShardReplicas {
  readonly #settings: ShardReplicaSettings;
  readonly #all = new Set<Replica>();
  #count = 0;

  constructor(settings: ShardReplicaSettings) {
    this.#settings = settings;
  }

  /** Every replica started, running or not. */
  get all(): Replica[] {
    return [...this.#all];
  }

  /** The replicas still running. */
  get running(): Replica[] {
    return this.all.filter((r) => r.exitedAt === undefined);
  }

  /** Starts a replica with shard name `name` (a restart when one of that name ran before). */
  start(name: string, env: Record<string, string> = {}): Replica {
    const s = this.#settings;
    const deno = s.runtime?.deno ?? "Deno" in globalThis;
    const args = deno ? ["run", "-A", `--v8-flags=${DENO_V8_FLAGS.join(",")}`, MAIN] : [MAIN];
    const recordFile = join(s.recordDir, `${name}-${++this.#count}.log`);
    const child = spawn(s.runtime?.executable ?? process.execPath, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        ...operatorEnv(deno ? "deno" : "bun"),
        DENO_NO_UPDATE_CHECK: "1",
        KUBECONFIG: s.kubeconfig,
        POD_NAME: name,
        POD_NAMESPACE: s.namespace,
        METRICS_BIND_ADDRESS: "127.0.0.1:0",
        METRICS_SERVING: "insecure-http",
        HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
        SHARD_LEASE_DURATION_MS: String(s.leaseDuration),
        SHARD_RENEW_DEADLINE_MS: String(s.renewDeadline),
        SHARD_RETRY_PERIOD_MS: String(s.retryPeriod),
        RECORD_FILE: recordFile,
        ...s.env,
        ...env,
      },
    });
    let output = "";
    let pending = "";
    let resolveMetrics!: (url: string) => void;
    let resolveHealth!: (url: string) => void;
    const metricsURL = new Promise<string>((resolve) => (resolveMetrics = resolve));
    const healthURL = new Promise<string>((resolve) => (resolveHealth = resolve));
    const onData = (chunk: unknown) => {
      const text = String(chunk);
      output = (output + text).slice(-200_000);
      pending += text;
      let newline;
      while ((newline = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        const metrics = servedURL(line, "metrics");
        if (metrics) resolveMetrics(metrics);
        const health = servedURL(line, "health");
        if (health) resolveHealth(health);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    const replica: Replica = {
      name,
      child,
      pid: child.pid!,
      recordFile,
      startedAt: Date.now(),
      exited: new Promise((resolve) => {
        child.on("exit", (code) => {
          replica.exitedAt = Date.now();
          resolve(code);
        });
      }),
      output: () => output,
      metricsURL,
      healthURL,
    };
    this.#all.add(replica);
    return replica;
  }

  /**
   * Sends `signal` to a replica and waits for it to exit (SIGKILL after `timeoutMs`); resolves
   * with the wall-clock time it was sent.
   */
  async stop(replica: Replica, signal: "SIGTERM" | "SIGKILL", timeoutMs = 30_000): Promise<number> {
    const sent = Date.now();
    if (replica.exitedAt !== undefined) return sent;
    // process.kill, not child.kill: Deno's ChildProcess then reports the signal correctly.
    process.kill(replica.pid, signal);
    const timer = setTimeout(() => replica.child.kill("SIGKILL"), timeoutMs);
    await replica.exited;
    clearTimeout(timer);
    return sent;
  }

  /** Kills every replica still running, at once. */
  async killAll(): Promise<void> {
    const running = this.running;
    for (const replica of running) {
      try {
        replica.child.kill("SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await Promise.all(running.map((replica) => replica.exited));
  }

  /** The records of every replica so far, parsed, in file order. */
  records(): ReconcileRecord[] {
    const out: ReconcileRecord[] = [];
    for (const replica of this.#all) {
      if (!existsSync(replica.recordFile)) continue;
      for (const line of readFileSync(replica.recordFile, "utf8").split("\n")) {
        const [event, key, pid, at] = line.split(" ");
        if (!event || !at) continue;
        out.push({
          event: event as ReconcileRecord["event"],
          key,
          pid: Number(pid),
          at: Number(at),
          replica,
        });
      }
    }
    return out;
  }
}

/** One line of a record file. */
export interface ReconcileRecord {
  event: "start" | "end" | "finalize";
  key: string;
  pid: number;
  /** Wall-clock milliseconds. */
  at: number;
  replica: Replica;
}

/** A reconcile of one object by one process: from its start to its end (or the process's end). */
export interface ReconcileInterval {
  key: string;
  pid: number;
  from: number;
  to: number;
  /** False when the process died before it ended (`to` is then when it exited, or now). */
  ended: boolean;
}

/** The reconcile intervals in `records`. */
export function intervals(records: ReconcileRecord[]): ReconcileInterval[] {
  const open = new Map<string, ReconcileRecord>(); // `${pid} ${key}` → its start
  const out: ReconcileInterval[] = [];
  for (const r of records) {
    const id = `${r.pid} ${r.key}`;
    if (r.event === "start") open.set(id, r);
    if (r.event === "end") {
      const start = open.get(id);
      if (!start) continue;
      open.delete(id);
      out.push({ key: r.key, pid: r.pid, from: start.at, to: r.at, ended: true });
    }
  }
  for (const start of open.values()) {
    out.push({
      key: start.key,
      pid: start.pid,
      from: start.at,
      to: start.replica.exitedAt ?? Date.now(),
      ended: false,
    });
  }
  return out;
}

/**
 * Pairs of reconciles of one object by two processes that overlap in time: what sharding must
 * never do.
 */
export function overlaps(all: ReconcileInterval[]): [ReconcileInterval, ReconcileInterval][] {
  const byKey = new Map<string, ReconcileInterval[]>();
  for (const i of all) byKey.set(i.key, [...byKey.get(i.key) ?? [], i]);
  const out: [ReconcileInterval, ReconcileInterval][] = [];
  for (const list of byKey.values()) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length && list[j].from < list[i].to; j++) {
        if (list[j].pid !== list[i].pid) out.push([list[i], list[j]]);
      }
    }
  }
  return out;
}

/** Reads one Prometheus sample's value from `text` (the sum over series matching `labels`). */
export function metricValue(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  let total: number | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const matches = Object.entries(labels).every(([key, value]) =>
      line.includes(`${key}="${value}"`)
    );
    if (!matches) continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    total = (total ?? 0) + value;
  }
  return total;
}

/** Creates `count` Shardlings named `<prefix>-<i>` in `namespace`, `concurrency` at a time. */
export async function createShardlings(
  client: Client,
  namespace: string,
  prefix: string,
  count: number,
  concurrency = 16,
): Promise<void> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
  for (let i = 0; i < names.length; i += concurrency) {
    await Promise.all(
      names.slice(i, i + concurrency).map((name) =>
        client.create({
          apiVersion: Shardling.apiVersion,
          kind: "Shardling",
          metadata: { name, namespace },
          spec: { data: { name } },
        })
      ),
    );
  }
}

/** The shard label of every Shardling in `namespace` not being deleted, by name. */
export async function assignments(
  client: Client,
  namespace: string,
): Promise<Map<string, string | undefined>> {
  const { items } = await client.list(Shardling, { namespace });
  return new Map(
    items.filter((item) => !item.metadata?.deletionTimestamp)
      .map((item) => [item.metadata!.name!, item.metadata?.labels?.[SHARD_LABEL]]),
  );
}

/**
 * Why the Shardlings of `namespace` are not settled on `shards` yet, or undefined when they
 * are: each on one of `shards`, not draining, reconciled there at its generation, and its
 * ConfigMap on the same shard.
 */
export async function unsettled(
  client: Client,
  namespace: string,
  shards: string[],
): Promise<string | undefined> {
  const { items } = await client.list(Shardling, { namespace });
  const live = items.filter((item) => !item.metadata?.deletionTimestamp);
  const byName = new Map(live.map((item) => [item.metadata!.name!, item]));
  for (const item of live) {
    const name = item.metadata!.name!;
    const shard = item.metadata?.labels?.[SHARD_LABEL];
    if (!shard || !shards.includes(shard)) return `${name} is on shard ${shard}`;
    if (item.metadata?.labels?.[DRAIN_LABEL]) return `${name} is draining`;
    // The shard it is on has reconciled it since it arrived there.
    if (item.status?.shard !== shard) return `${name} was last reconciled by ${item.status?.shard}`;
    if (item.status?.observedGeneration !== item.metadata?.generation) {
      return `${name} is not reconciled at generation ${item.metadata?.generation}`;
    }
  }
  const { items: configMaps } = await client.list(ConfigMap, { namespace });
  let children = 0;
  for (const configMap of configMaps) {
    const owner = configMap.metadata?.ownerReferences?.find((ref) => ref.controller);
    if (!owner || owner.kind !== "Shardling") continue;
    const parent = byName.get(owner.name);
    if (!parent) continue;
    children++;
    const shard = configMap.metadata?.labels?.[SHARD_LABEL];
    if (shard !== parent.metadata?.labels?.[SHARD_LABEL]) {
      return `ConfigMap ${configMap.metadata?.name} is on shard ${shard}, its owner elsewhere`;
    }
  }
  if (children < live.length) return `${live.length - children} Shardlings have no ConfigMap yet`;
  return undefined;
}

/** Resident memory of process `pid` in bytes (Linux), or undefined once it is gone. */
export function residentBytes(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = status.match(/^VmRSS:\s+(\d+) kB/m)?.[1];
    return kib ? Number(kib) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
