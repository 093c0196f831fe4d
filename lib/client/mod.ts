/**
 * The client: typed reads and writes against the API server, as controller-runtime's
 * `pkg/client`. {@linkcode newClient} talks to the API server directly; a manager's client
 * (`mgr.getClient()`) reads from the cache and writes to the API server. Patches
 * ({@linkcode mergeFrom}, {@linkcode strategicMergeFrom}, {@linkcode jsonPatch}, and
 * {@linkcode createJsonPatch} for the JSON patch between two objects), wrappers
 * ({@linkcode withFieldOwner}, {@linkcode dryRunClient}, {@linkcode namespacedClient}) and the
 * API's errors ({@linkcode ApiError}, {@linkcode ignoreNotFound}, …) live here too.
 *
 * @example Read, change and patch a Deployment
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 * import { Deployment } from "@rudder/operator";
 * import { ignoreNotFound, mergeFrom, newClient } from "@rudder/operator";
 *
 * const client = newClient(await loadConfig());
 * const web = await client.get(Deployment, { namespace: "default", name: "web" })
 *   .catch(ignoreNotFound);
 * if (web) {
 *   const scaled = structuredClone(web);
 *   scaled.spec = { ...scaled.spec!, replicas: (web.spec?.replicas ?? 1) + 1 };
 *   await client.patch(scaled, mergeFrom(web));
 * }
 * ```
 *
 * @module
 */

export {
  type Client,
  type ClientOptions,
  type ListAllOptions,
  newClient,
  type ObjectKey,
  type ObjectList,
  type Reader,
  type ResourceRef,
  type SubResourceClient,
  type SubResourceWriteOptions,
  type Writer,
} from "./client.ts";
export type {
  ApplyOptions,
  CallOptions,
  CreateOptions,
  DeleteAllOfOptions,
  DeleteOptions,
  FieldSelectorInput,
  FieldValidation,
  GetOptions,
  LabelSelectorInput,
  LabelSelectorObject,
  ListOptions,
  PatchOptions,
  PropagationPolicy,
  UpdateOptions,
  WriteOptions,
} from "./options.ts";
export {
  jsonPatch,
  mergeFrom,
  type MergeFromOptions,
  type Patch,
  type PatchType,
  rawPatch,
  strategicMergeFrom,
} from "./patch.ts";
export { createJsonPatch, escapePointerToken, type JsonPatchOperation } from "./json_patch.ts";
export { StrategicMergePatchError } from "./strategic_merge.ts";
export { dryRunClient, namespacedClient, withFieldOwner } from "./wrappers.ts";
export { type InterceptorFuncs, newInterceptedClient } from "./interceptor.ts";
export {
  type CachedClient,
  type CachedClientOptions,
  type CachedReader,
  newCachedClient,
} from "../cache/cached_client.ts";
export {
  ApiError,
  type ApiErrorOptions,
  ignoreAlreadyExists,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  isUnauthorized,
  type Status,
  type StatusCause,
  type StatusDetails,
  type StatusReason,
} from "../kube/errors.ts";
