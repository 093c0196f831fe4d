/**
 * The content ConfigMaps, which belong to the user: a Website does not own its content, so a
 * watch with a map function brings a ConfigMap's changes to the Websites that serve it, found
 * through a cache index on `spec.contentFrom`.
 *
 * @module
 */

import { ConfigMap, type Manager } from "@rudder/operator";
import { enqueueRequestsFromMapFunc, type EventHandler } from "@rudder/operator/handler";
import { Website } from "../api/website.ts";

/** The index of Websites by the ConfigMap they serve. */
export const CONTENT_INDEX = "spec.contentFrom";

/** Indexes the manager's cached Websites by their content ConfigMap. */
export function indexContent(mgr: Manager): void {
  mgr.getCache().indexField(Website, CONTENT_INDEX, (site) => [site.spec.contentFrom]);
}

/** Maps a ConfigMap to a request for each Website in its namespace that serves it. */
export function websitesServing(mgr: Manager): EventHandler<ConfigMap> {
  const client = mgr.getClient();
  return enqueueRequestsFromMapFunc<ConfigMap>(async (configMap) => {
    const namespace = configMap.metadata?.namespace ?? "";
    const sites = await client.list(Website, {
      namespace,
      fieldSelector: { [CONTENT_INDEX]: configMap.metadata?.name ?? "" },
    });
    return sites.items.map((site) => ({ namespace, name: site.metadata!.name! }));
  });
}
