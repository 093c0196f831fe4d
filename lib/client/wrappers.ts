/**
 * Clients that wrap another client and change every call the same way, like
 * controller-runtime's `client.WithFieldOwner`, `client.NewDryRunClient` and
 * `client.NewNamespacedClient`. They wrap any {@linkcode Client}: the API client, the
 * manager's cached client or the fake.
 *
 * @module
 */

import type { GroupVersionKind, KubeObject, ResourceType, Unstructured } from "../api/resource.ts";
import { isResourceType } from "../api/resource.ts";
import type {
  Client,
  ListAllOptions,
  ObjectKey,
  ObjectList,
  ResourceRef,
  SubResourceClient,
} from "./client.ts";
import type {
  ApplyOptions,
  CreateOptions,
  DeleteAllOfOptions,
  DeleteOptions,
  GetOptions,
  ListOptions,
  PatchOptions,
  UpdateOptions,
  WriteOptions,
} from "./options.ts";
import type { Patch } from "./patch.ts";
import type { DeepReadonly } from "../api/readonly.ts";

/** How a wrapper changes calls; every hook is optional. */
interface Adjustments {
  /** Options of every create, update, patch and apply, of objects and subresources. */
  write?<O extends WriteOptions>(options: O): O;
  /** Options of every delete and deleteAllOf. */
  delete?<O extends DeleteOptions>(options: O): O;
  /** The object of every write or delete; `namespaced()` tells the kind's scope. */
  object?<T extends KubeObject>(obj: T, namespaced: () => Promise<boolean>): Promise<T>;
  /** The key of every get. */
  key?(key: ObjectKey, namespaced: () => Promise<boolean>): Promise<ObjectKey>;
  /** The options of every list, listAll and deleteAllOf. */
  list?<O extends ListOptions | ListAllOptions>(
    options: O,
    namespaced: () => Promise<boolean>,
  ): Promise<O>;
}

class AdjustedClient implements Client {
  readonly #inner: Client;
  readonly #adjust: Adjustments;

  constructor(inner: Client, adjust: Adjustments) {
    this.#inner = inner;
    this.#adjust = adjust;
  }

  get mapper() {
    return this.#inner.mapper;
  }

  /** Whether `ref` is namespaced; resolved only when a hook asks. */
  #namespaced(ref: ResourceRef<KubeObject>): () => Promise<boolean> {
    return async () => {
      const type = isResourceType(ref) ? ref : await this.#inner.mapper.resourceTypeFor(ref);
      return type.scope === "Namespaced";
    };
  }

  #write<O extends WriteOptions>(options: O | undefined): O {
    const given = (options ?? {}) as O;
    return this.#adjust.write ? this.#adjust.write(given) : given;
  }

  #delete<O extends DeleteOptions>(options: O | undefined): O {
    const given = (options ?? {}) as O;
    return this.#adjust.delete ? this.#adjust.delete(given) : given;
  }

  async #object<T extends KubeObject>(obj: T): Promise<T> {
    return this.#adjust.object ? await this.#adjust.object(obj, this.#namespaced(obj)) : obj;
  }

  async #list<O extends ListOptions | ListAllOptions>(
    ref: ResourceRef<KubeObject>,
    options: O | undefined,
  ): Promise<O> {
    const given = (options ?? {}) as O;
    return this.#adjust.list ? await this.#adjust.list(given, this.#namespaced(ref)) : given;
  }

  get<T extends KubeObject>(
    type: ResourceType<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  get(type: GroupVersionKind, key: ObjectKey, options?: GetOptions): Promise<Unstructured>;
  async get(ref: ResourceRef<KubeObject>, key: ObjectKey, options?: GetOptions): Promise<unknown> {
    const adjusted = this.#adjust.key ? await this.#adjust.key(key, this.#namespaced(ref)) : key;
    return await this.#inner.get(ref as GroupVersionKind, adjusted, options);
  }

  list<T extends KubeObject>(type: ResourceType<T>, options?: ListOptions): Promise<ObjectList<T>>;
  list(type: GroupVersionKind, options?: ListOptions): Promise<ObjectList<Unstructured>>;
  async list(ref: ResourceRef<KubeObject>, options?: ListOptions): Promise<unknown> {
    return await this.#inner.list(ref as GroupVersionKind, await this.#list(ref, options));
  }

  listAll<T extends KubeObject>(type: ResourceType<T>, options?: ListAllOptions): AsyncGenerator<T>;
  listAll(type: GroupVersionKind, options?: ListAllOptions): AsyncGenerator<Unstructured>;
  async *listAll(
    ref: ResourceRef<KubeObject>,
    options?: ListAllOptions,
  ): AsyncGenerator<KubeObject> {
    yield* this.#inner.listAll(ref as GroupVersionKind, await this.#list(ref, options));
  }

  async create<T extends KubeObject>(obj: T, options?: CreateOptions): Promise<T> {
    return await this.#inner.create(await this.#object(obj), this.#write(options));
  }

  async update<T extends KubeObject>(obj: T, options?: UpdateOptions): Promise<T> {
    return await this.#inner.update(await this.#object(obj), this.#write(options));
  }

  async patch<T extends KubeObject>(
    obj: T | DeepReadonly<T>,
    patch: Patch<T>,
    options?: PatchOptions,
  ): Promise<T> {
    return await this.#inner.patch(await this.#object(obj), patch, this.#write(options));
  }

  async apply<T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T> {
    return await this.#inner.apply(await this.#object(obj), this.#write(options));
  }

  async delete(obj: KubeObject | DeepReadonly<KubeObject>, options?: DeleteOptions): Promise<void> {
    await this.#inner.delete(await this.#object(obj), this.#delete(options));
  }

  async deleteAllOf(ref: ResourceRef<KubeObject>, options?: DeleteAllOfOptions): Promise<void> {
    const listed = await this.#list(ref, options);
    await this.#inner.deleteAllOf(ref, this.#delete(listed));
  }

  status(): SubResourceClient {
    return this.subResource("status");
  }

  subResource(name: string): SubResourceClient {
    const inner = this.#inner.subResource(name);
    return {
      get: async <R>(obj: KubeObject, options?: GetOptions) =>
        await inner.get<R>(await this.#object(obj), options),
      create: async <R>(obj: KubeObject, body: unknown, options?: CreateOptions) =>
        await inner.create<R>(await this.#object(obj), body, this.#write(options)),
      update: async (obj, options) =>
        await inner.update(await this.#object(obj), this.#write(options)),
      patch: async (obj, patch, options) =>
        await inner.patch(await this.#object(obj), patch, this.#write(options)),
      apply: async (obj, options) =>
        await inner.apply(await this.#object(obj), this.#write(options)),
    };
  }
}

/**
 * Sets `fieldManager` on every write that does not name one, like controller-runtime's
 * `client.WithFieldOwner`.
 *
 * @example
 * ```ts
 * import { loadConfig, newClient } from "@rudder/operator";
 * import { withFieldOwner } from "@rudder/operator/client";
 *
 * const client = withFieldOwner(newClient(await loadConfig()), "my-operator");
 * ```
 */
export function withFieldOwner(client: Client, owner: string): Client {
  return new AdjustedClient(client, {
    write: (options) => ({ ...options, fieldManager: options.fieldManager ?? owner }),
  });
}

/**
 * Makes every write and delete a server-side dry run: validated and answered, never persisted.
 *
 * @example
 * ```ts
 * import { loadConfig, newClient } from "@rudder/operator";
 * import { dryRunClient } from "@rudder/operator/client";
 *
 * const preview = dryRunClient(newClient(await loadConfig()));
 * ```
 */
export function dryRunClient(client: Client): Client {
  return new AdjustedClient(client, {
    write: (options) => ({ ...options, dryRun: true }),
    delete: (options) => ({ ...options, dryRun: true }),
  });
}

/**
 * Confines a client to one namespace, like controller-runtime's `client.NewNamespacedClient`:
 * reads, lists and writes of namespaced kinds default to it, and an object or key naming
 * another namespace is refused. Cluster-scoped kinds pass through.
 *
 * @example
 * ```ts
 * import { ConfigMap, loadConfig, newClient } from "@rudder/operator";
 * import { namespacedClient } from "@rudder/operator/client";
 *
 * const team = namespacedClient(newClient(await loadConfig()), "team-a");
 * const list = await team.list(ConfigMap); // only team-a's
 * ```
 */
export function namespacedClient(client: Client, namespace: string): Client {
  const check = (given: string | undefined, what: string): string => {
    if (given && given !== namespace) {
      throw new Error(
        `${what} is in namespace ${given}, but this client is confined to namespace ${namespace}`,
      );
    }
    return namespace;
  };
  return new AdjustedClient(client, {
    async object(obj, namespaced) {
      if (!(await namespaced())) return obj;
      const ns = check(obj.metadata?.namespace, `${obj.kind} ${obj.metadata?.name ?? ""}`.trim());
      return { ...obj, metadata: { ...obj.metadata, namespace: ns } };
    },
    async key(key, namespaced) {
      if (!(await namespaced())) return key;
      return { ...key, namespace: check(key.namespace, `object ${key.name}`) };
    },
    async list(options, namespaced) {
      if (!(await namespaced())) return options;
      return { ...options, namespace: check(options.namespace, "the list") };
    },
  });
}
