/**
 * An in-memory {@linkcode Client} for unit tests: the counterpart of controller-runtime's fake
 * client. It keeps objects in memory and answers every verb the way kube-apiserver does —
 * uids, resourceVersions, generations, finalizers, status and scale subresources, selectors,
 * paging, patches, server-side apply, dry runs and the API errors — so a reconciler can be
 * tested without a control plane. The contract suite in `tests/contract/` runs the same
 * scenarios against this client and against a real kube-apiserver.
 *
 * What it does not do: defaulting (a Deployment keeps the fields you gave it), schema
 * validation beyond names and labels, admission (namespaces need not exist), garbage
 * collection (`propagationPolicy` is accepted and ignored), watches, and PodDisruptionBudget
 * checks on evictions. Failures are injected by wrapping it with `newInterceptedClient`.
 *
 * @module
 */

import { parse as parseYaml } from "yaml";
import { NoKindMatchError, RESTMapper } from "../api/discovery.ts";
import { parseFieldSelector, parseLabelSelector, SelectorError } from "../cache/selector.ts";
import { builtinResourceType } from "../api/builtins.ts";
import {
  type GroupVersionKind,
  gvkKey,
  isResourceType,
  type KubeObject,
  resourcePath,
  type ResourceType,
  resourceType,
  type Unstructured,
} from "../api/resource.ts";
import {
  type Client,
  type ListAllOptions,
  listPages,
  type ObjectKey,
  type ObjectList,
  type ResourceRef,
  type SubResourceClient,
  type SubResourceWriteOptions,
} from "../client/client.ts";
import type {
  ApplyOptions,
  CreateOptions,
  DeleteAllOfOptions,
  DeleteOptions,
  GetOptions,
  LabelSelectorObject,
  ListOptions,
  PatchOptions,
  UpdateOptions,
} from "../client/options.ts";
import { applyMergePatch, type Patch, type PatchType } from "../client/patch.ts";
import { applyJsonPatch, type JsonPatchOperation } from "../client/json_patch.ts";
import { applyStrategicMergePatch, schemaForKind } from "../client/strategic_merge.ts";
import { ApiError, type StatusCause, type StatusDetails } from "../kube/errors.ts";
import { isJsonObject, jsonClone, jsonEqual, type JsonObject } from "../util/json.ts";
import type { DeepReadonly } from "../api/readonly.ts";

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
   * is filled in. CustomResourceDefinitions among them make their kinds known.
   */
  objects?: readonly (KubeObject | Unstructured)[];
  /**
   * Kinds the fake knows besides the built-in ones, e.g. your custom resources. Any other
   * `apiVersion`/`kind` is refused with a {@linkcode NoKindMatchError}, as the real client
   * refuses a kind the API server does not serve. Creating a CustomResourceDefinition through
   * the fake also makes its kinds known.
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

// ---------------------------------------------------------------------------------------------
// Constants: how kube-apiserver 1.36 treats each kind

/** The manager of writes without `fieldManager`: the real client's User-Agent product. */
const DEFAULT_FIELD_MANAGER = "rudder";
/** The manager the API server assigns existing fields to when an object is first applied. */
const BEFORE_FIRST_APPLY = "before-first-apply";
const GENERATE_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789";
const MAX_GENERATE_NAME_PREFIX = 58;
const NOT_SERVED = "the server could not find the requested resource";
const MODIFIED =
  "the object has been modified; please apply your changes to the latest version and try again";
const CRD_KEY = "apiextensions.k8s.io/v1/CustomResourceDefinition";

const spec = (obj: JsonObject): unknown => obj.spec;
const webhooks = (obj: JsonObject): unknown => obj.webhooks;

/**
 * Built-in kinds whose strategy sets `metadata.generation` (1 on create), and what must change
 * for it to grow. A Deployment counts annotation changes too, because they are copied to its
 * ReplicaSets. Other built-in kinds (ConfigMap, Secret, Service, …) have no generation.
 */
const GENERATION_INPUTS: Record<string, (obj: JsonObject) => unknown> = {
  "apps/v1/Deployment": (obj) => [obj.spec, (obj.metadata as JsonObject | undefined)?.annotations],
  "apps/v1/StatefulSet": spec,
  "apps/v1/DaemonSet": spec,
  "apps/v1/ReplicaSet": spec,
  "batch/v1/Job": spec,
  "batch/v1/CronJob": spec,
  "v1/Pod": spec,
  "policy/v1/PodDisruptionBudget": spec,
  "networking.k8s.io/v1/NetworkPolicy": spec,
  "networking.k8s.io/v1/Ingress": spec,
  [CRD_KEY]: spec,
  "admissionregistration.k8s.io/v1/ValidatingWebhookConfiguration": webhooks,
  "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration": webhooks,
};

/** Kinds whose `status` writes also keep the stored labels (their strategies reset them). */
const STATUS_KEEPS_LABELS = new Set([
  "apps/v1/Deployment",
  "apps/v1/StatefulSet",
  "apps/v1/DaemonSet",
  "apps/v1/ReplicaSet",
]);

/** Field selectors the API server supports beyond `metadata.name` and `metadata.namespace`. */
const BUILTIN_SELECTABLE_FIELDS: Record<string, string[]> = {
  "v1/Pod": [
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
  ],
  "v1/Event": [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
  ],
  "v1/Secret": ["type"],
  "v1/Namespace": ["status.phase"],
  "v1/Node": ["spec.unschedulable"],
  "v1/Service": ["spec.clusterIP", "spec.type"],
  "apps/v1/ReplicaSet": ["status.replicas"],
  "batch/v1/Job": ["status.successful"],
};

/** Field values that are not found at their own path. */
const FIELD_VALUES: Record<string, (obj: JsonObject) => unknown> = {
  "v1/Event source": (obj) => (obj.source as JsonObject | undefined)?.component,
  "v1/Pod spec.hostNetwork": (obj) => (obj.spec as JsonObject | undefined)?.hostNetwork ?? false,
  "v1/Secret type": (obj) => obj.type ?? "Opaque",
};

/** Where the `scale` subresource finds replicas and the selector. */
interface ScalePaths {
  specReplicas: string[];
  statusReplicas: string[];
  /** Path of the selector string (custom kinds); built-in kinds format `spec.selector`. */
  labelSelector?: string[];
  /** The server defaults built-in kinds' `spec.replicas` to 1. */
  defaultReplicas?: number;
}

const BUILTIN_SCALE: ScalePaths = {
  specReplicas: ["spec", "replicas"],
  statusReplicas: ["status", "replicas"],
  defaultReplicas: 1,
};

const BUILTIN_SCALABLE = new Set([
  "apps/v1/Deployment",
  "apps/v1/StatefulSet",
  "apps/v1/ReplicaSet",
]);

/** `metadata` fields the server owns: never taken from a write, never owned by a manager. */
const SYSTEM_METADATA = new Set([
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "selfLink",
]);

// ---------------------------------------------------------------------------------------------
// Errors, shaped as the API server shapes them

/** Method and path of the request a real client would have sent, for error messages. */
interface Where {
  method: string;
  path: string;
}

function apiError(
  where: Where,
  code: number,
  reason: string,
  message: string,
  details?: StatusDetails,
  cause?: unknown,
): ApiError {
  return new ApiError(
    {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason,
      details,
      code,
    },
    { method: where.method, path: where.path, cause },
  );
}

/** `deployments.apps`, or `configmaps` in the core group. */
function qualifiedResource(type: ResourceType<KubeObject>): string {
  return type.group ? `${type.plural}.${type.group}` : type.plural;
}

function resourceDetails(type: ResourceType<KubeObject>, name: string): StatusDetails {
  return { name, ...(type.group ? { group: type.group } : {}), kind: type.plural };
}

function notFound(type: ResourceType<KubeObject>, name: string, where: Where): ApiError {
  return apiError(
    where,
    404,
    "NotFound",
    `${qualifiedResource(type)} "${name}" not found`,
    resourceDetails(type, name),
  );
}

function notServed(where: Where): ApiError {
  return apiError(where, 404, "NotFound", NOT_SERVED, {});
}

function methodNotAllowed(where: Where): ApiError {
  return apiError(
    where,
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
    {},
  );
}

function alreadyExists(type: ResourceType<KubeObject>, name: string, where: Where): ApiError {
  return apiError(
    where,
    409,
    "AlreadyExists",
    `${qualifiedResource(type)} "${name}" already exists`,
    resourceDetails(type, name),
  );
}

function conflict(
  type: ResourceType<KubeObject>,
  name: string,
  where: Where,
  detail = MODIFIED,
): ApiError {
  return apiError(
    where,
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedResource(type)} "${name}": ${detail}`,
    resourceDetails(type, name),
  );
}

function badRequest(message: string, where: Where): ApiError {
  return apiError(where, 400, "BadRequest", message);
}

/** A 422 Invalid about `subject` (e.g. `ConfigMap` or `Widget.example.com`) named `name`. */
function invalid(
  subject: { kind: string; group: string },
  name: string,
  causes: StatusCause[],
  where: Where,
): ApiError {
  const what = subject.group ? `${subject.kind}.${subject.group}` : subject.kind;
  const list = causes.map((cause) => `${cause.field}: ${cause.message}`);
  const text = list.length === 1 ? list[0] : `[${list.join(", ")}]`;
  return apiError(where, 422, "Invalid", `${what} "${name}" is invalid: ${text}`, {
    ...(name ? { name } : {}),
    ...(subject.group ? { group: subject.group } : {}),
    kind: subject.kind,
    causes,
  });
}

/** The API server's answer to a patch it could not apply (a failed JSON patch `test`, …). */
function unprocessablePatch(where: Where, cause: unknown): ApiError {
  return apiError(
    where,
    422,
    "Invalid",
    "the server rejected our request due to an error in our request",
    {},
    cause,
  );
}

const required = (field: string, detail: string): StatusCause => ({
  reason: "FieldValueRequired",
  message: `Required value: ${detail}`,
  field,
});

const invalidValue = (field: string, value: unknown, detail: string): StatusCause => ({
  reason: "FieldValueInvalid",
  message: `Invalid value: ${JSON.stringify(value)}: ${detail}`,
  field,
});

const forbidden = (field: string, detail: string): StatusCause => ({
  reason: "FieldValueForbidden",
  message: `Forbidden: ${detail}`,
  field,
});

// ---------------------------------------------------------------------------------------------
// Names and labels, validated as apimachinery does

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const SUBDOMAIN_MESSAGE =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric " +
  "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. " +
  "'example.com', regex used for validation is " +
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MESSAGE = "a lowercase RFC 1123 label must consist of lower case alphanumeric " +
  "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  " +
  "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MESSAGE = "a DNS-1035 label must consist of lower case alphanumeric characters or " +
  "'-', start with an alphabetic character, and end with an alphanumeric character (e.g. " +
  "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const NAME_PART_MESSAGE = "name part must consist of alphanumeric characters, '-', '_' or '.', " +
  "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or " +
  "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MESSAGE = "a valid label must be an empty string or consist of alphanumeric " +
  "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. " +
  "'MyValue',  or 'my_value',  or '12345', regex used for validation is " +
  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/** What is wrong with `name` as the name of a `type` object, if anything. */
function nameProblems(type: ResourceType<KubeObject>, name: string): string[] {
  if (type.group === "rbac.authorization.k8s.io") {
    // RBAC names are path segments, so `system:controller:x` is valid.
    if (name === "." || name === "..") return [`may not be '${name}'`];
    const bad = ["/", "%"].filter((c) => name.includes(c));
    return bad.map((c) => `may not contain '${c}'`);
  }
  if (type.group === "" && type.kind === "Namespace") {
    const problems = name.length > 63 ? ["must be no more than 63 characters"] : [];
    return DNS1123_LABEL.test(name) ? problems : [...problems, LABEL_MESSAGE];
  }
  if (type.group === "" && type.kind === "Service") {
    const problems = name.length > 63 ? ["must be no more than 63 characters"] : [];
    return DNS1035_LABEL.test(name) ? problems : [...problems, DNS1035_MESSAGE];
  }
  const problems = name.length > 253 ? ["must be no more than 253 characters"] : [];
  return DNS1123_SUBDOMAIN.test(name) ? problems : [...problems, SUBDOMAIN_MESSAGE];
}

function labelCauses(labels: unknown): StatusCause[] {
  if (!isJsonObject(labels)) return [];
  const causes: StatusCause[] = [];
  const field = "metadata.labels";
  for (const [key, value] of Object.entries(labels)) {
    const slash = key.indexOf("/");
    const prefix = slash === -1 ? undefined : key.slice(0, slash);
    const namePart = slash === -1 ? key : key.slice(slash + 1);
    if (prefix !== undefined && (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
      causes.push(invalidValue(field, key, `prefix part ${SUBDOMAIN_MESSAGE}`));
    }
    if (namePart.length === 0) causes.push(invalidValue(field, key, "name part must be non-empty"));
    else if (namePart.length > 63) {
      causes.push(invalidValue(field, key, "name part must be no more than 63 bytes"));
    } else if (!QUALIFIED_NAME_PART.test(namePart)) {
      causes.push(invalidValue(field, key, NAME_PART_MESSAGE));
    }
    if (typeof value !== "string") continue;
    if (value.length > 63) causes.push(invalidValue(field, value, "must be no more than 63 bytes"));
    else if (!LABEL_VALUE.test(value)) causes.push(invalidValue(field, value, LABEL_VALUE_MESSAGE));
  }
  return causes;
}

// ---------------------------------------------------------------------------------------------
// Paths into objects

type Path = readonly string[];

function getPath(value: unknown, path: Path): unknown {
  let node = value;
  for (const key of path) {
    if (!isJsonObject(node)) return undefined;
    node = node[key];
  }
  return node;
}

function setPath(target: JsonObject, path: Path, value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (!isJsonObject(node[key])) node[key] = {};
    node = node[key] as JsonObject;
  }
  node[path[path.length - 1]] = value;
}

/** Removes the value at `path`, then every object on the way that it left empty. */
function deletePath(target: JsonObject, path: Path): void {
  const parents: JsonObject[] = [];
  let node: unknown = target;
  for (const key of path.slice(0, -1)) {
    if (!isJsonObject(node)) return;
    parents.push(node);
    node = node[key];
  }
  if (!isJsonObject(node)) return;
  delete node[path[path.length - 1]];
  for (let depth = path.length - 2; depth >= 0; depth--) {
    const child = depth === path.length - 2 ? node : getPath(target, path.slice(0, depth + 1));
    if (!isJsonObject(child) || Object.keys(child).length > 0) break;
    delete parents[depth][path[depth]];
  }
}

/** True when one path is a prefix of the other: owning one means owning part of the other. */
function overlaps(a: Path, b: Path): boolean {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The leaf fields of an object that field managers own: scalars, lists (owned whole) and empty
 * objects, leaving out `apiVersion`, `kind` and the metadata the server sets.
 */
function ownedLeaves(obj: unknown): Path[] {
  const leaves: Path[] = [];
  const walk = (value: unknown, path: string[]) => {
    if (isJsonObject(value) && (path.length === 0 || Object.keys(value).length > 0)) {
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined || item === null) continue;
        if (path.length === 0 && (key === "apiVersion" || key === "kind")) continue;
        if (path.length === 1 && path[0] === "metadata" && SYSTEM_METADATA.has(key)) continue;
        walk(item, [...path, key]);
      }
    } else if (path.length > 0) leaves.push(path);
  };
  walk(obj, []);
  return leaves;
}

/** The owned leaves that a write from `before` to `after` set, changed or removed. */
function changedLeaves(before: unknown, after: unknown): Path[] {
  const changed = ownedLeaves(after).filter((path) =>
    !jsonEqual(getPath(before, path), getPath(after, path))
  );
  const removed = ownedLeaves(before).filter((path) => getPath(after, path) === undefined);
  return [...changed, ...removed];
}

// ---------------------------------------------------------------------------------------------
// Selectors

/** Parses a selector as the API server would, refusing a malformed one with BadRequest. */
function selecting<S>(parse: () => S, where: Where): S {
  try {
    return parse();
  } catch (err) {
    if (err instanceof SelectorError) throw apiError(where, 400, "BadRequest", err.message);
    throw err;
  }
}

/** A field's value as the API server's field sets hold it: missing is `""`. */
function fieldText(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : String(value);
}

/** The Scale's selector string of a LabelSelector object, in Go's canonical form. */
function selectorString(selector: unknown): string | undefined {
  if (!isJsonObject(selector)) return undefined;
  try {
    return parseLabelSelector(selector as LabelSelectorObject).toString();
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function describeObject(obj: KubeObject): string {
  const name = obj.metadata?.name ?? obj.metadata?.generateName ?? "(no name)";
  const ns = obj.metadata?.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj.kind} ${ns}${name}`;
}

function timestamp(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}

function base64(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function metadataOf(obj: JsonObject): JsonObject {
  if (!isJsonObject(obj.metadata)) obj.metadata = {};
  return obj.metadata as JsonObject;
}

function isBuiltin(type: ResourceType<KubeObject>): boolean {
  return builtinResourceType(type) !== undefined ||
    schemaForKind(type.apiVersion, type.kind) !== undefined;
}

function hasStatus(type: ResourceType<KubeObject>): boolean {
  return type.subresources.includes("status");
}

/** Whether an update without `metadata.resourceVersion` is accepted (custom resources refuse). */
function allowsUnconditionalUpdate(type: ResourceType<KubeObject>): boolean {
  return isBuiltin(type) && gvkKey(type) !== CRD_KEY;
}

/** What must change for the generation to grow; `undefined` for kinds without a generation. */
function generationInput(
  type: ResourceType<KubeObject>,
): ((obj: JsonObject) => unknown) | undefined {
  const builtin = GENERATION_INPUTS[gvkKey(type)];
  if (builtin) return builtin;
  if (isBuiltin(type)) return undefined;
  // Custom resources: everything but metadata, and but status when it is a subresource.
  const withStatus = !hasStatus(type);
  return (obj) => {
    const { metadata: _metadata, status, ...rest } = obj;
    return withStatus ? { ...rest, status } : rest;
  };
}

type Operation = "Update" | "Apply";

/** A field manager: its name, whether it updates or applies, and through which subresource. */
function managerKey(name: string, operation: Operation, subresource: string): string {
  return JSON.stringify([name, operation, subresource]);
}

/** One stored object and which manager owns which of its fields. */
interface Entry {
  object: JsonObject;
  managers: Map<string, Map<string, Path>>;
}

/** The kinds a CustomResourceDefinition serves, with their scale paths and selectable fields. */
interface ServedKind {
  type: ResourceType<KubeObject>;
  scale?: ScalePaths;
  selectableFields: string[];
}

function jsonPathToPath(jsonPath: unknown): string[] | undefined {
  if (typeof jsonPath !== "string" || !jsonPath.startsWith(".")) return undefined;
  return jsonPath.slice(1).split(".");
}

function servedKinds(crd: JsonObject): ServedKind[] {
  const spec = isJsonObject(crd.spec) ? crd.spec : {};
  const names = isJsonObject(spec.names) ? spec.names : {};
  const kind = names.kind;
  const group = spec.group;
  if (typeof kind !== "string" || typeof group !== "string" || typeof names.plural !== "string") {
    return [];
  }
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isJsonObject) : [];
  return versions.filter((version) => version.served !== false).map((version) => {
    const subresources = isJsonObject(version.subresources) ? version.subresources : {};
    const scale = isJsonObject(subresources.scale) ? subresources.scale : undefined;
    const fields = Array.isArray(version.selectableFields) ? version.selectableFields : [];
    return {
      type: resourceType({
        group,
        version: String(version.name),
        kind,
        plural: names.plural as string,
        listKind: typeof names.listKind === "string" ? names.listKind : undefined,
        scope: spec.scope === "Cluster" ? "Cluster" : "Namespaced",
        subresources: [
          ...(isJsonObject(subresources.status) ? ["status"] : []),
          ...(scale ? ["scale"] : []),
        ],
      }),
      scale: scale
        ? {
          specReplicas: jsonPathToPath(scale.specReplicasPath) ?? ["spec", "replicas"],
          statusReplicas: jsonPathToPath(scale.statusReplicasPath) ?? ["status", "replicas"],
          labelSelector: jsonPathToPath(scale.labelSelectorPath),
        }
        : undefined,
      selectableFields: fields.filter(isJsonObject).map((field) =>
        jsonPathToPath(field.jsonPath)?.join(".")
      ).filter((field): field is string => field !== undefined),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// The in-memory API server

/**
 * An in-memory {@linkcode Client} for unit tests, like controller-runtime's fake client. It
 * behaves as kube-apiserver does, checked by the same contract tests as the real client:
 * creates set uid, creationTimestamp and a resourceVersion (a global counter) and honour
 * `generateName`; every write that changes something gets a new resourceVersion and a stale one
 * is a Conflict; `metadata.generation` counts spec changes of the kinds that have one; status
 * is kept apart for kinds with a `status` subresource; finalizers delay deletion; label and
 * field selectors, `limit`/`continue`, merge/JSON/strategic merge patches, server-side apply,
 * `dryRun`, the `scale` subresource and Pod evictions all work; errors are the
 * {@linkcode ApiError}s the server sends. Objects going in and out are copies.
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
  /** Objects by kind (`apiVersion/kind`), then by `namespace/name`. */
  readonly #objects = new Map<string, Map<string, Entry>>();
  readonly #scale = new Map<string, ScalePaths>();
  readonly #selectable = new Map<string, string[]>();
  /** Kinds from `options.types` and from CRDs, by `apiVersion/kind`. */
  readonly #known = new Map<string, ResourceType<KubeObject>>();
  readonly #clock: () => Date;
  #resourceVersion = 0;

  /**
   * A fake holding `options.objects`, knowing the built-in kinds and `options.types`.
   *
   * @throws {NoKindMatchError} when an initial object is of a kind the fake does not know.
   */
  constructor(options: FakeClientOptions = {}) {
    this.#clock = options.clock ?? (() => new Date());
    for (const type of options.types ?? []) {
      this.mapper.register(type);
      this.#known.set(gvkKey(type), type);
    }
    for (const { type, fields } of options.selectableFields ?? []) {
      this.#selectable.set(gvkKey(type), [...fields]);
    }
    // CRDs first, so that objects of their kinds can follow them.
    const objects = [...(options.objects ?? [])].sort((a, b) =>
      Number(gvkKey(b) === CRD_KEY) - Number(gvkKey(a) === CRD_KEY)
    );
    for (const obj of objects) this.#seed(obj);
  }

  // ---- kinds ---------------------------------------------------------------------------------

  #knownType(gvk: GroupVersionKind): ResourceType<KubeObject> {
    if (!gvk.apiVersion || !gvk.kind) {
      throw new Error(
        `an object needs apiVersion and kind to be written or read (got apiVersion ` +
          `${JSON.stringify(gvk.apiVersion)}, kind ${JSON.stringify(gvk.kind)})`,
      );
    }
    // The constructor cannot wait for the mapper; this answers as the mapper would.
    const known = builtinResourceType(gvk) ?? this.#known.get(gvkKey(gvk));
    if (known) return known;
    throw new NoKindMatchError(gvk, "it is not a built-in kind, and no type is registered for it");
  }

  async #resolve(ref: ResourceRef<KubeObject>): Promise<ResourceType<KubeObject>> {
    if (isResourceType(ref)) return ref;
    return await this.mapper.resourceTypeFor(ref);
  }

  #serve(crd: JsonObject): void {
    for (const served of servedKinds(crd)) {
      const key = gvkKey(served.type);
      this.mapper.register(served.type);
      this.#known.set(key, served.type);
      if (served.scale) this.#scale.set(key, served.scale);
      if (served.selectableFields.length > 0) this.#selectable.set(key, served.selectableFields);
    }
  }

  #scalePaths(type: ResourceType<KubeObject>): ScalePaths | undefined {
    const key = gvkKey(type);
    if (BUILTIN_SCALABLE.has(key)) return BUILTIN_SCALE;
    if (!type.subresources.includes("scale")) return undefined;
    return this.#scale.get(key) ??
      {
        specReplicas: ["spec", "replicas"],
        statusReplicas: ["status", "replicas"],
        labelSelector: ["status", "selector"],
      };
  }

  // ---- storage -------------------------------------------------------------------------------

  #bucket(type: ResourceType<KubeObject>): Map<string, Entry> {
    const key = gvkKey(type);
    let bucket = this.#objects.get(key);
    if (!bucket) {
      bucket = new Map();
      this.#objects.set(key, bucket);
    }
    return bucket;
  }

  #key(type: ResourceType<KubeObject>, namespace: string | undefined, name: string): string {
    return type.scope === "Namespaced" ? `${namespace}/${name}` : `/${name}`;
  }

  #nextResourceVersion(): string {
    return String(++this.#resourceVersion);
  }

  #now(): string {
    return timestamp(this.#clock());
  }

  #seed(given: KubeObject): void {
    const type = this.#knownType(given);
    const obj = jsonClone(given) as unknown as JsonObject;
    obj.apiVersion = type.apiVersion;
    obj.kind = type.kind;
    const meta = metadataOf(obj);
    const name = meta.name as string | undefined;
    if (!name) {
      throw new Error(`initial object ${describeObject(given)}: metadata.name is required`);
    }
    if (type.scope === "Cluster") delete meta.namespace;
    else if (!meta.namespace) {
      throw new Error(
        `initial object ${
          describeObject(given)
        }: a namespace is required, ${type.kind} is namespaced`,
      );
    }
    const key = this.#key(type, meta.namespace as string | undefined, name);
    const bucket = this.#bucket(type);
    if (bucket.has(key)) throw new Error(`initial object ${describeObject(given)} is given twice`);
    delete meta.managedFields;
    const given_rv = Number(meta.resourceVersion);
    if (!meta.resourceVersion) meta.resourceVersion = this.#nextResourceVersion();
    else if (Number.isSafeInteger(given_rv) && given_rv > this.#resourceVersion) {
      this.#resourceVersion = given_rv;
    }
    // Fields of an object without managedFields belong to this manager on its first apply.
    const owned = new Map(ownedLeaves(obj).map((path) => [JSON.stringify(path), path]));
    const managers = new Map([[managerKey(BEFORE_FIRST_APPLY, "Update", ""), owned]]);
    bucket.set(key, { object: obj, managers });
    if (gvkKey(type) === CRD_KEY) this.#serve(obj);
  }

  // ---- checks the real client makes before sending anything ----------------------------------

  #namespace(type: ResourceType<KubeObject>, namespace: string | undefined, what: string) {
    if (type.scope === "Cluster") return undefined;
    if (!namespace) throw new Error(`${what}: a namespace is required, ${type.kind} is namespaced`);
    return namespace;
  }

  /** Namespace, name and request path of an existing object, checked as the real client does. */
  #locate(type: ResourceType<KubeObject>, obj: KubeObject, method: string, subresource?: string) {
    const name = obj.metadata?.name;
    if (!name) throw new Error(`${describeObject(obj)}: metadata.name is required`);
    const namespace = this.#namespace(type, obj.metadata?.namespace, describeObject(obj));
    const where = { method, path: resourcePath(type, { namespace, name, subresource }) };
    return { name, namespace, where, key: this.#key(type, namespace, name) };
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
    const type = await this.#resolve(ref);
    if (!key?.name) throw new Error(`get ${type.kind}: a name is required`);
    const namespace = this.#namespace(type, key.namespace, `get ${type.kind} ${key.name}`);
    const where = { method: "GET", path: resourcePath(type, { namespace, name: key.name }) };
    const entry = this.#bucket(type).get(this.#key(type, namespace, key.name));
    if (!entry) throw notFound(type, key.name, where);
    return jsonClone(entry.object);
  }

  /** Reads a page of objects. */
  list<T extends KubeObject>(type: ResourceType<T>, options?: ListOptions): Promise<ObjectList<T>>;
  /** Reads a page of objects of a kind given by `apiVersion` and `kind`, or by either reference. */
  list<T extends KubeObject = Unstructured>(
    type: ResourceRef<T>,
    options?: ListOptions,
  ): Promise<ObjectList<T>>;
  async list(ref: ResourceRef<KubeObject>, options: ListOptions = {}): Promise<unknown> {
    const type = await this.#resolve(ref);
    const where = { method: "GET", path: resourcePath(type, { namespace: options.namespace }) };
    const { entries, filtered } = this.#select(type, options, where);
    let start = "";
    if (options.continue) start = this.#decodeContinue(options.continue, where);
    const after = entries.filter(([key]) => key >= start);
    const limit = options.limit && options.limit > 0 ? options.limit : Infinity;
    const page = after.slice(0, limit);
    const metadata: ObjectList<KubeObject>["metadata"] = {
      resourceVersion: String(this.#resourceVersion),
    };
    if (after.length > page.length) {
      metadata.continue = this.#encodeContinue(page[page.length - 1][0]);
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
    const { labelSelector, fieldSelector } = options;
    const labels = labelSelector === undefined
      ? undefined
      : selecting(() => parseLabelSelector(labelSelector), where);
    const fields = fieldSelector === undefined
      ? undefined
      : selecting(() => parseFieldSelector(fieldSelector), where);
    const supported = this.#selectableFields(type);
    for (const { field } of fields?.requirements ?? []) {
      if (!supported.includes(field)) {
        throw badRequest(`field label not supported: ${field}`, where);
      }
    }
    const namespace = type.scope === "Namespaced" ? options.namespace : undefined;
    const entries = [...this.#bucket(type).entries()]
      .filter(([, entry]) => {
        const meta = entry.object.metadata as JsonObject;
        if (namespace && meta.namespace !== namespace) return false;
        if (labels && !labels.matches(meta.labels as Record<string, string> | undefined)) {
          return false;
        }
        return (fields?.requirements ?? []).every(({ field, operator, value }) => {
          const actual = fieldText(this.#fieldValue(type, entry.object, field));
          return operator === "!=" ? actual !== value : actual === value;
        });
      })
      .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    return { entries, filtered: !(labels?.empty ?? true) || !(fields?.empty ?? true) };
  }

  #selectableFields(type: ResourceType<KubeObject>): string[] {
    const key = gvkKey(type);
    const base = type.scope === "Namespaced"
      ? ["metadata.name", "metadata.namespace"]
      : ["metadata.name"];
    return [
      ...base,
      ...(BUILTIN_SELECTABLE_FIELDS[key] ?? []),
      ...(this.#selectable.get(key) ?? []),
    ];
  }

  #fieldValue(type: ResourceType<KubeObject>, obj: JsonObject, field: string): unknown {
    const special = FIELD_VALUES[`${gvkKey(type)} ${field}`];
    return special ? special(obj) : getPath(obj, field.split("."));
  }

  #encodeContinue(lastKey: string): string {
    const token = { v: "meta.k8s.io/v1", rv: this.#resourceVersion, start: `${lastKey}\u0000` };
    return base64(JSON.stringify(token));
  }

  #decodeContinue(token: string, where: Where): string {
    try {
      const decoded = JSON.parse(new TextDecoder().decode(
        Uint8Array.from(atob(token), (c) => c.charCodeAt(0)),
      ));
      if (decoded?.v === "meta.k8s.io/v1" && typeof decoded.start === "string") {
        return decoded.start;
      }
    } catch {
      // Reported below.
    }
    throw badRequest(
      `invalid continue token: ${JSON.stringify(token)} is not a continue token`,
      where,
    );
  }

  // ---- writes --------------------------------------------------------------------------------

  /** Creates `obj`; rejects with AlreadyExists when its name is taken. */
  async create<T extends KubeObject>(obj: T, options: CreateOptions = {}): Promise<T> {
    const type = await this.#resolve(obj);
    const namespace = this.#namespace(
      type,
      obj.metadata?.namespace,
      `create ${describeObject(obj)}`,
    );
    const where = { method: "POST", path: resourcePath(type, { namespace }) };
    const incoming = jsonClone(obj) as unknown as JsonObject;
    const manager = options.fieldManager ?? DEFAULT_FIELD_MANAGER;
    return this.#create(type, incoming, manager, "Update", options.dryRun, where) as unknown as T;
  }

  #create(
    type: ResourceType<KubeObject>,
    obj: JsonObject,
    manager: string,
    operation: Operation,
    dryRun: boolean | undefined,
    where: Where,
  ): JsonObject {
    obj.apiVersion = type.apiVersion;
    obj.kind = type.kind;
    const meta = metadataOf(obj);
    if (meta.resourceVersion) {
      throw apiError(
        where,
        500,
        "InternalError",
        "resourceVersion should not be set on objects to be created",
      );
    }
    if (type.scope === "Cluster") delete meta.namespace;
    const bucket = this.#bucket(type);
    const subject = { kind: type.kind, group: type.group };
    if (!meta.name && typeof meta.generateName === "string" && meta.generateName) {
      const prefix = meta.generateName.slice(0, MAX_GENERATE_NAME_PREFIX);
      do {
        let suffix = "";
        for (let i = 0; i < 5; i++) {
          suffix += GENERATE_NAME_CHARS[Math.floor(Math.random() * GENERATE_NAME_CHARS.length)];
        }
        meta.name = prefix + suffix;
      } while (bucket.has(this.#key(type, meta.namespace as string, meta.name as string)));
    }
    const name = typeof meta.name === "string" ? meta.name : "";
    if (!name) {
      throw invalid(
        subject,
        "",
        [required("metadata.name", "name or generateName is required")],
        where,
      );
    }
    const causes = [
      ...nameProblems(type, name).map((problem) => invalidValue("metadata.name", name, problem)),
      ...labelCauses(meta.labels),
    ];
    if (causes.length > 0) throw invalid(subject, name, causes, where);
    const key = this.#key(type, meta.namespace as string | undefined, name);
    if (bucket.has(key)) throw alreadyExists(type, name, where);

    for (const field of SYSTEM_METADATA) {
      if (field !== "name" && field !== "namespace") delete meta[field];
    }
    meta.uid = crypto.randomUUID();
    meta.creationTimestamp = this.#now();
    if (generationInput(type)) meta.generation = 1;
    if (hasStatus(type)) delete obj.status;
    this.#normalize(type, obj, undefined);
    if (dryRun) return jsonClone(obj);

    meta.resourceVersion = this.#nextResourceVersion();
    const entry: Entry = { object: obj, managers: new Map() };
    this.#own(entry, managerKey(manager, operation, ""), operation, {}, obj, ownedLeaves(obj));
    bucket.set(key, entry);
    if (gvkKey(type) === CRD_KEY) this.#serve(obj);
    return jsonClone(obj);
  }

  /** What the API server adds or converts on every write of some kinds. */
  #normalize(
    type: ResourceType<KubeObject>,
    obj: JsonObject,
    before: JsonObject | undefined,
  ): void {
    const key = gvkKey(type);
    const meta = metadataOf(obj);
    if (key === "v1/Secret" && isJsonObject(obj.stringData)) {
      const data = isJsonObject(obj.data) ? obj.data : {};
      for (const [k, v] of Object.entries(obj.stringData)) data[k] = base64(String(v));
      obj.data = data;
      delete obj.stringData;
    }
    if (key === "v1/Secret") {
      obj.type ??= before?.type ?? "Opaque";
    } else if (key === "v1/Namespace") {
      meta.labels = {
        ...(isJsonObject(meta.labels) ? meta.labels : {}),
        "kubernetes.io/metadata.name": meta.name,
      };
      if (!before) obj.status = { phase: "Active" };
    } else if (key === "v1/Pod" && !before) {
      obj.status = { phase: "Pending" };
    } else if (key === CRD_KEY && !before) {
      const now = this.#now();
      const spec = isJsonObject(obj.spec) ? obj.spec : {};
      const versions = Array.isArray(spec.versions) ? spec.versions.filter(isJsonObject) : [];
      obj.status = {
        conditions: [
          {
            type: "NamesAccepted",
            status: "True",
            lastTransitionTime: now,
            reason: "NoConflicts",
            message: "no conflicts found",
          },
          {
            type: "Established",
            status: "True",
            lastTransitionTime: now,
            reason: "InitialNamesAccepted",
            message: "the initial names have been accepted",
          },
        ],
        acceptedNames: jsonClone(spec.names ?? {}),
        storedVersions: versions.filter((v) => v.storage).map((v) => v.name),
      };
    }
  }

  /**
   * The object a write of `incoming` to `entry` stores: system metadata from the stored
   * object, status kept apart when it is a subresource, the generation counted.
   */
  #prepareUpdate(
    type: ResourceType<KubeObject>,
    entry: Entry,
    incoming: JsonObject,
    subresource: "" | "status",
  ): JsonObject {
    const before = entry.object;
    const beforeMeta = before.metadata as JsonObject;
    let next = jsonClone(incoming);
    if (subresource === "status" && !isBuiltin(type)) {
      // A custom resource's status write changes its status and nothing else.
      next = { ...jsonClone(before), status: next.status };
      if (next.status === undefined) delete next.status;
    }
    next.apiVersion = type.apiVersion;
    next.kind = type.kind;
    const meta = metadataOf(next);
    for (const field of SYSTEM_METADATA) {
      if (beforeMeta[field] === undefined) delete meta[field];
      else meta[field] = jsonClone(beforeMeta[field]);
    }
    if (subresource === "status") {
      if (before.spec === undefined) delete next.spec;
      else next.spec = jsonClone(before.spec);
      if (STATUS_KEEPS_LABELS.has(gvkKey(type))) {
        if (beforeMeta.labels === undefined) delete meta.labels;
        else meta.labels = jsonClone(beforeMeta.labels);
      }
    } else if (hasStatus(type)) {
      if (before.status === undefined) delete next.status;
      else next.status = jsonClone(before.status);
    }
    this.#normalize(type, next, before);
    const input = generationInput(type);
    if (input && !jsonEqual(input(before), input(next))) {
      meta.generation = (typeof beforeMeta.generation === "number" ? beforeMeta.generation : 0) + 1;
    }
    return next;
  }

  /** The checks of an update of `entry` with the resourceVersion and uid `incoming` carries. */
  #checkPreconditions(
    type: ResourceType<KubeObject>,
    entry: Entry,
    incoming: JsonObject,
    where: Where,
  ): void {
    const meta = isJsonObject(incoming.metadata) ? incoming.metadata : {};
    const stored = entry.object.metadata as JsonObject;
    const name = stored.name as string;
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(
        `the name of the object (${meta.name}) does not match the name on the URL (${name})`,
        where,
      );
    }
    if (meta.resourceVersion) {
      if (meta.resourceVersion !== stored.resourceVersion) throw conflict(type, name, where);
    } else if (!allowsUnconditionalUpdate(type)) {
      throw invalid({ kind: type.plural, group: type.group }, name, [
        invalidValue("metadata.resourceVersion", 0, "must be specified for an update"),
      ], where);
    }
    if (meta.uid && meta.uid !== stored.uid) {
      throw conflict(
        type,
        name,
        where,
        `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${stored.uid}`,
      );
    }
  }

  /**
   * Stores `next` as the new state of `entry`: refuses new finalizers on an object being
   * deleted, deletes it when its last finalizer went, keeps the resourceVersion when nothing
   * changed, and records which manager owns what.
   */
  #commit(
    type: ResourceType<KubeObject>,
    key: string,
    entry: Entry,
    next: JsonObject,
    owner: { manager: string; operation: Operation; subresource: string; applied?: Path[] },
    dryRun: boolean | undefined,
    where: Where,
  ): JsonObject {
    const before = entry.object;
    const meta = next.metadata as JsonObject;
    const name = meta.name as string;
    const causes = labelCauses(meta.labels);
    if (before.metadata && (before.metadata as JsonObject).deletionTimestamp) {
      const had = new Set(
        getPath(before, ["metadata", "finalizers"]) as string[] | undefined ?? [],
      );
      const added = ((meta.finalizers as string[] | undefined) ?? []).filter((f) => !had.has(f));
      if (added.length > 0) {
        causes.push(forbidden(
          "metadata.finalizers",
          "no new finalizers can be added if the object is being deleted, found new finalizers " +
            `[]string{${added.map((f) => JSON.stringify(f)).join(", ")}}`,
        ));
      }
      if (causes.length === 0 && !(meta.finalizers as unknown[] | undefined)?.length) {
        if (!dryRun) this.#remove(type, key);
        return jsonClone(next);
      }
    }
    if (causes.length > 0) {
      throw invalid({ kind: type.kind, group: type.group }, name, causes, where);
    }
    if (jsonEqual(next, before)) return jsonClone(before);
    if (dryRun) return jsonClone(next);
    meta.resourceVersion = this.#nextResourceVersion();
    this.#own(
      entry,
      managerKey(owner.manager, owner.operation, owner.subresource),
      owner.operation,
      before,
      next,
      owner.applied ?? [],
    );
    entry.object = next;
    return jsonClone(next);
  }

  /**
   * Moves field ownership after a write: whoever owned a field the write changed loses it; an
   * updater gains the fields it changed, an applier owns exactly what it applied.
   */
  #own(
    entry: Entry,
    manager: string,
    operation: Operation,
    before: JsonObject,
    after: JsonObject,
    applied: Path[],
  ): void {
    const changed = changedLeaves(before, after);
    for (const [key, paths] of entry.managers) {
      if (operation === "Apply" && key === manager) continue;
      for (const [pathKey, path] of paths) {
        if (changed.some((c) => overlaps(c, path))) paths.delete(pathKey);
      }
    }
    const owned = operation === "Apply"
      ? new Map<string, Path>()
      : entry.managers.get(manager) ?? new Map();
    const gained = operation === "Apply" ? applied : changed;
    for (const path of gained) {
      if (getPath(after, path) !== undefined) owned.set(JSON.stringify(path), path);
    }
    entry.managers.set(manager, owned);
    for (const [key, paths] of entry.managers) if (paths.size === 0) entry.managers.delete(key);
  }

  #remove(type: ResourceType<KubeObject>, key: string): void {
    const entry = this.#bucket(type).get(key);
    this.#bucket(type).delete(key);
    if (entry && gvkKey(type) === CRD_KEY) {
      // The API server deletes a CRD's objects with it.
      for (const served of servedKinds(entry.object)) this.#objects.delete(gvkKey(served.type));
    }
  }

  /** Replaces `obj`; rejects with Conflict when its resourceVersion is stale. */
  async update<T extends KubeObject>(obj: T, options: UpdateOptions = {}): Promise<T> {
    return await this.#update(obj, "", options) as unknown as T;
  }

  async #update(obj: KubeObject, subresource: "" | "status", options: UpdateOptions) {
    const type = await this.#resolve(obj);
    const { name, key, where } = this.#locate(type, obj, "PUT", subresource || undefined);
    if (subresource === "status" && !hasStatus(type)) throw notServed(where);
    const entry = this.#bucket(type).get(key);
    if (!entry) throw notFound(type, name, where);
    const incoming = jsonClone(obj) as unknown as JsonObject;
    return this.#updateEntry(type, key, entry, incoming, subresource, options, where);
  }

  /** Patches `obj` (only read) with the body `patch` computes for it. */
  async patch<T extends KubeObject>(
    obj: T | DeepReadonly<T>,
    patch: Patch<T>,
    options: PatchOptions = {},
  ): Promise<T> {
    return await this.#patch(obj, patch.type, patch.data(obj), "", options) as unknown as T;
  }

  async #patch(
    obj: KubeObject,
    patchType: PatchType,
    body: unknown,
    subresource: "" | "status",
    options: PatchOptions,
  ): Promise<JsonObject> {
    const type = await this.#resolve(obj);
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
    const entry = this.#bucket(type).get(key);
    if (!entry) throw notFound(type, name, where);
    const patched = this.#applyPatch(type, entry.object, patchType, body, where);
    const meta = metadataOf(patched);
    // A patch is conditional only when it carries a resourceVersion.
    if (!meta.resourceVersion) {
      meta.resourceVersion = (entry.object.metadata as JsonObject).resourceVersion;
    }
    return this.#updateEntry(type, key, entry, patched, subresource, options, where);
  }

  /** An update (PUT, or a patch once applied) of `entry` to the whole object `incoming`. */
  #updateEntry(
    type: ResourceType<KubeObject>,
    key: string,
    entry: Entry,
    incoming: JsonObject,
    subresource: "" | "status",
    options: UpdateOptions | PatchOptions,
    where: Where,
  ): JsonObject {
    this.#checkPreconditions(type, entry, incoming, where);
    const next = this.#prepareUpdate(type, entry, incoming, subresource);
    const manager = options.fieldManager ?? DEFAULT_FIELD_MANAGER;
    return this.#commit(
      type,
      key,
      entry,
      next,
      { manager, operation: "Update", subresource },
      options.dryRun,
      where,
    );
  }

  /** `target` with a merge, JSON or strategic merge patch applied, or the server's refusal. */
  #applyPatch(
    type: { apiVersion: string; kind: string },
    target: JsonObject,
    patchType: PatchType,
    body: unknown,
    where: Where,
  ): JsonObject {
    let result: unknown;
    switch (patchType) {
      case "application/merge-patch+json":
        if (!isJsonObject(body)) throw badRequest("the merge patch must be a JSON object", where);
        result = applyMergePatch(target, body);
        break;
      case "application/json-patch+json":
        if (!Array.isArray(body)) {
          throw badRequest("the JSON patch must be a list of operations", where);
        }
        try {
          result = applyJsonPatch(target, body as JsonPatchOperation[]);
        } catch (err) {
          throw unprocessablePatch(where, err);
        }
        break;
      case "application/strategic-merge-patch+json": {
        const schema = schemaForKind(type.apiVersion, type.kind);
        if (!schema) {
          throw apiError(
            where,
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: " +
              "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
          );
        }
        if (!isJsonObject(body)) {
          throw badRequest("the strategic merge patch must be a JSON object", where);
        }
        try {
          result = applyStrategicMergePatch(target, body, schema);
        } catch (err) {
          throw unprocessablePatch(where, err);
        }
        break;
      }
      default:
        throw apiError(
          where,
          415,
          "UnsupportedMediaType",
          `the patch type ${patchType} is not supported`,
        );
    }
    if (!isJsonObject(result)) {
      throw unprocessablePatch(where, new Error("the patch did not give an object"));
    }
    return result;
  }

  /** Server-side apply of `obj` by `options.fieldManager`. */
  async apply<T extends KubeObject>(obj: T, options: ApplyOptions): Promise<T> {
    return await this.#applyObject(obj, "", options) as unknown as T;
  }

  async #applyObject(obj: KubeObject, subresource: "" | "status", options: ApplyOptions) {
    if (!options?.fieldManager) {
      throw new Error(
        `apply ${describeObject(obj)}: a fieldManager is required for server-side apply`,
      );
    }
    const type = await this.#resolve(obj);
    const { where } = this.#locate(type, obj, "PATCH", subresource || undefined);
    if (subresource === "status" && !hasStatus(type)) throw notServed(where);
    return this.#apply(type, jsonClone(obj) as unknown as JsonObject, subresource, options, where);
  }

  /**
   * Server-side apply, simplified: lists are owned whole rather than item by item. The
   * configuration's fields are merged in (strategically for built-in kinds); a field another
   * manager owns and the configuration would change is a conflict unless `force`; fields this
   * manager applied before and left out now are removed unless another manager owns them.
   */
  #apply(
    type: ResourceType<KubeObject>,
    config: JsonObject,
    subresource: "" | "status",
    options: ApplyOptions,
    where: Where,
  ): JsonObject {
    const meta = metadataOf(config);
    const name = meta.name as string;
    const key = this.#key(type, meta.namespace as string | undefined, name);
    const entry = this.#bucket(type).get(key);
    if (!entry) {
      if (subresource === "status") throw notFound(type, name, where);
      return this.#create(type, config, options.fieldManager, "Apply", options.dryRun, where);
    }
    const stored = entry.object.metadata as JsonObject;
    if (meta.resourceVersion && meta.resourceVersion !== stored.resourceVersion) {
      throw conflict(type, name, where);
    }
    // The part of the configuration this endpoint writes.
    let applied: JsonObject = jsonClone(config);
    if (subresource === "status") {
      applied = {
        apiVersion: config.apiVersion,
        kind: config.kind,
        metadata: { name },
        status: config.status,
      };
    } else if (hasStatus(type)) delete applied.status;
    for (const field of SYSTEM_METADATA) delete metadataOf(applied)[field];
    const leaves = ownedLeaves(applied);
    const self = managerKey(options.fieldManager, "Apply", subresource);
    const others = [...entry.managers].filter(([manager]) => manager !== self);
    const ownedByOthers = (path: Path) =>
      others.some(([, paths]) => [...paths.values()].some((p) => overlaps(p, path)));

    const merged = this.#merge(type, entry.object, applied);
    // A list only this manager owns becomes what it applies, not a merge with the old one.
    for (const path of leaves) {
      const value = getPath(applied, path);
      if (Array.isArray(value) && !ownedByOthers(path)) setPath(merged, path, jsonClone(value));
    }
    const conflicts: { manager: string; path: Path }[] = [];
    for (const path of leaves) {
      if (jsonEqual(getPath(entry.object, path), getPath(merged, path))) continue;
      for (const [manager, paths] of others) {
        if ([...paths.values()].some((p) => overlaps(p, path))) conflicts.push({ manager, path });
      }
    }
    if (conflicts.length > 0 && !options.force) throw this.#applyConflict(type, conflicts, where);
    const appliedKeys = new Set(leaves.map((path) => JSON.stringify(path)));
    for (const [pathKey, path] of entry.managers.get(self) ?? []) {
      if (!appliedKeys.has(pathKey) && !ownedByOthers(path)) deletePath(merged, path);
    }
    const next = this.#prepareUpdate(type, entry, merged, subresource);
    return this.#commit(
      type,
      key,
      entry,
      next,
      { manager: options.fieldManager, operation: "Apply", subresource, applied: leaves },
      options.dryRun,
      where,
    );
  }

  /** `config` merged into `target`: strategically for built-in kinds, else metadata strategically. */
  #merge(type: ResourceType<KubeObject>, target: JsonObject, config: JsonObject): JsonObject {
    const schema = schemaForKind(type.apiVersion, type.kind);
    if (schema) return applyStrategicMergePatch(target, config, schema) as JsonObject;
    const { metadata, ...rest } = config;
    const merged = applyMergePatch(target, rest) as JsonObject;
    merged.metadata = applyStrategicMergePatch(
      target.metadata ?? {},
      metadata ?? {},
      "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    );
    return merged;
  }

  #applyConflict(
    type: ResourceType<KubeObject>,
    conflicts: { manager: string; path: Path }[],
    where: Where,
  ): ApiError {
    const byManager = new Map<string, string[]>();
    for (const { manager, path } of conflicts) {
      const [name, operation] = JSON.parse(manager) as [string, Operation, string];
      const who = `"${name}"${operation === "Update" ? ` using ${type.apiVersion}` : ""}`;
      byManager.set(who, [...(byManager.get(who) ?? []), `.${path.join(".")}`]);
    }
    const count = conflicts.length;
    const parts = [...byManager].map(([who, fields]) =>
      fields.length === 1
        ? `conflict with ${who}: ${fields[0]}`
        : `conflicts with ${who}:\n- ${fields.join("\n- ")}`
    );
    const causes = [...byManager].flatMap(([who, fields]) =>
      fields.map((field) => ({
        reason: "FieldManagerConflict",
        message: `conflict with ${who}`,
        field,
      }))
    );
    return apiError(
      where,
      409,
      "Conflict",
      `Apply failed with ${count} conflict${count === 1 ? "" : "s"}: ${parts.join("\n")}`,
      { causes },
    );
  }

  /** Deletes `obj` (only read), or marks it for deletion while it has finalizers. */
  async delete(
    obj: KubeObject | DeepReadonly<KubeObject>,
    options: DeleteOptions = {},
  ): Promise<void> {
    const type = await this.#resolve(obj);
    const { name, key, where } = this.#locate(type, obj, "DELETE");
    this.#delete(type, key, name, options, where);
  }

  /** Deletes at once, or marks for deletion an object that has finalizers. */
  #delete(
    type: ResourceType<KubeObject>,
    key: string,
    name: string,
    options: DeleteOptions,
    where: Where,
  ): void {
    const entry = this.#bucket(type).get(key);
    if (!entry) throw notFound(type, name, where);
    const meta = entry.object.metadata as JsonObject;
    const { uid, resourceVersion } = options.preconditions ?? {};
    const subject = type.group ? `${type.kind}.${type.group}` : type.kind;
    const details = { name, ...(type.group ? { group: type.group } : {}), kind: type.kind };
    if (uid !== undefined && uid !== meta.uid) {
      throw apiError(
        where,
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${subject} "${name}": the UID in the precondition (${uid}) ` +
          `does not match the UID in record (${meta.uid}). The object might have been deleted and then recreated`,
        details,
      );
    }
    if (resourceVersion !== undefined && resourceVersion !== meta.resourceVersion) {
      throw apiError(
        where,
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${subject} "${name}": the ResourceVersion in the precondition ` +
          `(${resourceVersion}) does not match the ResourceVersion in record (${meta.resourceVersion}). ` +
          "The object might have been modified",
        details,
      );
    }
    const finalizers = meta.finalizers as string[] | undefined;
    if (!finalizers?.length) {
      if (!options.dryRun) this.#remove(type, key);
      return;
    }
    if (meta.deletionTimestamp || options.dryRun) return;
    const next = jsonClone(entry.object);
    const nextMeta = next.metadata as JsonObject;
    nextMeta.deletionTimestamp = this.#now();
    nextMeta.deletionGracePeriodSeconds = 0;
    if (typeof nextMeta.generation === "number" && nextMeta.generation > 0) nextMeta.generation++;
    nextMeta.resourceVersion = this.#nextResourceVersion();
    entry.object = next;
  }

  /** Deletes every object of a kind that matches the selectors, in one namespace. */
  async deleteAllOf(ref: ResourceRef<KubeObject>, options: DeleteAllOfOptions = {}): Promise<void> {
    const type = await this.#resolve(ref);
    const namespace = this.#namespace(type, options.namespace, `deleteAllOf ${type.kind}`);
    const where = { method: "DELETE", path: resourcePath(type, { namespace }) };
    const { limit: _limit, continue: _continue, ...selection } = options;
    for (const [key, entry] of this.#select(type, selection, where).entries) {
      const name = getPath(entry.object, ["metadata", "name"]) as string;
      this.#delete(type, key, name, options, where);
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
    return {
      get: <R>(obj: KubeObject, options?: GetOptions) =>
        this.#subGet(name, obj, options) as Promise<R>,
      create: <R>(obj: KubeObject, body: unknown, options?: CreateOptions) =>
        this.#subCreate(name, obj, body, options) as Promise<R>,
      update: <T extends KubeObject, B extends KubeObject = T>(
        obj: T,
        options: UpdateOptions & SubResourceWriteOptions<B> = {},
      ) => this.#subUpdate(name, obj, options) as Promise<B>,
      patch: <T extends KubeObject, B extends KubeObject = T>(
        obj: T | DeepReadonly<T>,
        patch: Patch<B>,
        options: PatchOptions & SubResourceWriteOptions<B> = {},
      ) => {
        const { body, ...rest } = options;
        // Without a body, the object is the patch's target: a B, as the default B = T says.
        const data = patch.data(body ?? (obj as unknown as DeepReadonly<B>));
        return this.#subPatch(name, obj, patch.type, data, rest) as Promise<B>;
      },
      apply: <T extends KubeObject>(obj: T, options: ApplyOptions) =>
        this.#subApply(name, obj, options) as Promise<T>,
    };
  }

  async #subGet(name: string, obj: KubeObject, options?: GetOptions): Promise<unknown> {
    const type = await this.#resolve(obj);
    const { where } = this.#locate(type, obj, "GET", name);
    if (name === "status" && hasStatus(type)) {
      return await this.get(
        type,
        { namespace: obj.metadata?.namespace, name: obj.metadata!.name! },
        options,
      );
    }
    const scale = name === "scale" ? this.#scalePaths(type) : undefined;
    if (!scale) throw notServed(where);
    return this.#scaleOf(type, scale, this.#existing(type, obj, where).entry.object, where);
  }

  async #subCreate(name: string, obj: KubeObject, body: unknown, options: CreateOptions = {}) {
    const type = await this.#resolve(obj);
    const { where } = this.#locate(type, obj, "POST", name);
    if (name === "eviction" && gvkKey(type) === "v1/Pod") {
      const { key } = this.#existing(type, obj, where);
      const deleteOptions = isJsonObject(body) && isJsonObject(body.deleteOptions)
        ? body.deleteOptions as DeleteOptions
        : {};
      this.#delete(
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
  ): Promise<unknown> {
    const { body, ...rest } = options;
    if (name === "status") return await this.#update(obj, "status", rest);
    const type = await this.#resolve(obj);
    const { where } = this.#locate(type, obj, "PUT", name);
    const scale = name === "scale" ? this.#scalePaths(type) : undefined;
    if (!scale) throw notServed(where);
    const { entry } = this.#existing(type, obj, where);
    return this.#writeScale(
      type,
      scale,
      obj,
      jsonClone(body ?? obj) as unknown as JsonObject,
      rest,
      where,
      entry,
    );
  }

  async #subPatch(
    name: string,
    obj: KubeObject,
    patchType: PatchType,
    data: unknown,
    options: PatchOptions,
  ): Promise<unknown> {
    if (name === "status") return await this.#patch(obj, patchType, data, "status", options);
    const type = await this.#resolve(obj);
    const { where } = this.#locate(type, obj, "PATCH", name);
    const scale = name === "scale" ? this.#scalePaths(type) : undefined;
    if (!scale) throw notServed(where);
    const { entry } = this.#existing(type, obj, where);
    const current = this.#scaleOf(type, scale, entry.object, where);
    const scaleType = { apiVersion: "autoscaling/v1", kind: "Scale" };
    const patched = this.#applyPatch(scaleType, current, patchType, data, where);
    return this.#writeScale(type, scale, obj, patched, options, where, entry);
  }

  async #subApply(name: string, obj: KubeObject, options: ApplyOptions): Promise<unknown> {
    if (name === "status") return await this.#applyObject(obj, "status", options);
    const type = await this.#resolve(obj);
    const { where } = this.#locate(type, obj, "PATCH", name);
    throw name === "scale" && this.#scalePaths(type) ? methodNotAllowed(where) : notServed(where);
  }

  #existing(type: ResourceType<KubeObject>, obj: KubeObject, where: Where) {
    const name = obj.metadata!.name!;
    const key = this.#key(type, obj.metadata?.namespace, name);
    const entry = this.#bucket(type).get(key);
    if (!entry) throw notFound(type, name, where);
    return { key, entry };
  }

  /** The `autoscaling/v1` Scale of an object. */
  #scaleOf(
    type: ResourceType<KubeObject>,
    paths: ScalePaths,
    obj: JsonObject,
    where: Where,
  ): JsonObject {
    const meta = obj.metadata as JsonObject;
    let replicas = getPath(obj, paths.specReplicas) ?? paths.defaultReplicas;
    if (replicas === undefined) {
      throw apiError(
        where,
        500,
        "InternalError",
        `Internal error occurred: the spec replicas field ".${
          paths.specReplicas.join(".")
        }" does not exist`,
      );
    }
    if (typeof replicas !== "number") replicas = Number(replicas);
    const selector = paths.labelSelector
      ? getPath(obj, paths.labelSelector)
      : selectorString(getPath(obj, ["spec", "selector"]));
    const scaleMeta: JsonObject = {
      name: meta.name,
      namespace: type.scope === "Namespaced" ? meta.namespace : undefined,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
      creationTimestamp: meta.creationTimestamp,
    };
    return jsonClone({
      apiVersion: "autoscaling/v1",
      kind: "Scale",
      metadata: scaleMeta,
      spec: replicas ? { replicas } : {},
      status: {
        replicas: Number(getPath(obj, paths.statusReplicas) ?? 0),
        ...(typeof selector === "string" && selector ? { selector } : {}),
      },
    });
  }

  /** Sets the object's replicas from a Scale and answers with the new Scale. */
  #writeScale(
    type: ResourceType<KubeObject>,
    paths: ScalePaths,
    obj: KubeObject,
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
    const next = this.#prepareUpdate(type, entry, incoming, "");
    const key = this.#key(type, obj.metadata?.namespace, name);
    const manager = options.fieldManager ?? DEFAULT_FIELD_MANAGER;
    const written = this.#commit(
      type,
      key,
      entry,
      next,
      { manager, operation: "Update", subresource: "scale" },
      options.dryRun,
      where,
    );
    return this.#scaleOf(type, paths, written, where);
  }
}
