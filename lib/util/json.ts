/**
 * Small helpers over JSON values: the shape every Kubernetes object has on the wire.
 *
 * @module
 */

/** A JSON object. */
export type JsonObject = { [key: string]: unknown };

/** True for a plain JSON object (not an array, not null). */
export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Structural equality of JSON values. A key whose value is `undefined` counts as absent, as it
 * does once serialised.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    // Counted, not collected: this runs for every field a merge patch compares.
    let defined = 0;
    for (const key of Object.keys(a)) {
      const value = a[key];
      if (value === undefined) continue;
      defined++;
      if (!jsonEqual(value, b[key])) return false;
    }
    // Every defined key of `a` is in `b`: equal when `b` has no other.
    for (const key of Object.keys(b)) if (b[key] !== undefined) defined--;
    return defined === 0;
  }
  return false;
}

/** A deep copy of a JSON value, dropping `undefined` keys as serialisation would. */
export function jsonClone<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item) => jsonClone(item)) as T;
  if (isJsonObject(value)) {
    const copy: JsonObject = {};
    for (const [key, item] of Object.entries(value)) {
      if (item !== undefined) copy[key] = jsonClone(item);
    }
    return copy as T;
  }
  return value;
}
