/**
 * Informer health as metrics, read from the informers at scrape time. controller-runtime and
 * client-go no longer measure their reflectors (client-go dropped its `reflector_*` family), so
 * these are Rudder's own, in client-go's style (a `name` label naming the watch):
 *
 * - `rudder_informer_healthy{name}`: 1 while the informer runs, has listed, and its watch is not
 *   failing; 0 otherwise (the readiness check fails once it stays 0 past `unhealthyAfter`);
 * - `rudder_informer_lists_total{name}`: lists made (1 on a healthy run; more are relists, after
 *   an expired resourceVersion or a watch that could not be resumed);
 * - `rudder_informer_watches_total{name}`: watches started (one every 4 to 5 minutes on a
 *   healthy run, as the server ends each).
 *
 * The `name` is the informer's description: kind, namespace and selectors.
 *
 * @module
 */

import type { InformerHealth } from "../cache/informer.ts";
import { Counter, Gauge } from "./metric.ts";
import { family, type Registry, registry as defaultRegistry } from "./registry.ts";

const HEALTHY = "rudder_informer_healthy";
const LISTS = "rudder_informer_lists_total";
const WATCHES = "rudder_informer_watches_total";

/** The informer families of one registry and the health sources they read. */
interface Families {
  healthy: Gauge<"name">;
  lists: Counter<"name">;
  watches: Counter<"name">;
  sources: Set<() => InformerHealth[]>;
}

const families = new WeakMap<Registry, Families>();

/** Every informer of every source, by name (two caches watching the same thing add up). */
function snapshot(sources: Set<() => InformerHealth[]>): InformerHealth[] {
  return [...sources].flatMap((read) => read());
}

/** Whether an informer counts as healthy: running, listed, and its watch not failing. */
function isHealthy(health: InformerHealth): boolean {
  return health.state !== "Stopped" && health.synced && health.failingSince === undefined;
}

/**
 * Serves the health of the informers `health` reports (e.g. a cache's `health`) on `registry`
 * (default: the global {@linkcode registry}) as `rudder_informer_healthy`,
 * `rudder_informer_lists_total` and `rudder_informer_watches_total`, read at scrape time. A
 * manager calls it for its cache. Returns a function that stops reporting these informers.
 *
 * @example
 * ```ts
 * import { informerMetrics } from "./informer.ts";
 * import { Registry } from "@rudder/operator/metrics";
 *
 * const registry = new Registry();
 * informerMetrics(() => [
 *   { description: "ConfigMap in default", state: "Watching", synced: true, lists: 1, watches: 3 },
 * ], registry);
 * console.log(await registry.metrics());
 * // rudder_informer_healthy{name="ConfigMap in default"} 1 … and the two counters
 * ```
 */
export function informerMetrics(
  health: () => InformerHealth[],
  registry: Registry = defaultRegistry,
): () => void {
  let known = families.get(registry);
  if (!known || registry.get(HEALTHY) !== known.healthy) {
    const sources = new Set<() => InformerHealth[]>();
    // The counters mirror the watchers' own counts: rebuilt from them at every scrape.
    const counter = (name: string, help: string, read: (h: InformerHealth) => number) =>
      family(registry, name, () =>
        new Counter<"name">({
          name,
          help,
          labelNames: ["name"],
          collect(metric) {
            metric.reset();
            for (const h of snapshot(sources)) metric.inc({ name: h.description }, read(h));
          },
        }));
    known = {
      sources,
      healthy: family(registry, HEALTHY, () =>
        new Gauge<"name">({
          name: HEALTHY,
          help: "1 while the informer runs, has listed and its watch is not failing, else 0.",
          labelNames: ["name"],
          collect(gauge) {
            gauge.reset();
            const byName = new Map<string, boolean>();
            for (const h of snapshot(sources)) {
              byName.set(h.description, (byName.get(h.description) ?? true) && isHealthy(h));
            }
            for (const [name, ok] of byName) gauge.set({ name }, ok ? 1 : 0);
          },
        })),
      lists: counter(
        LISTS,
        "Number of lists the informer made; more than 1 are relists.",
        (h) => h.lists,
      ),
      watches: counter(WATCHES, "Number of watches the informer started.", (h) => h.watches),
    };
    families.set(registry, known);
  }
  const sources = known.sources;
  sources.add(health);
  return () => void sources.delete(health);
}
