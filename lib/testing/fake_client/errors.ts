/**
 * The fake client's errors, shaped as kube-apiserver shapes them: the same status codes,
 * reasons, messages and details, so that `isNotFound`, `isConflict` and the rest answer as
 * they do against a real cluster.
 *
 * @module
 */

import type { KubeObject, ResourceType } from "../../api/resource.ts";
import { ApiError, type StatusCause, type StatusDetails } from "../../kube/errors.ts";

const NOT_SERVED = "the server could not find the requested resource";
const MODIFIED =
  "the object has been modified; please apply your changes to the latest version and try again";

/** Method and path of the request a real client would have sent, for error messages. */
export interface Where {
  /** The HTTP method, e.g. `PUT`. */
  method: string;
  /** The request path, e.g. `/api/v1/namespaces/default/configmaps/a`. */
  path: string;
}

/** An {@linkcode ApiError} carrying the Status the API server would send. */
export function apiError(
  where: Where,
  code: number,
  reason: string,
  message: string,
  details?: StatusDetails,
  cause?: unknown,
): ApiError {
  return new ApiError(
    {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason,
      details,
      code,
    },
    { method: where.method, path: where.path, cause },
  );
}

/** `deployments.apps`, or `configmaps` in the core group. */
function qualifiedResource(type: ResourceType<KubeObject>): string {
  return type.group ? `${type.plural}.${type.group}` : type.plural;
}

function resourceDetails(type: ResourceType<KubeObject>, name: string): StatusDetails {
  return { name, ...(type.group ? { group: type.group } : {}), kind: type.plural };
}

/** A 404 NotFound about the object `name` of `type`. */
export function notFound(type: ResourceType<KubeObject>, name: string, where: Where): ApiError {
  return apiError(
    where,
    404,
    "NotFound",
    `${qualifiedResource(type)} "${name}" not found`,
    resourceDetails(type, name),
  );
}

/** A 404 NotFound about a resource or subresource the server does not serve. */
export function notServed(where: Where): ApiError {
  return apiError(where, 404, "NotFound", NOT_SERVED, {});
}

/** A 405 MethodNotAllowed: the subresource exists but not this verb. */
export function methodNotAllowed(where: Where): ApiError {
  return apiError(
    where,
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
    {},
  );
}

/** A 409 AlreadyExists about the object `name` of `type`. */
export function alreadyExists(
  type: ResourceType<KubeObject>,
  name: string,
  where: Where,
): ApiError {
  return apiError(
    where,
    409,
    "AlreadyExists",
    `${qualifiedResource(type)} "${name}" already exists`,
    resourceDetails(type, name),
  );
}

/** A 409 Conflict: a stale resourceVersion by default, or another failed precondition. */
export function conflict(
  type: ResourceType<KubeObject>,
  name: string,
  where: Where,
  detail = MODIFIED,
): ApiError {
  return apiError(
    where,
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedResource(type)} "${name}": ${detail}`,
    resourceDetails(type, name),
  );
}

/** A 400 BadRequest. */
export function badRequest(message: string, where: Where): ApiError {
  return apiError(where, 400, "BadRequest", message);
}

/** A 422 Invalid about `subject` (e.g. `ConfigMap` or `Widget.example.com`) named `name`. */
export function invalid(
  subject: { kind: string; group: string },
  name: string,
  causes: StatusCause[],
  where: Where,
): ApiError {
  const what = subject.group ? `${subject.kind}.${subject.group}` : subject.kind;
  const list = causes.map((cause) => `${cause.field}: ${cause.message}`);
  const text = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
  return apiError(where, 422, "Invalid", `${what} "${name}" is invalid: ${text}`, {
    ...(name ? { name } : {}),
    ...(subject.group ? { group: subject.group } : {}),
    kind: subject.kind,
    causes,
  });
}

/** The API server's answer to a patch it could not apply (a failed JSON patch `test`, …). */
export function unprocessablePatch(where: Where, cause: unknown): ApiError {
  return apiError(
    where,
    422,
    "Invalid",
    "the server rejected our request due to an error in our request",
    {},
    cause,
  );
}

/** A cause of a 422 Invalid: a required field is missing. */
export const required = (field: string, detail: string): StatusCause => ({
  reason: "FieldValueRequired",
  message: `Required value: ${detail}`,
  field,
});

/** A cause of a 422 Invalid: a field has a value it may not have. */
export const invalidValue = (field: string, value: unknown, detail: string): StatusCause => ({
  reason: "FieldValueInvalid",
  message: `Invalid value: ${JSON.stringify(value)}: ${detail}`,
  field,
});

/** A cause of a 422 Invalid: a change the server forbids. */
export const forbidden = (field: string, detail: string): StatusCause => ({
  reason: "FieldValueForbidden",
  message: `Forbidden: ${detail}`,
  field,
});
