/**
 * Errors from the Kubernetes API, built from the `Status` object the API server returns, and
 * the predicates a reconciler uses to tell them apart (`isNotFound`, `isConflict`, …); and
 * {@linkcode ConnectionError} for a request that got no answer at all, and
 * {@linkcode InvalidHeaderError} for a credential that cannot be sent as a header.
 *
 * @module
 */

/** Reasons the API server gives in `Status.reason` (metav1.StatusReason). */
export type StatusReason =
  | "BadRequest"
  | "Unauthorized"
  | "Forbidden"
  | "NotFound"
  | "AlreadyExists"
  | "Conflict"
  | "Gone"
  | "Invalid"
  | "ServerTimeout"
  | "Timeout"
  | "TooManyRequests"
  | "MethodNotAllowed"
  | "NotAcceptable"
  | "RequestEntityTooLarge"
  | "UnsupportedMediaType"
  | "InternalError"
  | "Expired"
  | "ServiceUnavailable"
  | "Unknown"
  | (string & Record<never, never>);

/** One cause of a failed request, e.g. the field that failed validation. */
export interface StatusCause {
  /** Machine-readable kind of cause, e.g. `FieldValueInvalid`. */
  reason?: string;
  /** Human-readable description. */
  message?: string;
  /** The field at fault, in JSON path form, e.g. `spec.replicas`. */
  field?: string;
}

/** Extra data a `Status` carries about the object concerned. */
export interface StatusDetails {
  /** Name of the object concerned. */
  name?: string;
  /** API group of the object concerned. */
  group?: string;
  /** Kind (or resource) of the object concerned. */
  kind?: string;
  /** UID of the object concerned. */
  uid?: string;
  /** The individual causes, e.g. one per invalid field. */
  causes?: StatusCause[];
  /** Seconds the client should wait before retrying. */
  retryAfterSeconds?: number;
}

/** The metav1.Status object: the body of every failed API request. */
export interface Status {
  /** Always `"v1"`. */
  apiVersion?: string;
  /** Always `"Status"`. */
  kind?: string;
  /** `"Success"` or `"Failure"`. */
  status?: "Success" | "Failure" | string;
  /** Human-readable description of the failure. */
  message?: string;
  /** Machine-readable reason of the failure. */
  reason?: StatusReason;
  /** Extra data about the failure. */
  details?: StatusDetails;
  /** The HTTP status code. */
  code?: number;
  /** List metadata; unused in errors. */
  metadata?: Record<string, unknown>;
}

/** Reason assumed for an HTTP status code when the body is not a `Status`. */
function reasonForCode(code: number): StatusReason {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "Unknown";
  }
}

/**
 * For a 403 whose message names what was denied (`cannot list resource "configmaps" in API group
 * "" in the namespace "team-a"`): the rule that is missing and where Rudder's RBAC comes from.
 */
function rbacHint(message: string | undefined): string {
  const denied = message?.match(
    /cannot (\S+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)")?/,
  );
  if (!denied) return "";
  const [, verb, resource, group, namespace] = denied;
  const where = namespace ? ` in the namespace ${namespace}` : " cluster-wide";
  return `; the RBAC rule missing is apiGroups: ["${group}"], resources: ["${resource}"], ` +
    `verbs: ["${verb}"]${where}. rudder manifests derives the operator's roles from what its ` +
    "controllers declare (for, owns, watches) and rudder.json's extra rules: declare the kind " +
    "there, run rudder manifests and apply config/rbac";
}

/** Options of {@linkcode ApiError}: where the failed request went. */
export interface ApiErrorOptions {
  /** HTTP method of the failed request. */
  method?: string;
  /** Path (without query) of the failed request. */
  path?: string;
  /** Seconds from a `Retry-After` header, when the response carried one. */
  retryAfterSeconds?: number;
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * A request the Kubernetes API server refused. `code`, `reason`, `message` and `details` come
 * from the `Status` in the response body (or are derived from the HTTP status when the body is
 * not a `Status`); `retryAfterSeconds` comes from `Retry-After` or `details.retryAfterSeconds`.
 *
 * @example Tell a missing object from other failures
 * ```ts
 * import { isNotFound } from "@rudder/operator";
 * import { ApiError } from "@rudder/operator/client";
 *
 * const err = new ApiError({ kind: "Status", code: 404, reason: "NotFound", message: "gone" });
 * console.log(isNotFound(err), err.code, err.reason); // true 404 NotFound
 * ```
 */
export class ApiError extends Error {
  /** HTTP status code, e.g. 404. */
  readonly code: number;
  /** Machine-readable reason, e.g. `NotFound`. */
  readonly reason: StatusReason;
  /** Extra data about the failure (name, kind, causes). */
  readonly details?: StatusDetails;
  /** The complete `Status` object. */
  readonly status: Status;
  /** HTTP method of the failed request, when known. */
  readonly method?: string;
  /** Path of the failed request, when known. */
  readonly path?: string;
  /** Seconds to wait before retrying, from `Retry-After` or the Status details. */
  readonly retryAfterSeconds?: number;

  /** Builds an error from a `Status` object and the request it answered. */
  constructor(status: Status, options: ApiErrorOptions = {}) {
    const code = status.code ?? 500;
    const reason = status.reason || reasonForCode(code);
    const text = (status.message || reason) + (code === 403 ? rbacHint(status.message) : "");
    const where = options.method && options.path ? `${options.method} ${options.path}: ` : "";
    super(`${where}${text} (${code} ${reason})`, { cause: options.cause });
    this.name = "ApiError";
    this.code = code;
    this.reason = reason;
    this.details = status.details;
    this.status = { ...status, code, reason };
    this.method = options.method;
    this.path = options.path;
    this.retryAfterSeconds = options.retryAfterSeconds ?? status.details?.retryAfterSeconds;
  }

  /**
   * Builds an error from an HTTP response body that may or may not be a `Status`. A body that
   * is not JSON (a proxy's HTML page, plain text) becomes the message, cut to 1 KiB.
   */
  static fromResponseBody(
    code: number,
    body: string,
    options: ApiErrorOptions = {},
  ): ApiError {
    let status: Status | undefined;
    try {
      const parsed = JSON.parse(body);
      if (parsed && typeof parsed === "object" && parsed.kind === "Status") status = parsed;
    } catch {
      // Not JSON: fall through to a synthesised Status.
    }
    if (!status) {
      const text = body.trim();
      status = {
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        code,
        reason: reasonForCode(code),
        message: text.length > 1024 ? `${text.slice(0, 1024)}…` : text,
      };
    }
    // The HTTP code wins: a Status body may omit it.
    return new ApiError({ ...status, code: status.code || code }, options);
  }
}

function reasonIs(err: unknown, reason: StatusReason, code: number): boolean {
  if (!(err instanceof ApiError)) return false;
  if (err.reason === reason) return true;
  return (err.reason === "Unknown" || err.reason === "") && err.code === code;
}

/** True when `err` is an {@linkcode ApiError} for a missing object (404 NotFound). */
export function isNotFound(err: unknown): boolean {
  return reasonIs(err, "NotFound", 404);
}

/** True when `err` is an {@linkcode ApiError} for a stale write (409 Conflict). */
export function isConflict(err: unknown): boolean {
  return reasonIs(err, "Conflict", 409);
}

/** True when `err` is an {@linkcode ApiError} for a create of an existing object (409 AlreadyExists). */
export function isAlreadyExists(err: unknown): boolean {
  return err instanceof ApiError && err.reason === "AlreadyExists";
}

/** True when `err` is an {@linkcode ApiError} for an expired resourceVersion (410 Gone / Expired). */
export function isGone(err: unknown): boolean {
  return reasonIs(err, "Gone", 410) || (err instanceof ApiError && err.reason === "Expired");
}

/** True when `err` is an {@linkcode ApiError} for an object that failed validation (422 Invalid). */
export function isInvalid(err: unknown): boolean {
  return reasonIs(err, "Invalid", 422);
}

/** True when `err` is an {@linkcode ApiError} for a request RBAC denied (403 Forbidden). */
export function isForbidden(err: unknown): boolean {
  return reasonIs(err, "Forbidden", 403);
}

/** True when `err` is an {@linkcode ApiError} for a request without valid credentials (401). */
export function isUnauthorized(err: unknown): boolean {
  return reasonIs(err, "Unauthorized", 401);
}

/** True when `err` is an {@linkcode ApiError} for a throttled request (429 TooManyRequests). */
export function isTooManyRequests(err: unknown): boolean {
  return reasonIs(err, "TooManyRequests", 429);
}

/**
 * Returns `undefined` when `err` is a NotFound {@linkcode ApiError} and throws it otherwise:
 * made for `.catch(ignoreNotFound)` after a get or delete.
 *
 * @example
 * ```ts
 * import { ignoreNotFound } from "@rudder/operator";
 * import { ApiError } from "@rudder/operator/client";
 *
 * const missing = Promise.reject(new ApiError({ code: 404, reason: "NotFound" }));
 * const found = await missing.catch(ignoreNotFound); // undefined
 * ```
 */
export function ignoreNotFound(err: unknown): undefined {
  if (isNotFound(err)) return undefined;
  throw err;
}

/**
 * Returns `undefined` when `err` is an AlreadyExists {@linkcode ApiError} and throws it
 * otherwise: made for `.catch(ignoreAlreadyExists)` after a create.
 *
 * @example
 * ```ts
 * import { ignoreAlreadyExists } from "@rudder/operator";
 * import { ApiError } from "@rudder/operator/client";
 *
 * const exists = Promise.reject(new ApiError({ code: 409, reason: "AlreadyExists" }));
 * await exists.catch(ignoreAlreadyExists); // resolves to undefined
 * ```
 */
export function ignoreAlreadyExists(err: unknown): undefined {
  if (isAlreadyExists(err)) return undefined;
  throw err;
}

/**
 * Why a request got no answer from the API server:
 * - `refused`: nothing listens at the server's address and port;
 * - `dns`: the server's host name does not resolve;
 * - `untrusted-certificate`: the server's certificate is not signed by a trusted CA;
 * - `tls`: another TLS failure (a certificate for another name, a bad client key, …);
 * - `invalid-ca`: the configured CA data is not a PEM certificate;
 * - `proxy`: the configured proxy cannot be reached;
 * - `timeout`: connecting timed out;
 * - `reset`: the connection was closed before an answer came;
 * - `unknown`: anything else (the message carries the runtime's words).
 */
export type ConnectionFailure =
  | "refused"
  | "dns"
  | "untrusted-certificate"
  | "tls"
  | "invalid-ca"
  | "proxy"
  | "timeout"
  | "reset"
  | "unknown";

/** Options of {@linkcode ConnectionError}. */
export interface ConnectionErrorOptions {
  /** `host:port` that could not be reached: the API server, or the proxy for `proxy`. */
  host: string;
  /** What went wrong. */
  reason: ConnectionFailure;
  /** A sentence on the failure, e.g. `connection refused`; no credentials. */
  detail: string;
  /** HTTP method of the request, when known. */
  method?: string;
  /** Path (without query) of the request, when known. */
  path?: string;
  /** The runtime's error, with credentials already removed from its messages. */
  cause?: unknown;
}

/**
 * A request that got no answer: the connection, the TLS handshake or the proxy failed. Unlike
 * the runtimes' own errors ("fetch failed" on Deno, "Was there a typo in the url or port?" on
 * Bun), the message names the host and the reason; `cause` keeps the runtime's error chain
 * (names, messages and codes, with any credential blanked).
 *
 * @example Tell an unreachable server from a refusal
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 * import { ConnectionError, RestClient } from "@rudder/operator/kube";
 *
 * const rest = new RestClient(await loadConfig());
 * try {
 *   await rest.request({ path: "/version" });
 * } catch (err) {
 *   if (err instanceof ConnectionError) console.error(err.host, err.reason);
 *   else throw err;
 * }
 * ```
 */
export class ConnectionError extends Error {
  /** `host:port` that could not be reached. */
  readonly host: string;
  /** What went wrong. */
  readonly reason: ConnectionFailure;
  /** HTTP method of the request, when known. */
  readonly method?: string;
  /** Path of the request, when known. */
  readonly path?: string;

  /** Builds the error; the message is `[<method> <path>: ]cannot connect to <host>: <detail>`. */
  constructor(options: ConnectionErrorOptions) {
    const where = options.method && options.path ? `${options.method} ${options.path}: ` : "";
    const target = options.reason === "proxy" ? `proxy ${options.host}` : options.host;
    super(
      `${where}cannot connect to ${target}: ${options.detail}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = "ConnectionError";
    this.host = options.host;
    this.reason = options.reason;
    this.method = options.method;
    this.path = options.path;
  }
}

/**
 * A header whose value cannot be sent: it holds a control character, a line break or a
 * character outside Latin-1. The message names the header and where it came from, never the
 * value.
 */
export class InvalidHeaderError extends TypeError {
  /** The header's name, e.g. `Authorization`. */
  readonly header: string;

  /** Builds the error for `header`, whose value came from `source`. */
  constructor(header: string, source: string) {
    super(
      `the ${header} header from ${source} contains a character that is not allowed in an ` +
        `HTTP header (a control character, a line break or a non-Latin-1 character); ` +
        `its value is not shown`,
    );
    this.name = "InvalidHeaderError";
    this.header = header;
  }
}
