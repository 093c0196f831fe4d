/**
 * client-go's request counter, `rest_client_requests_total{code,method,host}`, as
 * controller-runtime registers it (`pkg/metrics/client_go_adapter.go`), fed by
 * `RestClientOptions.onRequest`.
 *
 * @module
 */

import type { RequestInfo } from "../kube/rest.ts";
import { Counter } from "./metric.ts";
import { family, type Registry, registry as defaultRegistry, safely } from "./registry.ts";

/**
 * The `code` of an attempt that got no answer (network failure, abort), as client-go writes it.
 *
 * @example
 * ```ts
 * import { NO_ANSWER_CODE } from "./rest_client.ts";
 *
 * const query = `sum(rate(rest_client_requests_total{code="${NO_ANSWER_CODE}"}[5m]))`;
 * ```
 */
export const NO_ANSWER_CODE = "<error>";

/**
 * A `RestClientOptions.onRequest` hook that counts every request attempt in
 * `rest_client_requests_total{code,method,host}` on `registry` (default: the global
 * {@linkcode registry}): `code` is the HTTP status as a string, or `"<error>"` when no answer
 * came; retries count as attempts of their own, as in client-go. Calls with the same registry
 * return the same hook.
 *
 * @example
 * ```ts
 * import { restClientMetrics } from "./rest_client.ts";
 * import { loadConfig } from "@rudder/operator";
 * import { RestClient } from "@rudder/operator/kube";
 * import { Registry } from "@rudder/operator/metrics";
 *
 * const registry = new Registry();
 * const rest = new RestClient(await loadConfig(), { onRequest: restClientMetrics(registry) });
 * await rest.request({ path: "/version" });
 * console.log(await registry.metrics());
 * // rest_client_requests_total{code="200",host="…",method="GET"} 1
 * ```
 */
export function restClientMetrics(
  registry: Registry = defaultRegistry,
): (info: RequestInfo) => void {
  const name = "rest_client_requests_total";
  const known = hooks.get(registry);
  if (known && registry.get(name) === known.counter) return known.hook;
  const counter = family(registry, name, () =>
    new Counter<"code" | "method" | "host">({
      name,
      help: "Number of HTTP requests, partitioned by status code, method, and host.",
      labelNames: ["code", "method", "host"],
    }));
  // One handle per label set, so a request costs a string key and a map lookup.
  const series = new Map<string, { inc(): void }>();
  const hook = safely(name, (info: RequestInfo) => {
    const code = info.statusCode === undefined ? NO_ANSWER_CODE : String(info.statusCode);
    const key = `${code} ${info.method} ${info.host}`;
    let handle = series.get(key);
    if (!handle) {
      series.set(key, handle = counter.labels({ code, method: info.method, host: info.host }));
    }
    handle.inc();
  });
  hooks.set(registry, { counter, hook });
  return hook;
}

const hooks = new WeakMap<
  Registry,
  { counter: Counter<"code" | "method" | "host">; hook: (info: RequestInfo) => void }
>();
