/**
 * HTTP(S) serving of a `fetch` handler (a hono app) on Deno or Bun — the one place that knows
 * which runtime serves. The metrics, health-probe and webhook servers use it.
 *
 * @module
 */

/** Where and how to serve. */
export interface ServeOptions {
  /**
   * `host:port`, `:port` (all interfaces) or `port`; port 0 picks a free one. Examples:
   * `":8080"`, `"127.0.0.1:0"`.
   */
  address: string;
  /** PEM certificate and key: serve HTTPS. */
  tls?: { cert: string; key: string };
}

/** A running server. */
export interface RunningServer {
  /** The host it listens on. */
  readonly hostname: string;
  /** The port it listens on (the chosen one when 0 was asked). */
  readonly port: number;
  /** `http(s)://host:port`, with a loopback host when listening on every interface. */
  readonly url: string;
  /** Stops accepting connections and closes them. */
  stop(): Promise<void>;
}

/** Splits `host:port`, `:port`, `port` or `[::1]:port`. */
export function parseAddress(address: string): { hostname: string; port: number } {
  const match = address.match(/^(?:(?:\[([^\]]+)\]|([^:\[\]]*)):)?(\d+)$/);
  if (!match) {
    throw new Error(
      `invalid bind address ${JSON.stringify(address)}: expected host:port, :port or port`,
    );
  }
  const hostname = match[1] ?? (match[2] || "0.0.0.0");
  const port = Number(match[3]);
  if (port > 65535) {
    throw new Error(`invalid bind address ${JSON.stringify(address)}: port too large`);
  }
  return { hostname, port };
}

/** A `fetch`-style request handler. */
export type Handler = (request: Request) => Response | Promise<Response>;

interface DenoServer {
  addr: { hostname: string; port: number };
  shutdown(): Promise<void>;
}

interface BunServer {
  hostname: string;
  port: number;
  stop(closeActiveConnections?: boolean): Promise<void> | void;
}

function urlOf(hostname: string, port: number, tls: boolean): string {
  const host = hostname === "0.0.0.0" || hostname === "::" ? "127.0.0.1" : hostname;
  const shown = host.includes(":") ? `[${host}]` : host;
  return `${tls ? "https" : "http"}://${shown}:${port}`;
}

/**
 * Serves `handler` until `stop()`; resolves once listening.
 *
 * @example
 * ```ts
 * import { serve } from "./server.ts";
 *
 * const server = await serve(() => new Response("ok"), { address: "127.0.0.1:0" });
 * console.log(await (await fetch(server.url)).text()); // ok
 * await server.stop();
 * ```
 */
export async function serve(handler: Handler, options: ServeOptions): Promise<RunningServer> {
  const { hostname, port } = parseAddress(options.address);
  const g = globalThis as unknown as {
    Deno?: { serve(options: Record<string, unknown>, handler: Handler): DenoServer };
    Bun?: { serve(options: Record<string, unknown>): BunServer };
  };
  if (g.Deno) {
    let listening!: (addr: { hostname: string; port: number }) => void;
    const listened = new Promise<{ hostname: string; port: number }>((r) => (listening = r));
    const server = g.Deno.serve({
      hostname,
      port,
      ...(options.tls ? { cert: options.tls.cert, key: options.tls.key } : {}),
      onListen: (addr: { hostname: string; port: number }) => listening(addr),
    }, handler);
    const addr = await listened;
    return {
      hostname: addr.hostname,
      port: addr.port,
      url: urlOf(addr.hostname, addr.port, !!options.tls),
      stop: () => server.shutdown(),
    };
  }
  if (g.Bun) {
    const server = g.Bun.serve({
      hostname,
      port,
      fetch: handler,
      ...(options.tls ? { tls: { cert: options.tls.cert, key: options.tls.key } } : {}),
    });
    return {
      hostname: server.hostname,
      port: server.port,
      url: urlOf(server.hostname, server.port, !!options.tls),
      stop: async () => {
        await server.stop(true);
      },
    };
  }
  throw new Error("serving HTTP needs Deno or Bun");
}
