/**
 * The webhook server: HTTPS on `:9443` (controller-runtime's default), serving admission and
 * conversion handlers registered by path, with the certificate and key read from a certificate
 * directory (`tls.crt`, `tls.key`) and reloaded, without a restart, when the files change.
 *
 * Serving and the certificate are lib/server's: an `HTTPServer` with a `CertWatcher`, which swaps
 * a certificate with no connection refused or reset (see lib/server/forwarder.ts). TLS 1.2
 * is the minimum. Request bodies above `maxRequestBodyBytes` (default 7 MiB, as in
 * controller-runtime) get `413`, read to their end first (up to twice the limit, at least
 * 16 MiB) so that a client that does not wait for `100 Continue` receives it. Slow, idle and
 * surplus connections are closed (`readHeaderTimeout`, `idleTimeout`, `maxConnections`).
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { Context, Hono } from "hono";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import { abortable } from "../util/abort.ts";
import { joinPath } from "../util/paths.ts";
import { tmpdir } from "../util/runtime.ts";
import type { Runnable } from "../util/runnable.ts";
import {
  CertWatcher,
  DEFAULT_CERT_POLL_INTERVAL_MS as SERVER_CERT_POLL_INTERVAL_MS,
} from "../server/certwatcher.ts";
import {
  DEFAULT_DRAIN_TIMEOUT_MS as SERVER_DRAIN_TIMEOUT_MS,
  DEFAULT_MAX_UNREAD_BODY_BYTES,
  HTTPServer,
} from "../server/http_server.ts";
import { readBody } from "../server/body.ts";
import { type Registry } from "../metrics/registry.ts";
import { type WebhookMetrics, webhookMetrics } from "../metrics/webhook.ts";
import type { AdmissionOperation } from "./admission.ts";
import { conversionHandler, ConversionRegistry } from "./conversion.ts";

/** controller-runtime's default port of the webhook server. */
export const DEFAULT_WEBHOOK_PORT = 9443;
/** controller-runtime's default largest request body: 7 MiB. */
export const DEFAULT_MAX_REQUEST_BODY_BYTES = 7 * 1024 * 1024;
/** Default milliseconds between checks of the certificate files (the serving layer's). */
export const DEFAULT_CERT_POLL_INTERVAL_MS: number = SERVER_CERT_POLL_INTERVAL_MS;
/** Default milliseconds the connections of a replaced certificate may go on (the serving layer's). */
export const DEFAULT_DRAIN_TIMEOUT_MS: number = SERVER_DRAIN_TIMEOUT_MS;
/** The path conversion reviews are served on. */
export const CONVERSION_PATH = "/convert";

/** Options of {@linkcode WebhookServer}; defaults as in controller-runtime's `webhook.Options`. */
export interface WebhookServerOptions {
  /** Address to listen on; default `""`: every interface. */
  host?: string;
  /** Port; default 9443; 0 picks a free one. */
  port?: number;
  /** Directory with the certificate and key; default `<tmpdir>/k8s-webhook-server/serving-certs`. */
  certDir?: string;
  /** File name of the PEM certificate (chain) in `certDir`; default `tls.crt`. */
  certName?: string;
  /** File name of the PEM private key in `certDir`; default `tls.key`. */
  keyName?: string;
  /** Largest request body in bytes; default 7 MiB. */
  maxRequestBodyBytes?: number;
  /** Milliseconds between checks of the certificate files for a change; default 10 000. */
  certPollInterval?: number;
  /** Milliseconds a replaced certificate's open connections may go on; default 60 000. */
  drainTimeout?: number;
  /** Registry of the webhook metrics; default the global one. */
  metricsRegistry?: Registry;
  /**
   * Milliseconds from accepting a connection, or from its first byte after an answer, to a whole
   * request head; default 10 000 (the serving layer's `DEFAULT_READ_HEADER_TIMEOUT_MS`).
   */
  readHeaderTimeout?: number;
  /**
   * Milliseconds a keep-alive connection may stay open with no request; default 120 000 (the
   * serving layer's `DEFAULT_IDLE_TIMEOUT_MS`).
   */
  idleTimeout?: number;
  /**
   * Connections open at once, at most; one more is closed at once; default 4 096 (the serving
   * layer's `DEFAULT_MAX_CONNECTIONS`).
   */
  maxConnections?: number;
}

/** What a registered path is, for generating webhook configurations (see `rudder manifests`). */
export interface WebhookInfo {
  /** `mutating` or `validating` admission. */
  type: "mutating" | "validating";
  /** The kind the webhook admits. */
  resource: ResourceType<KubeObject>;
  /** Operations to send; default CREATE and UPDATE (and DELETE for validating webhooks). */
  operations?: AdmissionOperation[];
}

/** A registered path and what it is. */
export interface RegisteredWebhook extends WebhookInfo {
  /** The path, e.g. `/validate-example-com-v1-example`. */
  path: string;
}

/** A `fetch`-style handler of one path. */
export type WebhookHandler = (request: Request) => Response | Promise<Response>;

const log = getLogger(["rudder", "webhook"]);

/**
 * Serves webhooks over HTTPS; a {@linkcode Runnable} the Manager starts after its HTTP servers
 * and before its caches. Register handlers with {@linkcode WebhookServer.register} (the
 * webhook builder does), before or after start.
 *
 * @example A raw handler on a server of its own
 * ```ts ignore
 * import { admissionHandler, allowed, WebhookServer } from "@rudder/operator/webhook";
 *
 * const server = new WebhookServer({ port: 9443, certDir: "/tmp/k8s-webhook-server/serving-certs" });
 * server.register("/validate-pods", admissionHandler(() => allowed()));
 * const stop = new AbortController();
 * const running = server.start(stop.signal);
 * await server.started();
 * // … later
 * stop.abort();
 * await running;
 * ```
 */
export class WebhookServer implements Runnable {
  readonly #options: WebhookServerOptions;
  readonly #handlers = new Map<string, WebhookHandler>();
  readonly #infos = new Map<string, WebhookInfo>();
  readonly #conversions = new ConversionRegistry();
  readonly #metrics: WebhookMetrics;
  readonly #started = Promise.withResolvers<void>();
  #server: HTTPServer | undefined;
  #watcher: CertWatcher | undefined;
  #serving = false;
  #app: Promise<Hono> | undefined;

  /** Creates a server; nothing listens until {@linkcode WebhookServer.start}. */
  constructor(options: WebhookServerOptions = {}) {
    this.#options = options;
    this.#metrics = webhookMetrics(options.metricsRegistry);
    this.#started.promise.catch(() => {});
  }

  /** The directory the certificate and key are read from. */
  get certDir(): string {
    return this.#certDir();
  }

  /** The options it was made with. */
  get options(): Readonly<WebhookServerOptions> {
    return this.#options;
  }

  /** The conversions served on `/convert`; registering one makes the server serve it. */
  get conversions(): ConversionRegistry {
    return this.#conversions;
  }

  /**
   * Serves `handler` on `path` (exact match); `info` describes it for generated webhook
   * configurations. A path can be registered once.
   */
  register(path: string, handler: WebhookHandler, info?: WebhookInfo): void {
    if (!path.startsWith("/")) throw new Error(`webhook path ${path} must start with /`);
    if (this.#handlers.has(path)) throw new Error(`webhook path ${path} is already registered`);
    this.#handlers.set(path, handler);
    if (info) this.#infos.set(path, info);
  }

  /** Registers `/convert` if it is not yet: called when a conversion is added. */
  serveConversions(): void {
    if (!this.#handlers.has(CONVERSION_PATH)) {
      this.register(CONVERSION_PATH, conversionHandler(this.#conversions));
    }
  }

  /**
   * Answers `request` as the server would over TLS (metrics, body limit, dispatch by path),
   * without a network: for tests, or to mount the webhooks in another server.
   */
  fetch(request: Request): Promise<Response> {
    return this.#fetch()(request);
  }

  /** The registered paths. */
  paths(): string[] {
    return [...this.#handlers.keys()];
  }

  /** The registered admission webhooks that carry a description, for manifests. */
  webhooks(): RegisteredWebhook[] {
    return [...this.#infos].map(([path, info]) => ({ path, ...info }));
  }

  /** Whether anything is registered: the Manager starts the server only then. */
  hasHandlers(): boolean {
    return this.#handlers.size > 0;
  }

  /** The webhook server never needs leadership: every replica answers the API server. */
  needLeaderElection(): boolean {
    return false;
  }

  /** The port listened on, once started. */
  get port(): number | undefined {
    return this.#server?.port;
  }

  /** `https://host:port` once started, with a loopback host when listening everywhere. */
  get url(): string | undefined {
    return this.#server?.url;
  }

  /** Resolves once serving; rejects if starting failed. */
  started(): Promise<void> {
    return this.#started.promise;
  }

  /**
   * A readiness check: passes while the server is serving (controller-runtime's
   * `StartedChecker`).
   */
  startedChecker(): () => void {
    return () => {
      if (!this.#serving) throw new Error("webhook server is not serving");
    };
  }

  /** Resolves once serving; rejects if starting failed, or with `signal`'s reason if it aborts first. */
  ready(signal?: AbortSignal): Promise<void> {
    return abortable(this.#started.promise, signal);
  }

  /**
   * Listens, serves until `signal` aborts, then stops: no new connections, requests in
   * progress finish. Rejects when the certificate cannot be read or the port is taken.
   */
  async start(signal: AbortSignal): Promise<void> {
    const host = this.#options.host;
    const port = this.#options.port ?? DEFAULT_WEBHOOK_PORT;
    this.#watcher = new CertWatcher({
      certDir: this.#certDir(),
      certName: this.#options.certName,
      keyName: this.#options.keyName,
      pollInterval: this.#options.certPollInterval ?? DEFAULT_CERT_POLL_INTERVAL_MS,
    });
    const server = new HTTPServer({
      name: "webhooks",
      address: host ? `${host.includes(":") ? `[${host}]` : host}:${port}` : `:${port}`,
      handler: this.#fetch(),
      tls: this.#watcher,
      drainTimeout: this.#options.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT_MS,
      readHeaderTimeout: this.#options.readHeaderTimeout,
      idleTimeout: this.#options.idleTimeout,
      maxConnections: this.#options.maxConnections,
      maxUnreadBodyBytes: this.#discardLimit(),
    });
    this.#server = server;
    const running = server.start(signal);
    const stopping = () => (this.#serving = false);
    signal.addEventListener("abort", stopping, { once: true });
    try {
      await server.ready();
      this.#serving = !signal.aborted;
      log.info("Webhook paths: {paths}", { paths: this.paths().join(", ") });
      this.#started.resolve();
      await running;
    } catch (err) {
      this.#started.reject(err);
      await running.catch(() => {});
      throw err;
    } finally {
      this.#serving = false;
      signal.removeEventListener("abort", stopping);
    }
  }

  /** Reads the current certificate and key now, swapping them in if they changed. */
  async reloadCertificate(): Promise<boolean> {
    if (!this.#serving || !this.#watcher) return false;
    return await this.#watcher.reload();
  }

  /** Bytes of an oversized body read and thrown away before its 413: twice the limit, at least. */
  #discardLimit(): number {
    const maxSize = this.#options.maxRequestBodyBytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES;
    return Math.max(DEFAULT_MAX_UNREAD_BODY_BYTES, 2 * maxSize);
  }

  #certDir(): string {
    return this.#options.certDir ?? joinPath(tmpdir(), "k8s-webhook-server", "serving-certs");
  }

  /**
   * The hono app the server serves: metrics, body limit, dispatch by path. hono is loaded with
   * the first request, so a manager that never serves webhooks never loads it.
   */
  #fetch(): (request: Request) => Promise<Response> {
    return async (request) => await (await (this.#app ??= this.#newApp())).fetch(request);
  }

  async #newApp(): Promise<Hono> {
    const { Hono } = await import("hono");
    const app = new Hono();
    const maxSize = this.#options.maxRequestBodyBytes ?? DEFAULT_MAX_REQUEST_BODY_BYTES;
    app.use("*", async (c, next) => {
      if (!this.#handlers.has(c.req.path)) return await next();
      const done = this.#metrics.requestStarted(c.req.path);
      try {
        await next();
      } finally {
        done(c.res.status);
      }
    });
    // The body is read here whole, before any handler: one too large is read on and thrown
    // away (up to a bound) before its 413, and so is one a handler refuses unread (415), so
    // that a client still sending reads the answer instead of a reset (lib/server/body.ts).
    const tooLarge = (c: Context) =>
      c.json({ error: `request body larger than ${maxSize} bytes` }, 413);
    app.use("*", async (c, next) => {
      const declared = Number(c.req.header("content-length"));
      if (declared > maxSize) return tooLarge(c); // the server throws the body away
      const raw = c.req.raw;
      if (!raw.body) return await next();
      const body = await readBody(raw.body, maxSize, this.#discardLimit());
      if (!body) return tooLarge(c);
      c.req.raw = new Request(raw.url, {
        method: raw.method,
        headers: raw.headers,
        body,
      });
      await next();
    });
    app.all("*", async (c) => {
      const handler = this.#handlers.get(c.req.path);
      if (!handler) return c.json({ error: `no webhook at ${c.req.path}` }, 404);
      return await handler(c.req.raw);
    });
    app.notFound((c) => c.json({ error: `no webhook at ${c.req.path}` }, 404));
    app.onError((err, c) => {
      log.error("Webhook {path} failed: {error}", { path: c.req.path, error: err.message });
      return c.json({ error: "internal error" }, 500);
    });
    return app;
  }
}
