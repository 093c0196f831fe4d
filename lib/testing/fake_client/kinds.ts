/**
 * What the fake knows about kinds, and how kube-apiserver 1.36 treats each: which kinds it
 * serves (built-in, given, or from CRDs), which have a generation and a `status` subresource,
 * which fields a field selector may use, and what the server adds on writes of some kinds.
 *
 * @module
 */

import { NoKindMatchError, RESTMapper } from "../../api/discovery.ts";
import { builtinResourceType } from "../../api/builtins.ts";
import {
  type GroupVersionKind,
  gvkKey,
  isDefinedResource,
  isResourceType,
  type KubeObject,
  type ResourceType,
} from "../../api/resource.ts";
import type { JSONSchemaProps } from "../../api/schema.ts";
import type { ResourceRef } from "../../client/client.ts";
import { schemaForKind } from "../../client/strategic_merge.ts";
import { isJsonObject, type JsonObject } from "../../util/json.ts";
import { CRD_KEY, establishedStatus, servedKinds, versionSchema } from "./crd.ts";
import { base64, getPath, metadataOf } from "./objects.ts";
import { BUILTIN_SCALABLE, BUILTIN_SCALE, DEFAULT_CUSTOM_SCALE, type ScalePaths } from "./scale.ts";

const spec = (obj: JsonObject): unknown => obj.spec;
const webhooks = (obj: JsonObject): unknown => obj.webhooks;

/**
 * Built-in kinds whose strategy sets `metadata.generation` (1 on create), and what must change
 * for it to grow. A Deployment counts annotation changes too, because they are copied to its
 * ReplicaSets. Other built-in kinds (ConfigMap, Secret, Service, …) have no generation.
 */
const GENERATION_INPUTS: Record<string, (obj: JsonObject) => unknown> = {
  "apps/v1/Deployment": (obj) => [obj.spec, getPath(obj, ["metadata", "annotations"])],
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
export const STATUS_KEEPS_LABELS: ReadonlySet<string> = new Set([
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
  "v1/Event source": (obj) => getPath(obj, ["source", "component"]),
  "v1/Pod spec.hostNetwork": (obj) => getPath(obj, ["spec", "hostNetwork"]) ?? false,
  "v1/Secret type": (obj) => obj.type ?? "Opaque",
};

/** Whether kube-apiserver itself serves the kind (as opposed to a CRD). */
export function isBuiltin(type: ResourceType<KubeObject>): boolean {
  return builtinResourceType(type) !== undefined ||
    schemaForKind(type.apiVersion, type.kind) !== undefined;
}

/** Whether the kind keeps `status` apart, in a subresource. */
export function hasStatus(type: ResourceType<KubeObject>): boolean {
  return type.subresources.includes("status");
}

/** Whether an update without `metadata.resourceVersion` is accepted (custom resources refuse). */
export function allowsUnconditionalUpdate(type: ResourceType<KubeObject>): boolean {
  return isBuiltin(type) && gvkKey(type) !== CRD_KEY;
}

/** What must change for the generation to grow; `undefined` for kinds without a generation. */
export function generationInput(
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

/** What the API server adds or converts on every write of some kinds; `before` on updates. */
export function normalize(
  type: ResourceType<KubeObject>,
  obj: JsonObject,
  before: JsonObject | undefined,
  now: () => string,
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
    obj.status = establishedStatus(obj, now());
  }
}

/**
 * The kinds a fake serves: the built-in ones, those it was given, and those of the CRDs it
 * holds, with the scale paths and selectable fields of the custom ones. It registers each
 * with the fake's {@linkcode RESTMapper}, so that lookups by `apiVersion`/`kind` resolve.
 */
export class KnownKinds {
  readonly #mapper: RESTMapper;
  /** Kinds from `options.types` and from CRDs, by `apiVersion/kind`. */
  readonly #known = new Map<string, ResourceType<KubeObject>>();
  readonly #scale = new Map<string, ScalePaths>();
  readonly #selectable = new Map<string, string[]>();
  /** Structural schemas of custom kinds, from their CRD or from `defineResource`. */
  readonly #schemas = new Map<string, JSONSchemaProps>();

  /** Kinds `types` besides the built-in ones; `selectable` lists custom selectable fields. */
  constructor(
    mapper: RESTMapper,
    types: readonly ResourceType<KubeObject>[],
    selectable: readonly { type: GroupVersionKind; fields: readonly string[] }[],
  ) {
    this.#mapper = mapper;
    for (const type of types) {
      this.#mapper.register(type);
      this.#known.set(gvkKey(type), type);
      if (isDefinedResource(type)) {
        const version = type.crd().spec.versions.find((v) => v.name === type.version);
        const schema = version && versionSchema(version as unknown as JsonObject);
        if (schema) this.#schemas.set(gvkKey(type), schema);
      }
    }
    for (const { type, fields } of selectable) this.#selectable.set(gvkKey(type), [...fields]);
  }

  /**
   * The resource type of a kind, answered at once as the mapper would (the constructor of a
   * fake cannot wait for the mapper).
   *
   * @throws {NoKindMatchError} when the kind is neither built in nor known.
   */
  typeOf(gvk: GroupVersionKind): ResourceType<KubeObject> {
    if (!gvk.apiVersion || !gvk.kind) {
      throw new Error(
        `an object needs apiVersion and kind to be written or read (got apiVersion ` +
          `${JSON.stringify(gvk.apiVersion)}, kind ${JSON.stringify(gvk.kind)})`,
      );
    }
    const known = builtinResourceType(gvk) ?? this.#known.get(gvkKey(gvk));
    if (known) return known;
    throw new NoKindMatchError(gvk, "it is not a built-in kind, and no type is registered for it");
  }

  /** The resource type a call names, by its type or by `apiVersion`/`kind` through the mapper. */
  async resolve(ref: ResourceRef<KubeObject>): Promise<ResourceType<KubeObject>> {
    if (isResourceType(ref)) return ref;
    return await this.#mapper.resourceTypeFor(ref);
  }

  /** Makes the kinds `crd` serves known. */
  serve(crd: JsonObject): void {
    for (const served of servedKinds(crd)) {
      const key = gvkKey(served.type);
      this.#mapper.register(served.type);
      this.#known.set(key, served.type);
      if (served.scale) this.#scale.set(key, served.scale);
      if (served.selectableFields.length > 0) this.#selectable.set(key, served.selectableFields);
      if (served.schema) this.#schemas.set(key, served.schema);
      else this.#schemas.delete(key);
    }
  }

  /**
   * The structural schema objects of a custom kind are defaulted, pruned and validated with:
   * its CRD's, or that of the type made by `defineResource`; `undefined` for other kinds.
   */
  schema(type: ResourceType<KubeObject>): JSONSchemaProps | undefined {
    return this.#schemas.get(gvkKey(type));
  }

  /** Where the kind's `scale` subresource reads and writes; `undefined` when it has none. */
  scalePaths(type: ResourceType<KubeObject>): ScalePaths | undefined {
    const key = gvkKey(type);
    if (BUILTIN_SCALABLE.has(key)) return BUILTIN_SCALE;
    if (!type.subresources.includes("scale")) return undefined;
    return this.#scale.get(key) ?? DEFAULT_CUSTOM_SCALE;
  }

  /** The fields a field selector may use for the kind. */
  selectableFields(type: ResourceType<KubeObject>): string[] {
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
}

/** The value of `field` a field selector compares, for an object of `type`. */
export function fieldValue(
  type: ResourceType<KubeObject>,
  obj: JsonObject,
  field: string,
): unknown {
  const special = FIELD_VALUES[`${gvkKey(type)} ${field}`];
  return special ? special(obj) : getPath(obj, field.split("."));
}
