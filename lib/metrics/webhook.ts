/**
 * controller-runtime's webhook metric families (`pkg/webhook/internal/metrics/metrics.go`):
 * `controller_runtime_webhook_requests_total{webhook,code}`,
 * `controller_runtime_webhook_latency_seconds{webhook}` and
 * `controller_runtime_webhook_requests_in_flight{webhook}`, where `webhook` is the path served
 * and `code` the HTTP status answered.
 *
 * @module
 */

import { Counter, DEFAULT_BUCKETS, Gauge, Histogram } from "./metric.ts";
import { family, type Registry, registry as defaultRegistry, safely } from "./registry.ts";

/** What the webhook server calls around each request; see {@linkcode webhookMetrics}. */
export interface WebhookMetrics {
  /** A request to `webhook` began; call the returned function with the HTTP status sent. */
  requestStarted(webhook: string): (code: number) => void;
}

const TOTAL = "controller_runtime_webhook_requests_total";
const LATENCY = "controller_runtime_webhook_latency_seconds";
const IN_FLIGHT = "controller_runtime_webhook_requests_in_flight";

const hooks = new WeakMap<Registry, { total: Counter<"webhook" | "code">; hook: WebhookMetrics }>();

/**
 * The hook feeding controller-runtime's webhook families on `registry` (default: the global
 * {@linkcode registry}): each request is counted by path and status code, timed, and counted
 * in flight while it runs. Calls with the same registry return the same hook.
 *
 * @example
 * ```ts
 * import { Registry } from "@rudder/operator/metrics";
 * import { webhookMetrics } from "./webhook.ts";
 *
 * const registry = new Registry();
 * const done = webhookMetrics(registry).requestStarted("/validate-example-com-v1-example");
 * done(200);
 * console.log(await registry.metrics());
 * // controller_runtime_webhook_requests_total{code="200",webhook="/validate-example-com-v1-example"} 1
 * ```
 */
export function webhookMetrics(registry: Registry = defaultRegistry): WebhookMetrics {
  const known = hooks.get(registry);
  if (known && registry.get(TOTAL) === known.total) return known.hook;
  const total = family(registry, TOTAL, () =>
    new Counter<"webhook" | "code">({
      name: TOTAL,
      help: "Total number of admission requests by HTTP status code.",
      labelNames: ["webhook", "code"],
    }));
  const latency = family(registry, LATENCY, () =>
    new Histogram<"webhook">({
      name: LATENCY,
      help: "Histogram of the latency of processing admission requests",
      labelNames: ["webhook"],
      buckets: DEFAULT_BUCKETS,
    }));
  const inFlight = family(registry, IN_FLIGHT, () =>
    new Gauge<"webhook">({
      name: IN_FLIGHT,
      help: "Current number of admission requests being served.",
      labelNames: ["webhook"],
    }));
  const started = safely(IN_FLIGHT, (webhook: string) => inFlight.inc({ webhook }));
  const finished = safely(TOTAL, (webhook: string, code: number, seconds: number) => {
    inFlight.dec({ webhook });
    total.inc({ webhook, code: String(code) });
    latency.observe({ webhook }, seconds);
  });
  const hook: WebhookMetrics = {
    requestStarted(webhook) {
      const begun = performance.now();
      started(webhook);
      let done = false;
      return (code) => {
        if (done) return;
        done = true;
        finished(webhook, code, (performance.now() - begun) / 1000);
      };
    },
  };
  hooks.set(registry, { total, hook });
  return hook;
}
