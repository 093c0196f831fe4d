/**
 * CustomResourceDefinitions from resource definitions: names, versions (one of them stored),
 * each version's structural schema made from its zod schemas (see `schema.ts`), printer
 * columns, subresources, selectable fields and CEL rules. `defineResource` calls this; the
 * result is what `Example.crd()` returns and `rudder manifests` writes.
 *
 * Paths that columns, the scale subresource and selectable fields name are checked against
 * the schema when they are plain field paths (`.spec.replicas`), so a typo fails at definition
 * rather than as an empty column.
 *
 * @module
 */

import type * as apiextensionsv1 from "./generated/apiextensions_v1.ts";
import {
  isOptionalField,
  type JSONSchemaProps,
  StructuralSchemaError,
  toStructuralSchema,
  type ValidationRule,
  type ZodSchema,
} from "./schema.ts";

/** Whether objects of a kind live in a namespace or in the whole cluster. */
export type Scope = "Namespaced" | "Cluster";

/** A field usable in field selectors: `{ jsonPath: ".spec.color" }`. */
export type SelectableField = apiextensionsv1.SelectableField;

/** The spec of a CustomResourceDefinition: group, names, scope and versions. */
export type CustomResourceDefinitionSpec = apiextensionsv1.CustomResourceDefinitionSpec;

/** The column types the API server's Table output knows. */
export type PrinterColumnType = "integer" | "number" | "string" | "boolean" | "date";

/**
 * A column of `kubectl get` (additionalPrinterColumns). Columns of one's own replace the
 * default Age column; add `{ name: "Age", jsonPath: ".metadata.creationTimestamp" }` to keep it.
 */
export interface PrinterColumn {
  /** The column's header, e.g. `Replicas`. */
  name: string;
  /** A JSONPath into the object, e.g. `.spec.replicas` or `.status.conditions[?(@.type=="Ready")].status`. */
  jsonPath: string;
  /** The column's type; default: the type of the field at a plain `jsonPath`. */
  type?: PrinterColumnType;
  /** Shown by `kubectl explain` and in the Table's column definitions. */
  description?: string;
  /** An OpenAPI format, e.g. `name` for the column that identifies the object. */
  format?: string;
  /** 0 (the default) shows it always; higher numbers only with `-o wide`. */
  priority?: number;
}

/** The scale subresource: where the replica counts are, for `kubectl scale` and autoscalers. */
export interface ScaleSubresource {
  /** The desired replicas, under `.spec`, e.g. `.spec.replicas`. */
  specReplicasPath: string;
  /** The observed replicas, under `.status`, e.g. `.status.replicas`. */
  statusReplicasPath: string;
  /** A label selector in string form, under `.status` or `.spec`, for autoscalers. */
  labelSelectorPath?: string;
}

/** Subresources of a version. */
export interface SubresourceOptions {
  /** The status subresource; default: on when a status schema is given. */
  status?: boolean;
  /** The scale subresource. */
  scale?: ScaleSubresource;
}

/** A CEL rule on the whole object (`self` is the object): a rule, or a rule with its message. */
export type CELValidation = string | ValidationRule;

/** What a version of a resource holds: its schemas and how it is served and shown. */
export interface VersionOptions<
  Spec extends ZodSchema = ZodSchema,
  Status extends ZodSchema = ZodSchema,
> {
  /** The zod schema of `spec`. */
  spec: Spec;
  /** The zod schema of `status`; turns the status subresource on. */
  status?: Status;
  /** The description of the object's schema (`kubectl explain`). */
  description?: string;
  /** Whether the API server serves this version; default true. */
  served?: boolean;
  /**
   * Whether objects are stored in this version. Exactly one version is: by default the
   * resource's own version, unless one in `versions` says `storage: true`.
   */
  storage?: boolean;
  /** Marks the version deprecated: clients get a warning. */
  deprecated?: boolean;
  /** The warning deprecated versions send instead of the default one. */
  deprecationWarning?: string;
  /** Columns of `kubectl get`. */
  printerColumns?: readonly PrinterColumn[];
  /** Subresources: status (automatic with a status schema) and scale. */
  subresources?: SubresourceOptions;
  /** Fields usable in field selectors (`.spec.color`): strings, integers or booleans. */
  selectableFields?: readonly (string | SelectableField)[];
  /** CEL rules on the whole object, enforced by the API server. */
  validations?: readonly CELValidation[];
}

/** One more version of a resource, named. */
export interface VersionDefinition extends VersionOptions {
  /** The version, e.g. `v1beta1`. */
  name: string;
}

/** The names and scope of a custom resource. */
export interface CRDNames {
  /** API group, e.g. `example.com`. */
  group: string;
  /** Kind, e.g. `Example`. */
  kind: string;
  /** Plural used in URLs, e.g. `examples`. */
  plural: string;
  /** Singular, e.g. `example`. */
  singular: string;
  /** Kind of the list, e.g. `ExampleList`. */
  listKind: string;
  /** Short names for kubectl, e.g. `["ex"]`. */
  shortNames: readonly string[];
  /** Categories for kubectl, e.g. `["all"]`. */
  categories: readonly string[];
  /** Namespaced or cluster-scoped. */
  scope: Scope;
}

/** A CustomResourceDefinition (apiextensions.k8s.io/v1) as `crd()` makes it. */
export type CustomResourceDefinitionManifest = {
  /** Always `apiextensions.k8s.io/v1`. */
  apiVersion: "apiextensions.k8s.io/v1";
  /** Always `CustomResourceDefinition`. */
  kind: "CustomResourceDefinition";
  /** `<plural>.<group>`. */
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  /** Names, scope and versions. */
  spec: {
    [K in keyof CustomResourceDefinitionSpec]: CustomResourceDefinitionSpec[K];
  };
};

/** A version ready to become part of a CRD: its options and whether it is stored. */
export interface ResolvedVersion {
  /** The version's options and name. */
  definition: VersionDefinition;
  /** Whether this is the storage version. */
  storage: boolean;
}

const STANDARD_FIELDS: Record<string, JSONSchemaProps> = {
  apiVersion: {
    type: "string",
    description: "APIVersion defines the versioned schema of this representation of an object.",
  },
  kind: {
    type: "string",
    description: "Kind is a string value representing the REST resource this object represents.",
  },
  metadata: { type: "object" },
};

/** Converts one schema of a version, and checks that it is an object as conventions want. */
function topLevel(schema: ZodSchema, field: "spec" | "status", where: string): JSONSchemaProps {
  let node: JSONSchemaProps;
  try {
    node = toStructuralSchema(schema, field);
  } catch (err) {
    if (!(err instanceof StructuralSchemaError)) throw err;
    throw new StructuralSchemaError(err.path, err.reason, where);
  }
  if (node.type !== "object" && !node["x-kubernetes-preserve-unknown-fields"]) {
    throw new Error(`${where}: ${field} must be an object schema (z.object, z.record, …)`);
  }
  return node;
}

/**
 * The `openAPIV3Schema` of a version: `apiVersion`, `kind`, `metadata`, `spec` (required unless
 * its schema is optional or defaulted), `status`, and the version's CEL rules at the top.
 */
export function versionSchema(version: VersionDefinition, where: string): JSONSchemaProps {
  const properties: Record<string, JSONSchemaProps> = {
    ...structuredClone(STANDARD_FIELDS),
    spec: topLevel(version.spec, "spec", where),
  };
  if (version.status) properties.status = topLevel(version.status, "status", where);
  const schema: JSONSchemaProps = { type: "object" };
  if (version.description) schema.description = version.description;
  schema.properties = properties;
  if (!isOptionalField(version.spec)) schema.required = ["spec"];
  const rules = (version.validations ?? []).map((rule): ValidationRule =>
    typeof rule === "string" ? { rule } : { ...rule }
  );
  for (const rule of rules) {
    if (!rule.rule) throw new Error(`${where}: a validation needs a rule`);
  }
  if (rules.length > 0) schema["x-kubernetes-validations"] = rules;
  return schema;
}

/**
 * The node of a plain field path (`.spec.replicas`); `undefined` when there is no such field,
 * `null` when the schema cannot tell (not a plain path, metadata, or a field kept unchecked).
 */
function fieldAt(schema: JSONSchemaProps, jsonPath: string): JSONSchemaProps | undefined | null {
  if (!/^(\.[A-Za-z0-9_-]+)+$/.test(jsonPath) || jsonPath.startsWith(".metadata.")) return null;
  let node: JSONSchemaProps = schema;
  for (const key of jsonPath.slice(1).split(".")) {
    if (node.properties?.[key]) node = node.properties[key];
    else if (typeof node.additionalProperties === "object") node = node.additionalProperties;
    else if (node["x-kubernetes-preserve-unknown-fields"]) return null;
    else return undefined;
  }
  return node;
}

function columnType(node: JSONSchemaProps): PrinterColumnType | undefined {
  if (node["x-kubernetes-int-or-string"]) return "string";
  switch (node.type) {
    case "integer":
    case "number":
    case "boolean":
      return node.type;
    case "string":
      return node.format === "date-time" ? "date" : "string";
  }
  return undefined;
}

const METADATA_COLUMNS: Record<string, PrinterColumnType> = {
  ".metadata.creationTimestamp": "date",
  ".metadata.name": "string",
  ".metadata.namespace": "string",
  ".metadata.generation": "integer",
};

function printerColumns(
  columns: readonly PrinterColumn[],
  schema: JSONSchemaProps,
  where: string,
): apiextensionsv1.CustomResourceColumnDefinition[] {
  return columns.map((column) => {
    if (!column.name) throw new Error(`${where}: a printer column needs a name`);
    const what = `${where}: printer column ${JSON.stringify(column.name)}`;
    let type: string | undefined = column.type;
    const known = METADATA_COLUMNS[column.jsonPath];
    const node = known ? undefined : fieldAt(schema, column.jsonPath);
    if (node === undefined && !known) {
      throw new Error(`${what}: ${column.jsonPath} is not a field of the schema`);
    }
    if (!type) {
      type = known ?? (node ? columnType(node) : undefined);
      if (!type) {
        throw new Error(`${what}: give its type; it cannot be told from ${column.jsonPath}`);
      }
    }
    const result: apiextensionsv1.CustomResourceColumnDefinition = {
      name: column.name,
      type,
      jsonPath: column.jsonPath,
    };
    if (column.description) result.description = column.description;
    if (column.format) result.format = column.format;
    if (column.priority !== undefined) result.priority = column.priority;
    return result;
  });
}

function checkPath(
  schema: JSONSchemaProps,
  path: string | undefined,
  under: readonly string[],
  types: readonly string[],
  what: string,
): void {
  if (path === undefined) return;
  if (!under.some((prefix) => path.startsWith(`${prefix}.`))) {
    throw new Error(`${what}: ${path} must be under ${under.join(" or ")}`);
  }
  const node = fieldAt(schema, path);
  if (node === undefined) throw new Error(`${what}: ${path} is not a field of the schema`);
  if (node && node.type && !types.includes(node.type)) {
    throw new Error(`${what}: ${path} is a ${node.type}, not a ${types.join(" or ")}`);
  }
}

function subresources(
  version: VersionDefinition,
  schema: JSONSchemaProps,
  where: string,
): apiextensionsv1.CustomResourceSubresources | undefined {
  const options = version.subresources ?? {};
  const status = options.status ?? version.status !== undefined;
  if (status && !version.status) {
    throw new Error(`${where}: the status subresource needs a status schema`);
  }
  const result: apiextensionsv1.CustomResourceSubresources = {};
  if (status) result.status = {};
  const scale = options.scale;
  if (scale) {
    const what = `${where}: scale subresource`;
    checkPath(schema, scale.specReplicasPath, [".spec"], ["integer"], what);
    checkPath(schema, scale.statusReplicasPath, [".status"], ["integer"], what);
    checkPath(schema, scale.labelSelectorPath, [".spec", ".status"], ["string"], what);
    result.scale = {
      specReplicasPath: scale.specReplicasPath,
      statusReplicasPath: scale.statusReplicasPath,
      ...(scale.labelSelectorPath ? { labelSelectorPath: scale.labelSelectorPath } : {}),
    };
  }
  return Object.keys(result).length > 0 ? result : undefined;
}

/** The subresources a version has: `status` and/or `scale`. */
export function subresourceNames(version: VersionOptions): string[] {
  const names: string[] = [];
  if (version.subresources?.status ?? version.status !== undefined) names.push("status");
  if (version.subresources?.scale) names.push("scale");
  return names;
}

/** One entry of `spec.versions`. */
export function crdVersion(
  resolved: ResolvedVersion,
  kind: string,
): apiextensionsv1.CustomResourceDefinitionVersion {
  const version = resolved.definition;
  const where = `${kind} ${version.name}`;
  const schema = versionSchema(version, where);
  const result: apiextensionsv1.CustomResourceDefinitionVersion = {
    name: version.name,
    served: version.served ?? true,
    storage: resolved.storage,
  };
  if (version.deprecated) result.deprecated = true;
  if (version.deprecationWarning) result.deprecationWarning = version.deprecationWarning;
  result.schema = { openAPIV3Schema: schema };
  const sub = subresources(version, schema, where);
  if (sub) result.subresources = sub;
  if (version.printerColumns && version.printerColumns.length > 0) {
    result.additionalPrinterColumns = printerColumns(version.printerColumns, schema, where);
  }
  if (version.selectableFields && version.selectableFields.length > 0) {
    result.selectableFields = version.selectableFields.map((field) => {
      const jsonPath = typeof field === "string" ? field : field.jsonPath;
      checkPath(
        schema,
        jsonPath,
        [".spec", ".status"],
        ["string", "integer", "boolean"],
        `${where}: selectable field`,
      );
      return { jsonPath };
    });
  }
  return result;
}

/**
 * Builds a CRD from the names and the resolved versions (exactly one of them stored). Throws
 * when a schema cannot become a structural schema, naming the version and the field.
 */
export function buildCRD(
  names: CRDNames,
  versions: readonly ResolvedVersion[],
): CustomResourceDefinitionManifest {
  const stored = versions.filter((v) => v.storage).map((v) => v.definition.name);
  if (stored.length !== 1) {
    throw new Error(
      `${names.kind}: exactly one version must be stored; ` +
        (stored.length === 0 ? "none is" : `${stored.join(", ")} are`),
    );
  }
  const seen = new Set<string>();
  for (const { definition } of versions) {
    if (seen.has(definition.name)) {
      throw new Error(`${names.kind}: version ${definition.name} is defined twice`);
    }
    seen.add(definition.name);
  }
  const crdNames: CustomResourceDefinitionSpec["names"] = {
    kind: names.kind,
    listKind: names.listKind,
    plural: names.plural,
    singular: names.singular,
  };
  if (names.shortNames.length > 0) crdNames.shortNames = [...names.shortNames];
  if (names.categories.length > 0) crdNames.categories = [...names.categories];
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${names.plural}.${names.group}` },
    spec: {
      group: names.group,
      names: crdNames,
      scope: names.scope,
      versions: versions.map((version) => crdVersion(version, names.kind)),
    },
  };
}

/** Names (`<plural>.<group>`) of CRDs whose versions convert through a webhook. */
const conversionWebhooks = new Set<string>();

/**
 * Marks the CRD `name` (`<plural>.<group>`) as converting through a webhook: its `crd()` then
 * emits `spec.conversion` with `strategy: Webhook`. The webhook package calls it when a
 * conversion is registered.
 */
export function markConversionWebhook(name: string): void {
  conversionWebhooks.add(name);
}

/**
 * `crd` with `spec.conversion` set to `strategy: Webhook` (ConversionReview v1, the service
 * `webhook-service` in `system` on `/convert`, which `rudder manifests` and envtest rewrite)
 * when a conversion of its kind is registered; else `crd` unchanged.
 */
export function withConversionWebhook(
  crd: CustomResourceDefinitionManifest,
): CustomResourceDefinitionManifest {
  if (!conversionWebhooks.has(crd.metadata.name)) return crd;
  crd.spec.conversion = {
    strategy: "Webhook",
    webhook: {
      conversionReviewVersions: ["v1"],
      clientConfig: { service: { namespace: "system", name: "webhook-service", path: "/convert" } },
    },
  };
  return crd;
}
