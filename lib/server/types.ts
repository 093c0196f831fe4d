/**
 * The shapes every part of lib/server speaks: a `fetch` handler, a PEM pair, and what a
 * runtime adapter is given and gives back.
 *
 * @module
 */

/** A `fetch`-style request handler (a hono app's `fetch`). */
export type Handler = (request: Request) => Response | Promise<Response>;

/** The peer of a request as the runtime's server saw it. */
export interface Peer {
  /** The peer's address. */
  hostname: string;
  /** The peer's port. */
  port: number;
}

/** A handler an adapter serves: a {@linkcode Handler} that is also told the peer. */
export type PeerHandler = (request: Request, peer: Peer) => Response | Promise<Response>;

/** A PEM certificate (chain) and its private key. */
export interface TLSPair {
  /** The certificate, leaf first, PEM. */
  cert: string;
  /** The private key, PEM. */
  key: string;
}

/** Where and how an adapter serves. */
export interface ServeOptions {
  /** The interface to bind, e.g. `127.0.0.1` or `0.0.0.0`. */
  hostname: string;
  /** The port; 0 picks a free one. */
  port: number;
  /** Serve HTTPS with this pair (TLS 1.2 at least); HTTP without it. */
  tls?: TLSPair;
  /** Called with an error the handler threw, which the adapter answers with 500. */
  onError(error: unknown): void;
}

/** A server an adapter started. */
export interface Served {
  /** The interface it is bound to. */
  readonly hostname: string;
  /** The port it listens on (the chosen one when 0 was asked). */
  readonly port: number;
  /**
   * Stops listening and lets the requests in progress finish, closing idle connections;
   * `force` closes the connections still open at once, where the runtime can.
   */
  stop(force?: boolean): Promise<void>;
}

/**
 * How a public listener (the forwarder on Deno and Bun, `NodeServer` on Node) listens and serves,
 * and the limits it applies to connections.
 */
export interface ListenerOptions {
  /** The interface of the public port; undefined: every interface, IPv4 and IPv6. */
  hostname: string | undefined;
  /** The public port; 0 picks a free one. */
  port: number;
  /** What it serves. */
  handler: Handler;
  /** Milliseconds a replaced certificate's open connections may go on. */
  drainTimeout: number;
  /** Milliseconds requests in progress may take when an inner server closes. */
  requestGrace: number;
  /** Milliseconds from accepting a connection, or from its first byte after an answer, to a request. */
  readHeaderTimeout: number;
  /** Milliseconds a connection may stay open with no request after its last answer. */
  idleTimeout: number;
  /** Open connections at most; one more is closed at once. */
  maxConnections: number;
  /** Bytes of a request body left unread by the handler read and thrown away before answering. */
  maxUnreadBodyBytes: number;
  /** Called with an error the handler threw. */
  onError(error: unknown): void;
  /** Called when the public listener fails after it started. */
  onListenerError(error: Error): void;
  /** Called when a connection is closed for a limit: which one. */
  onLimit?(limit: "readHeaderTimeout" | "idleTimeout" | "maxConnections"): void;
}
