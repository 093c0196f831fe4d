/**
 * JSON patch (RFC 6902): the operation type, the patch that turns one document into another
 * (what a defaulting webhook answers with), applying operations as kube-apiserver does (for the
 * fake client), and the escaping of JSON pointer tokens (RFC 6901). `jsonPatch(ops)` in
 * ./patch.ts sends operations with the client.
 *
 * @module
 */

import { isJsonObject, jsonClone, jsonEqual } from "../util/json.ts";

/**
 * One RFC 6902 operation.
 *
 * @example
 * ```ts
 * import { jsonPatch, type JsonPatchOperation } from "@rudder/operator/client";
 *
 * const ops: JsonPatchOperation[] = [
 *   { op: "test", path: "/spec/replicas", value: 2 },
 *   { op: "replace", path: "/spec/replicas", value: 3 },
 * ];
 * const patch = jsonPatch(ops);
 * // await client.patch(deployment, patch);
 * ```
 */
export type JsonPatchOperation =
  | { op: "add" | "replace" | "test"; path: string; value: unknown }
  | { op: "remove"; path: string }
  | { op: "move" | "copy"; from: string; path: string };

/**
 * Escapes one reference token of a JSON pointer (RFC 6901): `~` → `~0`, `/` → `~1`.
 *
 * @example
 * ```ts
 * import { escapePointerToken } from "@rudder/operator/client";
 *
 * const path = `/metadata/labels/${escapePointerToken("app.kubernetes.io/name")}`;
 * console.log(path); // /metadata/labels/app.kubernetes.io~1name
 * ```
 */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

function diff(from: unknown, to: unknown, path: string, ops: JsonPatchOperation[]): void {
  if (jsonEqual(from, to)) return;
  if (!isJsonObject(from) || !isJsonObject(to)) {
    ops.push({ op: "replace", path, value: to });
    return;
  }
  for (const key of Object.keys(from)) {
    if (!Object.hasOwn(to, key)) {
      ops.push({ op: "remove", path: `${path}/${escapePointerToken(key)}` });
    }
  }
  for (const [key, value] of Object.entries(to)) {
    const child = `${path}/${escapePointerToken(key)}`;
    if (!Object.hasOwn(from, key)) ops.push({ op: "add", path: child, value });
    else diff(from[key], value, child, ops);
  }
}

/**
 * The operations that turn `original` into `modified`, both JSON documents (values that JSON
 * cannot hold, like `undefined`, are dropped first, as serialising would). Objects are compared
 * key by key; an array that changed is replaced whole, which the API server applies exactly and
 * which cannot mis-address an element. An empty list means no change.
 *
 * @example
 * ```ts
 * import { createJsonPatch } from "@rudder/operator/client";
 *
 * const patch = createJsonPatch(
 *   { spec: { replicas: 5, "a/b": 1 } },
 *   { spec: { replicas: 3 }, metadata: { labels: { app: "web" } } },
 * );
 * console.log(patch);
 * // [ { op: "remove", path: "/spec/a~1b" }, { op: "replace", path: "/spec/replicas", value: 3 },
 * //   { op: "add", path: "/metadata", value: { labels: { app: "web" } } } ]
 * ```
 */
export function createJsonPatch(original: unknown, modified: unknown): JsonPatchOperation[] {
  const ops: JsonPatchOperation[] = [];
  const from = normalize(original);
  const to = normalize(modified);
  if (!isJsonObject(from) || !isJsonObject(to)) {
    if (!jsonEqual(from, to)) ops.push({ op: "replace", path: "", value: to });
    return ops;
  }
  diff(from, to, "", ops);
  return ops;
}

/** A JSON round trip: `toJSON` runs, `undefined` members go, as when the patch is sent. */
function normalize(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

function unescapePointer(token: string): string {
  return token.replace(/~1/g, "/").replace(/~0/g, "~");
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) {
    throw new Error(`JSON pointer ${JSON.stringify(pointer)} must start with /`);
  }
  return pointer.slice(1).split("/").map(unescapePointer);
}

function arrayIndex(array: unknown[], token: string, forInsert: boolean, pointer: string): number {
  if (forInsert && token === "-") return array.length;
  if (!/^(0|[1-9]\d*)$/.test(token)) throw new Error(`${pointer}: ${token} is not an array index`);
  const index = Number(token);
  if (index > array.length || (!forInsert && index === array.length)) {
    throw new Error(`${pointer}: index ${index} is out of range`);
  }
  return index;
}

/** The container of the last token of `pointer`, and that token. */
function parentOf(document: unknown, pointer: string): { parent: unknown; key: string } {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) throw new Error("the root cannot be the target of this operation");
  let node = document;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(node)) node = node[arrayIndex(node, token, false, pointer)];
    else if (isJsonObject(node) && token in node) node = node[token];
    else throw new Error(`${pointer}: ${token} does not exist`);
  }
  return { parent: node, key: tokens[tokens.length - 1] };
}

function getPointer(document: unknown, pointer: string): unknown {
  let node = document;
  for (const token of parsePointer(pointer)) {
    if (Array.isArray(node)) node = node[arrayIndex(node, token, false, pointer)];
    else if (isJsonObject(node) && token in node) node = node[token];
    else throw new Error(`${pointer} does not exist`);
  }
  return node;
}

function addAt(document: unknown, pointer: string, value: unknown): unknown {
  if (pointer === "") return value;
  const { parent, key } = parentOf(document, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, true, pointer), 0, value);
  else if (isJsonObject(parent)) parent[key] = value;
  else throw new Error(`${pointer}: the parent is not an object or array`);
  return document;
}

function removeAt(document: unknown, pointer: string): unknown {
  const { parent, key } = parentOf(document, pointer);
  if (Array.isArray(parent)) {
    const [removed] = parent.splice(arrayIndex(parent, key, false, pointer), 1);
    return removed;
  }
  if (isJsonObject(parent) && key in parent) {
    const removed = parent[key];
    delete parent[key];
    return removed;
  }
  throw new Error(`${pointer} does not exist`);
}

/** True when `pointer` names a member that its (existing) parent object does not have. */
function isMissingMember(document: unknown, pointer: string): boolean {
  const { parent, key } = parentOf(document, pointer);
  return isJsonObject(parent) && !(key in parent);
}

/**
 * Applies RFC 6902 operations to a copy of `document`, as kube-apiserver does; a failing
 * operation throws.
 */
export function applyJsonPatch(
  document: unknown,
  operations: readonly JsonPatchOperation[],
): unknown {
  let result = jsonClone(document);
  operations.forEach((operation, index) => {
    try {
      switch (operation.op) {
        case "add":
          result = addAt(result, operation.path, jsonClone(operation.value));
          break;
        case "remove":
          removeAt(result, operation.path);
          break;
        case "replace":
          if (operation.path === "") result = jsonClone(operation.value);
          else if (isMissingMember(result, operation.path)) {
            // kube-apiserver's JSON patch library (evanphx/json-patch v4) replaces a missing
            // member of an existing object by adding it; the fake must answer the same.
            result = addAt(result, operation.path, jsonClone(operation.value));
          } else {
            removeAt(result, operation.path);
            result = addAt(result, operation.path, jsonClone(operation.value));
          }
          break;
        case "move": {
          const value = removeAt(result, operation.from);
          result = addAt(result, operation.path, value);
          break;
        }
        case "copy":
          result = addAt(result, operation.path, jsonClone(getPointer(result, operation.from)));
          break;
        case "test":
          if (!jsonEqual(getPointer(result, operation.path), operation.value)) {
            throw new Error(
              `test failed: ${operation.path} is not ${JSON.stringify(operation.value)}`,
            );
          }
          break;
        default:
          throw new Error(`unknown op ${JSON.stringify((operation as { op: unknown }).op)}`);
      }
    } catch (err) {
      throw new Error(`JSON patch operation ${index} (${operation.op}): ${(err as Error).message}`);
    }
  });
  return result;
}
