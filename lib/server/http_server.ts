/**
 * An HTTP(S) server as a {@linkcode Runnable}: the metrics, health-probe and webhook servers are
 * each one. On Deno and Bun every one is a {@linkcode Forwarder} in front of the runtime's
 * server, which bounds slow, idle and surplus connections the same on both and, with a
 * {@linkcode CertWatcher}, takes a new certificate with no request failed. Node's own server
 * does all of that itself, so there it is a {@linkcode NodeServer} with no forwarder.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { abortable } from "../util/abort.ts";
import type { Runnable } from "../util/runnable.ts";
import { namesNoHost, parseAddress, urlOf } from "./address.ts";
import { CertWatcher } from "./certwatcher.ts";
import { Forwarder } from "./forwarder.ts";
import type { NodeServer } from "./serve_node.ts";
import type { Handler, ListenerOptions, TLSPair } from "./types.ts";
import { errorMessage } from "../util/logging.ts";
import { runtimeName } from "../util/runtime.ts";

/** Milliseconds the requests in progress at a stop may take before their connections close. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * Milliseconds the open connections of a replaced certificate may go on before they close
 * (new connections get the new certificate at once).
 */
export const DEFAULT_DRAIN_TIMEOUT_MS = 60_000;

/**
 * Milliseconds from accepting a connection (TLS handshake included), or from its first byte
 * after an answer, to a whole request head. Go's `ReadHeaderTimeout` is unset by default (no
 * bound), which lets a client trickling headers hold a connection for ever; 10 s is Bun's own
 * idle bound, and far above what a client on a working network takes.
 */
export const DEFAULT_READ_HEADER_TIMEOUT_MS = 10_000;

/**
 * Milliseconds a keep-alive connection may stay open with no request after its last answer.
 * Above the 90 s after which Go's clients (the API server's among them) drop idle connections,
 * so that the client, not the server, closes first and no request races a close.
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

/**
 * Connections open at once, at most; one more is closed as soon as it is accepted. Each takes
 * three file descriptors (client, forwarded, and the inner server's).
 */
export const DEFAULT_MAX_CONNECTIONS = 4_096;

/**
 * Bytes of a request body that a handler answered without reading (413, 415, 404) read and
 * thrown away before the answer goes, so that a client still sending reads the answer rather
 * than a reset (see `body.ts`). A longer body's connection is closed after the answer.
 */
export const DEFAULT_MAX_UNREAD_BODY_BYTES = 16 * 1024 * 1024;

const log = getLogger(["rudder", "server"]);

/** What to serve, where, and how. */
export interface HTTPServerOptions {
  /** What it serves, in logs and errors: `"metrics"`, `"health"`, `"webhooks"`. */
  name: string;
  /** `host:port`, `:port` or `port` (every interface); port 0 picks a free one. */
  address: string;
  /** What answers the requests. */
  handler: Handler;
  /**
   * HTTPS with a fixed pair, or with the pair of a {@linkcode CertWatcher}, taken anew when the
   * files change with no request failed (the server starts and stops the watcher itself).
   * Plain HTTP without.
   */
  tls?: TLSPair | CertWatcher;
  /**
   * Milliseconds requests in progress at a stop may take; default
   * {@linkcode DEFAULT_SHUTDOWN_TIMEOUT_MS}.
   */
  shutdownTimeout?: number;
  /**
   * With a {@linkcode CertWatcher}: milliseconds the connections of a replaced certificate may
   * go on; default {@linkcode DEFAULT_DRAIN_TIMEOUT_MS}.
   */
  drainTimeout?: number;
  /**
   * Milliseconds from accepting a connection, or from its first byte after an answer, to a whole
   * request head; default {@linkcode DEFAULT_READ_HEADER_TIMEOUT_MS}.
   */
  readHeaderTimeout?: number;
  /**
   * Milliseconds a keep-alive connection may stay open with no request; default
   * {@linkcode DEFAULT_IDLE_TIMEOUT_MS}.
   */
  idleTimeout?: number;
  /** Connections open at once, at most; default {@linkcode DEFAULT_MAX_CONNECTIONS}. */
  maxConnections?: number;
  /**
   * Bytes of a body the handler left unread read and thrown away before answering; default
   * {@linkcode DEFAULT_MAX_UNREAD_BODY_BYTES}.
   */
  maxUnreadBodyBytes?: number;
}

/**
 * Serves a handler over HTTP or HTTPS until its signal aborts, then stops gracefully.
 *
 * @example
 * ```ts ignore
 * import { HTTPServer } from "./http_server.ts";
 *
 * const server = new HTTPServer({
 *   name: "hello",
 *   address: "127.0.0.1:0",
 *   handler: () => new Response("hello"),
 * });
 * const stop = new AbortController();
 * const running = server.start(stop.signal);
 * await server.ready();
 * console.log(await (await fetch(server.url!)).text()); // hello
 * stop.abort();
 * await running;
 * ```
 */
export class HTTPServer implements Runnable {
  /** What it serves, as in its options. */
  readonly name: string;
  readonly #options: HTTPServerOptions;
  readonly #ready = Promise.withResolvers<void>();
  #listening: { hostname: string; port: number } | undefined;
  #started = false;
  readonly #limitLogged = new Map<string, number>();

  /** Creates a server; nothing listens until {@linkcode HTTPServer.start}. */
  constructor(options: HTTPServerOptions) {
    this.name = options.name;
    this.#options = options;
    // ready() may never be asked for; a failed start rejects start() too.
    this.#ready.promise.catch(() => {});
  }

  /** The interface listened on, once listening. */
  get hostname(): string | undefined {
    return this.#listening?.hostname;
  }

  /** The port listened on (the chosen one when 0 was asked), once listening. */
  get port(): number | undefined {
    return this.#listening?.port;
  }

  /** `http(s)://host:port` once listening, with a loopback host when bound to every interface. */
  get url(): string | undefined {
    if (!this.#listening) return undefined;
    return urlOf(this.#listening.hostname, this.#listening.port, !!this.#options.tls);
  }

  /**
   * Listens (rejects naming the server and its address when the port is taken or the
   * certificate does not load), serves until `signal` aborts, then stops: no new connections,
   * requests in progress finish (within `shutdownTimeout`), idle keep-alive connections close.
   * Resolves once stopped.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new Error(`the ${this.name} server was already started`);
    this.#started = true;
    const watcherStop = new AbortController();
    let stopServing: () => Promise<void>;
    let watching: Promise<void> | undefined;
    try {
      const tls = this.#options.tls;
      const watcher = tls instanceof CertWatcher ? tls : undefined;
      const pair = watcher ? watcher.current() ?? await watcher.load() : tls as TLSPair | undefined;
      const forwarder = await this.#listen(pair);
      let unsubscribe = () => {};
      if (watcher) {
        unsubscribe = watcher.onChange((next) => forwarder.swap(next));
        watching = watcher.start(watcherStop.signal).catch((err) => {
          log.error("The {name} server's certificate watcher failed: {error}", {
            name: this.name,
            error: errorMessage(err),
          });
        });
      }
      stopServing = async () => {
        unsubscribe();
        if (await forwarder.close()) {
          log.warn("The {name} server's requests took longer than {timeout} ms: closed them", {
            name: this.name,
            timeout: this.#options.shutdownTimeout ?? DEFAULT_SHUTDOWN_TIMEOUT_MS,
          });
        }
      };
    } catch (err) {
      watcherStop.abort();
      const error = new Error(
        `cannot serve ${this.name} on ${this.#options.address}: ${errorMessage(err)}`,
        { cause: err },
      );
      this.#ready.reject(error);
      throw error;
    }
    this.#ready.resolve();
    log.info("Serving {name} on {url}", { name: this.name, url: this.url });
    if (!signal.aborted) {
      await new Promise<void>((resolve) =>
        signal.addEventListener("abort", () => resolve(), { once: true })
      );
    }
    watcherStop.abort();
    await stopServing();
    await watching;
    log.info("Stopped serving {name}", { name: this.name });
  }

  /** Resolves once listening; rejects if start failed, or with `signal`'s reason if it aborts first. */
  ready(signal?: AbortSignal): Promise<void> {
    return abortable(this.#ready.promise, signal);
  }

  /** Servers run on every replica. */
  needLeaderElection(): false {
    return false;
  }

  async #listen(pair: TLSPair | undefined): Promise<Forwarder | NodeServer> {
    const options = this.#options;
    const { hostname, port } = parseAddress(options.address);
    // serve_node.ts on Node only: it brings `node:http`, `node:https` and `node:stream`, which
    // Deno and Bun would load for nothing (2–5 MiB resident, bench/README.md).
    const listen = runtimeName() === "node"
      ? (await import("./serve_node.ts")).NodeServer.listen
      : Forwarder.listen;
    const settings: ListenerOptions = {
      hostname: namesNoHost(options.address) ? undefined : hostname,
      port,
      handler: this.#handler(),
      drainTimeout: options.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT_MS,
      requestGrace: options.shutdownTimeout ?? DEFAULT_SHUTDOWN_TIMEOUT_MS,
      readHeaderTimeout: options.readHeaderTimeout ?? DEFAULT_READ_HEADER_TIMEOUT_MS,
      idleTimeout: options.idleTimeout ?? DEFAULT_IDLE_TIMEOUT_MS,
      maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      maxUnreadBodyBytes: options.maxUnreadBodyBytes ?? DEFAULT_MAX_UNREAD_BODY_BYTES,
      onError: (error) => this.#logFailure(error),
      onListenerError: (error) =>
        log.error("The {name} listener failed: {error}", { name: this.name, error: error.message }),
      onLimit: (limit) => this.#logLimit(limit),
    };
    const server = await listen(settings, pair);
    this.#listening = server.address;
    return server;
  }

  /** Logs a connection closed for a limit, at most once a minute per limit (floods repeat it). */
  #logLimit(limit: string): void {
    const now = Date.now();
    if ((this.#limitLogged.get(limit) ?? -Infinity) > now - 60_000) return;
    this.#limitLogged.set(limit, now);
    log.debug("The {name} server closed a connection for its {limit}", { name: this.name, limit });
  }

  /** The handler, answering 500 (and logging) when it throws. */
  #handler(): Handler {
    const handler = this.#options.handler;
    return async (request) => {
      try {
        return await handler(request);
      } catch (err) {
        this.#logFailure(err);
        return new Response("internal error", { status: 500 });
      }
    };
  }

  #logFailure(error: unknown): void {
    log.error("A {name} request failed: {error}", { name: this.name, error: errorMessage(error) });
  }
}
