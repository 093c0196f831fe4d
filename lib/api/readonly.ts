/**
 * Read-only objects: the cache hands out deep-frozen objects without copying them, typed
 * {@linkcode DeepReadonly}; {@linkcode clone} turns one back into a mutable object to write.
 *
 * @module
 */

/**
 * `T` made read-only all the way down: the type of every object a {@linkcode Store} (and so
 * the cache) hands out. Functions and `unknown` fields stay as they are.
 *
 * It is a mapped type over `T` (not a conditional one), so TypeScript still sees the `T` it was
 * made from: {@linkcode clone} of a `DeepReadonly<Deployment>` is a `Deployment`, and
 * `mergeFrom(cached)` is a `Patch<Deployment>`.
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
export type DeepReadonly<T> = { readonly [K in keyof T]: DeepReadonlyValue<T[K]> };

/**
 * One field's value (or a list's item) made read-only for {@linkcode DeepReadonly}: objects and
 * lists all the way down, while functions and `unknown` stay as they are. A union, such as an
 * optional field's `string[] | undefined`, is made read-only member by member.
 *
 * @example
 * ```ts
 * import type { DeepReadonlyValue } from "@rudder/operator/api";
 *
 * const finalizers: DeepReadonlyValue<string[] | undefined> = ["example.com/cleanup"];
 * // finalizers?.push("more"); // does not compile
 * console.log(finalizers?.length);
 * ```
 */
export type DeepReadonlyValue<V> = unknown extends V ? V
  : V extends (...args: never[]) => unknown ? V
  : DeepReadonly<V>;

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
 * A mutable object gives a copy of its own type.
 *
 * @example
 * ```ts
 * import { clone, type ConfigMap, type DeepReadonly } from "@rudder/operator";
 * import { deepFreeze } from "@rudder/operator/api";
 *
 * const cached: DeepReadonly<ConfigMap> = deepFreeze({ apiVersion: "v1", kind: "ConfigMap" });
 * const changed = clone(cached); // a ConfigMap
 * changed.data = { ...changed.data, mode: "on" };
 * ```
 */
export function clone<T>(obj: T | DeepReadonly<T>): T {
  return structuredClone(obj) as T;
}
