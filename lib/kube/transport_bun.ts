/**
 * TLS for `fetch` on Bun: the `tls` and `proxy` fetch options.
 *
 * @module
 */

import type { Fetcher, TlsSettings } from "./fetcher.ts";

interface BunTlsOptions {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized?: boolean;
  serverName?: string;
}

/**
 * A fetcher over Bun's `fetch(url, { tls, proxy })`. Bun pools connections per TLS setting
 * itself, so there is nothing to release on close.
 */
export function createBunFetcher(settings: TlsSettings): Fetcher {
  const tls: BunTlsOptions = {
    ca: settings.caData,
    cert: settings.cert,
    key: settings.key,
    rejectUnauthorized: !settings.insecureSkipTLSVerify,
    serverName: settings.serverName,
  };
  const extra: Record<string, unknown> = { tls };
  if (settings.proxyURL) extra.proxy = settings.proxyURL;
  return {
    fetch: (url, init) => fetch(url, { ...init, ...extra } as RequestInit),
    close: () => {},
  };
}
