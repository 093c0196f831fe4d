/**
 * Prometheus metrics with controller-runtime's names, exactly, so existing dashboards work. A
 * manager serves its {@linkcode registry} (the global one) on `/metrics` with the
 * `controller_runtime_*`, `workqueue_*`, `rest_client_*`, `leader_election_*` and process
 * families, and the health of its informers' watches (`rudder_informer_healthy`,
 * `rudder_informer_lists_total`, `rudder_informer_watches_total`); an operator registers its own
 * counters, gauges and histograms on it.
 *
 * @example A metric of one's own
 * ```ts
 * import { Counter, registry } from "@rudder/operator/metrics";
 *
 * const synced = registry.register(
 *   new Counter({
 *     name: "example_widgets_synced_total",
 *     help: "Widgets synced, by result.",
 *     labelNames: ["result"],
 *   }),
 * );
 * synced.inc({ result: "ok" });
 * ```
 *
 * @module
 */

export {
  Counter,
  DEFAULT_BUCKETS,
  exponentialBuckets,
  Gauge,
  Histogram,
  type HistogramOptions,
  linearBuckets,
  Metric,
  type MetricLabels,
  type MetricOptions,
  type MetricType,
  ScalarMetric,
} from "./metric.ts";
export { Registry, registry } from "./registry.ts";
