/**
 * Strategic merge patch for the built-in Kubernetes types: computing a patch from two versions
 * of an object ({@linkcode createStrategicMergePatch}, what `client-go`'s
 * `strategicpatch.CreateTwoWayMergePatch` does) and applying one the way kube-apiserver does
 * ({@linkcode applyStrategicMergePatch}, for in-memory fakes). Both are driven by the patch
 * metadata generated from the API server's OpenAPI (`lib/api/generated/patch_metadata.ts`).
 *
 * How a field is merged depends on its schema:
 *
 * - objects merge field by field; a field set to `null` in the patch is removed;
 * - lists with patch strategy `merge` and a merge key (e.g. `containers`, by `name`) merge item
 *   by item; `{ name: "x", $patch: "delete" }` removes an item and
 *   `$setElementOrder/containers` gives the order of the result;
 * - lists of scalars with strategy `merge` (e.g. `finalizers`) are sets: listed values are
 *   added, `$deleteFromPrimitiveList/finalizers` removes values;
 * - every other list is replaced as a whole (e.g. `tolerations`, `args`);
 * - an object with strategy `retainKeys` (e.g. a Deployment's `strategy`, each volume) keeps
 *   only the fields listed in the patch's `$retainKeys`.
 *
 * A schema or field without metadata (a custom resource, an unknown field) is merged like a
 * JSON merge patch (RFC 7386): objects recursively, lists replaced.
 *
 * @example
 * ```ts
 * import {
 *   applyStrategicMergePatch,
 *   createStrategicMergePatch,
 *   schemaForKind,
 * } from "./strategic_merge.ts";
 *
 * const schema = schemaForKind("v1", "Pod")!; // "io.k8s.api.core.v1.Pod"
 * const original = {
 *   metadata: { name: "web", labels: { app: "web", tier: "front" } },
 *   spec: { containers: [{ name: "app", image: "nginx:1" }, { name: "sidecar", image: "envoy" }] },
 * };
 * const modified = {
 *   metadata: { name: "web", labels: { app: "web" } },
 *   spec: { containers: [{ name: "app", image: "nginx:2" }] },
 * };
 * const patch = createStrategicMergePatch(original, modified, schema);
 * // {
 * //   metadata: { labels: { tier: null } },
 * //   spec: {
 * //     containers: [{ name: "app", image: "nginx:2" }, { name: "sidecar", $patch: "delete" }],
 * //     "$setElementOrder/containers": [{ name: "app" }],
 * //   },
 * // }
 * console.log(applyStrategicMergePatch(original, patch, schema)); // equals modified
 * ```
 *
 * @module
 */

import {
  KIND_SCHEMAS,
  PATCH_METADATA,
  type PropertyPatchInfo,
} from "../api/generated/patch_metadata.ts";
import { isJsonObject, jsonEqual, type JsonObject } from "../util/json.ts";

/** `$patch`: `replace` or `delete` an object (or a list item), or `replace` a whole list. */
const DIRECTIVE = "$patch";
/** The fields an object with strategy `retainKeys` keeps. */
const RETAIN_KEYS = "$retainKeys";
/** `$setElementOrder/<field>`: the order of a merged list after the patch. */
const SET_ELEMENT_ORDER_PREFIX = "$setElementOrder/";
/** `$deleteFromPrimitiveList/<field>`: values to remove from a merged list of scalars. */
const DELETE_FROM_PRIMITIVE_LIST_PREFIX = "$deleteFromPrimitiveList/";

/**
 * A patch or object that strategic merge patch cannot process, e.g. a merged list item without
 * its merge key or a malformed directive. The API server answers such a patch with an error.
 */
export class StrategicMergePatchError extends Error {
  /** Creates the error. */
  constructor(message: string) {
    super(message);
    this.name = "StrategicMergePatchError";
  }
}

/**
 * The schema name of a built-in kind, for {@linkcode createStrategicMergePatch} and
 * {@linkcode applyStrategicMergePatch}; `undefined` for kinds the generated types do not cover
 * (e.g. custom resources).
 *
 * @example
 * ```ts
 * import { schemaForKind } from "./strategic_merge.ts";
 *
 * schemaForKind("apps/v1", "Deployment"); // "io.k8s.api.apps.v1.Deployment"
 * schemaForKind("v1", "ConfigMap"); // "io.k8s.api.core.v1.ConfigMap"
 * schemaForKind("example.com/v1", "Widget"); // undefined
 * ```
 */
export function schemaForKind(apiVersion: string, kind: string): string | undefined {
  const key = `${apiVersion}/${kind}`;
  return Object.hasOwn(KIND_SCHEMAS, key) ? KIND_SCHEMAS[key] : undefined;
}

/**
 * Computes the strategic merge patch that turns `original` into `modified` (both objects of the
 * schema `schemaName`, e.g. `"io.k8s.api.apps.v1.Deployment"`; see {@linkcode schemaForKind}).
 * Returns `{}` when they are equal. Sent as `application/strategic-merge-patch+json`, the patch
 * changes exactly the fields that differ and leaves alone what others changed meanwhile (an
 * added container, label or finalizer survives).
 *
 * Follows apimachinery's `CreateTwoWayMergePatch`, with one difference: a field with strategy
 * `replace` is only in the patch when it changed.
 *
 * @throws {StrategicMergePatchError} when a merged list mixes item types, holds lists, or has an
 * object item without the merge key.
 *
 * @example Remove a finalizer and add an environment variable
 * ```ts
 * import { createStrategicMergePatch } from "./strategic_merge.ts";
 *
 * const template = (env: { name: string; value: string }[]) => ({
 *   spec: { containers: [{ name: "app", image: "nginx", env }] },
 * });
 * const patch = createStrategicMergePatch(
 *   { metadata: { finalizers: ["a", "b"] }, spec: { template: template([]) } },
 *   { metadata: { finalizers: ["a"] }, spec: { template: template([{ name: "X", value: "1" }]) } },
 *   "io.k8s.api.apps.v1.Deployment",
 * );
 * // {
 * //   metadata: {
 * //     "$deleteFromPrimitiveList/finalizers": ["b"],
 * //     "$setElementOrder/finalizers": ["a"],
 * //   },
 * //   spec: { template: { spec: {
 * //     containers: [{ name: "app", env: [{ name: "X", value: "1" }] }],
 * //     "$setElementOrder/containers": [{ name: "app" }],
 * //   } } },
 * // }
 * ```
 */
export function createStrategicMergePatch(
  original: unknown,
  modified: unknown,
  schemaName: string,
): Record<string, unknown> {
  return diffObjects(
    toJsonObject(original, "original"),
    toJsonObject(modified, "modified"),
    { schema: schemaName },
    false,
  );
}

/**
 * Applies a strategic merge patch to `original` (an object of the schema `schemaName`) the way
 * kube-apiserver does, and returns the result; neither argument is modified. Understands every
 * directive: `null` (remove a field), `$patch: "delete"` and `$patch: "replace"` on objects and
 * list items, `$setElementOrder/<list>`, `$deleteFromPrimitiveList/<list>` and `$retainKeys`.
 *
 * Differences from the server, which decodes the result into Go structs: directive keys and
 * `null`s inside newly added values are dropped here as decoding drops them there, but server
 * defaults are not applied and empty lists or maps are not omitted. `$patch: "merge"` is
 * rejected, as the server rejects it.
 *
 * @throws {StrategicMergePatchError} when the patch is malformed, as the server would refuse it.
 *
 * @example
 * ```ts
 * import { applyStrategicMergePatch } from "./strategic_merge.ts";
 *
 * const pod = { spec: { containers: [{ name: "a", image: "x" }, { name: "b", image: "y" }] } };
 * const patched = applyStrategicMergePatch(
 *   pod,
 *   { spec: { containers: [{ name: "b", $patch: "delete" }, { name: "c", image: "z" }] } },
 *   "io.k8s.api.core.v1.Pod",
 * );
 * // Without `$setElementOrder`, new items go first, as on the server:
 * // { spec: { containers: [{ name: "c", image: "z" }, { name: "a", image: "x" }] } }
 * ```
 */
export function applyStrategicMergePatch(
  original: unknown,
  patch: unknown,
  schemaName: string,
): unknown {
  return mergeObjects(
    original === undefined || original === null ? {} : toJsonObject(original, "original"),
    toJsonObject(patch, "patch"),
    { schema: schemaName },
  );
}

// ---------------------------------------------------------------------------------------------
// Schema lookup

/** Where a value sits: its object schema, or (`mapValues`) a map whose values have it. */
interface Context {
  schema?: string;
  mapValues?: boolean;
}

function propertyInfo(context: Context, field: string): PropertyPatchInfo | undefined {
  if (context.mapValues) return context.schema === undefined ? undefined : { ref: context.schema };
  if (context.schema === undefined || !Object.hasOwn(PATCH_METADATA, context.schema)) {
    return undefined;
  }
  const properties = PATCH_METADATA[context.schema];
  return Object.hasOwn(properties, field) ? properties[field] : undefined;
}

/** The context of a field's object value, or of each item of its list. */
function valueContext(info: PropertyPatchInfo | undefined): Context {
  return info?.map ? { schema: info.ref, mapValues: true } : { schema: info?.ref };
}

/** Splits `merge,retainKeys` into the merge strategy and whether keys are retained. */
function strategyOf(info: PropertyPatchInfo | undefined): { merge?: string; retainKeys: boolean } {
  const strategies = info?.strategy?.split(",") ?? [];
  return {
    merge: strategies.find((strategy) => strategy !== "retainKeys"),
    retainKeys: strategies.includes("retainKeys"),
  };
}

// ---------------------------------------------------------------------------------------------
// JSON helpers

type JsonKind = "null" | "object" | "array" | "string" | "number" | "boolean";

function kindOf(value: unknown): JsonKind {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value as JsonKind;
}

/** A JSON copy of `value`, which must be an object; `undefined` fields go, as in serializing. */
function toJsonObject(value: unknown, what: string): JsonObject {
  const copy = value === undefined ? undefined : JSON.parse(JSON.stringify(value));
  if (!isJsonObject(copy)) throw new TypeError(`${what} must be a JSON object`);
  return copy;
}

/** Scalars compare by their string form, as apimachinery sorts them (`fmt.Sprintf("%v")`). */
function scalarString(value: unknown): string {
  return String(value);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The kind of the items of merged lists; they must all have one kind, and not be lists. */
function itemKind(field: string, ...lists: unknown[][]): JsonKind | undefined {
  let kind: JsonKind | undefined;
  for (const list of lists) {
    for (const item of list) {
      const current = kindOf(item);
      if (current === "array") {
        throw new StrategicMergePatchError(`${field}: lists of lists cannot be merged`);
      }
      if (kind !== undefined && kind !== current) {
        throw new StrategicMergePatchError(`${field}: list items are not all of one type`);
      }
      kind = current;
    }
  }
  return kind;
}

function mergeKeyValue(item: unknown, mergeKey: string, field: string): unknown {
  if (!isJsonObject(item) || !Object.hasOwn(item, mergeKey)) {
    throw new StrategicMergePatchError(
      `${field}: item ${JSON.stringify(item)} has no merge key "${mergeKey}"`,
    );
  }
  return item[mergeKey];
}

/** `items` stably sorted by the position of their key in `order`; unknown keys go last. */
function sortByOrder(items: unknown[], order: unknown[], keyOf: (item: unknown) => unknown) {
  const orderKeys = order.map(keyOf);
  const position = (item: unknown) => {
    const index = orderKeys.indexOf(keyOf(item));
    return index < 0 ? Number.POSITIVE_INFINITY : index;
  };
  return items.map((item) => ({ item, index: position(item) }))
    .sort((a, b) => a.index === b.index ? 0 : a.index < b.index ? -1 : 1)
    .map(({ item }) => item);
}

// ---------------------------------------------------------------------------------------------
// Creating a patch

function diffObjects(
  original: JsonObject,
  modified: JsonObject,
  context: Context,
  buildRetainKeys: boolean,
): JsonObject {
  const patch: JsonObject = {};
  const retained: string[] = [];
  for (const [field, modifiedValue] of Object.entries(modified)) {
    if (buildRetainKeys && modifiedValue !== null) retained.push(field);
    if (!Object.hasOwn(original, field)) {
      patch[field] = modifiedValue;
      continue;
    }
    const originalValue = original[field];
    if (field === DIRECTIVE) {
      if (originalValue !== modifiedValue) patch[field] = modifiedValue;
      continue;
    }
    const kind = kindOf(originalValue);
    if (kind !== kindOf(modifiedValue)) {
      patch[field] = modifiedValue;
    } else if (kind === "object") {
      diffObjectField(
        field,
        originalValue as JsonObject,
        modifiedValue as JsonObject,
        patch,
        context,
      );
    } else if (kind === "array") {
      diffListField(field, originalValue as unknown[], modifiedValue as unknown[], patch, context);
    } else if (originalValue !== modifiedValue) {
      patch[field] = modifiedValue;
    }
  }
  for (const field of Object.keys(original)) {
    if (!Object.hasOwn(modified, field)) patch[field] = null;
  }
  const dropsFields = Object.entries(original)
    .some(([field, value]) => value !== null && !Object.hasOwn(modified, field));
  if (retained.length > 0 && (Object.keys(patch).length > 0 || dropsFields)) {
    patch[RETAIN_KEYS] = retained.sort(compareStrings);
  }
  return patch;
}

function diffObjectField(
  field: string,
  original: JsonObject,
  modified: JsonObject,
  patch: JsonObject,
  context: Context,
): void {
  const info = propertyInfo(context, field);
  const { merge, retainKeys } = strategyOf(info);
  if (merge === "replace") {
    if (!jsonEqual(original, modified)) patch[field] = modified;
    return;
  }
  const fieldPatch = diffObjects(original, modified, valueContext(info), retainKeys);
  if (Object.keys(fieldPatch).length > 0) patch[field] = fieldPatch;
}

function diffListField(
  field: string,
  original: unknown[],
  modified: unknown[],
  patch: JsonObject,
  context: Context,
): void {
  const info = propertyInfo(context, field);
  const { merge, retainKeys } = strategyOf(info);
  if (merge !== "merge") {
    if (!jsonEqual(original, modified)) patch[field] = modified;
    return;
  }
  if (original.length === 0) {
    if (modified.length > 0) patch[field] = modified;
    return;
  }
  const kind = itemKind(field, original, modified);
  let changes: unknown[];
  let deletions: unknown[] = [];
  let order: unknown[] = [];
  if (kind === "object") {
    const mergeKey = info?.mergeKey;
    if (!mergeKey) {
      throw new StrategicMergePatchError(`${field}: a list of objects needs a merge key`);
    }
    const keyOf = (item: unknown) => mergeKeyValue(item, mergeKey, field);
    const diff = diffListsOfObjects(
      field,
      original,
      modified,
      valueContext(info),
      mergeKey,
      retainKeys,
    );
    changes = [...sortByOrder(diff.changes, modified, keyOf), ...diff.deletions];
    const sameOrder = original.length === modified.length &&
      original.every((item, i) => keyOf(item) === keyOf(modified[i]));
    if (changes.length > 0 || !sameOrder) {
      order = modified.map((item) => ({ [mergeKey]: keyOf(item) }));
    }
  } else {
    const diff = diffListsOfScalars(original, modified);
    changes = sortByOrder(diff.additions, modified, (item) => item);
    deletions = diff.deletions;
    if (deletions.length > 0 || !jsonEqual(original, modified)) order = modified;
  }
  if (changes.length > 0) patch[field] = changes;
  if (deletions.length > 0) patch[DELETE_FROM_PRIMITIVE_LIST_PREFIX + field] = deletions;
  if (order.length > 0) patch[SET_ELEMENT_ORDER_PREFIX + field] = order;
}

/** Walks both lists sorted by merge key: changed and added items, and delete directives. */
function diffListsOfObjects(
  field: string,
  original: unknown[],
  modified: unknown[],
  itemContext: Context,
  mergeKey: string,
  retainKeys: boolean,
): { changes: unknown[]; deletions: unknown[] } {
  const keyString = (item: unknown) => scalarString(mergeKeyValue(item, mergeKey, field));
  const byKey = (a: unknown, b: unknown) => compareStrings(keyString(a), keyString(b));
  const originalSorted = [...original].sort(byKey) as JsonObject[];
  const modifiedSorted = [...modified].sort(byKey) as JsonObject[];
  const changes: unknown[] = [];
  const deletions: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < originalSorted.length || j < modifiedSorted.length) {
    const originalKey = i < originalSorted.length ? keyString(originalSorted[i]) : undefined;
    const modifiedKey = j < modifiedSorted.length ? keyString(modifiedSorted[j]) : undefined;
    if (originalKey !== undefined && originalKey === modifiedKey) {
      const itemPatch = diffObjects(originalSorted[i], modifiedSorted[j], itemContext, retainKeys);
      if (Object.keys(itemPatch).length > 0) {
        itemPatch[mergeKey] = modifiedSorted[j][mergeKey];
        changes.push(itemPatch);
      }
      i++;
      j++;
    } else if (
      modifiedKey !== undefined && (originalKey === undefined || originalKey > modifiedKey)
    ) {
      changes.push(modifiedSorted[j++]);
    } else {
      deletions.push({ [mergeKey]: originalSorted[i++][mergeKey], [DIRECTIVE]: "delete" });
    }
  }
  return { changes, deletions };
}

/** Walks both lists sorted: values only in `modified` and (deduplicated) only in `original`. */
function diffListsOfScalars(
  original: unknown[],
  modified: unknown[],
): { additions: unknown[]; deletions: unknown[] } {
  const byString = (a: unknown, b: unknown) => compareStrings(scalarString(a), scalarString(b));
  const originalSorted = [...original].sort(byString);
  const modifiedSorted = [...modified].sort(byString);
  const additions: unknown[] = [];
  const deletions: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < originalSorted.length || j < modifiedSorted.length) {
    const originalString = i < originalSorted.length ? scalarString(originalSorted[i]) : undefined;
    const modifiedString = j < modifiedSorted.length ? scalarString(modifiedSorted[j]) : undefined;
    if (originalString !== undefined && originalString === modifiedString) {
      i++;
      j++;
    } else if (
      modifiedString !== undefined &&
      (originalString === undefined || originalString > modifiedString)
    ) {
      additions.push(modifiedSorted[j++]);
    } else {
      const value = originalSorted[i++];
      if (!deletions.includes(value)) deletions.push(value);
    }
  }
  return { additions, deletions };
}

// ---------------------------------------------------------------------------------------------
// Applying a patch

/** Marks a value that cleaning removed entirely (an object carrying `$patch`). */
const DROPPED = Symbol("dropped");

function isDirectiveKey(key: string): boolean {
  return key === RETAIN_KEYS || key.startsWith(SET_ELEMENT_ORDER_PREFIX) ||
    key.startsWith(DELETE_FROM_PRIMITIVE_LIST_PREFIX);
}

/**
 * A patch value taken as it is (nothing to merge it with): `null` fields and directives
 * removed, objects carrying `$patch` dropped, as the server's decoding of the result does.
 */
function clean(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(clean).filter((item) => item !== DROPPED);
  }
  if (!isJsonObject(value)) return value;
  if (Object.hasOwn(value, DIRECTIVE)) return DROPPED;
  const result: JsonObject = {};
  for (const [key, field] of Object.entries(value)) {
    if (field === null || isDirectiveKey(key)) continue;
    const cleaned = clean(field);
    if (cleaned !== DROPPED) result[key] = cleaned;
  }
  return result;
}

function setCleaned(target: JsonObject, field: string, value: unknown): void {
  const cleaned = clean(value);
  if (cleaned === DROPPED) delete target[field];
  else target[field] = cleaned;
}

/** Merges `patch` into `original` (both owned by the caller and changed in place). */
function mergeObjects(original: JsonObject, patch: JsonObject, context: Context): JsonObject {
  if (Object.hasOwn(patch, DIRECTIVE)) {
    const directive = patch[DIRECTIVE];
    if (directive === "replace") {
      const { [DIRECTIVE]: _, ...replacement } = patch;
      return clean(replacement) as JsonObject;
    }
    if (directive === "delete") return {};
    throw new StrategicMergePatchError(`unknown $patch directive ${JSON.stringify(directive)}`);
  }
  applyRetainKeys(original, patch);
  applyElementOrders(original, patch, context);
  for (const [key, patchValue] of Object.entries(patch)) {
    const isDeleteList = key.startsWith(DELETE_FROM_PRIMITIVE_LIST_PREFIX);
    const field = isDeleteList ? key.slice(DELETE_FROM_PRIMITIVE_LIST_PREFIX.length) : key;
    if (patchValue === null) {
      delete original[field];
      continue;
    }
    const current = original[field];
    if (!Object.hasOwn(original, field) || kindOf(current) !== kindOf(patchValue)) {
      if (!isDeleteList) setCleaned(original, field, patchValue);
      continue;
    }
    const info = propertyInfo(context, field);
    const { merge } = strategyOf(info);
    if (isJsonObject(current)) {
      if (merge === "replace") setCleaned(original, field, patchValue);
      else original[field] = mergeObjects(current, patchValue as JsonObject, valueContext(info));
    } else if (Array.isArray(current)) {
      original[field] = merge === "merge"
        ? mergeLists(field, current, patchValue as unknown[], info!, isDeleteList)
        : clean(patchValue);
    } else {
      original[field] = patchValue;
    }
  }
  return original;
}

/** `$retainKeys`: removes the fields of `original` it does not list. */
function applyRetainKeys(original: JsonObject, patch: JsonObject): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return;
  const retained = patch[RETAIN_KEYS];
  delete patch[RETAIN_KEYS];
  if (!Array.isArray(retained)) throw new StrategicMergePatchError(`${RETAIN_KEYS} must be a list`);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || isDirectiveKey(key)) continue;
    if (!retained.includes(key)) {
      throw new StrategicMergePatchError(`${RETAIN_KEYS} does not list the patched field ${key}`);
    }
  }
  for (const key of Object.keys(original)) {
    if (!retained.includes(key)) delete original[key];
  }
}

/**
 * `$setElementOrder/<field>`: merges the field's list (consuming it from the patch) and puts
 * the items the order lists in that order; other items keep their place relative to them.
 */
function applyElementOrders(original: JsonObject, patch: JsonObject, context: Context): void {
  for (const orderKey of Object.keys(patch)) {
    if (!orderKey.startsWith(SET_ELEMENT_ORDER_PREFIX)) continue;
    const order = patch[orderKey];
    delete patch[orderKey];
    const field = orderKey.slice(SET_ELEMENT_ORDER_PREFIX.length);
    if (!Array.isArray(order)) throw new StrategicMergePatchError(`${orderKey} must be a list`);
    const hasOriginal = Object.hasOwn(original, field);
    const hasPatch = Object.hasOwn(patch, field);
    const originalList = original[field];
    const patchList = patch[field];
    if (hasOriginal && !Array.isArray(originalList)) {
      throw new StrategicMergePatchError(`${orderKey} is given for ${field}, which is not a list`);
    }
    if (hasPatch && !Array.isArray(patchList)) {
      throw new StrategicMergePatchError(`${orderKey} is given for ${field}, which is not a list`);
    }
    const info = propertyInfo(context, field);
    const mergeKey = info?.mergeKey ?? "";
    const keyOf = mergeKey
      ? (item: unknown) => mergeKeyValue(item, mergeKey, field)
      : (item: unknown) => item;
    checkOrderCoversPatch(field, (patchList as unknown[] | undefined) ?? [], order, keyOf);
    let merged: unknown[];
    if (hasOriginal && hasPatch) {
      merged = strategyOf(info).merge === "merge"
        ? mergeLists(field, originalList as unknown[], patchList as unknown[], info!, false)
        : clean(patchList) as unknown[];
    } else if (hasOriginal) {
      merged = originalList as unknown[];
    } else if (hasPatch) {
      merged = clean(patchList) as unknown[];
    } else {
      continue;
    }
    const ordered = order.map(keyOf);
    const listed = merged.filter((item) => ordered.includes(keyOf(item)));
    const unlisted = merged.filter((item) => !ordered.includes(keyOf(item)));
    original[field] = orderItems(listed, unlisted, order, (originalList as unknown[]) ?? [], keyOf);
    delete patch[field];
  }
}

/** The non-deleting items of a patch list must appear in `$setElementOrder`, in its order. */
function checkOrderCoversPatch(
  field: string,
  patchList: unknown[],
  order: unknown[],
  keyOf: (item: unknown) => unknown,
): void {
  const items = patchList.filter((item) => !(isJsonObject(item) && Object.hasOwn(item, DIRECTIVE)));
  let next = 0;
  for (const entry of order) {
    if (next < items.length && keyOf(items[next]) === keyOf(entry)) next++;
  }
  if (next < items.length) {
    throw new StrategicMergePatchError(
      `the order of the patch list ${field} does not match ${SET_ELEMENT_ORDER_PREFIX}${field}`,
    );
  }
}

/**
 * Orders a merged list: `fromPatch` items in the patch's order, `serverOnly` items in the
 * server's order, interleaved so that each keeps its place relative to the server's items.
 */
function orderItems(
  fromPatch: unknown[],
  serverOnly: unknown[],
  patchOrder: unknown[],
  serverOrder: unknown[],
  keyOf: (item: unknown) => unknown,
): unknown[] {
  const patchSorted = sortByOrder(fromPatch, patchOrder, keyOf);
  const serverSorted = sortByOrder(serverOnly, serverOrder, keyOf);
  const serverKeys = serverOrder.map(keyOf);
  const result: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < serverSorted.length || j < patchSorted.length) {
    if (i >= serverSorted.length) result.push(patchSorted[j++]);
    else if (j >= patchSorted.length) result.push(serverSorted[i++]);
    else {
      const serverIndex = serverKeys.indexOf(keyOf(serverSorted[i]));
      const patchIndex = serverKeys.indexOf(keyOf(patchSorted[j]));
      if (serverIndex >= 0 && patchIndex >= 0 && serverIndex < patchIndex) {
        result.push(serverSorted[i++]);
      } else result.push(patchSorted[j++]);
    }
  }
  return result;
}

/** Merges a list with strategy `merge`: items by merge key, or scalars as a set. */
function mergeLists(
  field: string,
  original: unknown[],
  patch: unknown[],
  info: PropertyPatchInfo,
  isDeleteList: boolean,
): unknown[] {
  if (original.length === 0 && patch.length === 0) return original;
  if (itemKind(field, original, patch) !== "object") {
    if (isDeleteList) return original.filter((item) => !patch.includes(item));
    const merged: unknown[] = [];
    for (const item of [...original, ...patch]) if (!merged.includes(item)) merged.push(item);
    const listed = merged.filter((item) => patch.includes(item));
    const unlisted = merged.filter((item) => !patch.includes(item));
    return orderItems(listed, unlisted, patch, original, (item) => item);
  }
  const mergeKey = info.mergeKey;
  if (!mergeKey) {
    throw new StrategicMergePatchError(`${field}: a list of objects needs a merge key`);
  }
  const keyOf = (item: unknown) => mergeKeyValue(item, mergeKey, field);
  // Directive items first: `$patch: delete` removes items, `$patch: replace` replaces the list.
  let base = original;
  let items: JsonObject[] = [];
  let replace = false;
  for (const item of patch as JsonObject[]) {
    if (!Object.hasOwn(item, DIRECTIVE)) {
      items.push(item);
      continue;
    }
    const directive = item[DIRECTIVE];
    if (directive === "delete") {
      const key = keyOf(item);
      base = base.filter((existing) => keyOf(existing) !== key);
    } else if (directive === "replace") {
      replace = true;
    } else if (directive === "merge") {
      throw new StrategicMergePatchError(
        `${field}: merging lists cannot yet be specified in the patch`,
      );
    } else {
      throw new StrategicMergePatchError(
        `${field}: unknown $patch directive ${JSON.stringify(directive)}`,
      );
    }
  }
  if (replace) {
    base = clean(items) as unknown[];
    items = [];
  }
  const merged = [...base];
  for (const item of items) {
    const key = keyOf(item);
    const index = merged.findIndex((existing) => keyOf(existing) === key);
    if (index >= 0) {
      merged[index] = mergeObjects(merged[index] as JsonObject, item, { schema: info.ref });
    } else {
      merged.push(clean(item));
    }
  }
  const patchKeys = items.map(keyOf);
  const listed = merged.filter((item) => patchKeys.includes(keyOf(item)));
  const unlisted = merged.filter((item) => !patchKeys.includes(keyOf(item)));
  return orderItems(listed, unlisted, items, base, keyOf);
}
