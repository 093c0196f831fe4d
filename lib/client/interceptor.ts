/**
 * A client that runs a hook in place of each verb of another client, like controller-runtime's
 * `interceptor.NewClient(client, interceptor.Funcs{...})`. A hook receives the wrapped client
 * and the call's arguments: it may throw (an injected {@linkcode ApiError}, a network error),
 * observe the call, or delegate to the wrapped client before or after changing the arguments
 * or the result. Verbs without a hook go straight through. It wraps any {@linkcode Client}
 * (the API client, the fake, another wrapper), so fakes and failure injection compose.
 *
 * @module
 */

import type { GroupVersionKind, KubeObject, ResourceType, Unstructured } from "../api/resource.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import type { RESTMapper } from "../api/discovery.ts";
import {
  type Client,
  type ListAllOptions,
  listPages,
  type ObjectKey,
  type ObjectList,
  type ResourceRef,
  type SubResourceClient,
  type SubResourceWriteOptions,
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
} from "./options.ts";
import type { Patch } from "./patch.ts";

/**
 * Hooks that stand in for a client's verbs, like controller-runtime's `interceptor.Funcs`.
 * Each is typed as the verb it replaces with the wrapped client first; the subresource hooks
 * (`status()` and `subResource(name)`) also receive the subresource's name. `listAll` pages
 * through `list`, so the `list` hook sees every page.
 *
 * @example Fail the first update with a Conflict, then let updates through
 * ```ts
 * import { ApiError, type InterceptorFuncs } from "@rudder/operator/client";
 *
 * let failed = false;
 * const funcs: InterceptorFuncs = {
 *   update: async (client, obj, options) => {
 *     if (!failed) {
 *       failed = true;
 *       throw new ApiError({ code: 409, reason: "Conflict", message: "try again" });
 *     }
 *     return await client.update(obj, options);
 *   },
 * };
 * ```
 */
export interface InterceptorFuncs {
  /** Stands in for `get`. */
  get?<T extends KubeObject>(
    client: Client,
    type: ResourceRef<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  /** Stands in for `list`, and so for every page of `listAll`. */
  list?<T extends KubeObject>(
    client: Client,
    type: ResourceRef<T>,
    options?: ListOptions,
  ): Promise<ObjectList<T>>;
  /** Stands in for `create`. */
  create?<T extends KubeObject>(
    client: Client,
    obj: T,
    options?: CreateOptions,
  ): Promise<T & KubeObject>;
  /** Stands in for `update`. */
  update?<T extends KubeObject>(client: Client, obj: T, options?: UpdateOptions): Promise<T>;
  /** Stands in for `patch`. */
  patch?<T extends KubeObject>(
    client: Client,
    obj: T | DeepReadonly<T>,
    patch: Patch<NoInfer<T>>,
    options?: PatchOptions,
  ): Promise<T>;
  /** Stands in for `apply`. */
  apply?<T extends KubeObject>(client: Client, obj: T, options: ApplyOptions): Promise<T>;
  /** Stands in for `delete`. */
  delete?(
    client: Client,
    obj: KubeObject | DeepReadonly<KubeObject>,
    options?: DeleteOptions,
  ): Promise<void>;
  /** Stands in for `deleteAllOf`. */
  deleteAllOf?(
    client: Client,
    type: ResourceRef<KubeObject>,
    options?: DeleteAllOfOptions,
  ): Promise<void>;
  /** Stands in for `get` of a subresource, e.g. `subResource("scale").get`. */
  subResourceGet?<R = Unstructured>(
    client: Client,
    subResource: string,
    obj: KubeObject,
    options?: GetOptions,
  ): Promise<R>;
  /** Stands in for `create` of a subresource, e.g. a Pod's eviction. */
  subResourceCreate?<R = Unstructured>(
    client: Client,
    subResource: string,
    obj: KubeObject,
    body: unknown,
    options?: CreateOptions,
  ): Promise<R>;
  /** Stands in for `update` of a subresource, e.g. `status().update`. */
  subResourceUpdate?<T extends KubeObject, B extends KubeObject = T>(
    client: Client,
    subResource: string,
    obj: T,
    options?: UpdateOptions & SubResourceWriteOptions<B>,
  ): Promise<B>;
  /** Stands in for `patch` of a subresource, e.g. `status().patch`. */
  subResourcePatch?<T extends KubeObject, B extends KubeObject = T>(
    client: Client,
    subResource: string,
    obj: T | DeepReadonly<T>,
    patch: Patch<B>,
    options?: PatchOptions & SubResourceWriteOptions<B>,
  ): Promise<B>;
  /** Stands in for `apply` of a subresource, e.g. `status().apply`. */
  subResourceApply?<T extends KubeObject>(
    client: Client,
    subResource: string,
    obj: T,
    options: ApplyOptions,
  ): Promise<T>;
}

/** The client of {@linkcode newInterceptedClient}. */
class InterceptedClient implements Client {
  readonly #client: Client;
  readonly #funcs: InterceptorFuncs;

  constructor(client: Client, funcs: InterceptorFuncs) {
    this.#client = client;
    // A copy, so that changing the caller's object later does not change this client.
    this.#funcs = { ...funcs };
  }

  get mapper(): RESTMapper {
    return this.#client.mapper;
  }

  get<T extends KubeObject>(
    type: ResourceType<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  get<T extends KubeObject = Unstructured>(
    type: ResourceRef<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  get<T extends KubeObject>(type: ResourceRef<T>, key: ObjectKey, options?: GetOptions) {
    const hook = this.#funcs.get;
    return settled(() =>
      hook ? hook(this.#client, type, key, options) : this.#client.get(type, key, options)
    );
  }

  list<T extends KubeObject>(type: ResourceType<T>, options?: ListOptions): Promise<ObjectList<T>>;
  list<T extends KubeObject = Unstructured>(
    type: ResourceRef<T>,
    options?: ListOptions,
  ): Promise<ObjectList<T>>;
  list<T extends KubeObject>(type: ResourceRef<T>, options?: ListOptions) {
    const hook = this.#funcs.list;
    return settled(() =>
      hook ? hook(this.#client, type, options) : this.#client.list(type, options)
    );
  }

  listAll<T extends KubeObject>(type: ResourceType<T>, options?: ListAllOptions): AsyncGenerator<T>;
  listAll(type: GroupVersionKind, options?: ListAllOptions): AsyncGenerator<Unstructured>;
  listAll<T extends KubeObject>(type: ResourceRef<T>, options?: ListAllOptions): AsyncGenerator<T> {
    // Without a list hook the wrapped client pages as it likes; with one, every page is a list.
    if (!this.#funcs.list) return this.#client.listAll(type as ResourceType<T>, options);
    return listPages((page) => this.list(type, page), options);
  }

  create<T extends KubeObject>(obj: T, options?: CreateOptions): Promise<T & KubeObject> {
    const hook = this.#funcs.create;
    return settled(() =>
      hook ? hook(this.#client, obj, options) : this.#client.create(obj, options)
    );
  }

  update<T extends KubeObject>(obj: T, options?: UpdateOptions): Promise<T> {
    const hook = this.#funcs.update;
    return settled(() =>
      hook ? hook(this.#client, obj, options) : this.#client.update(obj, options)
    );
  }

  patch<T extends KubeObject>(
    obj: T | DeepReadonly<T>,
    patch: Patch<NoInfer<T>>,
    options?: PatchOptions,
  ): Promise<T> {
    const hook = this.#funcs.patch;
    return settled(() =>
      hook ? hook(this.#client, obj, patch, options) : this.#client.patch(obj, patch, options)
    );
  }

  apply<T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T> {
    const hook = this.#funcs.apply;
    return settled(() =>
      hook ? hook(this.#client, obj, options) : this.#client.apply(obj, options)
    );
  }

  delete(obj: KubeObject | DeepReadonly<KubeObject>, options?: DeleteOptions): Promise<void> {
    const hook = this.#funcs.delete;
    return settled(() =>
      hook ? hook(this.#client, obj, options) : this.#client.delete(obj, options)
    );
  }

  deleteAllOf(type: ResourceRef<KubeObject>, options?: DeleteAllOfOptions): Promise<void> {
    const hook = this.#funcs.deleteAllOf;
    return settled(() =>
      hook ? hook(this.#client, type, options) : this.#client.deleteAllOf(type, options)
    );
  }

  status(): SubResourceClient {
    return this.subResource("status");
  }

  subResource(name: string): SubResourceClient {
    const client = this.#client;
    const inner = client.subResource(name);
    const funcs = this.#funcs;
    return {
      get: <R = Unstructured>(obj: KubeObject, options?: GetOptions) =>
        settled(() =>
          funcs.subResourceGet
            ? funcs.subResourceGet<R>(client, name, obj, options)
            : inner.get<R>(obj, options)
        ),
      create: <R = Unstructured>(obj: KubeObject, body: unknown, options?: CreateOptions) =>
        settled(() =>
          funcs.subResourceCreate
            ? funcs.subResourceCreate<R>(client, name, obj, body, options)
            : inner.create<R>(obj, body, options)
        ),
      update: <T extends KubeObject, B extends KubeObject = T>(
        obj: T,
        options?: UpdateOptions & SubResourceWriteOptions<B>,
      ) =>
        settled(() =>
          funcs.subResourceUpdate
            ? funcs.subResourceUpdate<T, B>(client, name, obj, options)
            : inner.update<T, B>(obj, options)
        ),
      patch: <T extends KubeObject, B extends KubeObject = T>(
        obj: T | DeepReadonly<T>,
        patch: Patch<B>,
        options?: PatchOptions & SubResourceWriteOptions<B>,
      ) =>
        settled(() =>
          funcs.subResourcePatch
            ? funcs.subResourcePatch<T, B>(client, name, obj, patch, options)
            : inner.patch<T, B>(obj, patch, options)
        ),
      apply: <T extends KubeObject>(obj: T, options: ApplyOptions) =>
        settled(() =>
          funcs.subResourceApply
            ? funcs.subResourceApply(client, name, obj, options)
            : inner.apply(obj, options)
        ),
    };
  }
}

/** Runs `call`, so that a hook that throws rejects as the client's own verbs do. */
function settled<T>(call: () => Promise<T>): Promise<T> {
  try {
    return call();
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Wraps `client` so that each verb with a hook in `funcs` runs the hook instead, like
 * controller-runtime's `interceptor.NewClient`. Verbs without a hook, and `mapper`, go straight
 * to `client`; a hook that delegates calls `client` (the first argument it gets), so it does not
 * run itself again. Wrap an interceptor in another to compose hooks.
 *
 * @example Inject a failure into a fake, then into any client
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigMap, isNotFound } from "@rudder/operator";
 * import { ApiError, newInterceptedClient } from "@rudder/operator/client";
 * import { FakeClient } from "@rudder/operator/testing";
 *
 * const reads: string[] = [];
 * const client = newInterceptedClient(new FakeClient(), {
 *   get: async (inner, type, key, options) => {
 *     reads.push(key.name);
 *     if (key.name === "broken") {
 *       throw new ApiError({ code: 500, reason: "InternalError", message: "etcd is down" });
 *     }
 *     return await inner.get(type, key, options);
 *   },
 * });
 * await assert.rejects(client.get(ConfigMap, { namespace: "default", name: "broken" }));
 * await assert.rejects(client.get(ConfigMap, { namespace: "default", name: "absent" }), isNotFound);
 * assert.deepEqual(reads, ["broken", "absent"]);
 * ```
 */
export function newInterceptedClient(client: Client, funcs: InterceptorFuncs): Client {
  return new InterceptedClient(client, funcs);
}
