/**
 * The seam between the transport and the per-runtime TLS adapters (transport_deno.ts,
 * transport_bun.ts, transport_node.ts): the settings of one connection pool and the `fetch` bound to it. A file of
 * its own, so the adapters and the transport do not import each other.
 *
 * @module
 */

/** TLS settings for one connection pool. */
export interface TlsSettings {
  /** PEM CA bundle; unset means the runtime's root store. */
  caData?: string;
  /** PEM client certificate. */
  cert?: string;
  /** PEM client key. */
  key?: string;
  /** Skip server certificate verification. */
  insecureSkipTLSVerify?: boolean;
  /** Name to verify the server certificate against. */
  serverName?: string;
  /** HTTP(S) proxy URL. */
  proxyURL?: string;
}

/** A `fetch` bound to one set of TLS settings, with the pool it owns. */
export interface Fetcher {
  /** Sends a request over this fetcher's connections. */
  fetch(url: string, init: RequestInit): Promise<Response>;
  /** Closes idle connections and releases the pool. */
  close(): void;
}
