/**
 * The informer's store: the objects of one kind as the API server last showed them, deep-frozen
 * and shared without copying (readers get the stored object itself), with indexes for fast
 * lists by namespace and by any registered key.
 *
 * Objects are frozen once, when they enter the store; nothing ever copies them afterwards. A
 * reader that wants to change one clones it first, which costs less time and memory than
 * copying on every read.
 *
 * @module
 */

import type { KubeObject } from "../api/resource.ts";
import { deepFreeze, type DeepReadonly } from "../api/readonly.ts";
import type { FieldSelectorInput, LabelSelectorInput } from "../client/options.ts";
import {
  type FieldRequirement,
  isFieldSelector,
  isLabelSelector,
  type ParsedFieldSelector,
  type ParsedLabelSelector,
  parseFieldSelector,
  parseLabelSelector,
} from "./selector.ts";

/**
 * The default transform of a store: drops `metadata.managedFields`, which controllers never
 * read and which is often the largest part of an object. The input is not changed; a new
 * top-level object (and metadata) is returned only when there is something to drop.
 *
 * @example
 * ```ts
 * import { stripManagedFields } from "@rudder/operator/cache";
 *
 * const obj = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", managedFields: [] } };
 * console.log(stripManagedFields(obj).metadata); // { name: "a" }
 * console.log(obj.metadata.managedFields); // [] (unchanged)
 * ```
 */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  const metadata = obj.metadata;
  if (!metadata || !Object.hasOwn(metadata, "managedFields")) return obj;
  const { managedFields: _, ...rest } = metadata;
  return { ...obj, metadata: rest };
}

/** Anything with the namespace and name of an object. */
export interface ObjectWithMetadata {
  /** The object's metadata; only `namespace` and `name` are read. */
  readonly metadata?: { readonly namespace?: string; readonly name?: string };
}

/** A namespace and a name, e.g. a reconcile request. */
export interface ObjectRef {
  /** Namespace; empty or unset for cluster-scoped objects. */
  readonly namespace?: string;
  /** Name. */
  readonly name: string;
}

/**
 * The store key of an object: `namespace/name`, or `name` for a cluster-scoped object
 * (client-go's `MetaNamespaceKeyFunc`).
 *
 * @throws {Error} when the object has no `metadata.name`.
 *
 * @example
 * ```ts
 * import { objectKey } from "@rudder/operator/cache";
 *
 * console.log(objectKey({ metadata: { namespace: "default", name: "web" } })); // default/web
 * console.log(objectKey({ metadata: { name: "node-1" } })); // node-1
 * ```
 */
export function objectKey(obj: ObjectWithMetadata): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error("cannot make a store key for an object without metadata.name");
  const namespace = obj.metadata?.namespace;
  return namespace ? `${namespace}/${name}` : name;
}

/**
 * Splits a store key into namespace and name; the namespace is `""` for a cluster-scoped key.
 *
 * @throws {Error} when the key has more than one `/` or an empty part.
 *
 * @example
 * ```ts
 * import { splitKey } from "./store.ts";
 *
 * console.log(splitKey("default/web")); // { namespace: "default", name: "web" }
 * console.log(splitKey("node-1")); // { namespace: "", name: "node-1" }
 * ```
 */
export function splitKey(key: string): { namespace: string; name: string } {
  const parts = key.split("/");
  if (parts.length === 1 && parts[0] !== "") return { namespace: "", name: parts[0] };
  if (parts.length === 2 && parts[0] !== "" && parts[1] !== "") {
    return { namespace: parts[0], name: parts[1] };
  }
  throw new Error(`invalid store key ${JSON.stringify(key)}: expected "namespace/name" or "name"`);
}

function refKey(ref: ObjectRef): string {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

/** The key of whatever `get` and `delete` accept. */
function keyOf(target: string | ObjectRef | ObjectWithMetadata): string {
  if (typeof target === "string") return target;
  if ("metadata" in target) return objectKey(target);
  if ("name" in target && typeof target.name === "string") return refKey(target);
  return objectKey(target as ObjectWithMetadata);
}

/**
 * Computes the values under which an object is indexed, e.g. its owner's UID or a field's
 * value. It must be pure: the store calls it again on the old object to unindex it.
 */
export type IndexFunc<T> = (obj: DeepReadonly<T>) => string[];

/**
 * The built-in index of every store, by `metadata.namespace` (`""` for cluster-scoped
 * objects), as client-go's `cache.NamespaceIndex`.
 */
export const NAMESPACE_INDEX = "namespace";

/** The prefix of indexes that serve field selectors: `field:spec.nodeName`. */
export const FIELD_INDEX_PREFIX = "field:";

/** Options of {@linkcode Store}. */
export interface StoreOptions<T extends KubeObject> {
  /**
   * Changes each object before it is frozen and stored, e.g. to drop fields the controller
   * never reads. Default {@linkcode stripManagedFields}; `false` stores objects unchanged. A
   * transform may change the object in place (the store owns it) but must keep its namespace
   * and name.
   */
  transform?: ((obj: T) => T) | false;
  /** Indexes to maintain besides the built-in namespace index, by name. */
  indexers?: Record<string, IndexFunc<T>>;
}

/** Options of {@linkcode Store.list}. */
export interface StoreListOptions {
  /** Only objects in this namespace; all namespaces when unset or `""`. */
  namespace?: string;
  /** Only objects whose labels match, evaluated in memory. */
  labelSelector?: LabelSelectorInput | ParsedLabelSelector;
  /**
   * Only objects whose fields match. `metadata.name` and `metadata.namespace` always work,
   * with any operator; any other field needs an index named `field:<field>` and works only
   * with `=` or `==`.
   */
  fieldSelector?: FieldSelectorInput | ParsedFieldSelector;
}

/** What {@linkcode Store.replace} changed. */
export interface ReplaceResult<T> {
  /** Objects whose key was not in the store before. */
  added: DeepReadonly<T>[];
  /** Objects whose key was in the store with another (or no) resourceVersion. */
  updated: { previous: DeepReadonly<T>; current: DeepReadonly<T> }[];
  /** Objects that were in the store and are not anymore. */
  deleted: DeepReadonly<T>[];
}

/**
 * A replacement of a store's contents, taken one object at a time: made by
 * {@linkcode Store.beginReplace}.
 */
export interface StoreReplacement<T extends KubeObject> {
  /**
   * Takes one object of the new set. A new version is transformed, frozen and indexed aside now;
   * one whose key and resourceVersion the store holds keeps the stored version. A later object
   * with the same key wins.
   *
   * @throws what the transform or an index function throws; the store is unchanged.
   */
  add(obj: T): void;
  /**
   * Swaps the set in and says what changed; the replacement is used up.
   *
   * @throws {Error} when it was committed already.
   */
  commit(): ReplaceResult<T>;
}

type Bucket<T> = Map<string, DeepReadonly<T>>;

/** One index: its function and, per index value, the objects under it by key. */
interface Index<T> {
  readonly fn: IndexFunc<T>;
  readonly buckets: Map<string, Bucket<T>>;
}

/** An index change computed ahead, so that applying it cannot fail half-way. */
interface IndexChange<T> {
  key: string;
  current: DeepReadonly<T> | undefined;
  /** Per index, in the order of the store's index map: values to leave, values to be under. */
  values: { remove: string[]; add: string[] }[];
}

/** An index change planned by a replacement, with the stored version it was planned against. */
interface PlannedChange<T> {
  previous: DeepReadonly<T> | undefined;
  change: IndexChange<T>;
}

const NO_VALUES: string[] = [];
const EMPTY_BUCKET: ReadonlyMap<string, never> = new Map<string, never>();

function namespaceOf(obj: unknown): string {
  return (obj as ObjectWithMetadata).metadata?.namespace ?? "";
}

/** Runs an index function; deduplicates its values. */
function indexValues<T>(fn: IndexFunc<T>, obj: DeepReadonly<T> | undefined): string[] {
  if (obj === undefined) return NO_VALUES;
  const values = fn(obj) ?? NO_VALUES;
  return values.length <= 1 ? values : [...new Set(values)];
}

/**
 * Holds the objects of one kind, deep-frozen, by key (`namespace/name` or `name`), with a
 * namespace index and any number of named indexes.
 *
 * Zero copy: `upsert` freezes the object it is given (after the transform) and stores that very
 * object; `get`, `list` and `byIndex` return the stored objects themselves. Mutating one throws
 * a `TypeError` in strict mode; clone it to change it.
 *
 * Costs (n objects, k results, i indexes): `get`, `upsert`, `delete` O(1 + i); `list` by
 * namespace or by an indexed field O(k) (the smaller candidate set is scanned); `list` with only
 * a label selector O(n); `byIndex` O(k); `replace` O(n + changed × i).
 *
 * @example
 * ```ts
 * import { type ConfigMap } from "@rudder/operator";
 * import { Store } from "@rudder/operator/cache";
 *
 * const store = new Store<ConfigMap>({
 *   indexers: { "by-app": (cm) => cm.metadata?.labels?.app ? [cm.metadata.labels.app] : [] },
 * });
 * store.upsert({
 *   apiVersion: "v1",
 *   kind: "ConfigMap",
 *   metadata: { namespace: "default", name: "a", labels: { app: "web" } },
 * });
 * const a = store.get("default/a");
 * console.log(a === store.get({ namespace: "default", name: "a" })); // true: no copies
 * console.log(Object.isFrozen(a?.metadata)); // true
 * console.log(store.list({ namespace: "default", labelSelector: "app=web" }).length); // 1
 * console.log(store.byIndex("by-app", "web").length); // 1
 * ```
 */
export class Store<T extends KubeObject> {
  readonly #transform: (obj: T) => T;
  #items = new Map<string, DeepReadonly<T>>();
  readonly #indexes = new Map<string, Index<T>>();
  // The namespace index, also in #indexes; kept at hand for lists.
  readonly #byNamespace: Index<T>;

  /** Makes an empty store; see {@linkcode StoreOptions}. */
  constructor(options: StoreOptions<T> = {}) {
    this.#transform = options.transform === false
      ? (obj) => obj
      : options.transform ?? stripManagedFields;
    this.#byNamespace = { fn: (obj) => [namespaceOf(obj)], buckets: new Map() };
    this.#indexes.set(NAMESPACE_INDEX, this.#byNamespace);
    for (const [name, fn] of Object.entries(options.indexers ?? {})) this.addIndexer(name, fn);
  }

  /** How many objects the store holds. */
  get size(): number {
    return this.#items.size;
  }

  /** The keys of all objects, in insertion order. */
  keys(): string[] {
    return [...this.#items.keys()];
  }

  /**
   * Transforms and deep-freezes an object the way `upsert` would, without storing it: for
   * objects that must look like stored ones (e.g. a cache's read-your-writes overlay).
   */
  prepare(obj: T): DeepReadonly<T> {
    return deepFreeze(this.#transform(obj));
  }

  /**
   * Adds or replaces the object with the same key. The object is transformed, then frozen in
   * place: the store owns it from now on. Index entries of the previous version are removed.
   * If the transform or an index function throws, the store is unchanged.
   */
  upsert(obj: T): { stored: DeepReadonly<T>; previous?: DeepReadonly<T> } {
    const stored = this.prepare(obj);
    const key = objectKey(stored as ObjectWithMetadata);
    const previous = this.#items.get(key);
    const change = this.#planChange(key, previous, stored);
    this.#items.set(key, stored);
    this.#applyChange(change);
    return previous ? { stored, previous } : { stored };
  }

  /**
   * Removes an object by key, by `{ namespace, name }` or by the object itself, and returns the
   * stored version, or `undefined` when there was none.
   */
  delete(target: string | ObjectRef | ObjectWithMetadata): DeepReadonly<T> | undefined {
    const key = keyOf(target);
    const previous = this.#items.get(key);
    if (!previous) return undefined;
    const change = this.#planChange(key, previous, undefined);
    this.#items.delete(key);
    this.#applyChange(change);
    return previous;
  }

  /** The stored object (frozen, not a copy) by key or by `{ namespace, name }`. */
  get(target: string | ObjectRef): DeepReadonly<T> | undefined {
    return this.#items.get(typeof target === "string" ? target : refKey(target));
  }

  /**
   * The stored objects that match all of `options` (frozen, not copies). The order is that in
   * which objects entered the set that was scanned; do not rely on it.
   *
   * @throws {Error} for a field selector on a field other than `metadata.name` and
   * `metadata.namespace` without a `field:<field>` index, or with `!=` on such a field.
   */
  list(options: StoreListOptions = {}): DeepReadonly<T>[] {
    const labels = options.labelSelector === undefined
      ? undefined
      : isLabelSelector(options.labelSelector)
      ? options.labelSelector
      : parseLabelSelector(options.labelSelector);
    const fields = options.fieldSelector === undefined
      ? undefined
      : isFieldSelector(options.fieldSelector)
      ? options.fieldSelector
      : parseFieldSelector(options.fieldSelector);
    const labelFilter = labels && !labels.empty ? labels : undefined;

    // Candidate sets: every object in the result is in each of them; the smallest is scanned.
    const sources: ReadonlyMap<string, DeepReadonly<T>>[] = [];
    const metaChecks: FieldRequirement[] = [];
    let namespace = options.namespace || undefined;
    let name: string | undefined;
    let contradiction = false;
    for (const requirement of fields?.requirements ?? []) {
      const { field, operator, value } = requirement;
      if (field === "metadata.namespace" || field === "metadata.name") {
        metaChecks.push(requirement);
        if (operator === "!=") continue;
        if (field === "metadata.name") name = value;
        else if (namespace === undefined) namespace = value;
        else if (namespace !== value) contradiction = true;
        continue;
      }
      const index = this.#indexes.get(FIELD_INDEX_PREFIX + field);
      if (!index) {
        throw new Error(
          `cannot list by field selector "${fields}" from the cache: field "${field}" is not ` +
            `indexed; register it with indexField(type, "${field}", extract)`,
        );
      }
      if (operator === "!=") {
        throw new Error(
          `cannot list by field selector "${fields}" from the cache: only exact matches ` +
            `(= or ==) are supported on the indexed field "${field}"`,
        );
      }
      sources.push(index.buckets.get(value) ?? EMPTY_BUCKET);
    }
    if (contradiction) return [];
    if (namespace !== undefined) {
      const bucket = this.#byNamespace.buckets.get(namespace) ?? EMPTY_BUCKET;
      if (name !== undefined) {
        // One key at most: no scan at all.
        const key = namespace ? `${namespace}/${name}` : name;
        const obj = bucket.get(key);
        sources.push(obj ? new Map([[key, obj]]) : EMPTY_BUCKET);
      } else {
        sources.push(bucket);
      }
    }

    if (sources.length === 0 && metaChecks.length === 0 && !labelFilter) {
      return [...this.#items.values()];
    }
    let smallest: ReadonlyMap<string, DeepReadonly<T>> = this.#items;
    for (const source of sources) if (source.size < smallest.size) smallest = source;
    if (smallest.size === 0) return [];
    const others = sources.filter((source) => source !== smallest);

    const result: DeepReadonly<T>[] = [];
    // Every candidate set is keyed by object key, so membership is one lookup.
    for (const [key, obj] of smallest) {
      if (others.length > 0 && !others.every((source) => source.has(key))) continue;
      const meta = (obj as ObjectWithLabels).metadata;
      if (metaChecks.length > 0 && !metaChecks.every((check) => metaMatches(check, meta))) {
        continue;
      }
      if (labelFilter && !labelFilter.matches(meta?.labels)) {
        continue;
      }
      result.push(obj);
    }
    return result;
  }

  /** The stored objects under `value` in the index `indexName`. */
  byIndex(indexName: string, value: string): DeepReadonly<T>[] {
    const bucket = this.#index(indexName).buckets.get(value);
    return bucket ? [...bucket.values()] : [];
  }

  /** The keys of the objects under `value` in the index `indexName`. */
  indexKeys(indexName: string, value: string): string[] {
    const bucket = this.#index(indexName).buckets.get(value);
    return bucket ? [...bucket.keys()] : [];
  }

  /** Whether an index of this name exists (the built-in `namespace` index always does). */
  hasIndex(indexName: string): boolean {
    return this.#indexes.has(indexName);
  }

  /**
   * Adds an index and indexes the objects already stored. If `fn` throws on one of them, the
   * index is not added.
   *
   * @throws {Error} when an index of that name exists.
   */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    if (this.#indexes.has(name)) throw new Error(`the store already has an index named "${name}"`);
    const index: Index<T> = { fn, buckets: new Map() };
    for (const [key, obj] of this.#items) {
      for (const value of indexValues(fn, obj)) bucketFor(index, value).set(key, obj);
    }
    this.#indexes.set(name, index);
  }

  /**
   * Swaps in a complete new set of objects, e.g. after a relist, and says what changed. Objects
   * whose key and `metadata.resourceVersion` are unchanged keep their stored (frozen) version:
   * they are neither transformed nor frozen again, and not reported. Objects without a
   * resourceVersion are always taken as updated.
   *
   * Atomic: the new contents and every index change are computed aside; if a transform or an
   * index function throws, the store is unchanged. The swap itself cannot fail.
   */
  replace(objects: Iterable<T>): ReplaceResult<T> {
    const replacement = this.beginReplace();
    for (const obj of objects) replacement.add(obj);
    return replacement.commit();
  }

  /**
   * A {@linkcode Store.replace} that takes the new set one object at a time: each is transformed,
   * frozen and indexed aside when it is added, and `commit` swaps the set in. A reflector adds
   * each object of a paged list as it comes, so that work overlaps the wait for the next page
   * and the object as the API server sent it (with its managedFields) is let go at once.
   *
   * Until `commit` the store is unchanged and readable, and a replacement that is never
   * committed leaves no trace. Changes made to the store in between are taken into account.
   *
   * @example
   * ```ts
   * import { type ConfigMap } from "@rudder/operator";
   * import { Store } from "@rudder/operator/cache";
   *
   * const store = new Store<ConfigMap>();
   * const replacement = store.beginReplace();
   * replacement.add({ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "a", name: "b" } });
   * console.log(store.size); // 0
   * console.log(replacement.commit().added.length, store.size); // 1 1
   * ```
   */
  beginReplace(): StoreReplacement<T> {
    const items = new Map<string, DeepReadonly<T>>();
    // The index change of each new version, planned against the object it then replaced.
    const planned = new Map<string, PlannedChange<T>>();
    let committed = false;
    const usable = () => {
      if (committed) throw new Error("this store replacement was committed already");
    };
    return {
      add: (obj) => {
        usable();
        const key = objectKey(obj);
        const previous = this.#items.get(key);
        const rv = obj.metadata?.resourceVersion;
        if (previous && rv && (previous as ObjectWithRv).metadata?.resourceVersion === rv) {
          items.set(key, previous);
          planned.delete(key);
          return;
        }
        const stored = this.prepare(obj);
        const change = this.#planChange(key, previous, stored);
        items.set(key, stored);
        planned.set(key, { previous, change });
      },
      commit: () => {
        usable();
        committed = true;
        const old = this.#items;
        const result: ReplaceResult<T> = { added: [], updated: [], deleted: [] };
        const changes: IndexChange<T>[] = [];
        for (const [key, current] of items) {
          const previous = old.get(key);
          if (previous === current) continue;
          if (previous) result.updated.push({ previous, current });
          else result.added.push(current);
          const plan = planned.get(key);
          // Planned against another version than the store now holds: plan again.
          changes.push(
            plan && plan.previous === previous
              ? plan.change
              : this.#planChange(key, previous, current),
          );
        }
        for (const [key, previous] of old) {
          if (items.has(key)) continue;
          result.deleted.push(previous);
          changes.push(this.#planChange(key, previous, undefined));
        }

        this.#items = items;
        for (const change of changes) this.#applyChange(change);
        return result;
      },
    };
  }

  /** Removes every object; indexes stay registered. */
  clear(): void {
    this.#items = new Map();
    for (const index of this.#indexes.values()) index.buckets.clear();
  }

  #index(name: string): Index<T> {
    const index = this.#indexes.get(name);
    if (!index) throw new Error(`the store has no index named "${name}"`);
    return index;
  }

  /** Computes every index function first, so nothing is changed if one throws. */
  #planChange(
    key: string,
    previous: DeepReadonly<T> | undefined,
    current: DeepReadonly<T> | undefined,
  ): IndexChange<T> {
    const values: IndexChange<T>["values"] = [];
    for (const index of this.#indexes.values()) {
      const add = indexValues(index.fn, current);
      const before = indexValues(index.fn, previous);
      const remove = before.length === 0 ? before : before.filter((v) => !add.includes(v));
      values.push({ remove, add });
    }
    return { key, current, values };
  }

  #applyChange(change: IndexChange<T>): void {
    let i = 0;
    for (const index of this.#indexes.values()) {
      const { remove, add } = change.values[i++];
      for (const value of remove) {
        const bucket = index.buckets.get(value);
        if (!bucket) continue;
        bucket.delete(change.key);
        if (bucket.size === 0) index.buckets.delete(value);
      }
      if (change.current === undefined) continue;
      for (const value of add) bucketFor(index, value).set(change.key, change.current);
    }
  }
}

type ObjectWithRv = { readonly metadata?: { readonly resourceVersion?: string } };
type ObjectWithLabels = {
  readonly metadata?: {
    readonly namespace?: string;
    readonly name?: string;
    readonly labels?: Readonly<Record<string, string>>;
  };
};

function bucketFor<T>(index: Index<T>, value: string): Bucket<T> {
  let bucket = index.buckets.get(value);
  if (!bucket) index.buckets.set(value, bucket = new Map());
  return bucket;
}

function metaMatches(
  { field, operator, value }: FieldRequirement,
  meta: ObjectWithMetadata["metadata"],
): boolean {
  const actual = (field === "metadata.name" ? meta?.name : meta?.namespace) ?? "";
  return operator === "!=" ? actual !== value : actual === value;
}
