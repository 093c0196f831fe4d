/**
 * Admission webhooks at the HTTP level: the `AdmissionReview` v1 types (admission.k8s.io/v1 is
 * not a served API, so they are defined here), decoding a review strictly, turning a handler's
 * result or error into the response the API server expects, and {@linkcode admissionHandler},
 * which serves any handler (a Pod policy, say) as a `fetch` handler.
 *
 * Errors thrown by a handler become denials, never a failed server: an
 * {@linkcode AdmissionDeniedError} (or a 4xx `ApiError`) keeps its message, code and reason; a
 * zod `ValidationError` becomes `422 Invalid` with one cause per field; anything else is an
 * internal error, `500`. A body that is not an `AdmissionReview` is answered with a 4xx.
 *
 * @module
 */

import { encodeBase64 } from "../util/encoding.ts";
import { getLogger } from "@logtape/logtape";
import { ValidationError } from "../api/resource.ts";
import { ApiError, type Status, type StatusCause } from "../kube/errors.ts";
import type { JsonPatchOperation } from "../client/json_patch.ts";
import { contextFromHeaders, SpanKind, SpanStatusCode, withSpan } from "../util/tracing.ts";

/** `apiVersion` of admission reviews. */
export const ADMISSION_API_VERSION = "admission.k8s.io/v1";

/** An operation admission is asked about. */
export type AdmissionOperation = "CREATE" | "UPDATE" | "DELETE" | "CONNECT";

/** Group, version and kind, as in an admission request. */
export interface AdmissionGroupVersionKind {
  /** API group; `""` for the core group. */
  group: string;
  /** Version, e.g. `v1`. */
  version: string;
  /** Kind, e.g. `Pod`. */
  kind: string;
}

/** Group, version and resource (plural), as in an admission request. */
export interface AdmissionGroupVersionResource {
  /** API group; `""` for the core group. */
  group: string;
  /** Version, e.g. `v1`. */
  version: string;
  /** Resource, e.g. `pods`. */
  resource: string;
}

/** Who made the request (authentication.k8s.io/v1 `UserInfo`). */
export interface AdmissionUserInfo {
  /** User name. */
  username?: string;
  /** User id. */
  uid?: string;
  /** Groups of the user. */
  groups?: string[];
  /** Extra attributes from the authenticator. */
  extra?: Record<string, string[]>;
}

/** The `request` of an `AdmissionReview`; `T` is the type of `object` and `oldObject`. */
export interface AdmissionRequest<T = unknown> {
  /** Identifies this request; the response echoes it. */
  uid: string;
  /** Kind of the object, in the version the webhook registered for. */
  kind: AdmissionGroupVersionKind;
  /** Resource being acted on. */
  resource: AdmissionGroupVersionResource;
  /** Subresource, e.g. `status`, if any. */
  subResource?: string;
  /** Kind of the original request (differs from `kind` when the API server converted it). */
  requestKind?: AdmissionGroupVersionKind;
  /** Resource of the original request. */
  requestResource?: AdmissionGroupVersionResource;
  /** Subresource of the original request. */
  requestSubResource?: string;
  /** Name of the object; may be empty on CREATE with `generateName`. */
  name?: string;
  /** Namespace, for namespaced objects. */
  namespace?: string;
  /** What is being done. */
  operation: AdmissionOperation;
  /** Who is doing it. */
  userInfo: AdmissionUserInfo;
  /** The new object (CREATE, UPDATE, CONNECT). */
  object?: T;
  /** The existing object (UPDATE, DELETE). */
  oldObject?: T;
  /** True when the request will not be persisted: side effects must be skipped. */
  dryRun?: boolean;
  /** The operation's options (e.g. `CreateOptions`). */
  options?: Record<string, unknown>;
}

/** The `response` of an `AdmissionReview`. */
export interface AdmissionResponse {
  /** The request's `uid`. */
  uid: string;
  /** Whether the request may proceed. */
  allowed: boolean;
  /** Why not (message, reason, code), when denied. */
  status?: Status;
  /** The base64 JSON patch of a mutating webhook. */
  patch?: string;
  /** `"JSONPatch"` when `patch` is set. */
  patchType?: "JSONPatch";
  /** Annotations for the audit log. */
  auditAnnotations?: Record<string, string>;
  /** Warnings returned to the client (`Warning` headers). */
  warnings?: string[];
}

/** An `AdmissionReview` v1: the request the API server sends and the response it gets back. */
export interface AdmissionReview<T = unknown> {
  /** `admission.k8s.io/v1`. */
  apiVersion: typeof ADMISSION_API_VERSION;
  /** `AdmissionReview`. */
  kind: "AdmissionReview";
  /** Set by the API server. */
  request?: AdmissionRequest<T>;
  /** Set by the webhook. */
  response?: AdmissionResponse;
}

/** What an admission handler decides; the server adds the `uid`. */
export interface AdmissionResult {
  /** Whether the request may proceed. */
  allowed: boolean;
  /** Why not, when denied: message, reason, code. */
  status?: Status;
  /** Changes to the object (mutating webhooks), as RFC 6902 operations. */
  patch?: JsonPatchOperation[];
  /** Warnings for the client. */
  warnings?: string[];
  /** Annotations for the audit log. */
  auditAnnotations?: Record<string, string>;
}

/** A handler of admission requests for any kind: decides and may patch. */
export type AdmissionHandlerFunc<T = unknown> = (
  request: AdmissionRequest<T>,
) => AdmissionResult | Promise<AdmissionResult>;

/**
 * Thrown by a validator (or any admission handler) to deny a request: `message` reaches the
 * client; `code` (default 403) and `reason` (default `Forbidden`) go into the denial's status.
 *
 * @example
 * ```ts
 * import { AdmissionDeniedError } from "@rudder/operator/webhook";
 *
 * function checkReplicas(replicas: number): void {
 *   if (replicas > 10) {
 *     throw new AdmissionDeniedError("spec.replicas must be at most 10", {
 *       code: 422,
 *       reason: "Invalid",
 *       causes: [{ field: "spec.replicas", message: "must be at most 10" }],
 *     });
 *   }
 * }
 * ```
 */
export class AdmissionDeniedError extends Error {
  /** HTTP code of the denial, 400–499; default 403. */
  readonly code: number;
  /** Machine-readable reason; default `Forbidden`. */
  readonly reason: string;
  /** The fields at fault, if known. */
  readonly causes?: StatusCause[];

  /** Builds a denial. A `code` outside 400–499 becomes 403. */
  constructor(
    message: string,
    options: { code?: number; reason?: string; causes?: StatusCause[] } = {},
  ) {
    super(message);
    this.name = "AdmissionDeniedError";
    const code = options.code ?? 403;
    this.code = code >= 400 && code < 500 ? code : 403;
    this.reason = options.reason ?? (this.code === 403 ? "Forbidden" : "BadRequest");
    if (options.causes) this.causes = options.causes;
  }
}

/**
 * A request body that is not what a webhook accepts; `code` is the HTTP status to answer with.
 *
 * @example
 * ```ts
 * import { decodeAdmissionReview, ReviewDecodeError } from "@rudder/operator/webhook";
 *
 * try {
 *   decodeAdmissionReview({ kind: "Pod" });
 * } catch (err) {
 *   if (err instanceof ReviewDecodeError) console.log(err.code, err.message); // 400 …
 * }
 * ```
 */
export class ReviewDecodeError extends Error {
  /** HTTP status: 400 for a malformed review, 413 too large, 415 not JSON. */
  readonly code: number;

  /** Builds the error. */
  constructor(message: string, code = 400) {
    super(message);
    this.name = "ReviewDecodeError";
    this.code = code;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Checks that `body` (parsed JSON) is an `AdmissionReview` v1 with a usable request and returns
 * the request; throws a {@linkcode ReviewDecodeError} (400) naming what is wrong.
 *
 * @example
 * ```ts
 * import { decodeAdmissionReview } from "@rudder/operator/webhook";
 *
 * const request = decodeAdmissionReview({
 *   apiVersion: "admission.k8s.io/v1",
 *   kind: "AdmissionReview",
 *   request: {
 *     uid: "1",
 *     kind: { group: "", version: "v1", kind: "Pod" },
 *     resource: { group: "", version: "v1", resource: "pods" },
 *     operation: "CREATE",
 *     userInfo: { username: "admin" },
 *     object: { metadata: { name: "web" } },
 *   },
 * });
 * console.log(request.operation); // CREATE
 * ```
 */
export function decodeAdmissionReview(body: unknown): AdmissionRequest {
  if (!isRecord(body)) throw new ReviewDecodeError("the body is not a JSON object");
  if (body.kind !== "AdmissionReview") {
    throw new ReviewDecodeError(`expected kind AdmissionReview, got ${describe(body.kind)}`);
  }
  if (body.apiVersion !== ADMISSION_API_VERSION) {
    throw new ReviewDecodeError(
      `expected apiVersion ${ADMISSION_API_VERSION}, got ${describe(body.apiVersion)}`,
    );
  }
  const request = body.request;
  if (!isRecord(request)) throw new ReviewDecodeError("the AdmissionReview has no request");
  const { uid, operation } = request;
  if (typeof uid !== "string" || uid === "") {
    throw new ReviewDecodeError("the AdmissionReview request has no uid");
  }
  if (!isOperation(operation)) {
    throw new ReviewDecodeError(`unknown operation ${describe(operation)}`);
  }
  if (request.kind === undefined || request.kind === null) {
    throw new ReviewDecodeError("the AdmissionReview request has no kind");
  }
  return withoutUndefined({
    uid,
    kind: groupVersionKind(request.kind, "request.kind"),
    resource: groupVersionResource(request.resource, "request.resource"),
    subResource: optional(request.subResource, "request.subResource", text),
    requestKind: optional(request.requestKind, "request.requestKind", groupVersionKind),
    requestResource: optional(
      request.requestResource,
      "request.requestResource",
      groupVersionResource,
    ),
    requestSubResource: optional(request.requestSubResource, "request.requestSubResource", text),
    name: optional(request.name, "request.name", text),
    namespace: optional(request.namespace, "request.namespace", text),
    operation,
    userInfo: userInfo(request.userInfo, "request.userInfo"),
    object: optional(request.object, "request.object", record),
    oldObject: optional(request.oldObject, "request.oldObject", record),
    dryRun: optional(request.dryRun, "request.dryRun", flag),
    options: optional(request.options, "request.options", record),
  });
}

function isOperation(value: unknown): value is AdmissionOperation {
  return value === "CREATE" || value === "UPDATE" || value === "DELETE" || value === "CONNECT";
}

/** Checks the field `field` of a review and returns its value typed, or throws naming it. */
type Check<T> = (value: unknown, field: string) => T;

/** What `check` makes of a field, or `undefined` when the field is absent or null. */
function optional<T>(value: unknown, field: string, check: Check<T>): T | undefined {
  return value === undefined || value === null ? undefined : check(value, field);
}

const text: Check<string> = (value, field) => {
  if (typeof value !== "string") throw new ReviewDecodeError(`${field} is not a string`);
  return value;
};

const flag: Check<boolean> = (value, field) => {
  if (typeof value !== "boolean") throw new ReviewDecodeError(`${field} is not a boolean`);
  return value;
};

const record: Check<Record<string, unknown>> = (value, field) => {
  if (!isRecord(value)) throw new ReviewDecodeError(`${field} is not an object`);
  return value;
};

const texts: Check<string[]> = (value, field) => {
  if (!Array.isArray(value)) throw new ReviewDecodeError(`${field} is not a list`);
  return value.map((item, i) => text(item, `${field}[${i}]`));
};

const groupVersionKind: Check<AdmissionGroupVersionKind> = (value, field) => {
  const gvk = record(value, field);
  return {
    group: text(gvk.group, `${field}.group`),
    version: text(gvk.version, `${field}.version`),
    kind: text(gvk.kind, `${field}.kind`),
  };
};

const groupVersionResource: Check<AdmissionGroupVersionResource> = (value, field) => {
  const gvr = record(value, field);
  return {
    group: text(gvr.group, `${field}.group`),
    version: text(gvr.version, `${field}.version`),
    resource: text(gvr.resource, `${field}.resource`),
  };
};

const userInfo: Check<AdmissionUserInfo> = (value, field) => {
  const user = record(value, field);
  const extra = optional(user.extra, `${field}.extra`, record);
  return withoutUndefined({
    username: optional(user.username, `${field}.username`, text),
    uid: optional(user.uid, `${field}.uid`, text),
    groups: optional(user.groups, `${field}.groups`, texts),
    extra: extra && Object.fromEntries(
      Object.entries(extra).map(([key, values]) => [key, texts(values, `${field}.extra.${key}`)]),
    ),
  });
};

/** `obj` without its `undefined` fields: a decoded review holds only what was sent. */
function withoutUndefined<T extends object>(obj: T): T {
  for (const key in obj) if (obj[key] === undefined) delete obj[key];
  return obj;
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/**
 * The denial an error thrown by an admission handler becomes: an
 * {@linkcode AdmissionDeniedError} or a 4xx `ApiError` keeps its message, code and reason; a
 * zod `ValidationError` (from a resource's `parse`) is `422 Invalid` with a cause per field;
 * anything else is `500 InternalError`.
 *
 * @example
 * ```ts
 * import { AdmissionDeniedError, denialFromError } from "@rudder/operator/webhook";
 *
 * const denial = denialFromError(new AdmissionDeniedError("no", { code: 422, reason: "Invalid" }));
 * console.log(denial.status?.code, denial.status?.message); // 422 no
 * console.log(denialFromError(new Error("boom")).status?.code); // 500
 * ```
 */
export function denialFromError(err: unknown): AdmissionResult {
  if (err instanceof AdmissionDeniedError) {
    return denied(err.message, {
      code: err.code,
      reason: err.reason,
      ...(err.causes ? { causes: err.causes } : {}),
    });
  }
  if (err instanceof ApiError && err.code >= 400 && err.code < 500) {
    return denied(err.status.message || err.message, {
      code: err.code,
      reason: err.reason,
      ...(err.details?.causes ? { causes: err.details.causes } : {}),
    });
  }
  if (err instanceof ValidationError) {
    return denied(err.message, {
      code: 422,
      reason: "Invalid",
      causes: err.issues.map((issue) => ({
        reason: "FieldValueInvalid",
        message: issue.message,
        field: issue.path,
      })),
    });
  }
  const message = err instanceof Error ? err.message : String(err);
  return denied(`internal error: ${message}`, { code: 500, reason: "InternalError" });
}

/**
 * A denial with `message`; `code` defaults to 403 and `reason` to `Forbidden`.
 *
 * @example
 * ```ts
 * import { denied } from "@rudder/operator/webhook";
 *
 * const result = denied("pods must not run as root");
 * console.log(result.allowed, result.status?.code); // false 403
 * ```
 */
export function denied(
  message: string,
  options: { code?: number; reason?: string; causes?: StatusCause[] } = {},
): AdmissionResult {
  const code = options.code ?? 403;
  return {
    allowed: false,
    status: {
      status: "Failure",
      message,
      reason: options.reason ?? (code === 403 ? "Forbidden" : undefined),
      code,
      ...(options.causes ? { details: { causes: options.causes } } : {}),
    },
  };
}

/**
 * An admission that lets the request through, with optional warnings for the client.
 *
 * @example
 * ```ts
 * import { allowed } from "@rudder/operator/webhook";
 *
 * console.log(allowed(["spec.legacy is deprecated"])); // { allowed: true, warnings: [ … ] }
 * ```
 */
export function allowed(warnings?: string[]): AdmissionResult {
  return warnings && warnings.length > 0 ? { allowed: true, warnings } : { allowed: true };
}

/**
 * The `AdmissionReview` answering request `uid` with `result`: the patch base64-encoded with
 * `patchType: JSONPatch` when there is one.
 *
 * @example
 * ```ts
 * import { admissionReviewResponse } from "@rudder/operator/webhook";
 *
 * const review = admissionReviewResponse("42", {
 *   allowed: true,
 *   patch: [{ op: "add", path: "/spec/replicas", value: 1 }],
 * });
 * console.log(review.response?.patchType); // JSONPatch
 * ```
 */
export function admissionReviewResponse(uid: string, result: AdmissionResult): AdmissionReview {
  const response: AdmissionResponse = { uid, allowed: result.allowed };
  if (result.status) response.status = result.status;
  if (result.patch && result.patch.length > 0) {
    response.patchType = "JSONPatch";
    response.patch = encodeBase64(JSON.stringify(result.patch));
  }
  if (result.warnings && result.warnings.length > 0) response.warnings = result.warnings;
  if (result.auditAnnotations) response.auditAnnotations = result.auditAnnotations;
  return { apiVersion: ADMISSION_API_VERSION, kind: "AdmissionReview", response };
}

const log = getLogger(["rudder", "webhook"]);

/**
 * Reads a JSON request body for a review: checks the content type (415) and parses (400).
 * Oversized bodies are refused earlier, by the server's body limit (413).
 */
export async function readReviewBody(request: Request): Promise<unknown> {
  if (request.method !== "POST") throw new ReviewDecodeError("only POST is served", 405);
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json\b/i.test(type)) {
    throw new ReviewDecodeError(
      `expected Content-Type application/json, got ${describe(type)}`,
      415,
    );
  }
  const text = await request.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new ReviewDecodeError("the body is not valid JSON");
  }
}

/** A plain-text answer to a request that could not be reviewed. */
export function reviewErrorResponse(err: unknown): Response {
  const code = err instanceof ReviewDecodeError ? err.code : 500;
  const message = err instanceof Error ? err.message : String(err);
  return new Response(JSON.stringify({ error: message }), {
    status: code,
    headers: { "content-type": "application/json" },
  });
}

/** The handler's decision, or the denial made from what it threw. */
async function decide<T>(
  handler: AdmissionHandlerFunc<T>,
  request: AdmissionRequest,
): Promise<AdmissionResult> {
  try {
    // The API server sends objects of the kinds the webhook is registered for.
    return await handler(request as AdmissionRequest<T>);
  } catch (err) {
    const result = denialFromError(err);
    if (result.status?.code === 500) {
      // Names the object, never its contents: they may hold Secrets.
      log.error("Admission handler failed for {operation} {kind} {namespace}/{name}: {error}", {
        operation: request.operation,
        kind: request.kind.kind,
        namespace: request.namespace ?? "",
        name: request.name ?? "",
        error: err instanceof Error ? err.message : String(err),
      });
    }
    return result;
  }
}

/**
 * Serves `handler` as a `fetch` handler of `AdmissionReview`s: decodes the review (4xx for a
 * malformed one), calls the handler, and answers with its result — or with a denial made from
 * what it threw (see {@linkcode denialFromError}). Register it on the webhook server for any
 * kind, e.g. Pods.
 *
 * @example
 * ```ts ignore
 * import { admissionHandler, allowed, denied } from "@rudder/operator/webhook";
 * import type { Pod } from "@rudder/operator";
 *
 * mgr.getWebhookServer().register("/validate-pods", admissionHandler<Pod>((request) => {
 *   const root = request.object?.spec?.securityContext?.runAsUser === 0;
 *   return root ? denied("pods must not run as root") : allowed();
 * }));
 * ```
 */
export function admissionHandler<T = unknown>(
  handler: AdmissionHandlerFunc<T>,
): (request: Request) => Promise<Response> {
  return async (httpRequest) => {
    let request: AdmissionRequest;
    try {
      request = decodeAdmissionReview(await readReviewBody(httpRequest));
    } catch (err) {
      return reviewErrorResponse(err);
    }
    const result = await withSpan(`admission ${request.kind.kind}`, {
      kind: SpanKind.SERVER,
      parent: contextFromHeaders(httpRequest.headers),
      attributes: () => ({
        "url.path": new URL(httpRequest.url).pathname,
        "rudder.k8s.group": request.kind.group,
        "rudder.k8s.kind": request.kind.kind,
        "rudder.k8s.subresource": request.subResource,
        "rudder.admission.operation": request.operation,
        "k8s.namespace.name": request.namespace || undefined,
        "rudder.k8s.name": request.name || undefined,
        "rudder.admission.uid": request.uid,
      }),
    }, async (span) => {
      const result = await decide(handler, request);
      span.setAttribute("rudder.admission.allowed", result.allowed);
      if (!result.allowed) {
        span.setAttribute("rudder.admission.denial", result.status?.message ?? "");
        if (result.status?.code !== undefined) {
          span.setAttribute("rudder.admission.code", result.status.code);
        }
        // A handler that failed, as opposed to one that said no.
        if (result.status?.code === 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
      return result;
    });
    return Response.json(admissionReviewResponse(request.uid, result));
  };
}
