/**
 * The JSON patch (RFC 6902) that turns one JSON document into another: what a defaulting
 * webhook answers with. Objects are compared key by key; an array that changed is replaced
 * whole, which the API server applies exactly and which cannot mis-address an element.
 *
 * @module
 */

/** One RFC 6902 operation, as admission responses carry them. */
export type JSONPatchOperation =
  | { op: "add"; path: string; value: unknown }
  | { op: "replace"; path: string; value: unknown }
  | { op: "remove"; path: string };

/** Escapes one reference token of a JSON pointer (RFC 6901): `~` → `~0`, `/` → `~1`. */
export function escapePointerToken(token: string): string {
  return token.replace(/~/g, "~0").replace(/\//g, "~1");
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function equalJSON(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((v, i) => equalJSON(v, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length &&
      keys.every((k) => Object.hasOwn(b, k) && equalJSON(a[k], b[k]));
  }
  return false;
}

function diff(from: unknown, to: unknown, path: string, ops: JSONPatchOperation[]): void {
  if (equalJSON(from, to)) return;
  if (!isObject(from) || !isObject(to)) {
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
 * cannot hold, like `undefined`, are dropped first, as serialising would). An empty list means
 * no change.
 *
 * @example
 * ```ts
 * import { createJSONPatch } from "@rudder/operator/webhook";
 *
 * const patch = createJSONPatch(
 *   { spec: { replicas: 5, "a/b": 1 } },
 *   { spec: { replicas: 3 }, metadata: { labels: { app: "web" } } },
 * );
 * console.log(patch);
 * // [ { op: "remove", path: "/spec/a~1b" }, { op: "replace", path: "/spec/replicas", value: 3 },
 * //   { op: "add", path: "/metadata", value: { labels: { app: "web" } } } ]
 * ```
 */
export function createJSONPatch(original: unknown, modified: unknown): JSONPatchOperation[] {
  const ops: JSONPatchOperation[] = [];
  const from = normalize(original);
  const to = normalize(modified);
  if (!isObject(from) || !isObject(to)) {
    if (!equalJSON(from, to)) ops.push({ op: "replace", path: "", value: to });
    return ops;
  }
  diff(from, to, "", ops);
  return ops;
}

function normalize(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
