/**
 * TLS for `fetch` on Deno: one `Deno.HttpClient` per TLS setting.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { redactURL, urlUserInfo } from "./redact.ts";
import type { Fetcher, TlsSettings } from "./fetcher.ts";

const logger = getLogger(["rudder", "kube", "transport"]);

interface DenoHttpClient {
  close(): void;
}

interface DenoHttpApi {
  createHttpClient(options: {
    caCerts?: string[];
    cert?: string;
    key?: string;
    proxy?: { url: string; basicAuth?: { username: string; password: string } };
  }): DenoHttpClient;
}

/** Deno takes a proxy's credentials as `basicAuth`, not from the URL's user-info. */
function denoProxy(
  proxyURL: string,
): { url: string; basicAuth?: { username: string; password: string } } {
  const userInfo = urlUserInfo(proxyURL);
  return userInfo ? { url: redactURL(proxyURL), basicAuth: userInfo } : { url: proxyURL };
}

/**
 * A fetcher over `Deno.createHttpClient`. Deno adds the given CAs to its root store rather
 * than replacing it, and offers no per-client switch for `insecure-skip-tls-verify` or a
 * server-name override; those need the `--unsafely-ignore-certificate-errors=<host>` flag, which
 * a warning names.
 */
export function createDenoFetcher(tls: TlsSettings): Fetcher {
  const deno = (globalThis as unknown as { Deno: DenoHttpApi }).Deno;
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
  const client = deno.createHttpClient({
    caCerts: tls.caData ? [tls.caData] : undefined,
    cert: tls.cert,
    key: tls.key,
    proxy: tls.proxyURL ? denoProxy(tls.proxyURL) : undefined,
  });
  return {
    fetch: (url, init) => fetch(url, { ...init, client } as RequestInit),
    close: () => client.close(),
  };
}
