// fetch over TLS trusting given CA certificates, on Deno, Bun or Node, with a new connection per
// request (so each request sees the server's current certificate).

import { createNodeFetcher } from "../../lib/kube/transport_node.ts";

/** POSTs (or GETs without a body) to `url` trusting `caCerts`; a fresh connection each time. */
export async function tlsFetch(
  url: string,
  caCerts: string[],
  init: RequestInit = {},
): Promise<Response> {
  const g = globalThis as unknown as {
    Deno?: { createHttpClient(options: { caCerts: string[] }): { close(): void } };
  };
  if (g.Deno) {
    const client = g.Deno.createHttpClient({ caCerts });
    try {
      const response = await fetch(url, { ...init, client } as RequestInit);
      const body = await response.arrayBuffer();
      return new Response(body, { status: response.status, headers: response.headers });
    } finally {
      client.close();
    }
  }
  if ("Bun" in globalThis) {
    return await fetch(url, { ...init, keepalive: false, tls: { ca: caCerts } } as RequestInit);
  }
  // Node's fetch takes no CA per request: the transport's Node adapter does, with its own pool.
  const fetcher = createNodeFetcher({ caData: caCerts.join("\n") });
  try {
    return await fetcher.fetch(url, init);
  } finally {
    fetcher.close();
  }
}
