/**
 * Serving on Bun: `Bun.serve`, with TLS 1.0 and 1.1 switched off (Bun would accept them).
 *
 * @module
 */

import { constants } from "node:crypto";
import type { Handler, Served, ServeOptions } from "./types.ts";

/** The part of `Bun.serve`'s contract this adapter uses. */
interface BunServer {
  readonly hostname: string;
  readonly port: number;
  stop(closeActiveConnections?: boolean): Promise<void> | void;
}

interface BunRuntime {
  serve(options: {
    hostname: string;
    port: number;
    fetch: Handler;
    error(error: Error): Response;
    tls?: { cert: string; key: string; secureOptions: number };
  }): BunServer;
}

/** Serves `handler` with `Bun.serve`; resolves once listening. */
export function serveBun(handler: Handler, options: ServeOptions): Promise<Served> {
  // `deno check` knows no Bun global; this is the shape of the part used here.
  const bun = (globalThis as unknown as { Bun: BunRuntime }).Bun;
  try {
    const server = bun.serve({
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
