/**
 * The seam between Rudder and a runtime's HTTP server: serve a `fetch` handler on a host and
 * port, with an optional fixed TLS pair. One small adapter per runtime answers it
 * (`serve_deno.ts`, `serve_bun.ts`, `serve_node.ts`); nothing else in the library asks which runtime it is on to
 * serve.
 *
 * @module
 */

import type { Peer, PeerHandler, Served, ServeOptions } from "./types.ts";
import { serveDeno } from "./serve_deno.ts";
import { serveBun } from "./serve_bun.ts";
import { runtimeName } from "../util/runtime.ts";

/** An adapter: serves `handler` and resolves once listening; rejects when it cannot listen. */
export type ServeFunction = (handler: PeerHandler, options: ServeOptions) => Promise<Served>;

export type { Peer, PeerHandler, Served, ServeOptions };

/** Serves `handler` with the current runtime's own server, telling it the peer of each request. */
export function serve(handler: PeerHandler, options: ServeOptions): Promise<Served> {
  switch (runtimeName()) {
    case "deno":
      return serveDeno(handler, options);
    case "bun":
      return serveBun(handler, options);
    default:
      // Loaded on Node only: it brings `node:http`, `node:https` and `node:stream`.
      return import("./serve_node.ts").then(({ serveNode }) => serveNode(handler, options));
  }
}
