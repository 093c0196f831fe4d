/**
 * Prometheus metrics with controller-runtime's names: a registry with counters, gauges and
 * histograms, and the global {@linkcode registry} users register their own metrics on; the hooks
 * that feed controller-runtime's families from controllers and work queues
 * ({@linkcode controllerMetrics}), the REST client ({@linkcode restClientMetrics}) and leader
 * election ({@linkcode leaderElectionMetrics}); the process metrics
 * ({@linkcode registerProcessMetrics}); and the `/metrics` endpoint ({@linkcode metricsApp}),
 * optionally authenticated and authorised by the API server.
 *
 * @example A controller's metrics, scraped
 * ```ts
 * import { Controller, controllerMetrics, metricsApp, Registry } from "@rudder/operator";
 *
 * const registry = new Registry();
 * new Controller("web", () => {}, { metrics: controllerMetrics(registry) });
 * const response = await metricsApp(registry).fetch(new Request("http://localhost/metrics"));
 * console.log(await response.text());
 * // … controller_runtime_reconcile_total{controller="web",result="error"} 0 …
 * ```
 *
 * @module
 */

export { TEXT_CONTENT_TYPE } from "./exposition.ts";
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
export {
  controllerMetrics,
  type ControllerRuntimeMetrics,
  RECONCILE_RESULTS,
  RECONCILE_TIME_BUCKETS,
  WORKQUEUE_DURATION_BUCKETS,
} from "./controller.ts";
export { NO_ANSWER_CODE, restClientMetrics } from "./rest_client.ts";
export { leaderElectionMetrics } from "./leader_election.ts";
export { type WebhookMetrics, webhookMetrics } from "./webhook.ts";
export { type ProcessMetricsOptions, registerProcessMetrics } from "./process.ts";
export {
  type AuthenticationAndAuthorizationOptions,
  DEFAULT_AUTH_CACHE_TTL_MS,
  type FetchHandler,
  type RequestFilter,
  withAuthenticationAndAuthorization,
} from "./filters.ts";
export { type MetricsApp, metricsApp, type MetricsAppOptions } from "./server.ts";
