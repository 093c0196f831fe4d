/**
 * What every TypeScript contender of the benchmark suite shares: its command-line arguments,
 * memory and CPU readings, and the JSON lines it reports to bench/suite.ts.
 *
 * @module
 */

// No `node:` module and no `process` global: on Deno either starts its Node compatibility layer,
// which the scaffold's operator does not load (bench/README.md, "Deno's Node layer").
import { readTextFileSync } from "../../lib/util/files.ts";
import { deno, exit, getEnv, nodeProcess, onSignal, unrefTimer } from "../../lib/util/runtime.ts";

/** Annotations the harness and every reconciler use (the Go peer uses the same names). */
export const TOKEN_ANNOTATION = "bench.rudder.dev/token";
export const SENT_ANNOTATION = "bench.rudder.dev/sent";
export const SEQ_ANNOTATION = "bench.rudder.dev/seq";

/** Full collections before memory is read, and the milliseconds between them. */
const GC_ROUNDS = 3;
const GC_PAUSE_MS = 10;

/** Arguments bench/suite.ts passes to every contender; each mode uses some of them. */
export interface ContenderArgs {
  /** `sync`, `reconcile`, `latency` or `idle`. */
  mode: string;
  /** Path of the kubeconfig file of the benchmark's control plane. */
  kubeconfig: string;
  /** Namespace holding the ConfigMaps. */
  namespace: string;
  /** How many ConfigMaps the namespace holds. */
  objects: number;
  /** Reconcile: the value the reconciler patches every object's annotation to; latency: the run's prefix. */
  token: string;
  /** Reconcile and latency: `maxConcurrentReconciles`. */
  workers: number;
  /** Latency: how many changes the harness makes. */
  count: number;
  /** Idle: port of the health probe server. */
  port: number;
  /** Sync: objects per page of the informer's paged list (0: the default). */
  pageSize: number;
  /** Sync: list with a streaming list (`sendInitialEvents`) instead of pages. */
  streamingList: boolean;
  /** Floor: `list` (one GET) or `stream` (a watch with sendInitialEvents). */
  wire: string;
  /** Floor: whether to accept a gzipped body. */
  gzip: boolean;
  /** Sync: after the sync line, keep the informer running until SIGTERM (the relist measure). */
  hold: boolean;
  /** Milliseconds after which the contender gives up and exits non-zero. */
  timeoutMs: number;
  /** Latency (the churn measure): report the live heap this often, 0 for never. */
  heapEveryMs: number;
}

/** Parses the arguments and arms the contender's deadline. */
export function contenderArgs(args: string[] = commandLine()): ContenderArgs {
  const values = parseOptions(args, {
    mode: "sync",
    kubeconfig: "",
    namespace: "",
    objects: "0",
    token: "",
    workers: "1",
    count: "0",
    port: "0",
    "page-size": "0",
    "streaming-list": false,
    timeout: "600s",
    wire: "list",
    gzip: "on",
    hold: false,
    "heap-every-ms": "0",
  });
  if (!values.kubeconfig || !values.namespace) {
    throw new Error("usage: --mode <m> --kubeconfig <path> --namespace <ns> [...]");
  }
  const timeoutMs = Number(values.timeout.replace(/s$/, "")) * 1000;
  unrefTimer(setTimeout(() => {
    console.error(`no result after ${timeoutMs / 1000} s: giving up`);
    exit(1);
  }, timeoutMs));
  return {
    mode: values.mode,
    kubeconfig: values.kubeconfig,
    namespace: values.namespace,
    objects: Number(values.objects),
    token: values.token,
    workers: Number(values.workers),
    count: Number(values.count),
    port: Number(values.port),
    pageSize: Number(values["page-size"]),
    streamingList: values["streaming-list"],
    wire: values.wire,
    gzip: values.gzip !== "off",
    hold: values.hold,
    timeoutMs,
    heapEveryMs: Number(values["heap-every-ms"]),
  };
}

/** The arguments after the script's path. */
function commandLine(): string[] {
  return deno()?.args ?? nodeProcess().argv.slice(2);
}

/**
 * `--name value`, `--name=value` and (for the options whose default is a boolean) `--name`,
 * over `defaults`; throws on an option it does not know.
 */
function parseOptions<T extends Record<string, string | boolean>>(args: string[], defaults: T): T {
  const values: Record<string, string | boolean> = { ...defaults };
  for (let i = 0; i < args.length; i++) {
    const match = /^--([^=]+)(?:=(.*))?$/.exec(args[i]);
    if (!match || !(match[1] in defaults)) throw new Error(`unknown argument ${args[i]}`);
    const [, name, inline] = match;
    if (typeof defaults[name] === "boolean") {
      values[name] = inline === undefined || inline === "true";
    } else if (inline !== undefined) values[name] = inline;
    else if (i + 1 < args.length) values[name] = args[++i];
    else throw new Error(`--${name} needs a value`);
  }
  return values as T;
}

/** The runtime's heap and resident-set figures (`process.memoryUsage()`). */
export function memoryUsage(): { rss: number; heapUsed: number } {
  return deno()?.memoryUsage() ?? nodeProcess().memoryUsage();
}

/**
 * Forces full garbage collections, then returns the resident set size and the live heap. One
 * collection frees ArrayBuffers but releases their backing stores only later, so this collects
 * {@linkcode GC_ROUNDS} times with a short pause between. Bun has `Bun.gc(true)`. Deno needs
 * `--v8-flags=--expose-gc` and collects as V8's memory reducer does (`flavor: "last-resort"`: the
 * heap shrunk to what it holds and its free pages handed back), which is what Go's
 * `debug.FreeOSMemory()` does for the Go peer and what an idle Deno process does by itself 30 s
 * after a burst (bench/README.md, "Memory on Deno"). `RUDDER_BENCH_GC=plain` keeps V8's plain full
 * collection (`rudder-deno:plain-gc`, the measure before 2026-12-02).
 */
export async function memoryAfterGC(): Promise<{ rss: number; heap: number }> {
  const g = globalThis as {
    Bun?: { gc(force: boolean): void };
    gc?: (options?: { type: string; execution: string; flavor?: string }) => void;
  };
  const v8gc = g.gc;
  const reduce = getEnv("RUDDER_BENCH_GC") !== "plain";
  const collect = g.Bun ? () => g.Bun!.gc(true) : v8gc &&
    (() => v8gc({ type: "major", execution: "sync", ...reduce && { flavor: "last-resort" } }));
  if (!collect) throw new Error("no forced GC: run Deno with --v8-flags=--expose-gc");
  for (let round = 0; round < GC_ROUNDS; round++) {
    collect();
    await new Promise((resolve) => setTimeout(resolve, GC_PAUSE_MS));
  }
  const usage = memoryUsage();
  return { rss: usage.rss, heap: usage.heapUsed };
}

/**
 * A process's resident memory as /proc/<pid>/status splits it, in bytes: `rss` (VmRSS), its
 * anonymous part `anon` (RssAnon: heaps, stacks, JIT code, the runtime's own allocations) and
 * its file-backed part `file` (RssFile: the pages of the executable and the libraries that were
 * touched, which the kernel can drop and reread and every process of that executable shares).
 */
export function residentMemory(pid: number | "self" = "self"): {
  rss: number;
  anon: number;
  file: number;
} {
  const status = readTextFileSync(`/proc/${pid}/status`);
  const kib = (field: string) => {
    const value = Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"))?.[1]);
    if (!Number.isFinite(value)) throw new Error(`no ${field} in /proc/${pid}/status`);
    return value * 1024;
  };
  return { rss: kib("VmRSS"), anon: kib("RssAnon"), file: kib("RssFile") };
}

/** This process's user plus system CPU seconds, from /proc/self/stat (USER_HZ 100). */
export function cpuSeconds(): number {
  const stat = readTextFileSync("/proc/self/stat");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

/** The value at quantile `q` of ascending `sorted` (nearest rank below). */
export function quantile(sorted: number[], q: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.floor((sorted.length - 1) * q)];
}

/** Resolves when the process gets SIGTERM or SIGINT (how bench/suite.ts stops a contender). */
export function terminated(): Promise<void> {
  return new Promise((resolve) => {
    const offTerm = onSignal("SIGTERM", () => done());
    const offInt = onSignal("SIGINT", () => done());
    const done = () => {
      offTerm();
      offInt();
      resolve();
    };
  });
}

/** Prints one JSON line for bench/suite.ts. */
export function report(result: Record<string, number | boolean>): void {
  console.log(JSON.stringify(result));
}
