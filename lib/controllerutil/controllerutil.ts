/**
 * What controller-runtime's `controllerutil` package offers a reconciler: create-or-update and
 * create-or-patch of an object through a mutate function, owner and controller references, and
 * finalizers.
 *
 * Objects read from a cache are deep-frozen. The functions here never change a frozen object:
 * `createOrUpdate` and `createOrPatch` hand the mutate function a mutable copy, and the owner
 * reference functions return a changed copy of a frozen object (and change a mutable one in
 * place). The finalizer functions change their object in place and refuse a frozen one.
 *
 * @module
 */

import type { OwnerReference } from "../api/generated/meta_v1.ts";
import type { RESTMapper } from "../api/discovery.ts";
import { type KubeObject, parseApiVersion, type ResourceType } from "../api/resource.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import type { Client, ObjectKey } from "../client/client.ts";
import { createMergePatch, rawPatch } from "../client/patch.ts";
import { isNotFound } from "../kube/errors.ts";
import { jsonClone, jsonEqual } from "../util/json.ts";

// ---------------------------------------------------------------------------------------------
// createOrUpdate and createOrPatch

/** What {@linkcode createOrUpdate} or {@linkcode createOrPatch} did (controller-runtime's `OperationResult`). */
export type OperationResult =
  /** The object existed and the mutate function changed nothing: no write. */
  | "unchanged"
  /** The object did not exist and was created. */
  | "created"
  /** The object existed and was updated (or, by createOrPatch, patched without its status). */
  | "updated"
  /** createOrPatch patched the object and then its status subresource. */
  | "updatedStatus"
  /** createOrPatch patched only the status subresource. */
  | "updatedStatusOnly";

/** Sets the desired state on the object it is given (the object as it is, or a new one). */
export type MutateFn<T> = (obj: T) => void | Promise<void>;

/** The result of {@linkcode createOrUpdate}. */
export interface CreateOrUpdateResult<T> {
  /** What was done. */
  result: "unchanged" | "created" | "updated";
  /** The object as the API server returned it, or the unchanged object. */
  object: T;
}

/** The result of {@linkcode createOrPatch}. */
export interface CreateOrPatchResult<T> {
  /** What was done. */
  result: OperationResult;
  /** The object as the API server last returned it, or the unchanged object. */
  object: T;
}

/**
 * The client {@linkcode createOrUpdate} and {@linkcode createOrPatch} need: a
 * {@linkcode Client}, a `CachedClient` (whose reads are frozen objects) or a `FakeClient`.
 */
export interface ObjectClient extends Pick<Client, "create" | "update" | "patch" | "status"> {
  /** Resolves the object's `apiVersion` and `kind` to its resource type. */
  readonly mapper: RESTMapper;
  /** Reads one object; may return it frozen. */
  get<T extends KubeObject>(type: ResourceType<T>, key: ObjectKey): Promise<T | DeepReadonly<T>>;
}

const MERGE_PATCH = "application/merge-patch+json";

function keyOf(obj: KubeObject, what: string): ObjectKey {
  const name = obj.metadata?.name;
  if (!name) {
    throw new Error(`${what}: ${obj.kind} needs metadata.name to be looked up (got none)`);
  }
  return { namespace: obj.metadata?.namespace || undefined, name };
}

async function mutateChecked<T extends KubeObject>(
  mutate: MutateFn<T>,
  obj: T,
  key: ObjectKey,
): Promise<void> {
  await mutate(obj);
  if (
    (obj.metadata?.name ?? "") !== key.name ||
    (obj.metadata?.namespace || undefined) !== key.namespace
  ) {
    throw new Error("MutateFn cannot mutate object name and/or object namespace");
  }
}

/** The current object, or `undefined` when it does not exist. */
async function current<T extends KubeObject>(
  client: ObjectClient,
  obj: T | DeepReadonly<T>,
  key: ObjectKey,
): Promise<T | DeepReadonly<T> | undefined> {
  const type = await client.mapper.resourceTypeFor(obj as KubeObject) as ResourceType<T>;
  try {
    return await client.get(type, key);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * Creates or updates `obj` in the cluster so that it is what `mutate` makes of it, like
 * controller-runtime's `controllerutil.CreateOrUpdate`. The object is read by its kind,
 * namespace and name (through `client`, so from the cache with the manager's client). When it
 * does not exist, `mutate` is applied to a copy of `obj` and the result is created. When it
 * exists, `mutate` is applied to a mutable copy of the object as read (the other fields of `obj`
 * are not used, so `mutate` must set everything it wants).
 *
 * When it writes: it compares the object as read with the object after `mutate`, structurally
 * (keys in any order, an `undefined` field as absent, lists item by item in order), and sends an
 * `update` when they differ in anything — including a field the API server filled in (a default,
 * such as a container's `imagePullPolicy` or a Service's `clusterIP`) that `mutate` removed or
 * overwrote, or a list `mutate` rebuilt in another order. Equal, it returns `"unchanged"` and
 * sends no request. So a mutate that assigns a whole structure the server defaults into (`spec`,
 * a pod template, a Service's ports) sends an update on every call; the server may find nothing
 * to store once it has defaulted the object again, but the request, its admission and its
 * webhooks run each time (and when the defaults differ, the update's watch event brings the owner
 * back for another reconcile). Set only the fields you own, one by one, and keep the rest as
 * read. Server-side apply (`client.apply(obj, { fieldManager, force: true })`) is the other way:
 * the server merges the fields you send and keeps its defaults.
 *
 * `mutate` must not change the name or namespace. `obj` may be frozen (read from a cache); it is
 * never changed. Status changes are sent with the object, which kinds with a status subresource
 * ignore: use {@linkcode createOrPatch} for those. An update can fail with a Conflict when the
 * object read was stale: return the error from the reconciler, and the request is retried.
 *
 * @example
 * ```ts
 * import { ConfigMap, createOrUpdate, loadConfig, newClient } from "@rudder/operator";
 *
 * const client = newClient(await loadConfig());
 * const { result } = await createOrUpdate(
 *   client,
 *   { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "settings" } },
 *   (cm: ConfigMap) => {
 *     cm.data = { ...cm.data, mode: "fast" };
 *   },
 * );
 * console.log(result); // "created", "updated" or "unchanged"
 * ```
 */
export async function createOrUpdate<T extends KubeObject>(
  client: ObjectClient,
  obj: T | DeepReadonly<T>,
  mutate: MutateFn<T>,
): Promise<CreateOrUpdateResult<T>> {
  const step = await createOrMutate(client, obj, mutate, "createOrUpdate");
  if ("created" in step) return { result: "created", object: step.created };
  const { existing, desired } = step;
  if (jsonEqual(existing, desired)) return { result: "unchanged", object: desired };
  return { result: "updated", object: await client.update(desired) };
}

/**
 * The shared first half of createOrUpdate and createOrPatch: create the object (mutated) when
 * it does not exist, else return the stored object and a mutated copy of it.
 */
async function createOrMutate<T extends KubeObject>(
  client: ObjectClient,
  obj: T | DeepReadonly<T>,
  mutate: MutateFn<T>,
  operation: string,
): Promise<{ created: T } | { existing: T; desired: T }> {
  const key = keyOf(obj as KubeObject, operation);
  const existing = await current(client, obj, key);
  const desired = jsonClone(existing ?? obj) as T;
  await mutateChecked(mutate, desired, key);
  if (existing === undefined) return { created: await client.create(desired) };
  return { existing: existing as T, desired };
}

/** The object without `status`, and its `status`. */
function splitStatus(obj: unknown): { rest: Record<string, unknown>; status: unknown } {
  const { status, ...rest } = obj as Record<string, unknown>;
  return { rest, status };
}

/**
 * Creates or patches `obj` in the cluster so that it is what `mutate` makes of it, like
 * controller-runtime's `controllerutil.CreateOrPatch`. As {@linkcode createOrUpdate}, but an
 * existing object is written with JSON merge patches of what `mutate` changed: first the object
 * without its status (when anything but the status changed), then the `status` subresource with
 * a patch of the status alone (when the status changed). So a status change needs the kind to
 * have a status subresource, as in controller-runtime.
 *
 * Results: `unchanged`, `created`, `updated` (no status change), `updatedStatus` (both) and
 * `updatedStatusOnly`. A create does not write the status of a kind with a status subresource
 * (the API server drops it); the next call patches it, as with controller-runtime.
 *
 * @example
 * ```ts
 * import { createOrPatch, type Deployment, loadConfig, newClient } from "@rudder/operator";
 *
 * const client = newClient(await loadConfig());
 * const { result, object } = await createOrPatch<Deployment>(
 *   client,
 *   { apiVersion: "apps/v1", kind: "Deployment", metadata: { namespace: "default", name: "web" } },
 *   (d) => {
 *     d.metadata!.labels = { ...d.metadata!.labels, tier: "web" };
 *   },
 * );
 * console.log(result, object.metadata?.resourceVersion);
 * ```
 */
export async function createOrPatch<T extends KubeObject>(
  client: ObjectClient,
  obj: T | DeepReadonly<T>,
  mutate: MutateFn<T>,
): Promise<CreateOrPatchResult<T>> {
  const step = await createOrMutate(client, obj, mutate, "createOrPatch");
  if ("created" in step) return { result: "created", object: step.created };
  const { existing, desired } = step;

  const before = splitStatus(existing);
  const after = splitStatus(desired);
  let result: OperationResult = "unchanged";
  let object = desired;
  if (!jsonEqual(before.rest, after.rest)) {
    const body = createMergePatch(before.rest, after.rest);
    object = await client.patch(desired, rawPatch<T>(MERGE_PATCH, body));
    result = "updated";
  }
  const hasStatus = before.status !== undefined || after.status !== undefined;
  if (hasStatus && !jsonEqual(before.status, after.status)) {
    const body = { status: createMergePatch(before.status, after.status) };
    object = await client.status().patch(desired, rawPatch<T>(MERGE_PATCH, body));
    result = result === "updated" ? "updatedStatus" : "updatedStatusOnly";
  }
  return { result, object };
}

// ---------------------------------------------------------------------------------------------
// Owner references

/**
 * The object already has a controller reference to another owner: an object has at most one
 * controller. Controller-runtime's `AlreadyOwnedError`.
 *
 * @example
 * ```ts
 * import { setControllerReference } from "@rudder/operator";
 * import { AlreadyOwnedError } from "@rudder/operator/controllerutil";
 * import type { ConfigMap, Deployment } from "@rudder/operator";
 *
 * declare const owner: Deployment, cm: ConfigMap;
 * try {
 *   setControllerReference(owner, cm);
 * } catch (err) {
 *   if (err instanceof AlreadyOwnedError) console.log(err.owner.kind, err.owner.name);
 * }
 * ```
 */
export class AlreadyOwnedError extends Error {
  /** The object that was to be owned: its kind, namespace and name. */
  readonly object: { kind: string; namespace?: string; name?: string };
  /** The controller reference it already has. */
  readonly owner: OwnerReference;

  /** Builds the error for `object`, which `owner` already controls. */
  constructor(object: KubeObject, owner: DeepReadonly<OwnerReference>) {
    const namespace = object.metadata?.namespace;
    const name = object.metadata?.name;
    super(
      `Object ${namespace ?? ""}/${name ?? ""} is already owned by another ${owner.kind} ` +
        `controller ${owner.name}`,
    );
    this.name = "AlreadyOwnedError";
    this.object = { kind: object.kind, namespace, name };
    this.owner = { ...owner };
  }
}

/** Options of {@linkcode setControllerReference} and {@linkcode setOwnerReference}. */
export interface OwnerReferenceOptions {
  /**
   * `blockOwnerDeletion` of the reference: default `true` for a controller reference, unset
   * for a plain owner reference. Setting it needs permission to delete the owner.
   */
  blockOwnerDeletion?: boolean;
  /**
   * The owner's resource type, to know its scope; without it the owner counts as namespaced
   * when it has `metadata.namespace`.
   */
  ownerType?: ResourceType<KubeObject>;
  /**
   * The owned object's resource type, to know its scope; without it the object counts as
   * namespaced when it has `metadata.namespace`.
   */
  objectType?: ResourceType<KubeObject>;
}

/** The namespace of `obj` as its scope says: `""` for a cluster-scoped object. */
function scopedNamespace(
  obj: KubeObject | DeepReadonly<KubeObject>,
  type: ResourceType<KubeObject> | undefined,
  role: string,
): string {
  if (type?.scope === "Cluster") return "";
  const namespace = obj.metadata?.namespace ?? "";
  if (type?.scope === "Namespaced" && !namespace) {
    throw new Error(
      `${role} ${obj.kind} ${obj.metadata?.name ?? ""} is namespaced but has no metadata.namespace`,
    );
  }
  return namespace;
}

/** Controller-runtime's `validateOwner`: no cross-namespace owners, no namespaced owner of a cluster-scoped object. */
function validateOwner(
  owner: KubeObject | DeepReadonly<KubeObject>,
  obj: KubeObject,
  options: OwnerReferenceOptions,
): void {
  const ownerNamespace = scopedNamespace(owner, options.ownerType, "owner");
  if (!ownerNamespace) return;
  const objectNamespace = scopedNamespace(obj, options.objectType, "object");
  if (!objectNamespace) {
    throw new Error(
      "cluster-scoped resource must not have a namespace-scoped owner, owner's namespace " +
        ownerNamespace,
    );
  }
  if (objectNamespace !== ownerNamespace) {
    throw new Error(
      `cross-namespace owner references are disallowed, owner's namespace ${ownerNamespace}, ` +
        `obj's namespace ${objectNamespace}`,
    );
  }
}

/** A reference to `owner`, without `controller` and `blockOwnerDeletion`. */
function referenceTo(owner: KubeObject | DeepReadonly<KubeObject>, what: string): OwnerReference {
  const missing = [
    ["apiVersion", owner.apiVersion],
    ["kind", owner.kind],
    ["metadata.name", owner.metadata?.name],
    ["metadata.uid", owner.metadata?.uid],
  ].filter(([, value]) => !value).map(([field]) => field);
  if (missing.length > 0) {
    throw new Error(
      `${what}: the owner ${owner.kind ?? "object"} ${owner.metadata?.name ?? ""} has no ` +
        `${missing.join(", ")}; an owner must be read from (or created in) the API server first`,
    );
  }
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata!.name!,
    uid: owner.metadata!.uid!,
  };
}

/** Controller-runtime's `referSameObject`: same group, kind and name; the version may differ. */
function referSameObject(
  a: Pick<OwnerReference, "apiVersion" | "kind" | "name">,
  b: Pick<OwnerReference, "apiVersion" | "kind" | "name">,
): boolean {
  return parseApiVersion(a.apiVersion).group === parseApiVersion(b.apiVersion).group &&
    a.kind === b.kind && a.name === b.name;
}

/**
 * `obj` itself when it can be changed, else (frozen) a mutable copy; either way with a mutable
 * `metadata` the caller may change.
 */
function editable<T extends KubeObject>(obj: T): { target: T; metadata: Record<string, unknown> } {
  const target = (Object.isFrozen(obj) ? jsonClone(obj) : obj) as { metadata?: unknown };
  if (!target.metadata || Object.isFrozen(target.metadata)) {
    target.metadata = jsonClone(target.metadata ?? {});
  }
  return { target: target as T, metadata: target.metadata as Record<string, unknown> };
}

function setOwnerReferences<T extends KubeObject>(obj: T, refs: OwnerReference[]): T {
  const { target, metadata } = editable(obj);
  if (refs.length > 0) metadata.ownerReferences = refs;
  else delete metadata.ownerReferences;
  return target;
}

/** Controller-runtime's `upsertOwnerRef`: replaces a reference to the same object, else appends. */
function upsertOwnerReference<T extends KubeObject>(obj: T, ref: OwnerReference): T {
  const refs = (obj.metadata?.ownerReferences ?? []).map((r) => jsonClone(r) as OwnerReference);
  const index = refs.findIndex((r) => referSameObject(r, ref));
  if (index === -1) refs.push(ref);
  else refs[index] = ref;
  return setOwnerReferences(obj, refs);
}

/**
 * The controller reference of `obj` (the owner reference with `controller: true`), if any.
 * Apimachinery's `metav1.GetControllerOf`.
 *
 * @example
 * ```ts
 * import { type ConfigMap } from "@rudder/operator";
 * import { getControllerOf } from "@rudder/operator/controllerutil";
 *
 * declare const cm: ConfigMap;
 * console.log(getControllerOf(cm)?.name);
 * ```
 */
export function getControllerOf(obj: KubeObject): DeepReadonly<OwnerReference> | undefined {
  return obj.metadata?.ownerReferences?.find((ref) => ref.controller === true);
}

/**
 * Makes `owner` the controller of `controlled`: adds (or replaces) an owner reference to
 * `owner` with `controller: true` and `blockOwnerDeletion: true`, so the garbage collector
 * deletes `controlled` with its owner and `owns()` watches map it to the owner. Like
 * controller-runtime's `controllerutil.SetControllerReference`.
 *
 * A reference to the same owner is one with the same API group, kind and name (the version may
 * differ). `controlled` is changed in place and returned; a frozen `controlled` is left as it is
 * and a changed copy is returned.
 *
 * @throws {AlreadyOwnedError} when another owner is already the controller.
 * @throws {Error} when `owner` is namespaced and `controlled` is cluster-scoped or in another
 * namespace (the garbage collector would delete `controlled` at once), or `owner` has no uid.
 *
 * @example
 * ```ts
 * import { type ConfigMap, type Deployment, setControllerReference } from "@rudder/operator";
 *
 * declare const owner: Deployment;
 * const cm: ConfigMap = {
 *   apiVersion: "v1",
 *   kind: "ConfigMap",
 *   metadata: { namespace: "default", name: "web-settings" },
 * };
 * setControllerReference(owner, cm);
 * console.log(cm.metadata?.ownerReferences?.[0].controller); // true
 * ```
 */
export function setControllerReference<T extends KubeObject>(
  owner: KubeObject | DeepReadonly<KubeObject>,
  controlled: T,
  options: OwnerReferenceOptions = {},
): T {
  validateOwner(owner, controlled, options);
  const ref: OwnerReference = {
    ...referenceTo(owner, "setControllerReference"),
    blockOwnerDeletion: options.blockOwnerDeletion ?? true,
    controller: true,
  };
  const existing = getControllerOf(controlled);
  if (existing && !referSameObject(existing, ref)) {
    throw new AlreadyOwnedError(controlled, existing);
  }
  return upsertOwnerReference(controlled, ref);
}

/**
 * Adds an owner reference to `owner` on `obj`, not as its controller: the garbage collector
 * deletes `obj` once all its owners are gone. A reference to the same owner (API group, kind
 * and name) is replaced. Like controller-runtime's `controllerutil.SetOwnerReference`, this also
 * replaces a controller reference to the same owner with a plain one.
 *
 * `obj` is changed in place and returned; a frozen `obj` is left as it is and a changed copy is
 * returned.
 *
 * @throws {Error} when `owner` is namespaced and `obj` is cluster-scoped or in another namespace.
 *
 * @example
 * ```ts
 * import { type ConfigMap, type Deployment } from "@rudder/operator";
 * import { setOwnerReference } from "@rudder/operator/controllerutil";
 *
 * declare const owner: Deployment, cm: ConfigMap;
 * setOwnerReference(owner, cm);
 * ```
 */
export function setOwnerReference<T extends KubeObject>(
  owner: KubeObject | DeepReadonly<KubeObject>,
  obj: T,
  options: OwnerReferenceOptions = {},
): T {
  validateOwner(owner, obj, options);
  const ref = referenceTo(owner, "setOwnerReference");
  if (options.blockOwnerDeletion !== undefined) ref.blockOwnerDeletion = options.blockOwnerDeletion;
  return upsertOwnerReference(obj, ref);
}

/**
 * Removes the owner reference to `owner` (same API group, kind and name) from `obj`, like
 * controller-runtime's `controllerutil.RemoveOwnerReference`. `obj` is changed in place and
 * returned; a frozen `obj` is left as it is and a changed copy is returned.
 *
 * @throws {Error} when `obj` has no owner references, or none to `owner`.
 *
 * @example
 * ```ts
 * import { type ConfigMap, type Deployment } from "@rudder/operator";
 * import { removeOwnerReference } from "@rudder/operator/controllerutil";
 *
 * declare const owner: Deployment, cm: ConfigMap;
 * removeOwnerReference(owner, cm);
 * ```
 */
export function removeOwnerReference<T extends KubeObject>(owner: KubeObject, obj: T): T {
  const refs = obj.metadata?.ownerReferences ?? [];
  if (refs.length === 0) {
    throw new Error(`${describe(obj)} does not have any owner references`);
  }
  const target = {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata?.name ?? "",
  };
  const index = refs.findIndex((r) => referSameObject(r, target));
  if (index === -1) {
    throw new Error(`${describe(obj)} does not have an owner reference for ${describe(owner)}`);
  }
  const kept = refs.filter((_, i) => i !== index).map((r) => jsonClone(r) as OwnerReference);
  return setOwnerReferences(obj, kept);
}

/**
 * True when `obj` has a controller reference (an owner reference with `controller: true`).
 * Like controller-runtime's `controllerutil.HasControllerReference`.
 *
 * @example
 * ```ts
 * import { type ConfigMap } from "@rudder/operator";
 * import { hasControllerReference } from "@rudder/operator/controllerutil";
 *
 * declare const cm: ConfigMap;
 * if (!hasControllerReference(cm)) console.log("an orphan");
 * ```
 */
export function hasControllerReference(obj: KubeObject): boolean {
  return getControllerOf(obj) !== undefined;
}

/**
 * True when `ownerReferences` holds a reference to `owner`: the same API group, kind and name
 * (the version may differ). Like controller-runtime's `controllerutil.HasOwnerReference`.
 *
 * @example
 * ```ts
 * import { type ConfigMap, type Deployment } from "@rudder/operator";
 * import { hasOwnerReference } from "@rudder/operator/controllerutil";
 *
 * declare const owner: Deployment, cm: ConfigMap;
 * console.log(hasOwnerReference(cm.metadata?.ownerReferences, owner));
 * ```
 */
export function hasOwnerReference(
  ownerReferences: readonly DeepReadonly<OwnerReference>[] | undefined,
  owner: KubeObject,
): boolean {
  const target = {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata?.name ?? "",
  };
  return (ownerReferences ?? []).some((ref) => referSameObject(ref, target));
}

function describe(obj: KubeObject): string {
  const namespace = obj.metadata?.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj.kind} ${namespace}${obj.metadata?.name ?? ""}`;
}

// ---------------------------------------------------------------------------------------------
// Finalizers

/** `obj` with a `metadata` that may be changed; a frozen `obj` is refused. */
function mutableMetadata(obj: KubeObject, what: string): Record<string, unknown> {
  if (Object.isFrozen(obj)) {
    throw new TypeError(
      `${what}: ${describe(obj)} is frozen (read from the cache); clone it ` +
        "(structuredClone) and change the copy",
    );
  }
  return editable(obj).metadata;
}

/**
 * Adds `finalizer` to `obj.metadata.finalizers`, in place, unless it is there; true when it was
 * added. Like controller-runtime's `controllerutil.AddFinalizer`. Write the object afterwards.
 *
 * @throws {TypeError} when `obj` is frozen (read from a cache): change a copy.
 *
 * @example
 * ```ts
 * import { addFinalizer, type ConfigMap } from "@rudder/operator";
 *
 * const cm: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } };
 * console.log(addFinalizer(cm, "example.com/cleanup")); // true
 * console.log(addFinalizer(cm, "example.com/cleanup")); // false: already there
 * ```
 */
export function addFinalizer(obj: KubeObject, finalizer: string): boolean {
  const metadata = mutableMetadata(obj, "addFinalizer");
  const finalizers = (metadata.finalizers ?? []) as string[];
  if (finalizers.includes(finalizer)) return false;
  metadata.finalizers = [...finalizers, finalizer];
  return true;
}

/**
 * Removes every occurrence of `finalizer` from `obj.metadata.finalizers`, in place; true when
 * there was one. Like controller-runtime's `controllerutil.RemoveFinalizer`. Write the object
 * afterwards.
 *
 * @throws {TypeError} when `obj` is frozen (read from a cache): change a copy.
 *
 * @example
 * ```ts
 * import { type ConfigMap, removeFinalizer } from "@rudder/operator";
 *
 * const cm: ConfigMap = {
 *   apiVersion: "v1",
 *   kind: "ConfigMap",
 *   metadata: { name: "a", finalizers: ["example.com/cleanup"] },
 * };
 * console.log(removeFinalizer(cm, "example.com/cleanup"), cm.metadata?.finalizers); // true undefined
 * ```
 */
export function removeFinalizer(obj: KubeObject, finalizer: string): boolean {
  const metadata = mutableMetadata(obj, "removeFinalizer");
  const finalizers = (metadata.finalizers ?? []) as string[];
  const kept = finalizers.filter((f) => f !== finalizer);
  if (kept.length === finalizers.length) return false;
  if (kept.length > 0) metadata.finalizers = kept;
  else delete metadata.finalizers;
  return true;
}

/**
 * True when `obj.metadata.finalizers` holds `finalizer`. Like controller-runtime's
 * `controllerutil.ContainsFinalizer`; `obj` may be frozen.
 *
 * @example
 * ```ts
 * import { type ConfigMap, containsFinalizer } from "@rudder/operator";
 *
 * declare const cm: ConfigMap;
 * if (cm.metadata?.deletionTimestamp && containsFinalizer(cm, "example.com/cleanup")) {
 *   // clean up, then removeFinalizer and update
 * }
 * ```
 */
export function containsFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}
