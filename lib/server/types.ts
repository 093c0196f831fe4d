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
