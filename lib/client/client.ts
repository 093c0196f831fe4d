/**
 * The client: every verb of controller-runtime's `client.Client`, typed by resource type. It
 * talks to the API server directly (no cache); the manager's client reads from its cache
 * instead and writes through this one.
 *
 * @module
 */

import type { ListMeta } from "../api/generated/meta_v1.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import { RESTMapper } from "../api/discovery.ts";
import {
  type GroupVersionKind,
  isDefinedResource,
  isResourceType,
  type KubeObject,
  resourcePath,
  type ResourceType,
  type Unstructured,
} from "../api/resource.ts";
import type { KubeConfig } from "../kube/config/types.ts";
import { RestClient, type RestClientOptions } from "../kube/rest.ts";
import { ApiError } from "../kube/errors.ts";
import {
  type ApplyOptions,
  type CreateOptions,
  type DeleteAllOfOptions,
  deleteBody,
  type DeleteOptions,
  type GetOptions,
  type ListOptions,
  listQuery,
  type PatchOptions,
  type UpdateOptions,
  writeQuery,
} from "./options.ts";
import type { Patch } from "./patch.ts";

/** Which object: its namespace (for namespaced kinds) and name. */
export interface ObjectKey {
  /** Namespace; required for namespaced kinds, ignored for cluster-scoped ones. */
  namespace?: string;
  /** Name. */
  name: string;
}

/** A page of objects of one kind. */
export interface ObjectList<T> {
  /** `group/version` of the list. */
  apiVersion: string;
  /** Kind of the list, e.g. `ConfigMapList`. */
  kind: string;
  /** The list's resourceVersion and the `continue` token of the next page. */
  metadata: ListMeta;
  /** The objects, each with `apiVersion` and `kind` set. */
  items: T[];
}

/** Options of `listAll`: a list's options, with the page size. */
export interface ListAllOptions extends Omit<ListOptions, "limit" | "continue"> {
  /** Objects per page; default 500. */
  pageSize?: number;
}

/** A resource type, or just the `apiVersion` and `kind` of a kind resolved by discovery. */
export type ResourceRef<T extends KubeObject> = ResourceType<T> | GroupVersionKind;

/** Reads objects. */
export interface Reader {
  /** Reads one object; rejects with a NotFound {@linkcode ApiError} when it does not exist. */
  get<T extends KubeObject>(
    type: ResourceType<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  /**
   * Reads one object of a kind given by `apiVersion` and `kind`, resolved by discovery: an
   * {@linkcode Unstructured}. Also takes a reference that may be either kind (as an
   * interceptor's hook receives it), typed by the resource type when it is one.
   */
  get<T extends KubeObject = Unstructured>(
    type: ResourceRef<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  /** Reads a page of objects (all of them unless `limit` is set). */
  list<T extends KubeObject>(type: ResourceType<T>, options?: ListOptions): Promise<ObjectList<T>>;
  /**
   * Reads a page of objects of a kind given by `apiVersion` and `kind`, resolved by discovery,
   * or by a reference that may be either kind (as an interceptor's hook receives it).
   */
  list<T extends KubeObject = Unstructured>(
    type: ResourceRef<T>,
    options?: ListOptions,
  ): Promise<ObjectList<T>>;
}

/** Writes objects. Each write resolves to the object as the API server stored it. */
export interface Writer {
  /**
   * Creates `obj`; rejects with AlreadyExists when its name is taken. The result has the type
   * of `obj` widened to a {@linkcode KubeObject}, so server-set metadata is typed even when
   * `obj` is a literal.
   */
  create<T extends KubeObject>(obj: T, options?: CreateOptions): Promise<T & KubeObject>;
  /** Replaces `obj`; rejects with Conflict when its resourceVersion is stale. */
  update<T extends KubeObject>(obj: T, options?: UpdateOptions): Promise<T>;
  /**
   * Patches `obj` with the body `patch` computes for it. `obj` is only read (its kind,
   * namespace and name, and as the patch's target), so it may be a frozen object the cache
   * returned; the result is the object as stored, a mutable `T`.
   */
  patch<T extends KubeObject>(
    obj: T | DeepReadonly<T>,
    patch: Patch<NoInfer<T>>,
    options?: PatchOptions,
  ): Promise<T>;
  /** Server-side apply: `obj` holds the fields the field manager wants to own. */
  apply<T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T>;
  /**
   * Deletes `obj`. Only its kind, namespace and name are read, so a frozen object from the
   * cache will do.
   */
  delete(obj: KubeObject | DeepReadonly<KubeObject>, options?: DeleteOptions): Promise<void>;
  /** Deletes every object of a kind that matches the selectors, in one namespace. */
  deleteAllOf(type: ResourceRef<KubeObject>, options?: DeleteAllOfOptions): Promise<void>;
}

/** Options of a subresource update or patch: the body to send instead of the object. */
export interface SubResourceWriteOptions<B> {
  /** Sent instead of the object, e.g. a `Scale` to the `scale` subresource. */
  body?: B;
}

/**
 * Reads and writes one subresource (`status`, `scale`, `eviction`, `token`, …) of objects,
 * like controller-runtime's `SubResourceClient`.
 */
export interface SubResourceClient {
  /** Reads the subresource of `obj`, e.g. the `Scale` of a Deployment. */
  get<R = Unstructured>(obj: KubeObject, options?: GetOptions): Promise<R>;
  /** Creates the subresource of `obj` from `body`, e.g. an `Eviction` of a Pod. */
  create<R = Unstructured>(obj: KubeObject, body: unknown, options?: CreateOptions): Promise<R>;
  /** Replaces the subresource: `obj` itself for `status`, or `options.body`. */
  update<T extends KubeObject, B extends KubeObject = T>(
    obj: T,
    options?: UpdateOptions & SubResourceWriteOptions<B>,
  ): Promise<B>;
  /**
   * Patches the subresource with the body `patch` computes for `options.body ?? obj`. `obj`
   * is only read, so it may be a frozen object the cache returned.
   */
  patch<T extends KubeObject, B extends KubeObject = T>(
    obj: T | DeepReadonly<T>,
    patch: Patch<B>,
    options?: PatchOptions & SubResourceWriteOptions<B>,
  ): Promise<B>;
  /** Server-side apply of the subresource. */
  apply<T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T>;
}

/**
 * An uncached client, as controller-runtime's `client.Client`: reads, writes, the `status` and any
 * other subresource, paged reads.
 *
 * @example
 * ```ts
 * import { ConfigMap, ignoreNotFound, loadConfig, newClient } from "@rudder/operator";
 *
 * const client = newClient(await loadConfig());
 * const found = await client.get(ConfigMap, { namespace: "default", name: "settings" })
 *   .catch(ignoreNotFound);
 * if (!found) {
 *   await client.create({
 *     apiVersion: "v1",
 *     kind: "ConfigMap",
 *     metadata: { namespace: "default", name: "settings" },
 *     data: { mode: "fast" },
 *   });
 * }
 * ```
 */
export interface Client extends Reader, Writer {
  /** The `status` subresource. */
  status(): SubResourceClient;
  /** Any subresource by name. */
  subResource(name: string): SubResourceClient;
  /** Every object of a kind, page by page (`limit` + `continue`) as they are consumed. */
  listAll<T extends KubeObject>(type: ResourceType<T>, options?: ListAllOptions): AsyncGenerator<T>;
  /** Every object of a kind resolved by discovery, page by page. */
  listAll(type: GroupVersionKind, options?: ListAllOptions): AsyncGenerator<Unstructured>;
  /** Resolves kinds to resources. */
  readonly mapper: RESTMapper;
}

/** Options of {@linkcode newClient}. */
export interface ClientOptions extends RestClientOptions {
  /** A REST client to share instead of creating one. */
  rest?: RestClient;
  /** A mapper to share instead of creating one. */
  mapper?: RESTMapper;
  /**
   * Resource types to register with the mapper, so that objects of their kinds resolve to
   * them without discovery: custom resources made by `defineResource`, for `validate`.
   */
  types?: readonly ResourceType<KubeObject>[];
  /**
   * Validate objects before `create`, `update` and `status().update` when their resource type
   * can (made by `defineResource`, and registered through `types` or the mapper): an object
   * that does not fit its schema is rejected without a request, with the error the API server
   * gives (a 422 Invalid {@linkcode ApiError} with a cause per field, so `isInvalid` holds).
   * Objects of other kinds go unchecked. Default false: the API server validates anyway.
   */
  validate?: boolean;
}

/** Objects per page of `listAll` when `pageSize` is not given. */
const DEFAULT_PAGE_SIZE = 500;

/**
 * Every object `list` gives, page by page (`limit` + `continue`) as they are consumed: the
 * `listAll` of the clients here (API, fake, interceptor), which differ only in their `list`.
 * Internal to Rudder; not exported from any `mod.ts`.
 *
 * @example
 * ```ts ignore
 * const all = listPages((page) => client.list(ConfigMap, page), { pageSize: 100 });
 * for await (const cm of all) console.log(cm.metadata?.name);
 * ```
 */
export async function* listPages<T>(
  list: (options: ListOptions) => Promise<ObjectList<T>>,
  options: ListAllOptions = {},
): AsyncGenerator<T> {
  const { pageSize = DEFAULT_PAGE_SIZE, ...rest } = options;
  let token: string | undefined;
  do {
    const page = await list({ ...rest, limit: pageSize, continue: token });
    yield* page.items;
    token = page.metadata.continue || undefined;
  } while (token);
}

function describe(obj: KubeObject): string {
  const name = obj.metadata?.name ?? obj.metadata?.generateName ?? "(no name)";
  const ns = obj.metadata?.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj.kind} ${ns}${name}`;
}

/** The client over the REST API. */
class ApiClient implements Client {
  readonly mapper: RESTMapper;
  readonly #rest: RestClient;
  readonly #validate: boolean;

  constructor(rest: RestClient, mapper: RESTMapper, validate: boolean) {
    this.#rest = rest;
    this.mapper = mapper;
    this.#validate = validate;
  }

  /** With `validate` on, rejects an object that does not fit its resource's schema. */
  async #check(obj: KubeObject, signal?: AbortSignal): Promise<void> {
    if (!this.#validate) return;
    const type = await this.#resolve(obj, signal);
    if (!isDefinedResource(type)) return;
    const result = type.safeParse(obj);
    if (result.success) return;
    const name = obj.metadata?.name ?? obj.metadata?.generateName ?? "";
    const issues = result.error.issues;
    throw new ApiError({
      apiVersion: "v1",
      kind: "Status",
      status: "Failure",
      code: 422,
      reason: "Invalid",
      message: `${type.kind}.${type.group} ${JSON.stringify(name)} is invalid: ` +
        issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join(", ") +
        " (checked by the client)",
      details: {
        name,
        group: type.group,
        kind: type.plural,
        causes: issues.map((i) => ({
          reason: "FieldValueInvalid",
          message: i.message,
          field: i.path,
        })),
      },
    }, { cause: result.error });
  }

  #resolve(type: ResourceRef<KubeObject>, signal?: AbortSignal): Promise<ResourceType<KubeObject>> {
    return isResourceType(type) ? Promise.resolve(type) : this.mapper.resourceTypeFor(type, signal);
  }

  /** The namespace a request on `type` needs, or an error naming what is missing. */
  #namespace(
    type: ResourceType<KubeObject>,
    namespace: string | undefined,
    what: string,
  ): string | undefined {
    if (type.scope === "Cluster") return undefined;
    if (!namespace) {
      throw new Error(`${what}: a namespace is required, ${type.kind} is namespaced`);
    }
    return namespace;
  }

  #objectPath(type: ResourceType<KubeObject>, obj: KubeObject, subresource?: string): string {
    const name = obj.metadata?.name;
    if (!name) throw new Error(`${describe(obj)}: metadata.name is required`);
    const namespace = this.#namespace(type, obj.metadata?.namespace, describe(obj));
    return resourcePath(type, { namespace, name, subresource });
  }

  /** Sets `apiVersion` and `kind`, which the API leaves out of list items. */
  #typed<T>(type: ResourceType<KubeObject>, obj: Record<string, unknown>): T {
    if (!obj.apiVersion) obj.apiVersion = type.apiVersion;
    if (!obj.kind) obj.kind = type.kind;
    return obj as T;
  }

  get<T extends KubeObject>(
    type: ResourceType<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  get(type: GroupVersionKind, key: ObjectKey, options?: GetOptions): Promise<Unstructured>;
  async get(
    ref: ResourceRef<KubeObject>,
    key: ObjectKey,
    options: GetOptions = {},
  ): Promise<unknown> {
    const type = await this.#resolve(ref, options.signal);
    if (!key?.name) throw new Error(`get ${type.kind}: a name is required`);
    const namespace = this.#namespace(type, key.namespace, `get ${type.kind} ${key.name}`);
    const obj = await this.#rest.request<Record<string, unknown>>({
      path: resourcePath(type, { namespace, name: key.name }),
      query: { resourceVersion: options.resourceVersion },
      signal: options.signal,
    });
    return this.#typed(type, obj);
  }

  list<T extends KubeObject>(type: ResourceType<T>, options?: ListOptions): Promise<ObjectList<T>>;
  list(type: GroupVersionKind, options?: ListOptions): Promise<ObjectList<Unstructured>>;
  async list(ref: ResourceRef<KubeObject>, options: ListOptions = {}): Promise<unknown> {
    const type = await this.#resolve(ref, options.signal);
    const list = await this.#rest.request<ObjectList<Record<string, unknown>>>({
      path: resourcePath(type, { namespace: options.namespace }),
      query: listQuery(options),
      signal: options.signal,
    });
    list.items = (list.items ?? []).map((item) => this.#typed(type, item));
    list.metadata ??= {};
    return list;
  }

  listAll<T extends KubeObject>(type: ResourceType<T>, options?: ListAllOptions): AsyncGenerator<T>;
  listAll(type: GroupVersionKind, options?: ListAllOptions): AsyncGenerator<Unstructured>;
  listAll(ref: ResourceRef<KubeObject>, options?: ListAllOptions): AsyncGenerator<KubeObject> {
    return listPages((page) => this.list(ref, page), options);
  }

  async create<T extends KubeObject>(obj: T, options: CreateOptions = {}): Promise<T> {
    await this.#check(obj, options.signal);
    const type = await this.#resolve(obj, options.signal);
    const namespace = this.#namespace(type, obj.metadata?.namespace, `create ${describe(obj)}`);
    const created = await this.#rest.request<Record<string, unknown>>({
      method: "POST",
      path: resourcePath(type, { namespace }),
      query: writeQuery(options),
      body: obj,
      signal: options.signal,
    });
    return this.#typed(type, created);
  }

  async update<T extends KubeObject>(obj: T, options: UpdateOptions = {}): Promise<T> {
    await this.#check(obj, options.signal);
    return await this.#write("PUT", obj, undefined, obj, "application/json", options);
  }

  async patch<T extends KubeObject>(
    obj: T | DeepReadonly<T>,
    patch: Patch<T>,
    options: PatchOptions = {},
  ): Promise<T> {
    return await this.#write("PATCH", obj, undefined, patch.data(obj), patch.type, options);
  }

  async apply<T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T> {
    return await this.#apply(obj, undefined, options);
  }

  async #apply<T extends KubeObject>(
    obj: T,
    subresource: string | undefined,
    options: ApplyOptions,
  ): Promise<T> {
    if (!options?.fieldManager) {
      throw new Error(`apply ${describe(obj)}: a fieldManager is required for server-side apply`);
    }
    // JSON is YAML, so the object goes as it is under the apply content type.
    return await this.#write(
      "PATCH",
      obj,
      subresource,
      JSON.stringify(obj),
      "application/apply-patch+yaml",
      options,
    );
  }

  async #write<T extends KubeObject>(
    method: "PUT" | "PATCH",
    obj: KubeObject,
    subresource: string | undefined,
    body: unknown,
    contentType: string,
    options: UpdateOptions & { force?: boolean },
  ): Promise<T> {
    const type = await this.#resolve(obj, options.signal);
    const result = await this.#rest.request<Record<string, unknown>>({
      method,
      path: this.#objectPath(type, obj, subresource),
      query: writeQuery(options),
      body,
      contentType,
      signal: options.signal,
    });
    return this.#typed(type, result);
  }

  async delete(
    obj: KubeObject | DeepReadonly<KubeObject>,
    options: DeleteOptions = {},
  ): Promise<void> {
    const type = await this.#resolve(obj, options.signal);
    await this.#rest.request({
      method: "DELETE",
      path: this.#objectPath(type, obj),
      body: deleteBody(options),
      signal: options.signal,
    });
  }

  async deleteAllOf(ref: ResourceRef<KubeObject>, options: DeleteAllOfOptions = {}): Promise<void> {
    const type = await this.#resolve(ref, options.signal);
    const namespace = this.#namespace(type, options.namespace, `deleteAllOf ${type.kind}`);
    await this.#rest.request({
      method: "DELETE",
      path: resourcePath(type, { namespace }),
      query: listQuery(options),
      body: deleteBody(options),
      signal: options.signal,
    });
  }

  status(): SubResourceClient {
    return this.subResource("status");
  }

  subResource(name: string): SubResourceClient {
    if (!name || name.includes("/")) {
      throw new Error(`invalid subresource name ${JSON.stringify(name)}`);
    }
    const get = async <R>(obj: KubeObject, options: GetOptions = {}): Promise<R> => {
      const type = await this.#resolve(obj, options.signal);
      return await this.#rest.request<R>({
        path: this.#objectPath(type, obj, name),
        query: { resourceVersion: options.resourceVersion },
        signal: options.signal,
      });
    };
    const create = async <R>(
      obj: KubeObject,
      body: unknown,
      options: CreateOptions = {},
    ): Promise<R> => {
      const type = await this.#resolve(obj, options.signal);
      return await this.#rest.request<R>({
        method: "POST",
        path: this.#objectPath(type, obj, name),
        query: writeQuery(options),
        body,
        signal: options.signal,
      });
    };
    const update = async <T extends KubeObject, B extends KubeObject = T>(
      obj: T,
      options: UpdateOptions & SubResourceWriteOptions<B> = {},
    ): Promise<B> => {
      const { body, ...rest } = options;
      if (name === "status" && body === undefined) await this.#check(obj, options.signal);
      return await this.#write<B>("PUT", obj, name, body ?? obj, "application/json", rest);
    };
    const patch = <T extends KubeObject, B extends KubeObject = T>(
      obj: T | DeepReadonly<T>,
      patch: Patch<B>,
      options: PatchOptions & SubResourceWriteOptions<B> = {},
    ): Promise<B> => {
      const { body, ...rest } = options;
      // Without a body, the object is the patch's target: a B, as the default B = T says.
      const data = patch.data(body ?? (obj as DeepReadonly<B>));
      return this.#write<B>("PATCH", obj, name, data, patch.type, rest);
    };
    const apply = <T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T> =>
      this.#apply(obj, name, options);
    return { get, create, update, patch, apply };
  }
}

/**
 * Creates a client that talks to the API server directly (no cache), like controller-runtime's
 * `client.New`. Objects written must carry `apiVersion` and `kind`; built-in kinds and types
 * registered with the mapper resolve at once, any other kind through API discovery.
 *
 * @example
 * ```ts
 * import { Deployment, loadConfig, newClient } from "@rudder/operator";
 *
 * const client = newClient(await loadConfig());
 * const web = await client.get(Deployment, { namespace: "default", name: "web" });
 * console.log(web.spec?.replicas); // a number: typed by the Deployment resource type
 * ```
 */
export function newClient(config: KubeConfig, options: ClientOptions = {}): Client {
  const rest = options.rest ?? new RestClient(config, options);
  const mapper = options.mapper ?? new RESTMapper(rest);
  for (const type of options.types ?? []) mapper.register(type);
  return new ApiClient(rest, mapper, options.validate ?? false);
}
