/**
 * The memory probe the sharding benchmark (bench/sharding.ts) reads: with MEMORY_PROBE=1, each
 * SIGUSR2 makes the replica print one JSON line `{"memoryProbe": {...}}` with its resident set
 * and heap as they are, then the same after a full garbage collection where the runtime offers
 * one (Bun's `Bun.gc(true)`; on V8, a `gc` function obtained for the probe alone, so that the
 * replica's own code still sees no `gc`), so that what is live can be told from what the engine
 * merely keeps. Not for production: a full collection stops the replica for as long as it takes.
 *
 * @module
 */

import process from "node:process";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** One reading of the probe, bytes. */
export interface MemoryReading {
  /** Resident set. */
  rss: number;
  /** The JavaScript heap in use (V8's `heapUsed`, JSC's `heapSize`). */
  heap: number;
  /** Memory the engine holds outside the JavaScript heap for its objects (V8's `external`, JSC's `extraMemorySize`). */
  external: number;
  /** Bun only: what mimalloc has committed (`bun:jsc`'s `memoryUsage().currentCommit`). */
  committed?: number;
}

/** What one SIGUSR2 prints. */
export interface MemoryProbe {
  /** The probe's sequence number in this process, from 1. */
  n: number;
  /** Before the collection. */
  before: MemoryReading;
  /** After a full collection, if one ran. */
  after?: MemoryReading;
  /** The runtime. */
  runtime: "deno" | "bun" | "node";
}

interface JSC {
  heapStats(): { heapSize: number; extraMemorySize: number };
  memoryUsage(): { currentCommit: number };
}

const globals: { Deno?: unknown; Bun?: { gc(force: boolean): void } } = globalThis;

/** V8's `gc`, from a context of its own: the flag exposes it there, not on this global. */
function v8GC(): (() => void) | undefined {
  try {
    setFlagsFromString("--expose-gc");
    const gc: unknown = runInNewContext("typeof gc === 'function' ? gc : undefined");
    return typeof gc === "function" ? () => gc() : undefined;
  } catch {
    return undefined;
  }
}

async function loadJSC(): Promise<JSC | undefined> {
  if (!globals.Bun) return undefined;
  const specifier = "bun:jsc"; // a variable: only Bun resolves it
  const jsc: JSC = await import(specifier);
  return jsc;
}

function reading(jsc: JSC | undefined): MemoryReading {
  const usage = process.memoryUsage();
  if (!jsc) return { rss: usage.rss, heap: usage.heapUsed, external: usage.external };
  const stats = jsc.heapStats();
  return {
    rss: usage.rss,
    heap: stats.heapSize,
    external: stats.extraMemorySize,
    committed: jsc.memoryUsage().currentCommit,
  };
}

/** Installs the probe when MEMORY_PROBE=1. */
export async function installMemoryProbe(): Promise<void> {
  if (process.env.MEMORY_PROBE !== "1") return;
  const jsc = await loadJSC();
  const bun = globals.Bun;
  const collect = bun ? () => bun.gc(true) : v8GC();
  let n = 0;
  process.on("SIGUSR2", () => {
    const before = reading(jsc);
    collect?.();
    const collected = collect !== undefined;
    const probe: MemoryProbe = {
      n: ++n,
      before,
      ...(collected ? { after: reading(jsc) } : {}),
      runtime: globals.Deno ? "deno" : globals.Bun ? "bun" : "node",
    };
    process.stdout.write(`${JSON.stringify({ memoryProbe: probe })}\n`);
  });
}
