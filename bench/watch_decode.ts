/**
 * Micro-benchmark of the watch path without a server: decoding N watch events from a body in
 * 64 KiB chunks (alone, and wrapped in one more async generator as `RestClient.watch` wraps
 * it), the watcher, and an informer applying them to its store. Prints the median of R runs
 * per measure, as CPU time (user + system, which a busy machine does not inflate much) and as
 * wall time.
 *
 * Usage: deno run -A bench/watch_decode.ts [events=100000] [runs=5]
 *        bun bench/watch_decode.ts [events] [runs]
 *
 * @module
 */

import process from "node:process";
import { ConfigMap } from "../lib/api/builtins.ts";
import { Informer } from "../lib/cache/informer.ts";
import { watcher } from "../lib/cache/watcher.ts";
import type { RestClient, RestRequest } from "../lib/kube/rest.ts";
import { decodeWatchStream, type WatchEvent } from "../lib/kube/watch.ts";

const args = process.argv.slice(2).filter((arg) => !arg.endsWith(".ts"));
const events = Number(args[0] ?? 100_000) || 100_000;
const runs = Number(args[1] ?? 5) || 5;
const CHUNK = 64 * 1024;
const NAMES = 1000;

function makeBody(): Uint8Array {
  const lines: string[] = [
    JSON.stringify({
      type: "BOOKMARK",
      object: {
        kind: "ConfigMap",
        apiVersion: "v1",
        metadata: { resourceVersion: "1", annotations: { "k8s.io/initial-events-end": "true" } },
      },
    }),
  ];
  for (let i = 0; i < events; i++) {
    lines.push(JSON.stringify({
      type: i < NAMES ? "ADDED" : "MODIFIED",
      object: {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: `cm-${i % NAMES}`,
          namespace: "bench",
          resourceVersion: String(2 + i),
          uid: "6f1c0e4e-3c2b-4f1a-9a51-0c8f2d7e9b10",
          labels: { app: "bench", tier: "backend" },
        },
        data: { v: String(i), payload: "x".repeat(300) },
      },
    }));
  }
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

function bodyOf(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + CHUNK));
      at += CHUNK;
    },
  });
}

async function* wrapped<T>(body: ReadableStream<Uint8Array>, signal: AbortSignal) {
  yield* decodeWatchStream<T>(body, { signal });
}

async function decodeOnly(bytes: Uint8Array, wrap: boolean): Promise<number> {
  const signal = new AbortController().signal;
  const started = performance.now();
  let n = 0;
  const iterable = wrap
    ? wrapped(bodyOf(bytes), signal)
    : decodeWatchStream(bodyOf(bytes), { signal });
  for await (const _ of iterable) n++;
  if (n !== events + 1) throw new Error(`decoded ${n} events`);
  return performance.now() - started;
}

/** A REST client whose first watch serves `bytes` and whose later watches stay silent. */
function fakeRest(bytes: Uint8Array): RestClient {
  let calls = 0;
  return {
    async *watch<T>(request: RestRequest): AsyncGenerator<WatchEvent<T>> {
      if (calls++ === 0) {
        yield* decodeWatchStream<T>(bodyOf(bytes), { signal: request.signal });
      } else {
        await new Promise((resolve) => request.signal?.addEventListener("abort", resolve));
      }
    },
  } as unknown as RestClient;
}

async function watcherOnly(bytes: Uint8Array): Promise<number> {
  const stop = new AbortController();
  const started = performance.now();
  let n = 0;
  for await (const event of watcher(fakeRest(bytes), ConfigMap, { signal: stop.signal })) {
    if (event.type === "Apply" && ++n === events) break;
  }
  return performance.now() - started;
}

async function informer(bytes: Uint8Array): Promise<number> {
  const stop = new AbortController();
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const last = String(1 + events);
  const inf = new Informer(fakeRest(bytes), ConfigMap, {
    namespace: "bench",
    resyncPeriod: 0,
    onChange: (_key, rv) => rv === last && done(),
  });
  const started = performance.now();
  const running = inf.run(stop.signal);
  await finished;
  const ms = performance.now() - started;
  stop.abort();
  await running;
  if (inf.store.size !== NAMES) throw new Error(`store holds ${inf.store.size}`);
  return ms;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const bytes = makeBody();
const runtime = "Bun" in globalThis ? "bun" : "deno";
console.log(
  `${runtime}: ${events} events, ${(bytes.length / 1024 / 1024).toFixed(1)} MiB, median of ${runs}`,
);
for (
  const [name, measure] of [
    ["decodeWatchStream", () => decodeOnly(bytes, false)],
    ["decodeWatchStream in one more generator", () => decodeOnly(bytes, true)],
    ["watcher: decode + list/watch state machine", () => watcherOnly(bytes)],
    ["informer: decode + watcher + store", () => informer(bytes)],
  ] as const
) {
  await measure(); // warm-up
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < runs; i++) {
    const before = process.cpuUsage();
    wall.push(await measure());
    const used = process.cpuUsage(before);
    cpu.push((used.user + used.system) / 1000);
  }
  const cpuMs = median(cpu);
  console.log(
    `${name.padEnd(44)} cpu ${cpuMs.toFixed(0).padStart(5)} ms (${
      (cpuMs * 1000 / events).toFixed(2)
    } µs/event)  wall ${median(wall).toFixed(0).padStart(5)} ms`,
  );
}
