/**
 * The `/metrics` endpoint: a web handler that serves a registry in Prometheus' text format 0.0.4,
 * optionally behind the API server's authentication and authorisation. Serving it (address,
 * TLS) is the manager's job.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import {
  type AuthenticationAndAuthorizationOptions,
  type FetchHandler,
  withAuthenticationAndAuthorization,
} from "./filters.ts";
import { type Registry, registry as defaultRegistry } from "./registry.ts";

const logger = getLogger(["rudder", "metrics"]);

/**
 * Options of {@linkcode metricsApp}.
 *
 * @example
 * ```ts
 * import { type MetricsAppOptions } from "./server.ts";
 * import { loadConfig } from "@rudder/operator";
 * import { RestClient } from "@rudder/operator/kube";
 *
 * const options: MetricsAppOptions = { secure: { rest: new RestClient(await loadConfig()) } };
 * ```
 */
export interface MetricsAppOptions {
  /**
   * Require every request to carry a bearer token that the API server authenticates and
   * authorises for `get` on the non-resource URL of the request (controller-runtime's
   * `filters.WithAuthenticationAndAuthorization`); see
   * {@linkcode withAuthenticationAndAuthorization}.
   */
  secure?: AuthenticationAndAuthorizationOptions;
  /** Where the metrics are served; default `/metrics`. */
  path?: string;
}

/**
 * The metrics endpoint as a web handler, to serve with `Deno.serve`, `Bun.serve` or a hono app's
 * `mount`. A plain handler, not a hono app: an operator that serves only its probes and metrics
 * never loads hono.
 *
 * @example
 * ```ts
 * import { type MetricsApp, metricsApp } from "./server.ts";
 *
 * const app: MetricsApp = metricsApp();
 * const response = await app.fetch(new Request("http://localhost/metrics"));
 * ```
 */
export interface MetricsApp {
  /** Answers one request: the metrics on `GET <path>`, 404 elsewhere. */
  fetch(request: Request): Promise<Response>;
}

/**
 * A web handler serving `registry` (default: the global {@linkcode registry}) on `GET /metrics` as
 * `text/plain; version=0.0.4`. With `secure`, every request needs a token the API server accepts
 * (else 401) for a user it authorises (else 403). A collector that fails turns the scrape into a
 * 500 naming the error, as Go's `promhttp` does.
 *
 * @example Serve the global registry on Deno
 * ```ts
 * import { metricsApp } from "./server.ts";
 *
 * Deno.serve({ port: 8080 }, metricsApp().fetch);
 * ```
 */
export function metricsApp(
  registry: Registry = defaultRegistry,
  options: MetricsAppOptions = {},
): MetricsApp {
  const path = options.path ?? "/metrics";
  const serve: FetchHandler = async (request) => {
    const method = request.method;
    if ((method !== "GET" && method !== "HEAD") || new URL(request.url).pathname !== path) {
      return new Response("404 Not Found", {
        status: 404,
        headers: { "Content-Type": "text/plain; charset=UTF-8" },
      });
    }
    let text: string;
    try {
      text = await registry.metrics();
    } catch (err) {
      logger.error("Gathering metrics failed: {error}", { error: err });
      const message = err instanceof Error ? err.message : String(err);
      return new Response(
        method === "HEAD" ? null : `An error has occurred while serving metrics:\n\n${message}\n`,
        { status: 500, headers: { "Content-Type": "text/plain; charset=UTF-8" } },
      );
    }
    return new Response(method === "HEAD" ? null : text, {
      status: 200,
      headers: { "Content-Type": registry.contentType },
    });
  };
  const handler = options.secure
    ? withAuthenticationAndAuthorization(options.secure)(serve)
    : serve;
  return { fetch: async (request) => await handler(request) };
}
