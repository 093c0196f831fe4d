/**
 * The client a manager hands to reconcilers: reads come from the cache (frozen objects, no
 * copies, no API round trip), writes go to the API server, and every object a write returns
 * is visible to this process's next read at once ("read your own writes").
 *
 * Semantics of read-your-own-writes, exactly:
 *
 * - after a successful create, update, patch or apply (of the object or its status or another
 *   subresource that returns the object), the returned object is what `get` and `list` of the
 *   cache give for that key, until the watch delivers that resourceVersion or a newer one;
 * - a newer version from the watch (someone else's write) always wins;
 * - an object that the cache's label or field selectors for its namespace do not cover reads as
 *   absent, as it will once the watch catches up;
 * - deletes are not anticipated: an object deleted through this client stays readable until the
 *   watch delivers the deletion (with finalizers it is not gone yet, and the answer to a delete
 *   does not tell which), as in controller-runtime;
 * - kinds the cache does not hold, and `uncached` kinds, are read from the API server.
 *
 * No Go or Rust peer does this by default: controller-runtime's reconcilers must tolerate
 * reading an older copy of what they just wrote.
 *
 * @module
 */

import type { GroupVersionKind, KubeObject, ResourceType, Unstructured } from "../api/resource.ts";
import { gvkKey, isResourceType } from "../api/resource.ts";
import type { Cache } from "./cache.ts";
import type { Attributes } from "@opentelemetry/api";
import { withSpan } from "../util/tracing.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import type {
  Client,
  ListAllOptions,
  ObjectKey,
  ObjectList,
  ResourceRef,
  SubResourceClient,
} from "../client/client.ts";
import type {
  ApplyOptions,
  CreateOptions,
  DeleteAllOfOptions,
  DeleteOptions,
  GetOptions,
  ListOptions,
  PatchOptions,
  UpdateOptions,
} from "../client/options.ts";
import type { Patch } from "../client/patch.ts";

/** Reads that return the cache's frozen objects. */
export interface CachedReader {
  /** Reads one object from the cache; a NotFound {@linkcode ApiError} when it is not there. */
  get<T extends KubeObject>(
    type: ResourceType<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<DeepReadonly<T>>;
  /** Reads one object of a kind given by `apiVersion` and `kind`. */
  get(
    type: GroupVersionKind,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<DeepReadonly<Unstructured>>;
  /** Lists objects from the cache. */
  list<T extends KubeObject>(
    type: ResourceType<T>,
    options?: ListOptions,
  ): Promise<ObjectList<DeepReadonly<T>>>;
  /** Lists objects of a kind given by `apiVersion` and `kind`. */
  list(
    type: GroupVersionKind,
    options?: ListOptions,
  ): Promise<ObjectList<DeepReadonly<Unstructured>>>;
  /** Every object of a kind. */
  listAll<T extends KubeObject>(
    type: ResourceType<T>,
    options?: ListAllOptions,
  ): AsyncGenerator<DeepReadonly<T>>;
  /** Every object of a kind given by `apiVersion` and `kind`. */
  listAll(
    type: GroupVersionKind,
    options?: ListAllOptions,
  ): AsyncGenerator<DeepReadonly<Unstructured>>;
}

/**
 * A client that reads from a cache and writes to the API server. Objects it reads are frozen
 * and typed {@linkcode DeepReadonly}: `clone()` one to change it (a mutable `T`), or spread it
 * into a new object. Whatever only reads an object (`patch`, `status().patch`, `delete`,
 * `mergeFrom`) takes the frozen one as it is.
 *
 * @example A reconciler's write, without casts
 * ```ts
 * import { clone, Deployment, mergeFrom } from "@rudder/operator";
 * import { type CachedClient } from "@rudder/operator/client";
 *
 * async function scale(client: CachedClient, replicas: number): Promise<void> {
 *   const cached = await client.get(Deployment, { namespace: "default", name: "web" });
 *   const changed = clone(cached); // a Deployment
 *   changed.spec!.replicas = replicas;
 *   await client.patch(changed, mergeFrom(cached));
 * }
 * ```
 */
export interface CachedClient extends CachedReader, Omit<Client, "get" | "list" | "listAll"> {
  /** The cache reads come from. */
  readonly cache: Cache;
  /** The client that talks to the API server directly, for reads that must not be cached. */
  readonly apiReader: Client;
}

/** Options of {@linkcode newCachedClient}. */
export interface CachedClientOptions {
  /** Kinds always read from the API server, e.g. Secrets an operator reads once. */
  uncached?: ResourceType<KubeObject>[];
  /** Serve kinds given only by `apiVersion` and `kind` from the cache too; default false. */
  cacheUnstructured?: boolean;
}

/** The plural of a resource type; a bare group-version-kind has only its kind. */
function resourceName(ref: ResourceRef<KubeObject>): string {
  return isResourceType(ref) ? ref.plural : ref.kind;
}

/** A cache read's span attributes: a request's, with `rudder.cached`. */
function cacheReadAttributes(
  verb: "get" | "list",
  ref: ResourceRef<KubeObject>,
  namespace: string | undefined,
  name?: string,
): Attributes {
  return {
    "rudder.k8s.verb": verb,
    "rudder.k8s.group": isResourceType(ref) ? ref.group : undefined,
    "rudder.k8s.resource": isResourceType(ref) ? ref.plural : undefined,
    "rudder.k8s.kind": ref.kind,
    "k8s.namespace.name": namespace || undefined,
    "rudder.k8s.name": name,
    "rudder.cached": true,
  };
}

class CacheBackedClient implements CachedClient {
  readonly cache: Cache;
  readonly apiReader: Client;
  readonly #uncached: Set<string>;
  readonly #cacheUnstructured: boolean;

  constructor(cache: Cache, client: Client, options: CachedClientOptions) {
    this.cache = cache;
    this.apiReader = client;
    this.#uncached = new Set((options.uncached ?? []).map((type) => gvkKey(type)));
    this.#cacheUnstructured = options.cacheUnstructured ?? false;
  }

  get mapper() {
    return this.apiReader.mapper;
  }

  #cached(ref: ResourceRef<KubeObject>): boolean {
    if (this.#uncached.has(gvkKey(ref))) return false;
    return isResourceType(ref) || this.#cacheUnstructured;
  }

  #seen<T extends KubeObject>(obj: T): T {
    this.cache.observeWrite(obj);
    return obj;
  }

  get<T extends KubeObject>(
    type: ResourceType<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<DeepReadonly<T>>;
  get(
    type: GroupVersionKind,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<DeepReadonly<Unstructured>>;
  async get(
    ref: ResourceRef<KubeObject>,
    key: ObjectKey,
    options: GetOptions = {},
  ): Promise<unknown> {
    if (!this.#cached(ref)) return await this.apiReader.get(ref as GroupVersionKind, key, options);
    return await withSpan(
      `get ${resourceName(ref)}`,
      { attributes: () => cacheReadAttributes("get", ref, key.namespace, key.name) },
      () => this.cache.get(ref as GroupVersionKind, key, { signal: options.signal }),
    );
  }

  list<T extends KubeObject>(
    type: ResourceType<T>,
    options?: ListOptions,
  ): Promise<ObjectList<DeepReadonly<T>>>;
  list(
    type: GroupVersionKind,
    options?: ListOptions,
  ): Promise<ObjectList<DeepReadonly<Unstructured>>>;
  async list(ref: ResourceRef<KubeObject>, options: ListOptions = {}): Promise<unknown> {
    if (!this.#cached(ref)) return await this.apiReader.list(ref as GroupVersionKind, options);
    return await withSpan(
      `list ${resourceName(ref)}`,
      { attributes: () => cacheReadAttributes("list", ref, options.namespace) },
      () => this.cache.list(ref as GroupVersionKind, options),
    );
  }

  listAll<T extends KubeObject>(
    type: ResourceType<T>,
    options?: ListAllOptions,
  ): AsyncGenerator<DeepReadonly<T>>;
  listAll(
    type: GroupVersionKind,
    options?: ListAllOptions,
  ): AsyncGenerator<DeepReadonly<Unstructured>>;
  async *listAll(
    ref: ResourceRef<KubeObject>,
    options: ListAllOptions = {},
  ): AsyncGenerator<unknown> {
    if (!this.#cached(ref)) {
      yield* this.apiReader.listAll(ref as GroupVersionKind, options);
      return;
    }
    const { pageSize: _pageSize, ...rest } = options;
    yield* (await this.cache.list(ref as GroupVersionKind, rest)).items;
  }

  async create<T extends KubeObject>(obj: T, options?: CreateOptions): Promise<T & KubeObject> {
    return this.#seen(await this.apiReader.create(obj, options));
  }

  async update<T extends KubeObject>(obj: T, options?: UpdateOptions): Promise<T> {
    return this.#seen(await this.apiReader.update(obj, options));
  }

  async patch<T extends KubeObject>(
    obj: T | DeepReadonly<T>,
    patch: Patch<NoInfer<T>>,
    options?: PatchOptions,
  ): Promise<T> {
    return this.#seen(await this.apiReader.patch(obj, patch, options));
  }

  async apply<T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T> {
    return this.#seen(await this.apiReader.apply(obj, options));
  }

  async delete(obj: KubeObject | DeepReadonly<KubeObject>, options?: DeleteOptions): Promise<void> {
    await this.apiReader.delete(obj, options);
  }

  async deleteAllOf(ref: ResourceRef<KubeObject>, options?: DeleteAllOfOptions): Promise<void> {
    await this.apiReader.deleteAllOf(ref, options);
  }

  status(): SubResourceClient {
    return this.subResource("status");
  }

  subResource(name: string): SubResourceClient {
    const inner = this.apiReader.subResource(name);
    // Only the status subresource answers with the object itself; scale, eviction and token
    // answer with other kinds, which are not the cached object.
    const returnsObject = name === "status";
    const seen = <R extends KubeObject>(result: R): R => {
      if (returnsObject) this.cache.observeWrite(result);
      return result;
    };
    return {
      get: (obj, options) => inner.get(obj, options),
      create: (obj, body, options) => inner.create(obj, body, options),
      update: async (obj, options) => seen(await inner.update(obj, options)),
      patch: async (obj, patch, options) => seen(await inner.patch(obj, patch, options)),
      apply: async (obj, options) => seen(await inner.apply(obj, options)),
    };
  }
}

/**
 * A client that reads from `cache` and writes through `client`, with read-your-own-writes
 * (see the module documentation for its exact semantics).
 *
 * @example
 * ```ts
 * import { ConfigMap, loadConfig, newClient } from "@rudder/operator";
 * import { newCache } from "@rudder/operator/cache";
 * import { newCachedClient } from "@rudder/operator/client";
 *
 * const config = await loadConfig();
 * const cache = newCache(config);
 * const client = newCachedClient(cache, newClient(config));
 * const stop = new AbortController();
 * cache.start(stop.signal);
 * const cm = await client.get(ConfigMap, { namespace: "default", name: "settings" });
 * await client.update({ ...cm, data: { ...cm.data, mode: "slow" } });
 * const again = await client.get(ConfigMap, { namespace: "default", name: "settings" });
 * console.log(again.data?.mode); // "slow", even before the watch has delivered the change
 * ```
 */
export function newCachedClient(
  cache: Cache,
  client: Client,
  options: CachedClientOptions = {},
): CachedClient {
  return new CacheBackedClient(cache, client, options);
}
