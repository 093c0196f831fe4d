/**
 * The REST client: one API request in, parsed JSON or a typed {@linkcode ApiError} out, and
 * watches as async iterables of events. Typed clients and informers are built on this.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { formatDuration } from "./config/errors.ts";
import type { KubeConfig } from "./config/types.ts";
import { ApiError, ConnectionError } from "./errors.ts";
import { redactURL } from "./redact.ts";
import { newTransport, type Transport, type TransportOptions } from "./transport.ts";
import { decodeWatchStream, type WatchEvent } from "./watch.ts";
import { Deadlines } from "../util/deadlines.ts";
import { sleep } from "../util/abort.ts";
import { type Span, SpanKind, withSpan } from "../util/tracing.ts";
import { kubeRequestInfo, requestSpanAttributes, requestSpanName } from "./request_attributes.ts";

const logger = getLogger(["rudder", "kube", "rest"]);

/** A value of a query parameter; arrays repeat the parameter, `undefined` omits it. */
export type QueryValue = string | number | boolean | undefined | readonly string[];

/** One API request. */
export interface RestRequest {
  /** HTTP method; default `GET`. */
  method?: string;
  /** API path, e.g. `/api/v1/namespaces/default/configmaps`. */
  path: string;
  /** Query parameters. */
  query?: Record<string, QueryValue>;
  /** Body: an object is sent as JSON; a string or bytes as they are. */
  body?: unknown;
  /** `Content-Type` of the body; default `application/json`. */
  contentType?: string;
  /** `Accept` header; default `application/json`. */
  accept?: string;
  /** More headers. */
  headers?: Record<string, string>;
  /** Cancels the request. */
  signal?: AbortSignal;
  /** Milliseconds before the request is aborted; overrides the client's `timeout`. */
  timeout?: number;
  /**
   * Retry 429 and 5xx answers and network failures; default true for `GET`, and never done for
   * other methods, whose repetition may not be safe.
   */
  retry?: boolean;
}

/** What {@linkcode RestClientOptions.onRequest} learns of each request attempt. */
export interface RequestInfo {
  /** HTTP method. */
  method: string;
  /** Host and port of the API server. */
  host: string;
  /** Path without query. */
  path: string;
  /** HTTP status code, or `undefined` when no answer came (network failure, abort). */
  statusCode?: number;
  /** Milliseconds from sending to the answer's headers. */
  durationMs: number;
  /** 0 for the first attempt, then 1, 2, … for retries. */
  attempt: number;
}

/** Options of {@linkcode RestClient}. */
export interface RestClientOptions extends TransportOptions {
  /**
   * Milliseconds a request may take before it is aborted with a `TimeoutError`; default
   * 60 000. `0` means no limit. Watches are not bounded by it.
   */
  timeout?: number;
  /** A transport to use instead of one made from the configuration (tests, wrappers). */
  transport?: Transport;
  /**
   * Client-side rate limit in requests per second; none by default, because the API server's
   * priority and fairness does that job (as in controller-runtime 0.21 and later).
   */
  qps?: number;
  /** Requests that may go at once above `qps`; default `max(1, qps)`. */
  burst?: number;
  /** Retries of an idempotent read after 429, 5xx or a network failure; default 5. */
  maxRetries?: number;
  /** Called after every attempt, e.g. to count `rest_client_requests_total`. */
  onRequest?: (info: RequestInfo) => void;
}

/** Default request timeout: generous for a list of thousands of objects, finite for a hang. */
const DEFAULT_TIMEOUT_MS = 60_000;
/** The deadlines of every client's requests, on one timer. */
const requestDeadlines = new Deadlines();
const DEFAULT_MAX_RETRIES = 5;
/** First retry delay without `Retry-After`; doubles up to the cap, with jitter. */
const RETRY_BASE_MS = 200;
const RETRY_CAP_MS = 10_000;
/** A `Retry-After` longer than this is cut to it, so a read never stalls for minutes. */
const RETRY_AFTER_CAP_MS = 60_000;
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);

/**
 * What an aborted request rejects with: the signal's reason, unless that reason is a timeout
 * and the request failed with a timeout that says more (an exec credential plugin names
 * itself as what the request was waiting for).
 */
function moreDetailedTimeout(err: unknown, reason: unknown): unknown {
  const isTimeout = (e: unknown): e is Error => e instanceof Error && e.name === "TimeoutError";
  return err !== reason && isTimeout(err) && isTimeout(reason) &&
      err.message.startsWith(reason.message.replace(/\.$/, ""))
    ? err
    : reason;
}

/** Exponential backoff with jitter: half the delay fixed, half random. */
function backoffMs(attempt: number): number {
  const delay = Math.min(RETRY_CAP_MS, RETRY_BASE_MS * 2 ** attempt);
  return delay / 2 + Math.random() * (delay / 2);
}

/** A token bucket: `qps` tokens per second, at most `burst` saved up. */
class TokenBucket {
  readonly #qps: number;
  readonly #burst: number;
  #tokens: number;
  #last = Date.now();
  #queue: Promise<void> = Promise.resolve();

  constructor(qps: number, burst: number) {
    this.#qps = qps;
    this.#burst = burst;
    this.#tokens = burst;
  }

  /** Waits for a token; callers are served in order. */
  take(signal?: AbortSignal): Promise<void> {
    const turn = this.#queue.then(async () => {
      const now = Date.now();
      this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) / 1000) * this.#qps);
      this.#last = now;
      if (this.#tokens < 1) {
        await sleep(((1 - this.#tokens) / this.#qps) * 1000, signal);
        this.#tokens = 1;
        this.#last = Date.now();
      }
      this.#tokens -= 1;
    });
    this.#queue = turn.catch(() => {});
    return turn;
  }
}

/** Builds `?a=1&b=x` from query parameters, skipping `undefined`. */
export function encodeQuery(query: Record<string, QueryValue> | undefined): string {
  if (!query) return "";
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) { for (const item of value) params.append(key, item); }
    else params.append(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** Extracts the texts of `Warning: 299 - "text"` headers (RFC 7234). */
export function parseWarningHeaders(header: string | null): string[] {
  if (!header) return [];
  const warnings: string[] = [];
  const pattern = /\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"/g;
  for (const match of header.matchAll(pattern)) warnings.push(match[1].replace(/\\(.)/g, "$1"));
  return warnings;
}

function retryAfterSeconds(response: Response): number | undefined {
  const value = response.headers.get("Retry-After");
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

/**
 * Talks to one API server. Requests resolve to parsed JSON and reject with an
 * {@linkcode ApiError} when the server refuses them; network failures reject with a
 * {@linkcode ConnectionError} naming the request, the host and the reason, and an aborted
 * request rejects with the signal's reason.
 *
 * @example
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 * import { RestClient } from "@rudder/operator/kube";
 *
 * const rest = new RestClient(await loadConfig());
 * const version = await rest.request<{ gitVersion: string }>({ path: "/version" });
 * console.log(version.gitVersion);
 * for await (const event of rest.watch({ path: "/api/v1/namespaces/default/configmaps" })) {
 *   console.log(event.type, event.object);
 *   break;
 * }
 * rest.close();
 * ```
 */
export class RestClient {
  /** The configuration requests are made with. */
  readonly config: KubeConfig;
  readonly #transport: Transport;
  readonly #timeout: number;
  readonly #maxRetries: number;
  readonly #limiter?: TokenBucket;
  readonly #onRequest?: (info: RequestInfo) => void;
  #host: string | undefined;

  /** Creates a client for `config`. */
  constructor(config: KubeConfig, options: RestClientOptions = {}) {
    this.config = config;
    this.#transport = options.transport ?? newTransport(config, options);
    this.#timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    this.#maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    if (options.qps !== undefined && options.qps > 0) {
      this.#limiter = new TokenBucket(options.qps, options.burst ?? Math.max(1, options.qps));
    }
    this.#onRequest = options.onRequest;
  }

  /**
   * Sends a request and returns the response when its status is 2xx; otherwise throws an
   * {@linkcode ApiError}. The caller owns the response body. Nothing here bounds how long the
   * body takes to read; pass a `signal` for that.
   */
  async send(request: RestRequest, timeout?: number): Promise<Response> {
    return await this.#traced(request, (span) =>
      this.#send(
        request,
        timeout && timeout > 0 ? AbortSignal.timeout(timeout) : undefined,
        span,
      ));
  }

  /**
   * Runs one request (all its attempts) in a client span; a watch's span covers its set-up
   * only. The name and attributes are worked out only when the span records.
   */
  #traced<T>(request: RestRequest, fn: (span: Span) => Promise<T>): Promise<T> {
    const method = request.method ?? "GET";
    return withSpan(method, { kind: SpanKind.CLIENT }, (span) => {
      if (span.isRecording()) {
        const info = kubeRequestInfo(method, request.path, request.query);
        span.updateName(requestSpanName(info));
        const [address, port] = this.#hostName().split(/:(?=\d+$)/);
        span.setAttributes({
          ...requestSpanAttributes(info),
          "http.request.method": method,
          "server.address": address,
          "server.port": port ? Number(port) : undefined,
          "url.path": request.path,
        });
      }
      return fn(span);
    });
  }

  /**
   * Sends a request and reads its answer with `read`, both within `timeout` milliseconds (none
   * when 0). The deadline is cancelled once the answer is read: `AbortSignal.timeout` would
   * stay armed for the whole timeout after every request, one pending timer per request (8.5 MiB
   * of live heap for 30,000 on Deno) and 5 µs more each; deadlines share one timer
   * (util/deadlines.ts), where a timer per request was 4 % of a Deno profile's busy samples.
   */
  async #exchange<T>(
    request: RestRequest,
    timeout: number,
    read: (response: Response) => Promise<T>,
  ): Promise<T> {
    if (!(timeout > 0)) {
      return await this.#traced(
        request,
        async (span) => await read(await this.#send(request, undefined, span)),
      );
    }
    const deadline = new AbortController();
    const timer = requestDeadlines.add(
      timeout,
      () =>
        deadline.abort(
          new DOMException(
            `The request timed out after ${formatDuration(timeout)}.`,
            "TimeoutError",
          ),
        ),
    );
    try {
      return await this.#traced(
        request,
        async (span) => await read(await this.#send(request, deadline.signal, span)),
      );
    } finally {
      timer.cancel();
    }
  }

  async #send(
    request: RestRequest,
    deadline: AbortSignal | undefined,
    span: Span,
  ): Promise<Response> {
    const method = request.method ?? "GET";
    const headers: Record<string, string> = {
      Accept: request.accept ?? "application/json",
      ...request.headers,
    };
    let body: BodyInit | undefined;
    if (request.body !== undefined) {
      if (typeof request.body === "string" || request.body instanceof Uint8Array) {
        body = request.body as BodyInit;
      } else {
        body = JSON.stringify(request.body);
      }
      headers["Content-Type"] = request.contentType ?? "application/json";
    }
    const signals: AbortSignal[] = [];
    if (request.signal) signals.push(request.signal);
    if (deadline) signals.push(deadline);
    const signal = signals.length === 0
      ? undefined
      : signals.length === 1
      ? signals[0]
      : AbortSignal.any(signals);
    const target = request.path + encodeQuery(request.query);
    const retries = (request.retry ?? method === "GET") && method === "GET" ? this.#maxRetries : 0;
    for (let attempt = 0;; attempt++) {
      await this.#limiter?.take(signal);
      signal?.throwIfAborted();
      if (attempt > 0) span.setAttribute("http.request.resend_count", attempt);
      const started = performance.now();
      let response: Response;
      try {
        response = await this.#transport.fetch(target, { method, headers, body, signal });
      } catch (err) {
        this.#report(method, request.path, undefined, started, attempt);
        if (signal?.aborted) throw moreDetailedTimeout(err, signal.reason);
        const reason = err instanceof Error ? err.message : String(err);
        if (attempt < retries) {
          logger.debug("Retrying {method} {path} after a network failure: {reason}", {
            method,
            path: request.path,
            reason,
          });
          await sleep(backoffMs(attempt), signal);
          continue;
        }
        if (err instanceof ConnectionError) {
          throw new ConnectionError({
            host: err.host,
            reason: err.reason,
            detail: reason.replace(/^cannot connect to (proxy )?\S+: /, ""),
            method,
            path: request.path,
            cause: err.cause,
          });
        }
        throw new Error(`${method} ${redactURL(this.config.server)}${request.path}: ${reason}`, {
          cause: err,
        });
      }
      this.#report(method, request.path, response.status, started, attempt);
      span.setAttribute("http.response.status_code", response.status);
      for (const warning of parseWarningHeaders(response.headers.get("Warning"))) {
        logger.warn("API server warning for {method} {path}: {warning}", {
          method,
          path: request.path,
          warning,
        });
      }
      if (response.ok) return response;
      const retryAfter = retryAfterSeconds(response);
      if (attempt < retries && RETRYABLE_STATUS.has(response.status)) {
        await response.body?.cancel().catch(() => {});
        const wait = retryAfter === undefined
          ? backoffMs(attempt)
          : Math.min(RETRY_AFTER_CAP_MS, retryAfter * 1000);
        logger.debug("Retrying {method} {path} in {wait} ms after {status}", {
          method,
          path: request.path,
          wait: Math.round(wait),
          status: response.status,
        });
        await sleep(wait, signal);
        continue;
      }
      const text = await response.text().catch(() => "");
      throw ApiError.fromResponseBody(response.status, text, {
        method,
        path: request.path,
        retryAfterSeconds: retryAfter,
      });
    }
  }

  /** Host and port of the server, read once it is known (a Manager loads its config lazily). */
  #hostName(): string {
    if (this.#host === undefined && this.config.server) {
      try {
        this.#host = new URL(this.config.server).host;
      } catch {
        this.#host = this.config.server;
      }
    }
    return this.#host ?? "";
  }

  #report(
    method: string,
    path: string,
    statusCode: number | undefined,
    started: number,
    attempt: number,
  ): void {
    if (!this.#onRequest) return;
    try {
      this.#onRequest({
        method,
        host: this.#hostName(),
        path,
        statusCode,
        durationMs: performance.now() - started,
        attempt,
      });
    } catch (err) {
      logger.error("onRequest hook threw: {error}", { error: err });
    }
  }

  /** Sends a request and parses the JSON answer (`undefined` for an empty body). */
  async request<T = unknown>(request: RestRequest): Promise<T> {
    const text = await this.#exchange(
      request,
      request.timeout ?? this.#timeout,
      (response) => response.text(),
    );
    if (text.length === 0) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new Error(
        `${request.method ?? "GET"} ${request.path}: the response is not JSON ` +
          `(${(err as Error).message}): ${text.slice(0, 200)}`,
      );
    }
  }

  /** Sends a request and returns the answer as text (for `/healthz`, logs, …). */
  async requestText(request: RestRequest): Promise<string> {
    return await this.#exchange(
      { accept: "text/plain, */*", ...request },
      request.timeout ?? this.#timeout,
      (response) => response.text(),
    );
  }

  /**
   * Watches a collection: sends `path?watch=true&…` and yields each event of the
   * newline-delimited JSON stream. A refused watch throws an {@linkcode ApiError} on the first
   * `next()`; `ERROR` events (such as 410 Gone) are yielded as they come. Leaving the loop or
   * aborting `signal` closes the connection.
   */
  async *watch<T = Record<string, unknown>>(
    request: RestRequest,
  ): AsyncGenerator<WatchEvent<T>, void, undefined> {
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal?.reason);
    if (request.signal?.aborted) throw request.signal.reason;
    request.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const response = await this.send({
        ...request,
        query: { ...request.query, watch: true },
        signal: controller.signal,
        retry: false,
      }, request.timeout);
      if (!response.body) return;
      yield* decodeWatchStream<T>(response.body, { signal: controller.signal });
    } finally {
      request.signal?.removeEventListener("abort", onAbort);
      controller.abort();
    }
  }

  /** Releases the connection pool. */
  close(): void {
    this.#transport.close();
  }
}
