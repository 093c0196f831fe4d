/**
 * An HTTP(S) server as a {@linkcode Runnable}: the metrics, health-probe and webhook servers are
 * each one. Plain HTTP and a fixed certificate are served by the runtime's server directly; a
 * certificate from a {@linkcode CertWatcher} through a {@linkcode TLSForwarder}, so that a new
 * certificate is taken with no request failed.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { abortable } from "../util/abort.ts";
import type { Runnable } from "../util/runnable.ts";
import { namesNoHost, parseAddress, urlOf } from "./address.ts";
import { CertWatcher } from "./certwatcher.ts";
import { serve, type Served } from "./serve.ts";
import { TLSForwarder } from "./tls_forwarder.ts";
import type { Handler, TLSPair } from "./types.ts";

/** Milliseconds the requests in progress at a stop may take before their connections close. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * Milliseconds the open connections of a replaced certificate may go on before they close
 * (new connections get the new certificate at once).
 */
export const DEFAULT_DRAIN_TIMEOUT_MS = 60_000;

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
      if (tls instanceof CertWatcher) {
        const forwarder = await this.#listenForwarding(tls);
        const unsubscribe = tls.onChange((pair) => forwarder.swap(pair));
        watching = tls.start(watcherStop.signal).catch((err) => {
          log.error("The {name} server's certificate watcher failed: {error}", {
            name: this.name,
            error: message(err),
          });
        });
        stopServing = async () => {
          unsubscribe();
          await forwarder.close();
        };
      } else {
        const served = await this.#listenDirect(tls);
        stopServing = () => this.#stopDirect(served);
      }
    } catch (err) {
      watcherStop.abort();
      const error = new Error(
        `cannot serve ${this.name} on ${this.#options.address}: ${message(err)}`,
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

  async #listenDirect(tls: TLSPair | undefined): Promise<Served> {
    const { hostname, port } = parseAddress(this.#options.address);
    const served = await serve(this.#handler(), {
      hostname,
      port,
      tls,
      onError: (error) => this.#logFailure(error),
    });
    this.#listening = { hostname: served.hostname, port: served.port };
    return served;
  }

  async #stopDirect(served: Served): Promise<void> {
    const timeout = this.#options.shutdownTimeout ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    const stopped = served.stop();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = await Promise.race([
      stopped.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), timeout))),
    ]);
    clearTimeout(timer);
    if (late) {
      log.warn("The {name} server's requests took longer than {timeout} ms: closing them", {
        name: this.name,
        timeout,
      });
      await served.stop(true);
    }
  }

  async #listenForwarding(watcher: CertWatcher): Promise<TLSForwarder> {
    const { hostname, port } = parseAddress(this.#options.address);
    const pair = watcher.current() ?? await watcher.load();
    const forwarder = await TLSForwarder.listen({
      hostname: namesNoHost(this.#options.address) ? undefined : hostname,
      port,
      handler: this.#handler(),
      drainTimeout: this.#options.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT_MS,
      requestGrace: this.#options.shutdownTimeout ?? DEFAULT_SHUTDOWN_TIMEOUT_MS,
      onError: (error) => this.#logFailure(error),
      onListenerError: (error) =>
        log.error("The {name} listener failed: {error}", { name: this.name, error: error.message }),
    }, pair);
    this.#listening = forwarder.address;
    return forwarder;
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
    log.error("A {name} request failed: {error}", { name: this.name, error: message(error) });
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
