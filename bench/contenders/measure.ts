/**
 * What every TypeScript contender of the cache benchmark shares: its command-line arguments,
 * resident memory read after a forced GC, and the one JSON line it reports to bench/cache.ts.
 *
 * @module
 */

import process from "node:process";
import { setTimeout } from "node:timers";
import { parseArgs } from "node:util";

/**
 * A contender that has not finished after this long exits with an error, so none outlives a
 * harness that was killed outright (bench/cache.ts stops them itself on every other path).
 */
const DEADLINE_MS = 10 * 60_000;

/** Full collections before RSS is read, and the milliseconds between them. */
const GC_ROUNDS = 3;
const GC_PAUSE_MS = 10;

/** Arguments bench/cache.ts passes to every contender. */
export interface ContenderArgs {
  /** Path of the kubeconfig file of the benchmark's control plane. */
  kubeconfig: string;
  /** Namespace holding the benchmark's ConfigMaps. */
  namespace: string;
  /** How many ConfigMaps the namespace holds. */
  objects: number;
}

/** What a contender prints, as one JSON line, when it has synced. */
export interface ContenderResult {
  /** Milliseconds from just before the cache starts to when it reports synced. */
  syncMs: number;
  /** Resident memory after a forced GC, just before the cache starts. */
  rssBaselineBytes: number;
  /** Resident memory after a forced GC, once synced, with the cache still referenced. */
  rssSyncedBytes: number;
  /** How many objects the synced cache holds. */
  objects: number;
  /** Extra figures a contender may add (the floor reports the list body's size). */
  [extra: string]: number;
}

/**
 * Parses `--kubeconfig <path> --namespace <ns> --objects <n>` and arms the contender's
 * deadline ({@linkcode DEADLINE_MS}).
 */
export function contenderArgs(args: string[] = process.argv.slice(2)): ContenderArgs {
  const { values } = parseArgs({
    args,
    options: {
      kubeconfig: { type: "string" },
      namespace: { type: "string" },
      objects: { type: "string" },
    },
  });
  if (!values.kubeconfig || !values.namespace || !values.objects) {
    throw new Error("usage: --kubeconfig <path> --namespace <ns> --objects <n>");
  }
  setTimeout(() => {
    console.error(`no result after ${DEADLINE_MS / 1000} s: giving up`);
    process.exit(1);
  }, DEADLINE_MS).unref();
  return {
    kubeconfig: values.kubeconfig,
    namespace: values.namespace,
    objects: Number(values.objects),
  };
}

/**
 * Forces full garbage collections and returns the resident set size. One collection frees
 * ArrayBuffers but releases their backing stores only later, so this collects
 * {@linkcode GC_ROUNDS} times with a short pause between. Deno needs
 * `--v8-flags=--expose-gc`; Bun has `Bun.gc(true)`.
 */
export async function rssAfterGC(): Promise<number> {
  const g = globalThis as {
    Bun?: { gc(force: boolean): void };
    gc?: () => void;
  };
  const collect = g.Bun ? () => g.Bun!.gc(true) : g.gc;
  if (!collect) throw new Error("no forced GC: run Deno with --v8-flags=--expose-gc");
  for (let round = 0; round < GC_ROUNDS; round++) {
    collect();
    await new Promise((resolve) => setTimeout(resolve, GC_PAUSE_MS));
  }
  return process.memoryUsage().rss;
}

/** Prints the contender's result line for bench/cache.ts. */
export function report(result: ContenderResult): void {
  console.log(JSON.stringify(result));
}
