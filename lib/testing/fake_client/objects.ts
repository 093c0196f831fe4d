/**
 * Objects as the fake stores them: plain JSON, copied in from the caller's typed objects and
 * handed back as copies, with paths to read, set and remove fields.
 *
 * @module
 */

import type { KubeObject } from "../../api/resource.ts";
import type { DeepReadonly } from "../../api/readonly.ts";
import { isJsonObject, jsonClone, type JsonObject } from "../../util/json.ts";

/**
 * A copy of a caller's object as plain JSON, the form the store holds. Copying key by key
 * needs no cast: a typed object is a JSON object once its fields are read one by one.
 */
export function toJsonObject(obj: KubeObject | DeepReadonly<KubeObject>): JsonObject {
  const copy: JsonObject = {};
  for (const [key, value] of Object.entries(obj)) {
    if (value !== undefined) copy[key] = jsonClone(value);
  }
  return copy;
}

/**
 * A stored object handed back as the type `T` the caller wrote or asked for. The store holds
 * what callers wrote as a `T` plus the fields the server sets, so the fake trusts it as the
 * real client trusts the API server's answer; this is the one place that says so.
 */
export function asCallerObject<T extends KubeObject>(obj: JsonObject): T {
  // A JsonObject declares no apiVersion or kind, so the compiler wants the step through unknown.
  return obj as unknown as T;
}

/** `obj.metadata`, made an object first when it is missing. */
export function metadataOf(obj: JsonObject): JsonObject {
  if (isJsonObject(obj.metadata)) return obj.metadata;
  const metadata: JsonObject = {};
  obj.metadata = metadata;
  return metadata;
}

/** The string at `key` of `obj`, or `undefined` when it holds no string. */
export function stringAt(obj: JsonObject, key: string): string | undefined {
  const value = obj[key];
  return typeof value === "string" ? value : undefined;
}

/** The strings of a JSON list, e.g. `metadata.finalizers`; none when it is not a list. */
export function stringsAt(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item) => typeof item === "string") : [];
}

/** `Kind namespace/name` for the errors the real client throws before sending anything. */
export function describeObject(obj: KubeObject | DeepReadonly<KubeObject>): string {
  const name = obj.metadata?.name ?? obj.metadata?.generateName ?? "(no name)";
  const ns = obj.metadata?.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj.kind} ${ns}${name}`;
}

/** An RFC 3339 time in seconds, as the API server writes timestamps. */
export function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}

/** Base64 of the UTF-8 bytes of `text`. */
export function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** A path of field names into an object, e.g. `["spec", "replicas"]`. */
export type Path = readonly string[];

/** The value at `path`, or `undefined` when something on the way is not an object. */
export function getPath(value: unknown, path: Path): unknown {
  let node = value;
  for (const key of path) {
    if (!isJsonObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

/** Sets the value at `path`, making objects on the way as needed. */
export function setPath(target: JsonObject, path: Path, value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (!isJsonObject(node[key])) node[key] = {};
    node = node[key] as JsonObject;
  }
  node[path[path.length - 1]] = value;
}

/** Removes the value at `path`, then every object on the way that it left empty. */
export function deletePath(target: JsonObject, path: Path): void {
  const parents: JsonObject[] = [];
  let node: unknown = target;
  for (const key of path.slice(0, -1)) {
    if (!isJsonObject(node)) return;
    parents.push(node);
    node = node[key];
  }
  if (!isJsonObject(node)) return;
  delete node[path[path.length - 1]];
  for (let depth = path.length - 2; depth >= 0; depth--) {
    const child = depth === path.length - 2 ? node : getPath(target, path.slice(0, depth + 1));
    if (!isJsonObject(child) || Object.keys(child).length > 0) break;
    delete parents[depth][path[depth]];
  }
}

/** True when one path is a prefix of the other: owning one means owning part of the other. */
export function overlaps(a: Path, b: Path): boolean {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return false;
  return true;
}
