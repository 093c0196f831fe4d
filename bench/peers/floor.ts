/**
 * The floors of the sync measure, one per runtime and per wire path: the least any cache on
 * that runtime can do to receive the ConfigMaps, over Rudder's transport (same TLS, same
 * credentials, same HTTP client), with the body read to the end and never parsed.
 *
 * - `--wire list`: one GET of the whole list (what a paged list costs without its pages).
 * - `--wire stream`: a watch with `sendInitialEvents=true` (the streaming list Rudder's
 *   informer tries first), read until the bookmark that ends the initial events.
 * - `--gzip on|off`: ask for a gzipped body or for identity.
 *
 * Run on Deno and on Bun by bench/suite.ts.
 *
 * @module
 */

import process from "node:process";
import { loadConfig } from "../../lib/kube/config/load.ts";
import { newTransport } from "../../lib/kube/transport.ts";
import { contenderArgs, memoryAfterGC, report } from "../contenders/measure.ts";

const INITIAL_EVENTS_END = new TextEncoder().encode("k8s.io/initial-events-end");

/** Whether `needle` occurs in `tail + chunk` (the tail carries a match split across chunks). */
function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

const args = contenderArgs();
const transport = newTransport(await loadConfig({ kubeconfig: args.kubeconfig }));
const base = `/api/v1/namespaces/${encodeURIComponent(args.namespace)}/configmaps`;
const headers: Record<string, string> = { Accept: "application/json" };
// Asked for both ways: the runtimes' defaults differ (Bun's fetch asks for gzip, Rudder's
// HTTP/1.1 client on Deno for identity).
headers["Accept-Encoding"] = args.gzip ? "gzip" : "identity";
try {
  const baseline = await memoryAfterGC();
  const start = performance.now();
  const path = args.wire === "stream"
    ? `${base}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true` +
      "&resourceVersionMatch=NotOlderThan&resourceVersion=&timeoutSeconds=60"
    : base;
  const stop = new AbortController();
  const response = await transport.fetch(path, { headers, signal: stop.signal });
  if (!response.ok || !response.body) throw new Error(`GET ${path}: HTTP ${response.status}`);
  let bodyBytes = 0;
  let tail = new Uint8Array(0);
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bodyBytes += value.byteLength;
    if (args.wire !== "stream") continue;
    // Only the last bytes can hold the bookmark's annotation: look at the tail and this chunk.
    const window = new Uint8Array(tail.length + Math.min(value.length, 4096));
    window.set(tail);
    window.set(value.subarray(value.length - (window.length - tail.length)), tail.length);
    if (contains(window, INITIAL_EVENTS_END)) break;
    tail = window.subarray(Math.max(0, window.length - INITIAL_EVENTS_END.length));
  }
  const syncMs = performance.now() - start;
  stop.abort();
  await reader.cancel().catch(() => {});
  const synced = await memoryAfterGC();

  // Untimed: the body was not parsed, so ask the API server how many objects it held.
  const head = await transport.fetch(`${base}?limit=1`, {
    headers: { Accept: "application/json" },
  });
  const page = await head.json() as {
    items: unknown[];
    metadata: { remainingItemCount?: number };
  };
  const objects = page.items.length + (page.metadata.remainingItemCount ?? 0);
  report({
    syncMs,
    rssBaselineBytes: baseline.rss,
    rssSyncedBytes: synced.rss,
    heapBaselineBytes: baseline.heap,
    heapSyncedBytes: synced.heap,
    objects,
    bodyBytes,
  });
} finally {
  transport.close();
}
process.exit(0);
