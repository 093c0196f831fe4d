/**
 * {@linkcode FakeClient}: the verbs of a {@linkcode Client} (reads, writes, apply, deletes,
 * the `status`, `scale` and `eviction` subresources) over the fake's object store, with the
 * checks the real client makes before it sends anything.
 *
 * @module
 */

import { parse as parseYaml } from "yaml";
import { RESTMapper } from "../../api/discovery.ts";
import {
  type GroupVersionKind,
  gvkKey,
  type KubeObject,
  resourcePath,
  type ResourceType,
  type Unstructured,
} from "../../api/resource.ts";
import {
  type Client,
  type ListAllOptions,
  listPages,
  type ObjectKey,
  type ObjectList,
  type ResourceRef,
  type SubResourceClient,
  type SubResourceWriteOptions,
} from "../../client/client.ts";
import type {
  ApplyOptions,
  CreateOptions,
  DeleteAllOfOptions,
  DeleteOptions,
  GetOptions,
  ListOptions,
  PatchOptions,
  UpdateOptions,
} from "../../client/options.ts";
import type { Patch, PatchType } from "../../client/patch.ts";
import type { DeepReadonly } from "../../api/readonly.ts";
import { isJsonObject, jsonClone, type JsonObject } from "../../util/json.ts";
import { CRD_KEY } from "./crd.ts";
import {
  apiError,
  badRequest,
  conflict,
  invalid,
  methodNotAllowed,
  notFound,
  notServed,
  required,
  type Where,
} from "./errors.ts";
import { DEFAULT_FIELD_MANAGER } from "./field_ownership.ts";
import { hasStatus, KnownKinds } from "./kinds.ts";
import { decodeContinue, encodeContinue, selectEntries } from "./list.ts";
import {
  asCallerObject,
  describeObject,
  getPath,
  metadataOf,
  setPath,
  stringAt,
  toJsonObject,
} from "./objects.ts";
import { applyPatch } from "./patches.ts";
import { scaleOf, type ScalePaths } from "./scale.ts";
import { undeclaredField } from "./schema_validation.ts";
import { applyConfiguration } from "./server_side_apply.ts";
import { type Entry, ObjectStore } from "./store.ts";

// ---------------------------------------------------------------------------------------------
// Options

/** Fields a field selector may use for a custom kind, as its CRD's `selectableFields` lists them. */
export interface SelectableFields {
  /** The kind. */
  type: GroupVersionKind;
  /** Field paths without the leading dot, e.g. `spec.color`. */
  fields: string[];
}

/** Options of {@linkcode FakeClient}. */
export interface FakeClientOptions {
  /**
   * Objects the fake starts with, stored as given (copied): only a missing `resourceVersion`
   * is filled in, and custom resources are pruned and defaulted by their schema as the API
   * server reads them, but not validated. CustomResourceDefinitions among them make their
   * kinds known.
   */
  objects?: readonly (KubeObject | Unstructured)[];
  /**
   * Kinds the fake knows besides the built-in ones, e.g. your custom resources. Any other
   * `apiVersion`/`kind` is refused with a {@linkcode NoKindMatchError}, as the real client
   * refuses a kind the API server does not serve. Creating a CustomResourceDefinition through
   * the fake also makes its kinds known. Objects of a type made by `defineResource` (or of a
   * CRD's kind) are defaulted, pruned and validated by its schema on every write.
   */
  types?: ResourceType<KubeObject>[];
  /**
   * Field-selectable fields of custom kinds (`metadata.name` and `metadata.namespace` always
   * are). Like the API server, the fake refuses other fields with BadRequest.
   */
  selectableFields?: SelectableFields[];
  /** The time of creation and deletion timestamps; default `new Date()`. */
  clock?: () => Date;
}

/**
 * An in-memory {@linkcode Client} for unit tests, like controller-runtime's fake client. It
 * behaves as kube-apiserver does, checked by the same contract tests as the real client:
 * creates set uid, creationTimestamp and a resourceVersion (a global counter) and honour
 * `generateName`; every write that changes something gets a new resourceVersion and a stale one
 * is a Conflict; `metadata.generation` counts spec changes of the kinds that have one; status
 * is kept apart for kinds with a `status` subresource; finalizers delay deletion; label and
 * field selectors, `limit`/`continue`, merge/JSON/strategic merge patches, server-side apply,
 * `dryRun`, the `scale` subresource and Pod evictions all work; custom resources are
 * defaulted, pruned and validated by their structural schema (CEL rules excepted); errors are
 * the {@linkcode ApiError}s the server sends. Objects going in and out are copies.
 *
 * To inject failures or observe calls, wrap it with {@linkcode newInterceptedClient}, as
 * controller-runtime's `interceptor.NewClient` wraps its fake.
 *
 * @example Test a reconciler without a cluster, failing its first update
 * ```ts
 * import assert from "node:assert/strict";
 * import { ConfigMap } from "@rudder/operator";
 * import { ApiError, isConflict, newInterceptedClient } from "@rudder/operator/client";
 * import { FakeClient } from "@rudder/operator/testing";
 *
 * const fake = new FakeClient({
 *   objects: [{
 *     apiVersion: "v1",
 *     kind: "ConfigMap",
 *     metadata: { namespace: "default", name: "settings" },
 *     data: { mode: "slow" },
 *   }],
 * });
 * let failed = false;
 * const client = newInterceptedClient(fake, {
 *   // The first update fails as if someone else had written meanwhile.
 *   update: async (inner, obj, options) => {
 *     if (!failed) {
 *       failed = true;
 *       throw new ApiError({ code: 409, reason: "Conflict", message: "try again" });
 *     }
 *     return await inner.update(obj, options);
 *   },
 * });
 *
 * const settings = await client.get(ConfigMap, { namespace: "default", name: "settings" });
 * const changed = { ...settings, data: { mode: "fast" } };
 * await assert.rejects(client.update(changed), isConflict);
 * await client.update(changed);
 * const after = await fake.get(ConfigMap, { namespace: "default", name: "settings" });
 * assert.equal(after.data?.mode, "fast");
 * ```
 */
export class FakeClient implements Client {
  /** Resolves kinds: the built-in ones, `options.types`, and those of CRDs created here. */
  readonly mapper: RESTMapper = new RESTMapper();
  readonly #kinds: KnownKinds;
  readonly #store: ObjectStore;

  /**
   * A fake holding `options.objects`, knowing the built-in kinds and `options.types`.
   *
   * @throws {NoKindMatchError} when an initial object is of a kind the fake does not know.
   */
  constructor(options: FakeClientOptions = {}) {
    this.#kinds = new KnownKinds(this.mapper, options.types ?? [], options.selectableFields ?? []);
    this.#store = new ObjectStore(this.#kinds, options.clock ?? (() => new Date()));
    // CRDs first, so that objects of their kinds can follow them.
    const objects = [...(options.objects ?? [])].sort((a, b) =>
      Number(gvkKey(b) === CRD_KEY) - Number(gvkKey(a) === CRD_KEY)
    );
    for (const obj of objects) {
      this.#store.seed(this.#kinds.typeOf(obj), toJsonObject(obj), describeObject(obj));
    }
  }

  // ---- checks the real client makes before sending anything ----------------------------------

  #namespace(type: ResourceType<KubeObject>, namespace: string | undefined, what: string) {
    if (type.scope === "Cluster") return undefined;
    if (!namespace) throw new Error(`${what}: a namespace is required, ${type.kind} is namespaced`);
    return namespace;
  }

  /** Namespace, name and request path of an existing object, checked as the real client does. */
  #locate(
    type: ResourceType<KubeObject>,
    obj: KubeObject | DeepReadonly<KubeObject>,
    method: string,
    subresource?: string,
  ) {
    const name = obj.metadata?.name;
    if (!name) throw new Error(`${describeObject(obj)}: metadata.name is required`);
    const namespace = this.#namespace(type, obj.metadata?.namespace, describeObject(obj));
    const where = { method, path: resourcePath(type, { namespace, name, subresource }) };
    return { name, namespace, where, key: this.#store.key(type, namespace, name) };
  }

  // ---- reads ---------------------------------------------------------------------------------

  /** Reads one object; rejects with NotFound when it does not exist. */
  get<T extends KubeObject>(
    type: ResourceType<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  /** Reads one object of a kind given by `apiVersion` and `kind`, or by either reference. */
  get<T extends KubeObject = Unstructured>(
    type: ResourceRef<T>,
    key: ObjectKey,
    options?: GetOptions,
  ): Promise<T>;
  async get(ref: ResourceRef<KubeObject>, key: ObjectKey, _options?: GetOptions): Promise<unknown> {
    const type = await this.#kinds.resolve(ref);
    if (!key?.name) throw new Error(`get ${type.kind}: a name is required`);
    const namespace = this.#namespace(type, key.namespace, `get ${type.kind} ${key.name}`);
    const where = { method: "GET", path: resourcePath(type, { namespace, name: key.name }) };
    return jsonClone(this.#store.existing(type, namespace, key.name, where).entry.object);
  }

  /** Reads a page of objects. */
  list<T extends KubeObject>(type: ResourceType<T>, options?: ListOptions): Promise<ObjectList<T>>;
  /** Reads a page of objects of a kind given by `apiVersion` and `kind`, or by either reference. */
  list<T extends KubeObject = Unstructured>(
    type: ResourceRef<T>,
    options?: ListOptions,
  ): Promise<ObjectList<T>>;
  async list(ref: ResourceRef<KubeObject>, options: ListOptions = {}): Promise<unknown> {
    const type = await this.#kinds.resolve(ref);
    const where = { method: "GET", path: resourcePath(type, { namespace: options.namespace }) };
    const { entries, filtered } = this.#select(type, options, where);
    let start = "";
    if (options.continue) start = decodeContinue(options.continue, where);
    const after = entries.filter(([key]) => key >= start);
    const limit = options.limit && options.limit > 0 ? options.limit : Infinity;
    const page = after.slice(0, limit);
    const resourceVersion = this.#store.resourceVersion;
    const metadata: ObjectList<KubeObject>["metadata"] = {
      resourceVersion: String(resourceVersion),
    };
    if (after.length > page.length) {
      metadata.continue = encodeContinue(resourceVersion, page[page.length - 1][0]);
      // The server can count what is left only when nothing is filtered.
      if (!filtered) metadata.remainingItemCount = after.length - page.length;
    }
    return {
      apiVersion: type.apiVersion,
      kind: type.listKind,
      metadata,
      items: page.map(([, entry]) => jsonClone(entry.object)),
    };
  }

  /** Every object of a kind, page by page. */
  listAll<T extends KubeObject>(type: ResourceType<T>, options?: ListAllOptions): AsyncGenerator<T>;
  /** Every object of a kind given by `apiVersion` and `kind`, page by page. */
  listAll(type: GroupVersionKind, options?: ListAllOptions): AsyncGenerator<Unstructured>;
  listAll(ref: ResourceRef<KubeObject>, options: ListAllOptions = {}): AsyncGenerator<KubeObject> {
    return listPages((page) => this.list(ref, page), options);
  }

  /** The entries of `type` that a list's namespace and selectors match, sorted by key. */
  #select(type: ResourceType<KubeObject>, options: ListOptions, where: Where) {
    return selectEntries(type, this.#store.bucket(type).entries(), options, this.#kinds, where);
  }

  // ---- writes --------------------------------------------------------------------------------

  /** Creates `obj`; rejects with AlreadyExists when its name is taken. */
  async create<T extends KubeObject>(obj: T, options: CreateOptions = {}): Promise<T> {
    const type = await this.#kinds.resolve(obj);
    const namespace = this.#namespace(
      type,
      obj.metadata?.namespace,
      `create ${describeObject(obj)}`,
    );
    const where = { method: "POST", path: resourcePath(type, { namespace }) };
    const manager = options.fieldManager ?? DEFAULT_FIELD_MANAGER;
    const created = this.#store.create(
      type,
      toJsonObject(obj),
      manager,
      "Update",
      options.dryRun,
      where,
    );
    return asCallerObject<T>(created);
  }

  /** Replaces `obj`; rejects with Conflict when its resourceVersion is stale. */
  async update<T extends KubeObject>(obj: T, options: UpdateOptions = {}): Promise<T> {
    return asCallerObject<T>(await this.#update(obj, "", options));
  }

  async #update(
    obj: KubeObject,
    subresource: "" | "status",
    options: UpdateOptions,
  ): Promise<JsonObject> {
    const type = await this.#kinds.resolve(obj);
    const { name, key, where } = this.#locate(type, obj, "PUT", subresource || undefined);
    if (subresource === "status" && !hasStatus(type)) throw notServed(where);
    const entry = this.#store.bucket(type).get(key);
    if (!entry) throw notFound(type, name, where);
    const incoming = toJsonObject(obj);
    return this.#store.updateEntry(type, key, entry, incoming, subresource, options, where);
  }

  /** Patches `obj` (only read) with the body `patch` computes for it. */
  async patch<T extends KubeObject>(
    obj: T | DeepReadonly<T>,
    patch: Patch<T>,
    options: PatchOptions = {},
  ): Promise<T> {
    return asCallerObject<T>(await this.#patch(obj, patch.type, patch.data(obj), "", options));
  }

  async #patch(
    obj: KubeObject | DeepReadonly<KubeObject>,
    patchType: PatchType,
    body: unknown,
    subresource: "" | "status",
    options: PatchOptions,
  ): Promise<JsonObject> {
    const type = await this.#kinds.resolve(obj);
    const { name, key, where } = this.#locate(type, obj, "PATCH", subresource || undefined);
    if (subresource === "status" && !hasStatus(type)) throw notServed(where);
    if (patchType === "application/apply-patch+yaml") {
      if (!options.fieldManager) {
        throw invalid({ kind: "PatchOptions", group: "meta.k8s.io" }, "", [
          required("fieldManager", "is required for apply patch"),
        ], where);
      }
      const config = typeof body === "string" ? parseYaml(body) : body;
      if (!isJsonObject(config)) {
        throw badRequest("the apply configuration must be an object", where);
      }
      return this.#apply(type, config, subresource, {
        ...options,
        fieldManager: options.fieldManager,
      }, where);
    }
    const entry = this.#store.bucket(type).get(key);
    if (!entry) throw notFound(type, name, where);
    const patched = applyPatch(type, entry.object, patchType, body, where);
    const meta = metadataOf(patched);
    // A patch is conditional only when it carries a resourceVersion.
    if (!meta.resourceVersion) meta.resourceVersion = metadataOf(entry.object).resourceVersion;
    return this.#store.updateEntry(type, key, entry, patched, subresource, options, where);
  }

  /** Server-side apply of `obj` by `options.fieldManager`. */
  async apply<T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T> {
    return asCallerObject<T>(await this.#applyObject(obj, "", options));
  }

  async #applyObject(
    obj: KubeObject,
    subresource: "" | "status",
    options: ApplyOptions,
  ): Promise<JsonObject> {
    if (!options?.fieldManager) {
      throw new Error(
        `apply ${describeObject(obj)}: a fieldManager is required for server-side apply`,
      );
    }
    const type = await this.#kinds.resolve(obj);
    const { where } = this.#locate(type, obj, "PATCH", subresource || undefined);
    if (subresource === "status" && !hasStatus(type)) throw notServed(where);
    return this.#apply(type, toJsonObject(obj), subresource, options, where);
  }

  /** Server-side apply of `config`: a create when the object does not exist yet. */
  #apply(
    type: ResourceType<KubeObject>,
    config: JsonObject,
    subresource: "" | "status",
    options: ApplyOptions,
    where: Where,
  ): JsonObject {
    const meta = metadataOf(config);
    const name = String(meta.name);
    const schema = this.#kinds.schema(type);
    const undeclared = schema && undeclaredField(config, schema);
    if (undeclared) {
      // The server cannot type the configuration, so it fails before anything else is checked.
      throw apiError(
        where,
        500,
        "InternalError",
        `failed to create typed patch object (${stringAt(meta, "namespace") ?? ""}/${name}; ` +
          `${type.apiVersion}, Kind=${type.kind}): ${undeclared}: field not declared in schema`,
      );
    }
    const key = this.#store.key(type, stringAt(meta, "namespace"), name);
    const entry = this.#store.bucket(type).get(key);
    if (!entry) {
      if (subresource === "status") throw notFound(type, name, where);
      return this.#store.create(type, config, options.fieldManager, "Apply", options.dryRun, where);
    }
    if (meta.resourceVersion && meta.resourceVersion !== metadataOf(entry.object).resourceVersion) {
      throw conflict(type, name, where);
    }
    const { merged, leaves } = applyConfiguration(type, entry, config, subresource, options, where);
    const next = this.#store.prepareUpdate(type, entry, merged, subresource);
    return this.#store.commit(
      type,
      key,
      entry,
      next,
      { manager: options.fieldManager, operation: "Apply", subresource, applied: leaves },
      options.dryRun,
      where,
    );
  }

  /** Deletes `obj` (only read), or marks it for deletion while it has finalizers. */
  async delete(
    obj: KubeObject | DeepReadonly<KubeObject>,
    options: DeleteOptions = {},
  ): Promise<void> {
    const type = await this.#kinds.resolve(obj);
    const { name, key, where } = this.#locate(type, obj, "DELETE");
    this.#store.delete(type, key, name, options, where);
  }

  /** Deletes every object of a kind that matches the selectors, in one namespace. */
  async deleteAllOf(ref: ResourceRef<KubeObject>, options: DeleteAllOfOptions = {}): Promise<void> {
    const type = await this.#kinds.resolve(ref);
    const namespace = this.#namespace(type, options.namespace, `deleteAllOf ${type.kind}`);
    const where = { method: "DELETE", path: resourcePath(type, { namespace }) };
    const { limit: _limit, continue: _continue, ...selection } = options;
    for (const [key, entry] of this.#select(type, selection, where).entries) {
      const name = String(getPath(entry.object, ["metadata", "name"]));
      this.#store.delete(type, key, name, options, where);
    }
  }

  // ---- subresources --------------------------------------------------------------------------

  /** The `status` subresource. */
  status(): SubResourceClient {
    return this.subResource("status");
  }

  /** A subresource by name: `status`, `scale` and `eviction` are served. */
  subResource(name: string): SubResourceClient {
    if (!name || name.includes("/")) {
      throw new Error(`invalid subresource name ${JSON.stringify(name)}`);
    }
    // The subresource's answer is JSON the caller names the type of, as with the real client.
    return {
      get: <R>(obj: KubeObject, options?: GetOptions) =>
        this.#subGet(name, obj, options) as Promise<R>,
      create: <R>(obj: KubeObject, body: unknown, options?: CreateOptions) =>
        this.#subCreate(name, obj, body, options) as Promise<R>,
      update: async <T extends KubeObject, B extends KubeObject = T>(
        obj: T,
        options: UpdateOptions & SubResourceWriteOptions<B> = {},
      ): Promise<B> => asCallerObject<B>(await this.#subUpdate(name, obj, options)),
      patch: async <T extends KubeObject, B extends KubeObject = T>(
        obj: T | DeepReadonly<T>,
        patch: Patch<B>,
        options: PatchOptions & SubResourceWriteOptions<B> = {},
      ): Promise<B> => {
        const { body, ...rest } = options;
        // Without a body, the object is the patch's target: a B, as the default B = T says.
        const target: Patch<KubeObject> = patch;
        const data = target.data(body ?? obj);
        return asCallerObject<B>(await this.#subPatch(name, obj, patch.type, data, rest));
      },
      apply: async <T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T> =>
        asCallerObject<T>(await this.#subApply(name, obj, options)),
    };
  }

  async #subGet(name: string, obj: KubeObject, options?: GetOptions): Promise<unknown> {
    const type = await this.#kinds.resolve(obj);
    const { where } = this.#locate(type, obj, "GET", name);
    if (name === "status" && hasStatus(type)) {
      return await this.get(
        type,
        { namespace: obj.metadata?.namespace, name: obj.metadata!.name! },
        options,
      );
    }
    const scale = name === "scale" ? this.#kinds.scalePaths(type) : undefined;
    if (!scale) throw notServed(where);
    return scaleOf(type, scale, this.#existing(type, obj, where).entry.object, where);
  }

  async #subCreate(name: string, obj: KubeObject, body: unknown, options: CreateOptions = {}) {
    const type = await this.#kinds.resolve(obj);
    const { where } = this.#locate(type, obj, "POST", name);
    if (name === "eviction" && gvkKey(type) === "v1/Pod") {
      const { key } = this.#existing(type, obj, where);
      // The Eviction's deleteOptions are JSON of DeleteOptions' shape, as the server reads them.
      const deleteOptions = isJsonObject(body) && isJsonObject(body.deleteOptions)
        ? body.deleteOptions as DeleteOptions
        : {};
      this.#store.delete(
        type,
        key,
        obj.metadata!.name!,
        { ...deleteOptions, dryRun: options.dryRun },
        where,
      );
      return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success", code: 201 };
    }
    if (name === "status" || name === "scale") throw methodNotAllowed(where);
    throw notServed(where);
  }

  async #subUpdate(
    name: string,
    obj: KubeObject,
    options: UpdateOptions & SubResourceWriteOptions<KubeObject>,
  ): Promise<JsonObject> {
    const { body, ...rest } = options;
    if (name === "status") return await this.#update(obj, "status", rest);
    const type = await this.#kinds.resolve(obj);
    const { where } = this.#locate(type, obj, "PUT", name);
    const scale = name === "scale" ? this.#kinds.scalePaths(type) : undefined;
    if (!scale) throw notServed(where);
    const { entry } = this.#existing(type, obj, where);
    return this.#writeScale(type, scale, obj, toJsonObject(body ?? obj), rest, where, entry);
  }

  async #subPatch(
    name: string,
    obj: KubeObject | DeepReadonly<KubeObject>,
    patchType: PatchType,
    data: unknown,
    options: PatchOptions,
  ): Promise<JsonObject> {
    if (name === "status") return await this.#patch(obj, patchType, data, "status", options);
    const type = await this.#kinds.resolve(obj);
    const { where } = this.#locate(type, obj, "PATCH", name);
    const scale = name === "scale" ? this.#kinds.scalePaths(type) : undefined;
    if (!scale) throw notServed(where);
    const { entry } = this.#existing(type, obj, where);
    const current = scaleOf(type, scale, entry.object, where);
    const scaleType = { apiVersion: "autoscaling/v1", kind: "Scale" };
    const patched = applyPatch(scaleType, current, patchType, data, where);
    return this.#writeScale(type, scale, obj, patched, options, where, entry);
  }

  async #subApply(name: string, obj: KubeObject, options: ApplyOptions): Promise<JsonObject> {
    if (name === "status") return await this.#applyObject(obj, "status", options);
    const type = await this.#kinds.resolve(obj);
    const { where } = this.#locate(type, obj, "PATCH", name);
    throw name === "scale" && this.#kinds.scalePaths(type)
      ? methodNotAllowed(where)
      : notServed(where);
  }

  #existing(
    type: ResourceType<KubeObject>,
    obj: KubeObject | DeepReadonly<KubeObject>,
    where: Where,
  ): { key: string; entry: Entry } {
    return this.#store.existing(type, obj.metadata?.namespace, obj.metadata!.name!, where);
  }

  /** Sets the object's replicas from a Scale and answers with the new Scale. */
  #writeScale(
    type: ResourceType<KubeObject>,
    paths: ScalePaths,
    obj: KubeObject | DeepReadonly<KubeObject>,
    scale: JsonObject,
    options: UpdateOptions,
    where: Where,
    entry: Entry,
  ): JsonObject {
    if (scale.kind !== undefined && scale.kind !== "Scale") {
      throw badRequest(`the body must be an autoscaling/v1 Scale, not a ${scale.kind}`, where);
    }
    const name = obj.metadata!.name!;
    const meta = isJsonObject(scale.metadata) ? scale.metadata : {};
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(
        `the name of the object (${meta.name}) does not match the name on the URL (${name})`,
        where,
      );
    }
    if (
      meta.resourceVersion &&
      meta.resourceVersion !== getPath(entry.object, ["metadata", "resourceVersion"])
    ) {
      throw conflict(type, name, where);
    }
    const incoming = jsonClone(entry.object);
    setPath(incoming, paths.specReplicas, Number(getPath(scale, ["spec", "replicas"]) ?? 0));
    const next = this.#store.prepareUpdate(type, entry, incoming, "");
    const key = this.#store.key(type, obj.metadata?.namespace, name);
    const manager = options.fieldManager ?? DEFAULT_FIELD_MANAGER;
    const written = this.#store.commit(
      type,
      key,
      entry,
      next,
      { manager, operation: "Update", subresource: "scale" },
      options.dryRun,
      where,
    );
    return scaleOf(type, paths, written, where);
  }
}
