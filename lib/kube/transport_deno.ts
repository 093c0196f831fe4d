/**
 * The transport's requests on Deno: through Rudder's HTTP/1.1 client (http1.ts, one
 * keep-alive pool per server and TLS setting), which costs a third less CPU per API call than
 * `fetch`; through `fetch` with a `Deno.HttpClient` for proxies, stream bodies, and everything
 * when `RUDDER_DENO_FETCH=1`.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { redactURL, urlUserInfo } from "./redact.ts";
import type { Fetcher, TlsSettings } from "./fetcher.ts";
import { denoDialer, http1Fetch, Http1Pool } from "./http1.ts";
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
  const dial = denoDialer({
    caCerts: tls.caData ? [tls.caData] : undefined,
    cert: tls.cert,
    key: tls.key,
  });
  const http1 = http1Fetch((server) => new Http1Pool({ ...server, dial }), viaFetch);
  return {
    fetch: http1.fetch,
    close() {
      http1.close();
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
