/**
 * Patches, as controller-runtime makes them: `mergeFrom(original)` diffs the object you
 * changed against the copy you started from (RFC 7386 JSON merge patch),
 * `strategicMergeFrom(original)` does the same in Kubernetes' strategic form for built-in kinds,
 * `jsonPatch(ops)` sends RFC 6902 operations (./json_patch.ts has their type, their diff and
 * how they apply), and `rawPatch` sends a body as it is. Merge patches are computed and applied
 * here too, the latter for the fake client.
 *
 * @module
 */

import { createStrategicMergePatch, schemaForKind } from "./strategic_merge.ts";
import type { JsonPatchOperation } from "./json_patch.ts";
import type { KubeObject } from "../api/resource.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import { isJsonObject, jsonClone, jsonEqual, type JsonObject } from "../util/json.ts";

/** The content types of the API's patch kinds. */
export type PatchType =
  | "application/merge-patch+json"
  | "application/json-patch+json"
  | "application/strategic-merge-patch+json"
  | "application/apply-patch+yaml";

/**
 * A patch: its content type, and the body it sends for the object being patched.
 *
 * @example
 * ```ts
 * import { type ConfigMap, mergeFrom } from "@rudder/operator";
 * import { type Patch } from "@rudder/operator/client";
 *
 * const original: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", data: { a: "1" } };
 * const patch: Patch<ConfigMap> = mergeFrom(original);
 * console.log(patch.type, patch.data({ ...original, data: { a: "2" } }));
 * ```
 */
export interface Patch<T = KubeObject> {
  /** Content type of the body. */
  readonly type: PatchType;
  /**
   * The body to send when patching `obj` (for `mergeFrom`, the diff from the original). `obj`
   * is only read: a frozen object from the cache will do.
   */
  data(obj: T | DeepReadonly<T>): unknown;
}

/** Options of {@linkcode mergeFrom} and {@linkcode strategicMergeFrom}. */
export interface MergeFromOptions {
  /**
   * Carry the original's `metadata.resourceVersion` in the patch, so the write fails with a
   * Conflict when someone changed the object since it was read.
   */
  optimisticLock?: boolean;
}

/**
 * The RFC 7386 merge patch that turns `original` into `modified`: changed and added fields,
 * `null` for removed ones, arrays replaced whole.
 */
export function createMergePatch(original: unknown, modified: unknown): unknown {
  if (!isJsonObject(original) || !isJsonObject(modified)) return jsonClone(modified) ?? null;
  const patch: JsonObject = {};
  for (const [key, value] of Object.entries(modified)) {
    if (value === undefined) continue;
    const before = original[key];
    if (before === undefined) patch[key] = jsonClone(value);
    else if (!jsonEqual(before, value)) {
      patch[key] = isJsonObject(before) && isJsonObject(value)
        ? createMergePatch(before, value)
        : jsonClone(value);
    }
  }
  for (const [key, value] of Object.entries(original)) {
    if (value !== undefined && modified[key] === undefined) patch[key] = null;
  }
  return patch;
}

/** Applies an RFC 7386 merge patch to `target`, returning a new value. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isJsonObject(patch)) return jsonClone(patch);
  const result: JsonObject = isJsonObject(target) ? jsonClone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

function withResourceVersion(patch: unknown, resourceVersion: string | undefined): unknown {
  if (!resourceVersion) {
    throw new Error("optimisticLock needs the original's metadata.resourceVersion; it has none");
  }
  const body = isJsonObject(patch) ? patch : {};
  const metadata = isJsonObject(body.metadata) ? body.metadata : {};
  return { ...body, metadata: { ...metadata, resourceVersion } };
}

/**
 * A JSON merge patch from `original` to the object passed to `patch()`. Take a copy before
 * changing the object, like controller-runtime's `client.MergeFrom`. `original` is only read
 * (a snapshot is taken at once), so a frozen object the cache returned will do, and the patch is
 * typed by its kind: `mergeFrom(cached)` of a `DeepReadonly<Deployment>` is a
 * `Patch<Deployment>`.
 *
 * @example
 * ```ts
 * import { type ConfigMap, mergeFrom } from "@rudder/operator";
 *
 * const original: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", data: { a: "1", b: "2" } };
 * const changed: ConfigMap = { ...original, data: { a: "1", c: "3" } };
 * console.log(mergeFrom(original).data(changed)); // { data: { c: "3", b: null } }
 * // await client.patch(changed, mergeFrom(original));
 * ```
 */
export function mergeFrom<T extends KubeObject>(
  original: T | DeepReadonly<T>,
  options: MergeFromOptions = {},
): Patch<T> {
  const snapshot = jsonClone(original);
  return {
    type: "application/merge-patch+json",
    data(obj: T | DeepReadonly<T>): unknown {
      const patch = createMergePatch(snapshot, obj);
      return options.optimisticLock
        ? withResourceVersion(patch, snapshot.metadata?.resourceVersion)
        : patch;
    },
  };
}

/**
 * A strategic merge patch from `original` to the object passed to `patch()`, for built-in kinds:
 * lists such as containers, env and ports are merged by key rather than replaced, so the patch
 * touches only the items that changed. Custom resources do not support it: use
 * {@linkcode mergeFrom}. Like it, `original` may be a frozen object from the cache.
 *
 * @example
 * ```ts
 * import { clone, type DeepReadonly, type Deployment } from "@rudder/operator";
 * import { strategicMergeFrom } from "@rudder/operator/client";
 *
 * declare const cached: DeepReadonly<Deployment>; // as the cache returns it
 * const changed = clone(cached); // a mutable Deployment
 * changed.spec!.template.spec!.containers[0].image = "nginx:1.27";
 * const patch = strategicMergeFrom(cached);
 * // await client.patch(changed, patch);
 * ```
 */
export function strategicMergeFrom<T extends KubeObject>(
  original: T | DeepReadonly<T>,
  options: MergeFromOptions = {},
): Patch<T> {
  const snapshot = jsonClone(original);
  return {
    type: "application/strategic-merge-patch+json",
    data(obj: T | DeepReadonly<T>): unknown {
      const schema = schemaForKind(obj.apiVersion, obj.kind);
      if (!schema) {
        throw new Error(
          `strategicMergeFrom: ${obj.apiVersion} ${obj.kind} is not a built-in kind, and the API ` +
            "server accepts strategic merge patches only for those; use mergeFrom",
        );
      }
      const patch = createStrategicMergePatch(snapshot, obj, schema);
      return options.optimisticLock
        ? withResourceVersion(patch, snapshot.metadata?.resourceVersion)
        : patch;
    },
  };
}

/**
 * RFC 6902 JSON patch operations, sent as they are.
 *
 * @example
 * ```ts
 * import { jsonPatch } from "@rudder/operator/client";
 *
 * const patch = jsonPatch([
 *   { op: "test", path: "/metadata/labels/tier", value: "web" },
 *   { op: "replace", path: "/spec/replicas", value: 3 },
 * ]);
 * // await client.patch(deployment, patch);
 * ```
 */
export function jsonPatch<T extends KubeObject = KubeObject>(
  operations: JsonPatchOperation[],
): Patch<T> {
  const body = jsonClone(operations);
  return { type: "application/json-patch+json", data: () => body };
}

/** A patch of any type whose body is given as it is. */
export function rawPatch<T extends KubeObject = KubeObject>(
  type: PatchType,
  body: unknown,
): Patch<T> {
  return { type, data: () => body };
}
