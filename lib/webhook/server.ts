/**
 * The webhook server: HTTPS on `:9443` (controller-runtime's default), serving admission and
 * conversion handlers registered by path, with the certificate and key read from a certificate
 * directory (`tls.crt`, `tls.key`) and reloaded, without a restart, when the files change.
 *
 * How a certificate is swapped while requests flow (measured on Deno 2.9 and Bun 1.4):
 * `Deno.serve` takes its certificate once; `Bun.serve`'s `reload()` keeps the old one; Bun has
 * neither `setSecureContext` nor a working `SNICallback` on `node:https`; and starting a second
 * listener on the same port (`reusePort`) then closing the first resets about one connection
 * in 600 at each swap. So the public port is a plain TCP listener (`node:net`) that forwards
 * each connection, bytes unchanged, to an inner HTTPS server on a loopback port — the runtime's
 * own `Deno.serve` or `Bun.serve`, where TLS ends. A new certificate starts a new inner server;
 * new connections go to it, and the old one stops once its connections have closed (or after
 * `drainTimeout`). No connection is refused or reset by a swap.
 *
 * TLS 1.2 is the minimum: Deno's TLS stack (rustls) speaks only 1.2 and 1.3; on Bun, 1.0 and 1.1
 * are switched off explicitly. Request bodies above `maxRequestBodyBytes` (default 7 MiB, as in
 * controller-runtime) get `413`.
 *
 * @module
 */

import { readFileSync } from "node:fs";
import { constants as cryptoConstants } from "node:crypto";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLogger } from "@logtape/logtape";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import type { Runnable } from "../util/runnable.ts";
import { type Registry } from "../metrics/registry.ts";
import { type WebhookMetrics, webhookMetrics } from "../metrics/webhook.ts";
import type { AdmissionOperation } from "./admission.ts";
import { conversionHandler, ConversionRegistry } from "./conversion.ts";

/** controller-runtime's default port of the webhook server. */
export const DEFAULT_WEBHOOK_PORT = 9443;
/** controller-runtime's default largest request body: 7 MiB. */
export const DEFAULT_MAX_REQUEST_BODY_BYTES = 7 * 1024 * 1024;
/** Default milliseconds between checks of the certificate files. */
export const DEFAULT_CERT_POLL_INTERVAL_MS = 10_000;
/** Default milliseconds an inner server of a replaced certificate keeps its open connections. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 60_000;
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

/** An inner HTTPS server: one certificate, and the connections forwarded to it. */
interface Inner {
  port: number;
  readonly cert: string;
  /** Client and upstream sockets of the connections forwarded to it. */
  readonly sockets: Set<net.Socket>;
  /** The upstream sockets alone: ending one closes its connection once its answer is through. */
  readonly upstreams: Set<net.Socket>;
  /** Connections forwarded to it and not yet closed. */
  connections: number;
  /** Requests it is answering. */
  inFlight: number;
  retired: boolean;
  /** Closes it after `drainTimeout` once retired, if its connections have not closed by then. */
  drainTimer?: ReturnType<typeof setTimeout>;
  closed?: Promise<void>;
  stop(): Promise<void>;
}

/** Milliseconds a stop waits for the requests in progress before closing their connections. */
const REQUEST_GRACE_MS = 10_000;

/** Milliseconds a stop then gives the answers to pass through the forwarding. */
const FLUSH_GRACE_MS = 2_000;

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
  #front: net.Server | undefined;
  #inner: Inner | undefined;
  #retired = new Set<Inner>();
  #port: number | undefined;
  #serving = false;
  #app: Hono | undefined;

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
    return this.#port;
  }

  /** `https://host:port` once started, with a loopback host when listening everywhere. */
  get url(): string | undefined {
    if (this.#port === undefined) return undefined;
    const host = this.#options.host || "127.0.0.1";
    const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
    return `https://${shown.includes(":") ? `[${shown}]` : shown}:${this.#port}`;
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

  /**
   * Listens, serves until `signal` aborts, then stops: no new connections, requests in
   * progress finish. Rejects when the certificate cannot be read or the port is taken.
   */
  async start(signal: AbortSignal): Promise<void> {
    let poll: ReturnType<typeof setInterval> | undefined;
    try {
      const { cert, key } = this.#readCertificate();
      this.#inner = await this.#startInner(cert, key);
      this.#front = await this.#listen();
      this.#serving = true;
      log.info("Serving webhooks on {url}: {paths}", {
        url: this.url,
        paths: this.paths().join(", "),
      });
      this.#started.resolve();
      poll = setInterval(
        () => this.#checkCertificate(),
        this.#options.certPollInterval ?? DEFAULT_CERT_POLL_INTERVAL_MS,
      );
      if (!signal.aborted) {
        await new Promise<void>((resolve) =>
          signal.addEventListener("abort", () => resolve(), { once: true })
        );
      }
    } catch (err) {
      this.#started.reject(err);
      throw err;
    } finally {
      clearInterval(poll);
      await this.#stop();
    }
  }

  /** Reads the current certificate and key now, swapping them in if they changed. */
  async reloadCertificate(): Promise<boolean> {
    return await this.#checkCertificate();
  }

  #reloading: Promise<boolean> | undefined;

  #checkCertificate(): Promise<boolean> {
    this.#reloading ??= this.#swapIfChanged().finally(() => {
      this.#reloading = undefined;
    });
    return this.#reloading;
  }

  async #swapIfChanged(): Promise<boolean> {
    if (!this.#serving || !this.#inner) return false;
    let files: { cert: string; key: string };
    try {
      files = this.#readCertificate();
    } catch (err) {
      log.warn("Cannot read the webhook certificate, keeping the current one: {error}", {
        error: (err as Error).message,
      });
      return false;
    }
    if (files.cert === this.#inner.cert) return false;
    let next: Inner;
    try {
      next = await this.#startInner(files.cert, files.key);
    } catch (err) {
      // Typically the certificate was written and the key not yet: try again at the next poll.
      log.warn("The new webhook certificate does not load, keeping the current one: {error}", {
        error: (err as Error).message,
      });
      return false;
    }
    if (!this.#serving) {
      await next.stop();
      return false;
    }
    const old = this.#inner;
    this.#inner = next;
    this.#retire(old);
    log.info("Serving webhooks with a new certificate from {dir}", { dir: this.#certDir() });
    return true;
  }

  #retire(inner: Inner): void {
    inner.retired = true;
    this.#retired.add(inner);
    if (inner.connections === 0) this.#close(inner);
    else {
      inner.drainTimer = setTimeout(
        () => this.#close(inner),
        this.#options.drainTimeout ?? DEFAULT_DRAIN_TIMEOUT_MS,
      );
    }
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
      const deadline = Date.now() + REQUEST_GRACE_MS;
      while (inner.inFlight > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // A handler's answer may still be on its way through the forwarding: end only the side
      // towards the inner server, which then closes each connection after its last bytes, and
      // the client side follows once they are through. What is still open after a moment goes.
      for (const upstream of inner.upstreams) upstream.end();
      const flushed = Date.now() + FLUSH_GRACE_MS;
      while (inner.sockets.size > 0 && Date.now() < flushed) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      for (const socket of inner.sockets) socket.destroy();
      await inner.stop().catch(() => {});
      this.#retired.delete(inner);
    })();
    return inner.closed;
  }

  #certDir(): string {
    return this.#options.certDir ?? join(tmpdir(), "k8s-webhook-server", "serving-certs");
  }

  #readCertificate(): { cert: string; key: string } {
    const dir = this.#certDir();
    const cert = readFileSync(join(dir, this.#options.certName ?? "tls.crt"), "utf8");
    const key = readFileSync(join(dir, this.#options.keyName ?? "tls.key"), "utf8");
    if (!cert.includes("-----BEGIN CERTIFICATE-----")) {
      throw new Error(`${join(dir, this.#options.certName ?? "tls.crt")} holds no PEM certificate`);
    }
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) {
      throw new Error(`${join(dir, this.#options.keyName ?? "tls.key")} holds no PEM private key`);
    }
    return { cert, key };
  }

  /** The hono app every inner server serves: metrics, body limit, dispatch by path. */
  #fetch(): (request: Request) => Promise<Response> {
    if (!this.#app) {
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
      app.use(
        "*",
        bodyLimit({
          maxSize,
          onError: (c) => c.json({ error: `request body larger than ${maxSize} bytes` }, 413),
        }),
      );
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
      this.#app = app;
    }
    const app = this.#app;
    return async (request) => await app.fetch(request);
  }

  async #startInner(cert: string, key: string): Promise<Inner> {
    const inner: Inner = {
      port: 0,
      cert,
      sockets: new Set(),
      upstreams: new Set(),
      connections: 0,
      inFlight: 0,
      retired: false,
      stop: () => Promise.resolve(),
    };
    const fetch = this.#fetch();
    const served = await serveTLS(
      async (request) => {
        inner.inFlight++;
        try {
          return await fetch(request);
        } finally {
          inner.inFlight--;
        }
      },
      cert,
      key,
    );
    inner.port = served.port;
    inner.stop = served.stop;
    return inner;
  }

  async #listen(): Promise<net.Server> {
    const server = net.createServer((socket) => this.#forward(socket));
    const host = this.#options.host || undefined;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.#options.port ?? DEFAULT_WEBHOOK_PORT, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", (err) => log.error("Webhook listener: {error}", { error: err.message }));
    const address = server.address();
    this.#port = typeof address === "object" && address ? address.port : undefined;
    return server;
  }

  /** Pipes one client connection to the inner server of the current certificate. */
  #forward(client: net.Socket): void {
    const inner = this.#inner;
    if (!inner || !this.#serving) {
      client.destroy();
      return;
    }
    inner.connections++;
    const upstream = net.connect(inner.port, "127.0.0.1");
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    inner.sockets.add(client);
    inner.sockets.add(upstream);
    inner.upstreams.add(upstream);
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

  async #stop(): Promise<void> {
    this.#serving = false;
    const front = this.#front;
    this.#front = undefined;
    // No new connections; the callback comes once the forwarded ones are closed below.
    const frontClosed = front
      ? new Promise<void>((resolve) => front.close(() => resolve()))
      : Promise.resolve();
    const inners = [...this.#retired, ...(this.#inner ? [this.#inner] : [])];
    this.#inner = undefined;
    await Promise.all(inners.map((inner) => this.#close(inner)));
    await frontClosed;
    this.#retired.clear();
  }
}

interface DenoServer {
  shutdown(): Promise<void>;
}

interface BunServer {
  port: number;
  stop(closeActiveConnections?: boolean): Promise<void> | void;
}

/** An HTTPS server on a free loopback port, by the runtime's own `serve`. */
async function serveTLS(
  handler: (request: Request) => Promise<Response>,
  cert: string,
  key: string,
): Promise<{ port: number; stop(): Promise<void> }> {
  const g = globalThis as unknown as {
    Deno?: { serve(options: Record<string, unknown>, handler: WebhookHandler): DenoServer };
    Bun?: { serve(options: Record<string, unknown>): BunServer };
  };
  if (g.Deno) {
    const listening = Promise.withResolvers<number>();
    const server = g.Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      cert,
      key,
      onListen: (addr: { port: number }) => listening.resolve(addr.port),
      onError: (err: unknown) => {
        log.error("Webhook request failed: {error}", { error: (err as Error)?.message });
        return new Response("internal error", { status: 500 });
      },
    }, handler);
    const port = await listening.promise;
    return { port, stop: () => server.shutdown() };
  }
  if (g.Bun) {
    const server = g.Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: handler,
      tls: {
        cert,
        key,
        secureOptions: cryptoConstants.SSL_OP_NO_TLSv1 | cryptoConstants.SSL_OP_NO_TLSv1_1,
      },
    });
    return {
      port: server.port,
      stop: async () => {
        await server.stop(false);
      },
    };
  }
  throw new Error("serving webhooks needs Deno or Bun");
}
