/**
 * The HTTP layer under every API call: `fetch` with the TLS settings and credentials of a
 * {@linkcode KubeConfig}. TLS differs per runtime, so each runtime has a small adapter
 * (transport_deno.ts, transport_bun.ts); the rest of Rudder never asks which runtime it is on.
 *
 * @module
 */

import type { Credentials, KubeConfig } from "./config/types.ts";
import { createBunFetcher } from "./transport_bun.ts";
import { createDenoFetcher } from "./transport_deno.ts";
import { VERSION } from "../version.ts";

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

/** Options of {@linkcode createTransport}. */
export interface TransportOptions {
  /** `User-Agent` header; default `rudder/<version> (<runtime> <version>; <os>/<arch>)`. */
  userAgent?: string;
}

/** Sends authenticated requests to one API server. */
export interface Transport {
  /** The configuration this transport was made from. */
  readonly config: KubeConfig;
  /**
   * Sends a request to `path` (with query) on the API server with credentials attached. A 401
   * answer makes the credentials refresh once (rotated token, expired exec credential) and the
   * request repeat, when the body can be sent again.
   */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Releases connection pools. Requests after close fail. */
  close(): void;
}

function runtimeName(): string {
  const g = globalThis as { Deno?: { version: { deno: string } }; Bun?: { version: string } };
  if (g.Deno) return `deno ${g.Deno.version.deno}`;
  if (g.Bun) return `bun ${g.Bun.version}`;
  return "unknown runtime";
}

function platform(): string {
  const g = globalThis as { Deno?: { build: { os: string; arch: string } } };
  if (g.Deno) return `${g.Deno.build.os}/${g.Deno.build.arch}`;
  const p = (globalThis as { process?: { platform: string; arch: string } }).process;
  return p ? `${p.platform}/${p.arch}` : "unknown";
}

/** The default `User-Agent`: `rudder/<version> (<runtime> <version>; <os>/<arch>)`. */
export function defaultUserAgent(): string {
  return `rudder/${VERSION} (${runtimeName()}; ${platform()})`;
}

/** Picks the TLS adapter of the runtime this code runs on. */
export function createFetcher(tls: TlsSettings): Fetcher {
  if ("Deno" in globalThis) return createDenoFetcher(tls);
  if ("Bun" in globalThis) return createBunFetcher(tls);
  throw new Error(
    "Rudder's transport supports Deno and Bun; this runtime has neither Deno.createHttpClient " +
      "nor Bun's fetch TLS options",
  );
}

function canResend(body: RequestInit["body"]): boolean {
  return body === undefined || body === null || typeof body === "string" ||
    body instanceof Uint8Array || body instanceof ArrayBuffer || body instanceof URLSearchParams;
}

/**
 * Creates the transport for a configuration. Fetchers are cached per client certificate, so
 * a rotated certificate (from an exec plugin) gets a new connection pool and the old one is
 * closed.
 *
 * @example
 * ```ts
 * import { createTransport, loadConfig } from "@rudder/operator";
 *
 * const transport = createTransport(await loadConfig());
 * const response = await transport.fetch("/version");
 * console.log(await response.json());
 * transport.close();
 * ```
 */
export function createTransport(config: KubeConfig, options: TransportOptions = {}): Transport {
  const userAgent = options.userAgent ?? defaultUserAgent();
  let current: { certKey: string; fetcher: Fetcher } | undefined;
  let closed = false;

  function fetcherFor(credentials: Credentials): Fetcher {
    const pair = credentials.clientCertificate;
    const certKey = pair ? `${pair.cert}\0${pair.key}` : "";
    if (current && current.certKey === certKey) return current.fetcher;
    current?.fetcher.close();
    current = {
      certKey,
      fetcher: createFetcher({
        caData: config.caData,
        cert: pair?.cert,
        key: pair?.key,
        insecureSkipTLSVerify: config.insecureSkipTLSVerify,
        serverName: config.tlsServerName,
        proxyURL: config.proxyURL,
      }),
    };
    return current.fetcher;
  }

  async function send(path: string, init: RequestInit): Promise<Response> {
    // Credentials first: a configuration that is still being loaded (a Manager's) fills in its
    // server while they are fetched.
    const credentials = await config.auth.credentials(init.signal ?? undefined);
    const url = config.server + (path.startsWith("/") ? path : `/${path}`);
    const headers = new Headers(init.headers);
    headers.set("User-Agent", userAgent);
    for (const [name, value] of Object.entries(credentials.headers ?? {})) {
      headers.set(name, value);
    }
    return await fetcherFor(credentials).fetch(url, { ...init, headers });
  }

  return {
    config,
    async fetch(path: string, init: RequestInit = {}): Promise<Response> {
      if (closed) throw new Error(`transport to ${config.server} is closed`);
      const response = await send(path, init);
      if (response.status !== 401 || !canResend(init.body) || !config.auth.invalidate) {
        return response;
      }
      if (!(await config.auth.invalidate())) return response;
      await response.body?.cancel();
      return await send(path, init);
    },
    close(): void {
      closed = true;
      current?.fetcher.close();
      current = undefined;
    },
  };
}
