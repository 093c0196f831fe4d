/**
 * Read-only objects: the cache hands out deep-frozen objects without copying them, typed
 * {@linkcode DeepReadonly}; {@linkcode clone} turns one back into a mutable object to write.
 *
 * @module
 */

/**
 * `T` made read-only all the way down: the type of every object a {@linkcode Store} (and so
 * the cache) hands out.
 *
 * @example
 * ```ts
 * import type { DeepReadonly } from "@rudder/operator";
 *
 * type Cm = { data: Record<string, string>; list: string[] };
 * const cm: DeepReadonly<Cm> = { data: { a: "1" }, list: ["x"] };
 * // cm.data.a = "2";  // does not compile
 * // cm.list.push("y"); // does not compile
 * console.log(cm.list[0]);
 * ```
 */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown ? T
  : T extends readonly (infer U)[] ? readonly DeepReadonly<U>[]
  : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
  : T;

/**
 * Freezes `obj` and everything it holds, in place, and returns it typed read-only. A subtree
 * that is already frozen is taken to be deeply frozen and skipped, so freezing an object that
 * shares parts with stored objects costs only its new parts.
 *
 * @example
 * ```ts
 * import { deepFreeze } from "@rudder/operator/api";
 *
 * const obj = deepFreeze({ metadata: { labels: { app: "web" } } });
 * console.log(Object.isFrozen(obj.metadata.labels)); // true
 * ```
 */
export function deepFreeze<T>(obj: T): DeepReadonly<T> {
  freezeValue(obj);
  return obj as DeepReadonly<T>;
}

function freezeValue(value: unknown): void {
  // Primitives count as frozen.
  if (Object.isFrozen(value)) return;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) freezeValue(value[i]);
  } else {
    const record = value as Record<string, unknown>;
    for (const key in record) freezeValue(record[key]);
  }
}

/**
 * A mutable deep copy of an object, typed as the object the reader had before it was made
 * read-only: the way from an object the cache returned to one a reconciler changes and writes.
 *
 * @example
 * ```ts
 * import { clone, type DeepReadonly } from "@rudder/operator";
 * import type { ConfigMap } from "@rudder/operator";
 *
 * declare const cached: DeepReadonly<ConfigMap>;
 * const changed: ConfigMap = clone(cached);
 * changed.data = { ...changed.data, mode: "on" };
 * ```
 */
export function clone<T>(obj: T): DeepMutable<T> {
  return structuredClone(obj) as DeepMutable<T>;
}

/**
 * `T` with every `readonly` taken away, all the way down: what {@linkcode clone} returns for a
 * {@linkcode DeepReadonly} object (the object type it was made from).
 *
 * @example
 * ```ts
 * import type { DeepMutable, DeepReadonly } from "@rudder/operator/api";
 *
 * type Cm = { data: Record<string, string> };
 * const frozen: DeepReadonly<Cm> = { data: { a: "1" } };
 * const copy: DeepMutable<typeof frozen> = { data: { ...frozen.data } };
 * copy.data.a = "2";
 * ```
 */
export type DeepMutable<T> = T extends (...args: never[]) => unknown ? T
  : T extends readonly (infer U)[] ? DeepMutable<U>[]
  : T extends object ? { -readonly [K in keyof T]: DeepMutable<T[K]> }
  : T;
