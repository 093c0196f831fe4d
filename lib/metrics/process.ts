/**
 * The process metrics of client_golang's process collector, which controller-runtime registers:
 * CPU time, memory, start time, file descriptors and network bytes, read from Linux's `/proc` at
 * scrape time on Deno and on Bun alike. Elsewhere (or without read permission on Deno) the
 * runtime's own figures stand in for CPU, resident memory and start time, and the rest are left
 * out rather than reported as zero.
 *
 * @module
 */

import { countDirEntriesSync, readTextFileSync } from "../util/files.ts";
import { nodeProcess, residentBytes } from "../util/runtime.ts";
import { getLogger } from "@logtape/logtape";
import { Counter, Gauge } from "./metric.ts";
import { family, type Registry, registry as defaultRegistry } from "./registry.ts";

const logger = getLogger(["rudder", "metrics"]);

/** Clock ticks per second of `/proc/<pid>/stat` times: Linux's USER_HZ, 100 (as in Go's procfs). */
const USER_HZ = 100;

/**
 * Options of {@linkcode registerProcessMetrics}.
 *
 * @example
 * ```ts
 * import { type ProcessMetricsOptions, registerProcessMetrics } from "./process.ts";
 *
 * const options: ProcessMetricsOptions = { procfs: "/proc" };
 * registerProcessMetrics(undefined, options);
 * ```
 */
export interface ProcessMetricsOptions {
  /** Where procfs is mounted; default `/proc`. The process reads `<procfs>/self/…`. */
  procfs?: string;
}

/** What `/proc/self/stat` says, in the units the metrics want. */
interface Stat {
  cpuSeconds: number;
  startTicks: number;
  virtualBytes: number;
}

/** Reads one process's procfs files; every method throws when its file cannot be read. */
class ProcFS {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }

  #read(path: string): string {
    return readTextFileSync(`${this.root}/${path}`);
  }

  stat(): Stat {
    const text = this.#read("self/stat");
    // The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
    const fields = text.slice(text.lastIndexOf(")") + 2).trim().split(/\s+/);
    // fields[0] is field 3 (state): utime is field 14, stime 15, starttime 22, vsize 23.
    const number = (field: number) => {
      const value = Number(fields[field - 3]);
      if (!Number.isFinite(value)) {
        throw new Error(`field ${field} of /proc/self/stat is not a number`);
      }
      return value;
    };
    return {
      cpuSeconds: (number(14) + number(15)) / USER_HZ,
      startTicks: number(22),
      virtualBytes: number(23),
    };
  }

  /** Seconds since the epoch at which the system booted (`btime` of `/proc/stat`). */
  bootTime(): number {
    const match = this.#read("stat").match(/^btime\s+(\d+)/m);
    if (!match) throw new Error("no btime in /proc/stat");
    return Number(match[1]);
  }

  residentBytes(): number {
    const match = this.#read("self/status").match(/^VmRSS:\s+(\d+)\s+kB/m);
    if (!match) throw new Error("no VmRSS in /proc/self/status");
    return Number(match[1]) * 1024;
  }

  openFds(): number {
    return countDirEntriesSync(`${this.root}/self/fd`);
  }

  /** The soft limit of a `/proc/self/limits` row; `unlimited` is 2^64 − 1, as in Go's procfs. */
  limit(row: string): number {
    const line = this.#read("self/limits").split("\n").find((l) => l.startsWith(row));
    if (!line) throw new Error(`no "${row}" in /proc/self/limits`);
    const soft = line.slice(row.length).trim().split(/\s+/)[0];
    return soft === "unlimited" ? 2 ** 64 - 1 : Number(soft);
  }

  /** Bytes received and sent over every interface (`/proc/self/net/dev`). */
  network(): { receive: number; transmit: number } {
    let receive = 0;
    let transmit = 0;
    for (const line of this.#read("self/net/dev").split("\n").slice(2)) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const fields = line.slice(colon + 1).trim().split(/\s+/);
      receive += Number(fields[0]);
      transmit += Number(fields[8]);
    }
    return { receive, transmit };
  }
}

/** Whether `read` works now: the metric it feeds is registered only then. */
function works(read: () => unknown): boolean {
  try {
    read();
    return true;
  } catch {
    return false;
  }
}

/**
 * Registers the process metrics on `registry` (default: the global {@linkcode registry}), with
 * client_golang's names and help texts: `process_cpu_seconds_total`,
 * `process_resident_memory_bytes`, `process_start_time_seconds`, and where Linux's `/proc` can
 * be read also `process_virtual_memory_bytes`, `process_virtual_memory_max_bytes`,
 * `process_open_fds`, `process_max_fds`, `process_network_receive_bytes_total` and
 * `process_network_transmit_bytes_total`. Values are read at scrape time. Calling it again for the
 * same registry changes nothing; a name the registry already holds from elsewhere (prom-client's
 * `collectDefaultMetrics`, say) is left to it.
 *
 * @example
 * ```ts
 * import { registerProcessMetrics } from "./process.ts";
 * import { Registry } from "@rudder/operator/metrics";
 *
 * const registry = new Registry();
 * registerProcessMetrics(registry);
 * console.log(registry.get("process_resident_memory_bytes")?.expose());
 * ```
 */
export function registerProcessMetrics(
  registry: Registry = defaultRegistry,
  options: ProcessMetricsOptions = {},
): void {
  const proc = new ProcFS(options.procfs ?? "/proc");
  const gauge = (name: string, help: string, read: () => number) => {
    if (!works(read)) return;
    register(name, () =>
      new Gauge({
        name,
        help,
        collect(gauge) {
          try {
            gauge.set(read());
          } catch (err) {
            logger.warn("Reading {metric} failed: {error}", { metric: name, error: err });
          }
        },
      }));
  };
  const counter = (name: string, help: string, read: () => number) => {
    if (!works(read)) return;
    register(name, () =>
      new Counter({
        name,
        help,
        collect(counter) {
          try {
            const value = read();
            counter.reset();
            counter.inc(value);
          } catch (err) {
            logger.warn("Reading {metric} failed: {error}", { metric: name, error: err });
          }
        },
      }));
  };
  const register = (name: string, create: () => Counter | Gauge) => {
    try {
      family(registry, name, create);
    } catch (err) {
      logger.debug("Not registering {metric}: {error}", { metric: name, error: err });
    }
  };

  const procStat = works(() => proc.stat());
  counter(
    "process_cpu_seconds_total",
    "Total user and system CPU time spent in seconds.",
    procStat ? () => proc.stat().cpuSeconds : () => {
      // Only where /proc cannot be read: Node's figure (on Deno it starts the Node layer).
      const usage = nodeProcess().cpuUsage();
      return (usage.user + usage.system) / 1e6;
    },
  );
  gauge("process_open_fds", "Number of open file descriptors.", () => proc.openFds());
  gauge(
    "process_max_fds",
    "Maximum number of open file descriptors.",
    () => proc.limit("Max open files"),
  );
  gauge(
    "process_virtual_memory_bytes",
    "Virtual memory size in bytes.",
    () => proc.stat().virtualBytes,
  );
  gauge(
    "process_virtual_memory_max_bytes",
    "Maximum amount of virtual memory available in bytes.",
    () => proc.limit("Max address space"),
  );
  gauge(
    "process_resident_memory_bytes",
    "Resident memory size in bytes.",
    works(() => proc.residentBytes()) ? () => proc.residentBytes() : residentBytes,
  );
  let startTime: number;
  try {
    startTime = proc.bootTime() + proc.stat().startTicks / USER_HZ;
  } catch {
    startTime = performance.timeOrigin / 1000;
  }
  gauge(
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds.",
    () => startTime,
  );
  counter(
    "process_network_receive_bytes_total",
    "Number of bytes received by the process over the network.",
    () => proc.network().receive,
  );
  counter(
    "process_network_transmit_bytes_total",
    "Number of bytes sent by the process over the network.",
    () => proc.network().transmit,
  );
}
