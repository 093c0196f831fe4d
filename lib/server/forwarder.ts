/**
 * The public port of every server: a plain TCP listener (`tcp.ts`) that forwards each
 * connection, bytes unchanged, to an inner server of the runtime (`serve.ts`) on a loopback
 * port, where HTTP (and TLS) end. The forwarder is the one place that sees every connection, so
 * it is where the connection limits live, the same on every runtime:
 *
 * - a read-header timeout (Go's `ReadHeaderTimeout`): a connection must have a request in the
 *   handler within it of being accepted (the TLS handshake included) and of the first byte after
 *   an answer; `Deno.serve` has no such bound, and a client trickling headers held a connection
 *   for ever;
 * - an idle timeout (Go's `IdleTimeout`): a connection with no request in the handler is closed
 *   that long after its last answer;
 * - a bound on open connections: one past it is closed as soon as it is accepted.
 *
 * The forwarder learns when a connection has a request in the handler from the inner server,
 * which names the peer (the forwarder's own loopback port) of each request. An HTTP/2
 * connection (`Deno.serve` offers it; `Bun.serve` does not) is bounded after its first request by
 * the idle timeout alone, its client's frames between requests being no request head.
 *
 * Why TLS ends behind it (measured on Deno 2.9 and Bun 1.4): `Deno.serve` takes its certificate
 * once; `Bun.serve`'s `reload()` keeps the old one; Bun has neither `setSecureContext` nor a
 * working `SNICallback` on `node:https`; and starting a second listener on the same port
 * (`reusePort`) then closing the first resets about one connection in 600 at each swap. So a new
 * certificate starts a new inner server; new connections go to it, and the old one stops once
 * its connections have closed (or after the drain timeout).
 *
 * @module
 */

import { discardBody } from "./body.ts";
import { type Peer, serve, type Served } from "./serve.ts";
import { connectTcp, listenTcp, type TcpServer, type TcpSocket } from "./tcp.ts";
import type { ListenerOptions, TLSPair } from "./types.ts";

/** Milliseconds a closing inner server gives answers to pass through the forwarding. */
const FLUSH_GRACE_MS = 2_000;

/**
 * Milliseconds a connection whose inner side has closed goes on reading (and throwing away)
 * what the client still sends, so that the client reads the answer before a reset can reach it
 * (as Go's server lingers before it closes).
 */
const LINGER_MS = 2_000;

/** One forwarded connection. */
interface Connection {
  readonly client: TcpSocket;
  readonly upstream: TcpSocket;
  readonly inner: Inner;
  /** Requests of this connection in the handler (several at once with HTTP/2). */
  active: number;
  /**
   * HTTP/2: its client sends frames between requests (window updates, pings), so bytes after an
   * answer do not start the header timer; only the idle timeout bounds it then.
   */
  multiplexed: boolean;
  /** When the inner server last sent bytes: an answer still streaming keeps it from idling. */
  lastAnswered: number;
  /** The local port of the upstream socket, once connected: the peer the inner server sees. */
  peerPort?: number;
  headerTimer?: ReturnType<typeof setTimeout>;
  idleTimer?: ReturnType<typeof setTimeout>;
  lingerTimer?: ReturnType<typeof setTimeout>;
  closed: boolean;
}

/** An inner server: one certificate (or none), and the connections forwarded to it. */
interface Inner {
  served: Served;
  readonly connections: Set<Connection>;
  /** Connections by the local port of their upstream socket: the peer the inner server sees. */
  readonly byPeerPort: Map<number, Connection>;
  /** Requests it is answering. */
  inFlight: number;
  retired: boolean;
  /** Closes it after the drain timeout once retired, if its connections are still open. */
  drainTimer?: ReturnType<typeof setTimeout>;
  /** Resolves once closed: `true` when requests in progress were cut. */
  closed?: Promise<boolean>;
}

/** A TCP listener forwarding to an inner server (of the newest certificate, with TLS). */
export class Forwarder {
  readonly #options: ListenerOptions;
  readonly #retired = new Set<Inner>();
  #front: TcpServer | undefined;
  #inner: Inner | undefined;
  #serving = false;
  #open = 0;

  private constructor(options: ListenerOptions) {
    this.#options = options;
  }

  /**
   * Serves on the public port, HTTPS with `pair` or plain HTTP without; rejects when the pair
   * does not serve or the port is taken.
   */
  static async listen(options: ListenerOptions, pair?: TLSPair): Promise<Forwarder> {
    const forwarder = new Forwarder(options);
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
   * every connection is closed, idle keep-alive ones included. Resolves `true` when requests
   * were still in progress after the grace and were cut.
   */
  async close(): Promise<boolean> {
    this.#serving = false;
    const front = this.#front;
    this.#front = undefined;
    // The callback comes once the forwarded connections are closed below.
    const frontClosed = front
      ? new Promise<void>((resolve) => front.close(() => resolve()))
      : Promise.resolve();
    const inners = [...this.#retired, ...(this.#inner ? [this.#inner] : [])];
    this.#inner = undefined;
    const cut = await Promise.all(inners.map((inner) => this.#close(inner)));
    await frontClosed;
    return cut.some((late) => late);
  }

  async #startInner(pair: TLSPair | undefined): Promise<Inner> {
    const inner: Inner = {
      served: undefined!,
      connections: new Set(),
      byPeerPort: new Map(),
      inFlight: 0,
      retired: false,
    };
    const { handler, maxUnreadBodyBytes } = this.#options;
    inner.served = await serve(async (request: Request, peer: Peer) => {
      const connection = inner.byPeerPort.get(peer.port);
      inner.inFlight++;
      if (connection) {
        // HTTP/2 names the host in `:authority`, which the runtime turns into the URL: a request
        // without a Host header came over HTTP/2 (HTTP/1.1 requires the header).
        if (!request.headers.has("host")) connection.multiplexed = true;
        this.#requestStarted(connection);
      }
      try {
        const response = await handler(request);
        await discardBody(request, maxUnreadBodyBytes);
        return response;
      } finally {
        inner.inFlight--;
        if (connection) this.#requestEnded(connection);
      }
    }, { hostname: "127.0.0.1", port: 0, tls: pair, onError: this.#options.onError });
    return inner;
  }

  async #listen(): Promise<TcpServer> {
    const { port, hostname } = this.#options;
    const server = await listenTcp(port, hostname, (socket) => this.#forward(socket));
    server.on("error", (err) => this.#options.onListenerError(err));
    return server;
  }

  #retire(inner: Inner): void {
    inner.retired = true;
    this.#retired.add(inner);
    if (inner.connections.size === 0) this.#close(inner);
    else inner.drainTimer = setTimeout(() => this.#close(inner), this.#options.drainTimeout);
  }

  /**
   * Closes an inner server: waits (a while) for its requests in progress, then closes the
   * connections forwarded to it (idle keep-alive connections would hold a graceful shutdown
   * open for ever) and stops it. Resolves `true` when requests were cut.
   */
  #close(inner: Inner): Promise<boolean> {
    // A pending timer would keep the process alive after a stop.
    clearTimeout(inner.drainTimer);
    inner.closed ??= (async () => {
      const deadline = Date.now() + this.#options.requestGrace;
      while (inner.inFlight > 0 && Date.now() < deadline) await pause(10);
      const late = inner.inFlight > 0;
      if (!late) {
        // An answer may still be on its way through the forwarding: end only the side towards
        // the inner server, which then closes each connection after its last bytes, and the
        // client side follows once they are through. What is still open after a moment goes.
        for (const connection of inner.connections) connection.upstream.end();
        const flushed = Date.now() + FLUSH_GRACE_MS;
        while (inner.connections.size > 0 && Date.now() < flushed) await pause(10);
      }
      for (const connection of inner.connections) this.#destroy(connection);
      await inner.served.stop(true).catch(() => {});
      this.#retired.delete(inner);
      return late;
    })();
    return inner.closed;
  }

  /** Pipes one client connection to the inner server of the current certificate. */
  #forward(client: TcpSocket): void {
    const inner = this.#inner;
    if (!inner || !this.#serving) {
      client.destroy();
      return;
    }
    if (this.#open >= this.#options.maxConnections) {
      client.destroy();
      this.#options.onLimit?.("maxConnections");
      return;
    }
    this.#open++;
    const upstream = connectTcp(inner.served.port, "127.0.0.1");
    const connection: Connection = {
      client,
      upstream,
      inner,
      active: 0,
      multiplexed: false,
      lastAnswered: Date.now(),
      closed: false,
    };
    inner.connections.add(connection);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    // Accepted: the handshake and the first request must come within the header timeout.
    this.#awaitRequest(connection);
    upstream.once("connect", () => {
      // Known before the inner server can see a byte of this connection.
      connection.peerPort = upstream.localPort;
      if (connection.peerPort !== undefined) inner.byPeerPort.set(connection.peerPort, connection);
      client.on("data", () => {
        if (connection.active === 0 && !connection.multiplexed) this.#awaitRequest(connection);
      });
      client.pipe(upstream);
    });
    // The inner side ending (an answer with `Connection: close`, or a runtime closing after an
    // early answer) ends the client side once the answer is through, never cuts it.
    upstream.pipe(client);
    upstream.on("data", () => (connection.lastAnswered = Date.now()));
    upstream.on("error", () => this.#linger(connection));
    upstream.on("close", () => this.#linger(connection));
    client.on("error", () => this.#destroy(connection));
    client.on("close", () => this.#destroy(connection));
  }

  /**
   * The inner side is gone: the client gets the end of what was answered, and what it still
   * sends is read and dropped for a while, so that no reset overtakes the answer.
   */
  #linger(connection: Connection): void {
    const { client, upstream } = connection;
    if (connection.closed || connection.lingerTimer) return;
    client.unpipe(upstream);
    client.resume();
    client.end();
    connection.lingerTimer = setTimeout(() => this.#destroy(connection), LINGER_MS);
  }

  #destroy(connection: Connection): void {
    const { client, upstream, inner } = connection;
    client.destroy();
    upstream.destroy();
    if (connection.closed) return;
    connection.closed = true;
    clearTimeout(connection.headerTimer);
    clearTimeout(connection.idleTimer);
    clearTimeout(connection.lingerTimer);
    this.#open--;
    inner.connections.delete(connection);
    if (connection.peerPort !== undefined) inner.byPeerPort.delete(connection.peerPort);
    if (inner.retired && inner.connections.size === 0) this.#close(inner);
  }

  /** Starts the header timer, unless it runs already. */
  #awaitRequest(connection: Connection): void {
    if (connection.headerTimer !== undefined || connection.closed) return;
    connection.headerTimer = setTimeout(
      () => this.#expire(connection, "readHeaderTimeout"),
      this.#options.readHeaderTimeout,
    );
  }

  #requestStarted(connection: Connection): void {
    connection.active++;
    clearTimeout(connection.headerTimer);
    clearTimeout(connection.idleTimer);
    connection.headerTimer = connection.idleTimer = undefined;
  }

  #requestEnded(connection: Connection): void {
    connection.active--;
    if (connection.active === 0) this.#idle(connection, this.#options.idleTimeout);
  }

  /**
   * Closes the connection once it has had no request for the idle timeout. The handler has
   * returned when a request ends, but its answer may still be on its way to a slow client: the
   * timeout counts from the answer's last bytes, once the client has taken them all.
   */
  #idle(connection: Connection, delay: number): void {
    if (connection.closed) return;
    connection.idleTimer = setTimeout(() => {
      const since = Date.now() - connection.lastAnswered;
      if (connection.client.writableLength > 0) {
        // The client has not taken the whole answer yet: not idle.
        this.#idle(connection, this.#options.idleTimeout);
      } else if (since < this.#options.idleTimeout) {
        this.#idle(connection, this.#options.idleTimeout - since);
      } else this.#expire(connection, "idleTimeout");
    }, delay);
  }

  #expire(connection: Connection, limit: "readHeaderTimeout" | "idleTimeout"): void {
    if (connection.closed || connection.active > 0) return;
    this.#destroy(connection);
    this.#options.onLimit?.(limit);
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
