/**
 * Serving on Bun: `Bun.serve`, with TLS 1.0 and 1.1 switched off (Bun would accept them), and
 * no idle timeout of its own.
 *
 * @module
 */

import { bun, nodeProcess } from "../util/runtime.ts";
import type { PeerHandler, Served, ServeOptions } from "./types.ts";

/** Serves `handler` with `Bun.serve`; resolves once listening. */
export function serveBun(handler: PeerHandler, options: ServeOptions): Promise<Served> {
  try {
    const runtime = bun();
    if (!runtime) throw new Error("serveBun needs Bun");
    // Fetched here: this module is loaded on every runtime, and on Deno `node:crypto` would start
    // the Node layer.
    const tlsConstants =
      (nodeProcess().getBuiltinModule("node:crypto") as typeof import("node:crypto")).constants;
    const server = runtime.serve({
      hostname: options.hostname,
      port: options.port,
      // The forwarder in front of every server bounds idle and slow connections; Bun's own
      // timeout (10 s by default) would also cut a handler that takes longer to answer.
      idleTimeout: 0,
      fetch: (request, server) => {
        const peer = server.requestIP(request);
        return handler(request, { hostname: peer?.address ?? "", port: peer?.port ?? 0 });
      },
      error: (error) => {
        options.onError(error);
        return new Response("internal error", { status: 500 });
      },
      ...(options.tls
        ? {
          tls: {
            cert: options.tls.cert,
            key: options.tls.key,
            secureOptions: tlsConstants.SSL_OP_NO_TLSv1 | tlsConstants.SSL_OP_NO_TLSv1_1,
          },
        }
        : {}),
    });
    return Promise.resolve({
      hostname: server.hostname,
      port: server.port,
      stop: async (force = false) => {
        await server.stop(force);
      },
    });
  } catch (err) {
    return Promise.reject(err);
  }
}
