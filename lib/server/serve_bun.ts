/**
 * Serving on Bun: `Bun.serve`, with TLS 1.0 and 1.1 switched off (Bun would accept them).
 *
 * @module
 */

import { constants } from "node:crypto";
import { bun } from "../util/runtime.ts";
import type { Handler, Served, ServeOptions } from "./types.ts";

/** Serves `handler` with `Bun.serve`; resolves once listening. */
export function serveBun(handler: Handler, options: ServeOptions): Promise<Served> {
  try {
    const runtime = bun();
    if (!runtime) throw new Error("serveBun needs Bun");
    const server = runtime.serve({
      hostname: options.hostname,
      port: options.port,
      fetch: handler,
      error: (error) => {
        options.onError(error);
        return new Response("internal error", { status: 500 });
      },
      ...(options.tls
        ? {
          tls: {
            cert: options.tls.cert,
            key: options.tls.key,
            secureOptions: constants.SSL_OP_NO_TLSv1 | constants.SSL_OP_NO_TLSv1_1,
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
