/**
 * The transport's requests on Deno: through Rudder's HTTP/1.1 client (http1_deno.ts, one
 * keep-alive pool per server and TLS setting), which costs a third less CPU per API call than
 * `fetch`; through `fetch` with a `Deno.HttpClient` for proxies, stream bodies, and everything
 * when `RUDDER_DENO_FETCH=1`.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { redactURL, urlUserInfo } from "./redact.ts";
import type { Fetcher, TlsSettings } from "./fetcher.ts";
import { Http1Pool } from "./http1_deno.ts";
import { deno } from "../util/runtime.ts";

const logger = getLogger(["rudder", "kube", "transport"]);

/** Deno takes a proxy's credentials as `basicAuth`, not from the URL's user-info. */
function denoProxy(
  proxyURL: string,
): { url: string; basicAuth?: { username: string; password: string } } {
  const userInfo = urlUserInfo(proxyURL);
  return userInfo ? { url: redactURL(proxyURL), basicAuth: userInfo } : { url: proxyURL };
}

/**
 * A fetcher over the HTTP/1.1 client, or over `fetch` with `Deno.createHttpClient` where that is
 * needed (module doc). Deno adds the given CAs to its root store rather than replacing it, and offers no per-client switch for `insecure-skip-tls-verify` or a
 * server-name override; those need the `--unsafely-ignore-certificate-errors=<host>` flag, which
 * a warning names.
 */
export function createDenoFetcher(tls: TlsSettings): Fetcher {
  const api = deno();
  if (!api) throw new Error("the Deno transport needs Deno");
  if (tls.insecureSkipTLSVerify) {
    logger.warn(
      "insecure-skip-tls-verify is set, but Deno can only skip certificate verification when " +
        "started with --unsafely-ignore-certificate-errors=<host>; without it the server's " +
        "certificate is still verified",
    );
  }
  if (tls.serverName) {
    logger.warn(
      "tls-server-name {serverName} is ignored on Deno: fetch verifies the URL's host name",
      { serverName: tls.serverName },
    );
  }
  // Created on first use: without a proxy every request goes through the HTTP/1.1 pools.
  let client: Deno.HttpClient | undefined;
  const viaFetch = (url: string, init: RequestInit) => {
    client ??= api.createHttpClient({
      caCerts: tls.caData ? [tls.caData] : undefined,
      cert: tls.cert,
      key: tls.key,
      proxy: tls.proxyURL ? denoProxy(tls.proxyURL) : undefined,
    });
    return fetch(url, { ...init, client });
  };
  if (tls.proxyURL || useDenoFetch()) {
    return { fetch: viaFetch, close: () => client?.close() };
  }
  // One pool per origin, parsed once; `null` for an origin only fetch can reach.
  const pools = new Map<string, Http1Pool | null>();
  const poolFor = (origin: string): Http1Pool | null => {
    let pool = pools.get(origin);
    if (pool === undefined) {
      const server = http1Server(origin);
      pool = server && new Http1Pool({
        ...server,
        caCerts: tls.caData ? [tls.caData] : undefined,
        cert: tls.cert,
        key: tls.key,
      });
      pools.set(origin, pool);
    }
    return pool;
  };
  return {
    fetch(url, init) {
      const slash = url.indexOf("/", url.indexOf("//") + 2);
      const pool = slash > 0 && http1Sendable(init) ? poolFor(url.slice(0, slash)) : null;
      if (!pool) return viaFetch(url, init);
      const target = url.slice(slash);
      return pool.request({
        method: init.method ?? "GET",
        target,
        headers: (init.headers ?? {}) as Record<string, string>,
        body: (init.body ?? undefined) as string | Uint8Array | undefined,
        signal: init.signal ?? undefined,
        stream: STREAMED.test(target),
      });
    },
    close() {
      for (const pool of pools.values()) pool?.close();
      pools.clear();
      client?.close();
    },
  };
}

/**
 * `RUDDER_DENO_FETCH=1` sends every request through Deno's `fetch` instead of the HTTP/1.1
 * client: a way back, should a server need what only `fetch` speaks (HTTP/2).
 */
function useDenoFetch(): boolean {
  try {
    return deno()?.env.get("RUDDER_DENO_FETCH") === "1";
  } catch {
    return false; // No permission to read the environment.
  }
}

/**
 * The API server's answers that go on for as long as they are read: watches and followed logs.
 * Their bodies are streamed; every other body is read whole before the answer resolves.
 */
const STREAMED = /[?&](?:watch|follow)=(?:true|1)(?:&|$)/;

/** True when the HTTP/1.1 client can send `init`: a string or byte body, headers as a record. */
function http1Sendable(init: RequestInit): boolean {
  const body = init.body;
  if (
    body !== undefined && body !== null && typeof body !== "string" && !(body instanceof Uint8Array)
  ) {
    return false;
  }
  const headers = init.headers;
  return headers === undefined || !(headers instanceof Headers || Array.isArray(headers));
}

/** Host, port and scheme of an `http(s)://host[:port]` origin; `null` for anything else. */
function http1Server(origin: string): { hostname: string; port: number; tls: boolean } | null {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return null;
  }
  const tls = parsed.protocol === "https:";
  if (!tls && parsed.protocol !== "http:") return null;
  const hostname = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { hostname, port: parsed.port ? Number(parsed.port) : tls ? 443 : 80, tls };
}
