/**
 * Resource types: what the client, the cache and the controller builder need to know about a
 * kind — its group, version, plural, list kind, scope and subresources — carrying the
 * TypeScript type of its objects, so `client.get(Deployment, key)` returns a typed Deployment.
 * Custom resources come from {@linkcode defineResource}, which also gives their CRD and a
 * validator of their objects.
 *
 * @module
 */

import { z } from "zod";
import type { ObjectMeta } from "./generated/meta_v1.ts";
import type { DeepReadonly } from "./readonly.ts";
import {
  buildCRD,
  type CRDNames,
  type CustomResourceDefinitionManifest,
  type ResolvedVersion,
  subresourceNames,
  type VersionDefinition,
  type VersionOptions,
  withConversionWebhook,
} from "./crd.ts";
import type { Scope } from "./crd.ts";

export type { Scope };
import { objectMetaSchema } from "./meta.ts";
import type { ZodOutput, ZodSchema, ZodSchemaOf } from "./schema.ts";

/** The least every Kubernetes object has. */
export interface KubeObject {
  /** `group/version`, or `v1` for the core group. */
  apiVersion: string;
  /** The kind, e.g. `ConfigMap`. */
  kind: string;
  /**
   * Standard object metadata. Read-only here so that frozen objects from the cache are
   * KubeObjects too; a mutable `ObjectMeta` fits as well.
   */
  metadata?: DeepReadonly<ObjectMeta>;
}

/** An object of any kind, with its fields untyped: the counterpart of Go's `Unstructured`. */
export type Unstructured = KubeObject & { [field: string]: unknown };

/** A group, version and kind, e.g. `{ apiVersion: "apps/v1", kind: "Deployment" }`. */
export interface GroupVersionKind {
  /** `group/version`, or `v1` for the core group. */
  apiVersion: string;
  /** The kind. */
  kind: string;
}

/**
 * Describes one kind of the Kubernetes API. `T` is the type of its objects; it exists only for
 * the compiler, so that every call taking a resource type returns objects of that type.
 */
export interface ResourceType<T extends KubeObject = Unstructured> {
  /** `group/version`, or `v1` for the core group. */
  readonly apiVersion: string;
  /** API group; `""` for the core group. */
  readonly group: string;
  /** API version, e.g. `v1`. */
  readonly version: string;
  /** Kind, e.g. `Deployment`. */
  readonly kind: string;
  /** Lower-case plural used in URLs, e.g. `deployments`. */
  readonly plural: string;
  /** Kind of the list, e.g. `DeploymentList`. */
  readonly listKind: string;
  /** Namespaced or cluster-scoped. */
  readonly scope: Scope;
  /** Subresources the kind is known to have, e.g. `["status", "scale"]`. */
  readonly subresources: readonly string[];
  /** Never set at run time: carries `T`, the type of the kind's objects, for inference. */
  readonly __objectType?: T;
}

/** Options of {@linkcode resourceType}. */
export interface ResourceTypeOptions {
  /** API group; `""` for the core group. */
  group: string;
  /** API version. */
  version: string;
  /** Kind. */
  kind: string;
  /** Lower-case plural; default: the kind pluralised by Kubernetes' rules. */
  plural?: string;
  /** Kind of the list; default `<kind>List`. */
  listKind?: string;
  /** Namespaced or cluster-scoped. */
  scope: Scope;
  /** Known subresources, e.g. `["status"]`. */
  subresources?: readonly string[];
}

/**
 * Pluralises a kind the way Kubernetes' tools do when no plural is given
 * (`k8s.io/apimachinery/pkg/api/meta.UnsafeGuessKindToResource`).
 */
export function guessPlural(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower === "endpoints") return lower;
  if (
    lower.endsWith("s") || lower.endsWith("x") || lower.endsWith("z") || lower.endsWith("ch") ||
    lower.endsWith("sh")
  ) {
    return `${lower}es`;
  }
  if (lower.endsWith("y") && lower.length > 1 && !"aeiou".includes(lower[lower.length - 2])) {
    return `${lower.slice(0, -1)}ies`;
  }
  return `${lower}s`;
}

/**
 * Declares a resource type. Built-in kinds are already declared (`ConfigMap`, `Deployment`,
 * …); custom resources usually come from `defineResource`, which calls this.
 *
 * @example
 * ```ts
 * import { resourceType, type Unstructured } from "@rudder/operator/api";
 *
 * const Widget = resourceType<Unstructured>({
 *   group: "example.com",
 *   version: "v1",
 *   kind: "Widget",
 *   scope: "Namespaced",
 * });
 * console.log(Widget.apiVersion, Widget.plural); // example.com/v1 widgets
 * ```
 */
export function resourceType<T extends KubeObject = Unstructured>(
  options: ResourceTypeOptions,
): ResourceType<T> {
  return Object.freeze({
    apiVersion: options.group ? `${options.group}/${options.version}` : options.version,
    group: options.group,
    version: options.version,
    kind: options.kind,
    plural: options.plural ?? guessPlural(options.kind),
    listKind: options.listKind ?? `${options.kind}List`,
    scope: options.scope,
    subresources: Object.freeze([...(options.subresources ?? [])]),
  });
}

/** Splits `apps/v1` into `{ group: "apps", version: "v1" }` and `v1` into `{ group: "", version: "v1" }`. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf("/");
  return slash === -1
    ? { group: "", version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** `"apps/v1/Deployment"`: the key under which a kind is registered. */
export function gvkKey(gvk: GroupVersionKind): string {
  return `${gvk.apiVersion}/${gvk.kind}`;
}

/** True for a resource type (as opposed to a bare group-version-kind). */
export function isResourceType(value: unknown): value is ResourceType<KubeObject> {
  return typeof value === "object" && value !== null && "plural" in value && "scope" in value &&
    "apiVersion" in value && "kind" in value;
}

/**
 * The API path of a collection or object: `/api/v1/namespaces/ns/configmaps/name`, or
 * `/apis/apps/v1/deployments` for all namespaces. A subresource is appended after the name.
 */
export function resourcePath(
  type: ResourceType<KubeObject>,
  location: { namespace?: string; name?: string; subresource?: string } = {},
): string {
  const base = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  const namespace = type.scope === "Namespaced" && location.namespace
    ? `/namespaces/${encodeURIComponent(location.namespace)}`
    : "";
  let path = `${base}${namespace}/${type.plural}`;
  if (location.name !== undefined) path += `/${encodeURIComponent(location.name)}`;
  if (location.subresource) path += `/${location.subresource}`;
  return path;
}

// ---------------------------------------------------------------------------------------------
// Custom resources from zod schemas.

/** The object type of a custom resource: its apiVersion and kind, metadata, spec and status. */
export type CustomObject<
  ApiVersion extends string,
  Kind extends string,
  Spec,
  Status = never,
> = undefined extends Spec
  ? { apiVersion: ApiVersion; kind: Kind; metadata?: ObjectMeta; spec?: Spec; status?: Status }
  : { apiVersion: ApiVersion; kind: Kind; metadata?: ObjectMeta; spec: Spec; status?: Status };

/** The type of the objects of a resource type: `ObjectOf<typeof Example>`. */
export type ObjectOf<R> = R extends ResourceType<infer T> ? T : never;

/**
 * What {@linkcode defineResource} takes: the resource's names and scope, and its version's
 * schemas and options (more versions in `versions`).
 */
export interface ResourceDefinition<
  Group extends string = string,
  Version extends string = string,
  Kind extends string = string,
  Spec extends ZodSchema = ZodSchema,
  Status extends ZodSchema = ZodSchema,
> extends VersionOptions<Spec, Status> {
  /** API group; a domain with at least one dot, e.g. `example.com`. */
  group: Group;
  /** The version this definition types, e.g. `v1alpha1`. */
  version: Version;
  /** Kind, in CamelCase, e.g. `Example`. */
  kind: Kind;
  /** Namespaced or cluster-scoped. */
  scope: Scope;
  /** Plural used in URLs; default: the lower-case kind pluralised by Kubernetes' rules. */
  plural?: string;
  /** Singular; default: the lower-case kind. */
  singular?: string;
  /** Kind of the list; default `<Kind>List`. */
  listKind?: string;
  /** Short names for kubectl, e.g. `["ex"]`. */
  shortNames?: readonly string[];
  /** Categories for kubectl, e.g. `["all"]`. */
  categories?: readonly string[];
  /**
   * More versions served from the same CRD, each with its own schema (conversion `None`: the
   * API server only changes `apiVersion`). Give a {@linkcode VersionDefinition}, or another
   * resource of the same group and kind defined with `defineResource` to have it typed too.
   */
  versions?: readonly (VersionDefinition | { readonly definition: ResourceDefinition })[];
}

/** One issue found by `parse`: where and what. */
export interface ValidationIssue {
  /** The field, e.g. `spec.replicas` or `spec.items[0].name`; `""` for the object itself. */
  path: string;
  /** What is wrong. */
  message: string;
}

/** An object does not fit its resource's schema; `issues` names each failing field. */
export class ValidationError extends Error {
  /** Each failing field and why. */
  readonly issues: readonly ValidationIssue[];

  /** Builds the error; `what` names the object, e.g. `Example default/web`. */
  constructor(what: string, issues: readonly ValidationIssue[]) {
    super(
      `${what} is invalid: ` +
        issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; "),
    );
    this.name = "ValidationError";
    this.issues = issues;
  }
}

/** The result of `safeParse`: the parsed object, or the error naming the failing fields. */
export type SafeParseResult<T> =
  | { success: true; data: T; error?: undefined }
  | { success: false; data?: undefined; error: ValidationError };

/**
 * A resource type made by {@linkcode defineResource}: usable wherever a resource type is, with
 * its CRD and a validator of whole objects.
 */
export interface DefinedResource<T extends KubeObject = Unstructured> extends ResourceType<T> {
  /** Singular name, e.g. `example`. */
  readonly singular: string;
  /** Short names for kubectl. */
  readonly shortNames: readonly string[];
  /** Categories for kubectl. */
  readonly categories: readonly string[];
  /** The definition it was made from. */
  readonly definition: ResourceDefinition;
  /** The zod schema of whole objects (apiVersion, kind, metadata, spec, status). */
  readonly schema: ZodSchemaOf<T>;
  /** The CustomResourceDefinition (apiextensions.k8s.io/v1); a new copy on each call. */
  crd(): CustomResourceDefinitionManifest;
  /**
   * Validates a whole object and returns it with zod's defaults applied; throws a
   * {@linkcode ValidationError} naming each failing field.
   */
  parse(obj: unknown): T;
  /** Like `parse`, but returns the error instead of throwing it. */
  safeParse(obj: unknown): SafeParseResult<T>;
}

/** True for a resource type made by {@linkcode defineResource}, which can validate objects. */
export function isDefinedResource(value: unknown): value is DefinedResource<KubeObject> {
  return isResourceType(value) &&
    typeof (value as { safeParse?: unknown }).safeParse === "function";
}

/** `spec.items[0].name`, `metadata.labels[app.kubernetes.io/name]`: Kubernetes' field paths. */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (/^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(String(key))) {
      out += out ? `.${String(key)}` : String(key);
    } else out += `[${String(key)}]`;
  }
  return out;
}

function describeObject(kind: string, obj: unknown): string {
  const meta = (obj as { metadata?: { name?: unknown; namespace?: unknown } } | null)?.metadata;
  const name = typeof meta?.name === "string" ? meta.name : undefined;
  const namespace = typeof meta?.namespace === "string" ? meta.namespace : undefined;
  if (!name) return kind;
  return `${kind} ${namespace ? `${namespace}/` : ""}${name}`;
}

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function checkNames(names: CRDNames, version: string): void {
  const fail = (what: string) => {
    throw new Error(`defineResource ${names.kind || "(no kind)"}: ${what}`);
  };
  if (!names.kind || !/^[A-Z][A-Za-z0-9]*$/.test(names.kind)) {
    fail(`kind ${JSON.stringify(names.kind)} must be CamelCase, starting with a capital letter`);
  }
  if (!DNS1123_SUBDOMAIN.test(names.group) || !names.group.includes(".")) {
    fail(`group ${JSON.stringify(names.group)} must be a domain with at least one dot`);
  }
  const labels: [string, string][] = [
    ["version", version],
    ["plural", names.plural],
    ["singular", names.singular],
    ...names.shortNames.map((s): [string, string] => ["short name", s]),
    ...names.categories.map((s): [string, string] => ["category", s]),
  ];
  for (const [what, value] of labels) {
    if (!DNS1035_LABEL.test(value) || value.length > 63) {
      fail(`${what} ${JSON.stringify(value)} must be a lower-case DNS label`);
    }
  }
  if (names.scope !== "Namespaced" && names.scope !== "Cluster") {
    fail(`scope must be "Namespaced" or "Cluster"`);
  }
}

/** The versions of a definition, each with whether it is the storage version. */
function resolveVersions(definition: ResourceDefinition): ResolvedVersion[] {
  const own: VersionDefinition = { ...definition, name: definition.version };
  const others = (definition.versions ?? []).map((entry): VersionDefinition => {
    if ("definition" in entry) {
      const other = entry.definition;
      if (other.group !== definition.group || other.kind !== definition.kind) {
        throw new Error(
          `defineResource ${definition.kind}: version ${other.version} is of ` +
            `${other.kind}.${other.group}, not ${definition.kind}.${definition.group}`,
        );
      }
      return { ...other, name: other.version };
    }
    return entry;
  });
  const otherStored = others.some((v) => v.storage === true);
  return [
    { definition: own, storage: definition.storage ?? !otherStored },
    ...others.map((v) => ({ definition: v, storage: v.storage === true })),
  ];
}

/**
 * Defines a custom resource from zod schemas: one definition gives the TypeScript type of its
 * objects, a resource type for every client, cache and controller call, the
 * CustomResourceDefinition (`crd()`) with a structural schema the API server enforces, and a
 * validator of whole objects (`parse`, `safeParse`).
 *
 * Schemas are converted when the resource is defined, so a construct the API server could not
 * enforce (a transform, a union of objects, …) fails at once with the field's path, e.g.
 * `Example v1: spec.template.replicas: a zod transform cannot become a structural schema`.
 * For an object whose fields have defaults, prefer `.prefault({})` to `.default({})`: zod
 * returns a `.default()` value as it is, while the API server (like `.prefault()`) fills the
 * defaults inside it.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { conditionsSchema, defineResource, type ObjectOf } from "@rudder/operator";
 * import { intOrString } from "@rudder/operator/api";
 *
 * export const Example = defineResource({
 *   group: "example.com",
 *   version: "v1alpha1",
 *   kind: "Example",
 *   scope: "Namespaced",
 *   shortNames: ["ex"],
 *   spec: z.object({
 *     replicas: z.int().min(0).default(1).describe("Desired number of pods."),
 *     mode: z.enum(["fast", "safe"]).default("safe"),
 *     maxUnavailable: intOrString().optional(),
 *   }),
 *   status: z.object({
 *     replicas: z.int().optional(),
 *     conditions: conditionsSchema.optional(),
 *   }),
 *   printerColumns: [{ name: "Replicas", jsonPath: ".spec.replicas" }],
 *   subresources: {
 *     scale: { specReplicasPath: ".spec.replicas", statusReplicasPath: ".status.replicas" },
 *   },
 * });
 * export type Example = ObjectOf<typeof Example>;
 *
 * const obj: Example = Example.parse({
 *   apiVersion: "example.com/v1alpha1",
 *   kind: "Example",
 *   metadata: { name: "demo", namespace: "default" },
 *   spec: {},
 * });
 * console.log(obj.spec.replicas, Example.crd().metadata.name); // 1 examples.example.com
 * ```
 */
export function defineResource<
  const Group extends string,
  const Version extends string,
  const Kind extends string,
  Spec extends ZodSchema,
  Status extends ZodSchema = never,
>(
  definition: ResourceDefinition<Group, Version, Kind, Spec, Status>,
): DefinedResource<CustomObject<`${Group}/${Version}`, Kind, ZodOutput<Spec>, ZodOutput<Status>>> {
  type T = CustomObject<`${Group}/${Version}`, Kind, ZodOutput<Spec>, ZodOutput<Status>>;
  const names: CRDNames = {
    group: definition.group,
    kind: definition.kind,
    plural: definition.plural ?? guessPlural(definition.kind),
    singular: definition.singular ?? definition.kind.toLowerCase(),
    listKind: definition.listKind ?? `${definition.kind}List`,
    shortNames: [...(definition.shortNames ?? [])],
    categories: [...(definition.categories ?? [])],
    scope: definition.scope,
  };
  checkNames(names, definition.version);
  const versions = resolveVersions(definition);
  // Built now so that a schema the API server could not enforce fails where it is defined.
  const crd = buildCRD(names, versions);
  const type = resourceType<T>({
    group: names.group,
    version: definition.version,
    kind: names.kind,
    plural: names.plural,
    listKind: names.listKind,
    scope: names.scope,
    subresources: subresourceNames(definition),
  });
  const apiVersion = type.apiVersion;
  const objectSchema: z.ZodType = z.object({
    apiVersion: z.literal(apiVersion),
    kind: z.literal(names.kind),
    metadata: objectMetaSchema.optional(),
    spec: definition.spec,
    ...(definition.status ? { status: z.optional(definition.status) } : {}),
  });
  // T is this schema's output, but through CustomObject's conditional (spec optional when its
  // schema accepts undefined), which the compiler cannot match against zod's inferred type.
  const schema = objectSchema as ZodSchemaOf<T>;
  const safeParse = (obj: unknown): SafeParseResult<T> => {
    const result = schema.safeParse(obj);
    if (result.success) return { success: true, data: result.data };
    const issues = result.error.issues.map((issue) => ({
      path: formatFieldPath(issue.path),
      message: issue.message,
    }));
    return { success: false, error: new ValidationError(describeObject(names.kind, obj), issues) };
  };
  return Object.freeze({
    ...type,
    singular: names.singular,
    shortNames: Object.freeze([...names.shortNames]),
    categories: Object.freeze([...names.categories]),
    definition,
    schema,
    crd: () => withConversionWebhook(structuredClone(crd)),
    parse(obj: unknown): T {
      const result = safeParse(obj);
      if (!result.success) throw result.error;
      return result.data;
    },
    safeParse,
  });
}
