/**
 * Serving on Deno: `Deno.serve`. Its TLS stack (rustls) speaks TLS 1.2 and 1.3 only, so the
 * minimum needs no option.
 *
 * @module
 */

import type { PeerHandler, Served, ServeOptions } from "./types.ts";

/** Serves `handler` with `Deno.serve`; resolves once listening. */
export async function serveDeno(handler: PeerHandler, options: ServeOptions): Promise<Served> {
  const listening = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname: options.hostname,
    port: options.port,
    ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
    onListen: (addr) => listening.resolve(addr),
    onError: (error) => {
      options.onError(error);
      return new Response("internal error", { status: 500 });
    },
  }, (request, info) => handler(request, info.remoteAddr));
  const addr = await listening.promise;
  let shutdown: Promise<void> | undefined;
  return {
    hostname: addr.hostname,
    port: addr.port,
    stop: (force = false) => {
      shutdown ??= server.shutdown();
      if (!force) return shutdown;
      // Deno cannot cut a graceful shutdown short: the requests left finish in the background,
      // and no longer keep the process alive.
      server.unref();
      shutdown.catch(() => {});
      return Promise.resolve();
    },
  };
}
