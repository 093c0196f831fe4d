/**
 * Serving on Node: `node:http` and `node:https` servers bridged to the `fetch`-style handler.
 * Node's server has what the forwarder adds on Deno and Bun (forwarder.ts): a header timeout
 * (`headersTimeout`, and `handshakeTimeout` for TLS), an idle timeout (`keepAliveTimeout`), a
 * bound on connections (`maxConnections`), and a certificate swapped in place
 * (`setSecureContext`: new connections get the new pair, open ones keep theirs). So on Node a
 * server is {@linkcode NodeServer}, with no forwarder and no second port.
 *
 * @module
 */

import type * as NodeHttp from "node:http";
import type * as NodeHttps from "node:https";
import type { Socket } from "node:net";
import process from "node:process";
import { discardBody } from "./body.ts";
import type { ListenerOptions, PeerHandler, Served, ServeOptions, TLSPair } from "./types.ts";

// Fetched when this module is evaluated, which is on Node only (serve.ts and http_server.ts
// import it there): static imports of them would be hoisted to the top of a bundle (the Bun
// single binary) and load `node:http` on every runtime.
const http = process.getBuiltinModule("node:http") as typeof NodeHttp;
const https = process.getBuiltinModule("node:https") as typeof NodeHttps;
const { Readable } = process.getBuiltinModule("node:stream") as typeof import("node:stream");

/** How often Node checks its header timeout, at most: its default (30 s) is far coarser. */
const MAX_CHECK_INTERVAL_MS = 1_000;

/** What {@linkcode bridge} needs besides the handler. */
interface BridgeOptions {
  tls: boolean;
  onError(error: unknown): void;
  /** Bytes of a body the handler left unread that are read before answering; 0: none. */
  maxUnreadBodyBytes: number;
}

/** Answers node:http's requests with a `fetch`-style handler. */
function bridge(
  handler: PeerHandler,
  options: BridgeOptions,
): (incoming: NodeHttp.IncomingMessage, outgoing: NodeHttp.ServerResponse) => void {
  return (incoming, outgoing) => {
    void respond(handler, options, incoming, outgoing).catch((err) => {
      options.onError(err);
      if (!outgoing.headersSent) {
        outgoing.writeHead(500, { "content-type": "text/plain;charset=UTF-8" });
        outgoing.end("internal error");
      } else outgoing.destroy();
    });
  };
}

async function respond(
  handler: PeerHandler,
  options: BridgeOptions,
  incoming: NodeHttp.IncomingMessage,
  outgoing: NodeHttp.ServerResponse,
): Promise<void> {
  const request = toRequest(incoming, options.tls);
  const socket = incoming.socket;
  let response: Response;
  try {
    response = await handler(request, {
      hostname: socket.remoteAddress ?? "",
      port: socket.remotePort ?? 0,
    });
  } catch (err) {
    options.onError(err);
    response = new Response("internal error", { status: 500 });
  }
  if (options.maxUnreadBodyBytes > 0) await discardBody(request, options.maxUnreadBodyBytes);
  await writeResponse(response, outgoing);
}

/** The Web `Request` of a node:http request; its body streams from the socket. */
function toRequest(incoming: NodeHttp.IncomingMessage, tls: boolean): Request {
  const headers = new Headers();
  const raw = incoming.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  const host = incoming.headers.host ??
    `${incoming.socket.localAddress}:${incoming.socket.localPort}`;
  const url = `${tls ? "https" : "http"}://${host}${incoming.url ?? "/"}`;
  const method = incoming.method ?? "GET";
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(url, {
    method,
    headers,
    body: hasBody ? Readable.toWeb(incoming) as ReadableStream<Uint8Array> : undefined,
    // A body is a stream, which fetch's types want named as sent while the answer comes.
    ...(hasBody ? { duplex: "half" } : {}),
  });
}

/** Writes `response` to node:http, waiting for the client to take each chunk. */
async function writeResponse(response: Response, outgoing: NodeHttp.ServerResponse): Promise<void> {
  const headers: [string, string][] = [];
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers.push([name, value]);
  });
  for (const cookie of response.headers.getSetCookie()) headers.push(["set-cookie", cookie]);
  outgoing.writeHead(response.status, response.statusText || undefined, headers.flat());
  if (!response.body) {
    outgoing.end();
    return;
  }
  const reader = response.body.getReader();
  const gone = () => void reader.cancel().catch(() => {});
  outgoing.once("close", gone);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (outgoing.destroyed) return;
      if (!outgoing.write(value)) {
        await new Promise<void>((resolve) => {
          const go = () => {
            outgoing.off("drain", go);
            outgoing.off("close", go);
            resolve();
          };
          outgoing.on("drain", go);
          outgoing.on("close", go);
        });
      }
    }
    outgoing.end();
  } catch (err) {
    outgoing.destroy(err instanceof Error ? err : new Error(String(err)));
  } finally {
    outgoing.off("close", gone);
  }
}

/** Serves `handler` with a node:http(s) server; resolves once listening. */
export async function serveNode(handler: PeerHandler, options: ServeOptions): Promise<Served> {
  const listener = bridge(handler, {
    tls: !!options.tls,
    onError: options.onError,
    maxUnreadBodyBytes: 0,
  });
  const server = options.tls
    ? https.createServer({ ...options.tls, minVersion: "TLSv1.2" }, listener)
    : http.createServer(listener);
  await listen(server, options.hostname, options.port);
  const address = server.address();
  if (!address || typeof address !== "object") throw new Error("not listening");
  return {
    hostname: address.address,
    port: address.port,
    stop: (force = false) => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (force) server.closeAllConnections();
      return closed;
    },
  };
}

function listen(
  server: NodeHttp.Server,
  hostname: string | undefined,
  port: number,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/**
 * A server on Node with the limits of {@linkcode ListenerOptions}, and the same surface as the
 * forwarder: `address`, `swap` and `close`.
 */
export class NodeServer {
  readonly #server: NodeHttp.Server | NodeHttps.Server;
  readonly #options: ListenerOptions;
  /** The connections open now. */
  readonly #sockets = new Set<Socket>();
  /** The timers that close the connections of replaced certificates. */
  readonly #drains = new Set<ReturnType<typeof setTimeout>>();
  /** Requests in the handler. */
  readonly #requests: { inFlight: number };

  private constructor(
    server: NodeHttp.Server | NodeHttps.Server,
    options: ListenerOptions,
    requests: { inFlight: number },
  ) {
    this.#server = server;
    this.#options = options;
    this.#requests = requests;
  }

  /**
   * Serves on `options.hostname` and `options.port`, HTTPS with `pair` or plain HTTP without;
   * rejects when the pair does not load or the port is taken.
   */
  static async listen(options: ListenerOptions, pair?: TLSPair): Promise<NodeServer> {
    const requests = { inFlight: 0 };
    const handler: PeerHandler = async (request) => {
      requests.inFlight++;
      try {
        return await options.handler(request);
      } finally {
        requests.inFlight--;
      }
    };
    const listener = bridge(handler, {
      tls: !!pair,
      onError: options.onError,
      maxUnreadBodyBytes: options.maxUnreadBodyBytes,
    });
    const limits: NodeHttp.ServerOptions = {
      headersTimeout: options.readHeaderTimeout,
      // The whole request is not bounded (Go's ReadTimeout is unset); its head is.
      requestTimeout: 0,
      keepAliveTimeout: options.idleTimeout,
      // Node's default adds a second to the idle timeout before it closes (for clients racing
      // it); the idle timeout is already above Go's clients' 90 s.
      keepAliveTimeoutBuffer: 0,
      connectionsCheckingInterval: Math.max(
        10,
        Math.min(MAX_CHECK_INTERVAL_MS, options.readHeaderTimeout / 4),
      ),
    };
    const server = pair
      ? https.createServer({
        ...limits,
        cert: pair.cert,
        key: pair.key,
        minVersion: "TLSv1.2",
        handshakeTimeout: options.readHeaderTimeout,
      }, listener)
      : http.createServer(limits, listener);
    server.maxConnections = options.maxConnections;
    const self = new NodeServer(server, options, requests);
    const sockets = self.#sockets;
    server.on("connection", (socket: Socket) => {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    });
    server.on("drop", () => options.onLimit?.("maxConnections"));
    await listen(server, options.hostname, options.port);
    server.on("error", (err) => options.onListenerError(err));
    return self;
  }

  /** The listener's address. */
  get address(): { hostname: string; port: number } {
    const address = this.#server.address();
    if (!address || typeof address !== "object") throw new Error("not listening");
    return { hostname: address.address, port: address.port };
  }

  /**
   * New connections get `pair`; those open now keep the previous one and are closed after the
   * drain timeout if still open.
   */
  swap(pair: TLSPair): Promise<void> {
    const server = this.#server;
    if (!(server instanceof https.Server)) return Promise.resolve();
    try {
      server.setSecureContext({ cert: pair.cert, key: pair.key, minVersion: "TLSv1.2" });
    } catch (err) {
      return Promise.reject(err);
    }
    const retired = [...this.#sockets];
    if (retired.length === 0) return Promise.resolve();
    const timer = setTimeout(() => {
      this.#drains.delete(timer);
      for (const socket of retired) socket.destroy();
    }, this.#options.drainTimeout);
    this.#drains.add(timer);
    return Promise.resolve();
  }

  /**
   * Stops: no new connections, requests in progress finish (within the request grace), idle
   * keep-alive connections close, then the rest. Resolves `true` when requests were cut.
   */
  async close(): Promise<boolean> {
    const server = this.#server;
    for (const timer of this.#drains) clearTimeout(timer);
    this.#drains.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    const deadline = Date.now() + this.#options.requestGrace;
    // A connection whose answer ends while closing turns idle: close it then.
    while (this.#requests.inFlight > 0 && Date.now() < deadline) {
      server.closeIdleConnections();
      await pause(10);
    }
    const late = this.#requests.inFlight > 0;
    server.closeIdleConnections();
    // An answer still being written to a slow client goes on a moment, then its connection too.
    const flushed = Date.now() + 2_000;
    while (!late && this.#sockets.size > 0 && Date.now() < flushed) {
      server.closeIdleConnections();
      await pause(10);
    }
    server.closeAllConnections();
    for (const socket of this.#sockets) socket.destroy();
    await closed;
    return late;
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
