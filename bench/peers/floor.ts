/**
 * The floor of the cache benchmark: one GET of the whole ConfigMap list, its body read to the
 * end and thrown away, over Rudder's transport (same TLS and credentials as the cache). No
 * cache can sync faster than the API server can send the list, so this is what the others'
 * time to synced is measured against. Run on Deno by bench/cache.ts.
 *
 * @module
 */

import { loadConfig } from "../../lib/kube/config/load.ts";
import { newTransport } from "../../lib/kube/transport.ts";
import { contenderArgs, report, rssAfterGC } from "../contenders/measure.ts";

const args = contenderArgs();
const transport = newTransport(await loadConfig({ kubeconfig: args.kubeconfig }));
const path = `/api/v1/namespaces/${encodeURIComponent(args.namespace)}/configmaps`;
try {
  const rssBaselineBytes = await rssAfterGC();
  const start = performance.now();
  const response = await transport.fetch(path, { headers: { Accept: "application/json" } });
  if (!response.ok || !response.body) throw new Error(`GET ${path}: HTTP ${response.status}`);
  let bodyBytes = 0;
  for await (const chunk of response.body) bodyBytes += chunk.byteLength;
  const syncMs = performance.now() - start;
  const rssSyncedBytes = await rssAfterGC();

  // Untimed: the body was not parsed, so ask the API server how many objects it held.
  const head = await transport.fetch(`${path}?limit=1`, {
    headers: { Accept: "application/json" },
  });
  const page = await head.json() as {
    items: unknown[];
    metadata: { remainingItemCount?: number };
  };
  const objects = page.items.length + (page.metadata.remainingItemCount ?? 0);
  report({ syncMs, rssBaselineBytes, rssSyncedBytes, objects, bodyBytes });
} finally {
  transport.close();
}
