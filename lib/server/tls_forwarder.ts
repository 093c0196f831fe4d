/**
 * HTTPS whose certificate can be replaced while requests flow, with no connection refused or
 * reset by a swap.
 *
 * Why a forwarder (measured on Deno 2.9 and Bun 1.4): `Deno.serve` takes its certificate once;
 * `Bun.serve`'s `reload()` keeps the old one; Bun has neither `setSecureContext` nor a working
 * `SNICallback` on `node:https`; and starting a second listener on the same port (`reusePort`)
 * then closing the first resets about one connection in 600 at each swap. So the public port is
 * a plain TCP listener (`node:net`) that forwards each connection, bytes unchanged, to an inner
 * HTTPS server on a loopback port — the runtime's own server (`serve.ts`), where TLS ends. A new
 * certificate starts a new inner server; new connections go to it, and the old one stops once
 * its connections have closed (or after the drain timeout).
 *
 * @module
 */

import net from "node:net";
import { serve, type Served } from "./serve.ts";
import type { Handler, TLSPair } from "./types.ts";

/** Milliseconds a closing inner server gives answers to pass through the forwarding. */
const FLUSH_GRACE_MS = 2_000;

/** How the forwarder listens and serves. */
export interface TLSForwarderOptions {
  /** The interface of the public port; undefined: every interface, IPv4 and IPv6. */
  hostname: string | undefined;
  /** The public port; 0 picks a free one. */
  port: number;
  /** What each inner server serves. */
  handler: Handler;
  /** Milliseconds a replaced certificate's open connections may go on. */
  drainTimeout: number;
  /** Milliseconds requests in progress may take when an inner server closes. */
  requestGrace: number;
  /** Called with an error the handler threw. */
  onError(error: unknown): void;
  /** Called when the public listener fails after it started. */
  onListenerError(error: Error): void;
}

/** An inner HTTPS server: one certificate, and the connections forwarded to it. */
interface Inner {
  served: Served;
  /** Client and upstream sockets of the connections forwarded to it. */
  readonly sockets: Set<net.Socket>;
  /** The upstream sockets alone: ending one closes its connection once its answer is through. */
  readonly upstreams: Set<net.Socket>;
  /** Connections forwarded to it and not yet closed. */
  connections: number;
  /** Requests it is answering. */
  inFlight: number;
  retired: boolean;
  /** Closes it after the drain timeout once retired, if its connections are still open. */
  drainTimer?: ReturnType<typeof setTimeout>;
  closed?: Promise<void>;
}

/** A TCP listener forwarding to an inner HTTPS server of the newest certificate. */
export class TLSForwarder {
  readonly #options: TLSForwarderOptions;
  readonly #retired = new Set<Inner>();
  #front: net.Server | undefined;
  #inner: Inner | undefined;
  #serving = false;

  private constructor(options: TLSForwarderOptions) {
    this.#options = options;
  }

  /** Serves `pair` on the public port; rejects when the pair does not serve or the port is taken. */
  static async listen(options: TLSForwarderOptions, pair: TLSPair): Promise<TLSForwarder> {
    const forwarder = new TLSForwarder(options);
    forwarder.#inner = await forwarder.#startInner(pair);
    try {
      forwarder.#front = await forwarder.#listen();
    } catch (err) {
      await forwarder.#inner.served.stop(true).catch(() => {});
      throw err;
    }
    forwarder.#serving = true;
    return forwarder;
  }

  /** The public listener's address. */
  get address(): { hostname: string; port: number } {
    const address = this.#front?.address();
    if (!address || typeof address !== "object") throw new Error("not listening");
    return { hostname: address.address, port: address.port };
  }

  /** New connections get `pair`; the connections of the previous one drain. */
  async swap(pair: TLSPair): Promise<void> {
    if (!this.#serving) return;
    const next = await this.#startInner(pair);
    if (!this.#serving) {
      await next.served.stop(true);
      return;
    }
    const old = this.#inner!;
    this.#inner = next;
    this.#retire(old);
  }

  /**
   * Stops: no new connections, requests in progress finish (within the request grace), then
   * every connection is closed, idle keep-alive ones included.
   */
  async close(): Promise<void> {
    this.#serving = false;
    const front = this.#front;
    this.#front = undefined;
    // The callback comes once the forwarded connections are closed below.
    const frontClosed = front
      ? new Promise<void>((resolve) => front.close(() => resolve()))
      : Promise.resolve();
    const inners = [...this.#retired, ...(this.#inner ? [this.#inner] : [])];
    this.#inner = undefined;
    await Promise.all(inners.map((inner) => this.#close(inner)));
    await frontClosed;
  }

  async #startInner(pair: TLSPair): Promise<Inner> {
    const inner: Inner = {
      served: undefined!,
      sockets: new Set(),
      upstreams: new Set(),
      connections: 0,
      inFlight: 0,
      retired: false,
    };
    const handler = this.#options.handler;
    inner.served = await serve(async (request) => {
      inner.inFlight++;
      try {
        return await handler(request);
      } finally {
        inner.inFlight--;
      }
    }, { hostname: "127.0.0.1", port: 0, tls: pair, onError: this.#options.onError });
    return inner;
  }

  async #listen(): Promise<net.Server> {
    const server = net.createServer((socket) => this.#forward(socket));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.#options.port, this.#options.hostname, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (err) => this.#options.onListenerError(err));
    return server;
  }

  #retire(inner: Inner): void {
    inner.retired = true;
    this.#retired.add(inner);
    if (inner.connections === 0) this.#close(inner);
    else inner.drainTimer = setTimeout(() => this.#close(inner), this.#options.drainTimeout);
  }

  /**
   * Closes an inner server: waits (a while) for its requests in progress, then closes the
   * connections forwarded to it (idle keep-alive connections would hold a graceful shutdown
   * open for ever) and stops it.
   */
  #close(inner: Inner): Promise<void> {
    // A pending timer would keep the process alive after a stop.
    clearTimeout(inner.drainTimer);
    inner.closed ??= (async () => {
      const deadline = Date.now() + this.#options.requestGrace;
      while (inner.inFlight > 0 && Date.now() < deadline) await pause(10);
      // An answer may still be on its way through the forwarding: end only the side towards the
      // inner server, which then closes each connection after its last bytes, and the client
      // side follows once they are through. What is still open after a moment goes.
      for (const upstream of inner.upstreams) upstream.end();
      const flushed = Date.now() + FLUSH_GRACE_MS;
      while (inner.sockets.size > 0 && Date.now() < flushed) await pause(10);
      for (const socket of inner.sockets) socket.destroy();
      await inner.served.stop(true).catch(() => {});
      this.#retired.delete(inner);
    })();
    return inner.closed;
  }

  /** Pipes one client connection to the inner server of the current certificate. */
  #forward(client: net.Socket): void {
    const inner = this.#inner;
    if (!inner || !this.#serving) {
      client.destroy();
      return;
    }
    inner.connections++;
    const upstream = net.connect(inner.served.port, "127.0.0.1");
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    inner.sockets.add(client);
    inner.sockets.add(upstream);
    inner.upstreams.add(upstream);
    // Either side closing closes both. A body still arriving after an early answer (413) may
    // then reach the client as a reset; lingering here was measured not to help on Bun, whose
    // own server closes with the body unread (a Node client sees EPIPE without any forwarder).
    let closed = false;
    const close = () => {
      client.destroy();
      upstream.destroy();
      if (closed) return;
      closed = true;
      inner.sockets.delete(client);
      inner.sockets.delete(upstream);
      inner.upstreams.delete(upstream);
      inner.connections--;
      if (inner.retired && inner.connections === 0) this.#close(inner);
    };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", close);
    upstream.on("close", close);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
