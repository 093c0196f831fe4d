/**
 * Rudder's contender in the cache benchmark, run on Deno and on Bun by bench/cache.ts: syncs a
 * cache of the ConfigMaps of one namespace (DESIGN §4: `newCache`, `getInformer`,
 * `waitForCacheSync`) and reports the time to synced and the resident memory it costs.
 *
 * @module
 */

import { newCache } from "../../lib/cache/cache.ts";
import { loadConfig } from "../../lib/kube/config/load.ts";
import { ConfigMap } from "../../lib/api/mod.ts";
import { contenderArgs, report, rssAfterGC } from "./measure.ts";

const { kubeconfig, namespace } = contenderArgs();
const config = await loadConfig({ kubeconfig });
const cache = newCache(config, { defaultNamespaces: { [namespace]: {} } });
const controller = new AbortController();
let running: unknown;
try {
  const rssBaselineBytes = await rssAfterGC();
  const start = performance.now();
  running = cache.start(controller.signal);
  await cache.getInformer(ConfigMap);
  if (!(await cache.waitForCacheSync())) throw new Error("the cache did not sync");
  const syncMs = performance.now() - start;
  const objects = (await cache.list(ConfigMap, { namespace })).items.length;
  const rssSyncedBytes = await rssAfterGC();
  report({ syncMs, rssBaselineBytes, rssSyncedBytes, objects });
} finally {
  controller.abort();
  await running;
}
