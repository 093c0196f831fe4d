/**
 * The serving layer: the one place that knows how each runtime serves HTTP(S) and how a
 * certificate is reloaded. The metrics, health-probe and webhook servers are each an
 * {@linkcode HTTPServer}; every certificate read from files comes through a
 * {@linkcode CertWatcher}. Internal to the library: not a package subpath.
 *
 * @example
 * ```ts ignore
 * import { CertWatcher, HTTPServer } from "./mod.ts";
 *
 * const server = new HTTPServer({
 *   name: "metrics",
 *   address: ":8443",
 *   handler: () => new Response("ok"),
 *   tls: new CertWatcher({ certDir: "/tmp/metrics-certs" }),
 * });
 * const stop = new AbortController();
 * const running = server.start(stop.signal);
 * await server.ready();
 * stop.abort();
 * await running;
 * ```
 *
 * @module
 */

export { namesNoHost, parseAddress, urlOf } from "./address.ts";
export type { Handler, TLSPair } from "./types.ts";
export {
  CertWatcher,
  type CertWatcherOptions,
  DEFAULT_CERT_POLL_INTERVAL_MS,
} from "./certwatcher.ts";
export {
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_MAX_UNREAD_BODY_BYTES,
  DEFAULT_READ_HEADER_TIMEOUT_MS,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  HTTPServer,
  type HTTPServerOptions,
} from "./http_server.ts";
export { type Peer, type PeerHandler, serve, type Served, type ServeOptions } from "./serve.ts";
