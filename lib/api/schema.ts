/**
 * From zod schemas to Kubernetes' structural OpenAPI v3 schemas, the kind a
 * CustomResourceDefinition needs, and the small helpers that add what zod cannot say: an
 * int-or-string field, list and map semantics, CEL rules, embedded resources.
 *
 * The conversion walks zod v4's own definitions (`schema._zod.def`) rather than post-processing
 * `z.toJSONSchema()`: JSON Schema output has `$ref`s, `additionalProperties: false`, `anyOf`
 * for nullables and ECMAScript-only patterns for formats, each of which the API server rejects,
 * and it cannot say *where* a construct fails. The walker emits only what Kubernetes' structural
 * rules allow (a type on every node, no `$ref`, `$schema` or `additionalProperties: false`) and
 * refuses what the API server could not enforce the way `parse` does (transforms, coercion,
 * `catch`, non-structural unions, intersections, tuples, recursion, …) with an error naming the
 * path inside the schema, e.g. `spec.template.replicas: a zod transform cannot become a
 * structural schema`.
 *
 * Metadata comes from zod's global registry: `description` and `title` (set by `.describe()` or
 * `.meta()`) and any `x-kubernetes-*` key, which is copied to the node as it is; the helpers
 * below set those keys. Refinements (`.refine()`, `.superRefine()`), checks on a record's keys
 * and string formats Kubernetes does not know (zod's `nanoid`, `cuid`, …) run in `parse` only;
 * for the API server to enforce a rule, write it in CEL with {@linkcode celRule}.
 *
 * The conversion itself lives in two files: `schema_walk.ts` reads zod's definitions (wrappers,
 * checks, metadata, refusals) and `schema_openapi.ts` emits and checks the OpenAPI nodes.
 *
 * @module
 */

import { z } from "zod";
import type * as apiextensionsv1 from "./generated/apiextensions_v1.ts";
import { convert } from "./schema_openapi.ts";
import { peel } from "./schema_walk.ts";

export { StructuralSchemaError } from "./schema_walk.ts";

// zod's types appear in Rudder's signatures through these aliases. They are marked internal
// because `deno doc --lint` counts types of npm packages as private and zod's own
// declarations cannot be made public from here.

/** @internal A zod (v4) schema of any flavour, classic or mini: zod's base type. */
export type ZodSchema<Output = unknown> = z.core.$ZodType<Output>;

/** @internal The type a zod schema parses to (`z.output`). */
export type ZodOutput<S> = z.output<S>;

/** @internal A classic zod schema whose output is `T`. */
export type ZodSchemaOf<T> = z.ZodType<T>;

/** @internal The schema {@linkcode intOrString} returns. */
export type IntOrStringSchema = z.ZodUnion<readonly [z.ZodInt, z.ZodString]>;

/** @internal The schema {@linkcode phaseSchema} returns: an enum of `T`. */
export type ZodEnumSchema<T extends string> = z.ZodEnum<{ [K in T]: K }>;

/** A node of a structural OpenAPI v3 schema, as a CRD holds it (apiextensions.k8s.io/v1). */
export type JSONSchemaProps = apiextensionsv1.JSONSchemaProps;

/** A CEL validation rule (`x-kubernetes-validations`): `rule`, and `message` and friends. */
export type ValidationRule = apiextensionsv1.ValidationRule;

/** The `x-kubernetes-*` keys a zod schema's metadata may carry, copied to its schema node. */
export interface KubernetesSchemaMeta {
  /** `atomic`, `set` or `map` (with `x-kubernetes-list-map-keys`). */
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  /** The keys of a `map` list. */
  "x-kubernetes-list-map-keys"?: string[];
  /** `granular` or `atomic`. */
  "x-kubernetes-map-type"?: "granular" | "atomic";
  /** CEL rules. */
  "x-kubernetes-validations"?: ValidationRule[];
  /** Any value, or an object that keeps fields its schema does not list. */
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  /** An integer or a string. */
  "x-kubernetes-int-or-string"?: boolean;
  /** A whole Kubernetes object (apiVersion, kind, metadata). */
  "x-kubernetes-embedded-resource"?: boolean;
}

/** Adds Kubernetes metadata to a copy of `schema`, keeping what it had. */
function withKubernetesMeta<S extends ZodSchema>(schema: S, meta: KubernetesSchemaMeta): S {
  const current = (z.globalRegistry.get(schema) ?? {}) as
    & KubernetesSchemaMeta
    & Record<string, unknown>;
  const merged: Record<string, unknown> = { ...current, ...meta };
  if (meta["x-kubernetes-validations"]) {
    merged["x-kubernetes-validations"] = [
      ...(current["x-kubernetes-validations"] ?? []),
      ...meta["x-kubernetes-validations"],
    ];
  }
  // A clone without a new definition keeps its parent, so it inherits the parent's metadata.
  const copy = z.core.util.clone(schema);
  z.globalRegistry.add(copy, merged);
  return copy;
}

/**
 * An integer or a string, like Kubernetes' `IntOrString` (`port: 8080` or `port: "http"`,
 * `maxUnavailable: 1` or `"25%"`): `x-kubernetes-int-or-string` in the CRD.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { intOrString } from "@rudder/operator/api";
 *
 * const spec = z.object({ maxUnavailable: intOrString().default("25%") });
 * console.log(spec.parse({}).maxUnavailable); // 25%
 * ```
 */
export function intOrString(): IntOrStringSchema {
  return z.union([z.int(), z.string()]).meta({ "x-kubernetes-int-or-string": true });
}

/**
 * Sets how server-side apply merges a list: `atomic` (replaced whole), `set` (scalars, merged
 * as a set) or `map` (objects merged by the `keys` fields, which must be required or
 * defaulted). Returns a copy of `schema`.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { listType } from "@rudder/operator/api";
 *
 * const ports = listType(
 *   z.array(z.object({ name: z.string(), port: z.int() })),
 *   "map",
 *   ["name"],
 * );
 * console.log(ports.parse([{ name: "http", port: 80 }]).length); // 1
 * ```
 */
export function listType<S extends ZodSchema>(
  schema: S,
  type: "atomic" | "set" | "map",
  keys?: readonly string[],
): S {
  if (type === "map" && (!keys || keys.length === 0)) {
    throw new Error('listType "map" needs the names of its key fields');
  }
  if (type !== "map" && keys && keys.length > 0) {
    throw new Error(`listType "${type}" takes no keys (only "map" does)`);
  }
  return withKubernetesMeta(schema, {
    "x-kubernetes-list-type": type,
    ...(type === "map" ? { "x-kubernetes-list-map-keys": [...keys!] } : {}),
  });
}

/**
 * Sets how server-side apply merges an object or record: `granular` (field by field, the
 * default) or `atomic` (replaced whole). Returns a copy of `schema`.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { mapType } from "@rudder/operator/api";
 *
 * const selector = mapType(z.record(z.string(), z.string()), "atomic");
 * console.log(selector.parse({ app: "web" })); // { app: "web" }
 * ```
 */
export function mapType<S extends ZodSchema>(schema: S, type: "granular" | "atomic"): S {
  return withKubernetesMeta(schema, { "x-kubernetes-map-type": type });
}

/**
 * Adds a CEL validation rule (`x-kubernetes-validations`) that the API server enforces; `self`
 * is the value of this field. Several calls add several rules. Returns a copy of `schema`.
 * `parse` does not evaluate CEL: the rule is the API server's to enforce.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { celRule } from "@rudder/operator/api";
 *
 * const range = celRule(
 *   z.object({ min: z.int(), max: z.int() }),
 *   "self.min <= self.max",
 *   "min must not exceed max",
 * );
 * console.log(range.meta()?.["x-kubernetes-validations"]);
 * ```
 */
export function celRule<S extends ZodSchema>(
  schema: S,
  rule: string | ValidationRule,
  message?: string,
): S {
  const validation: ValidationRule = typeof rule === "string"
    ? { rule, ...(message === undefined ? {} : { message }) }
    : { ...rule };
  if (!validation.rule) throw new Error("celRule needs a rule");
  return withKubernetesMeta(schema, { "x-kubernetes-validations": [validation] });
}

/**
 * Marks an object as a whole Kubernetes object (`x-kubernetes-embedded-resource`), e.g. a
 * template: the API server checks its `apiVersion`, `kind` and `metadata`. Returns a copy of
 * `schema`; use an object that keeps unknown fields (`z.looseObject`) or lists those three.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { embeddedResource } from "@rudder/operator/api";
 *
 * const template = embeddedResource(z.looseObject({ apiVersion: z.string(), kind: z.string() }));
 * console.log(template.parse({ apiVersion: "v1", kind: "ConfigMap", data: {} }).kind);
 * ```
 */
export function embeddedResource<S extends ZodSchema>(schema: S): S {
  return withKubernetesMeta(schema, { "x-kubernetes-embedded-resource": true });
}

/**
 * Converts a zod schema to a structural OpenAPI v3 schema as a CRD holds it. `path` names the
 * schema's place in the resource and prefixes every error (`spec`, `status`). Throws a
 * {@linkcode StructuralSchemaError} for a construct that cannot become a structural schema.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { toStructuralSchema } from "@rudder/operator/api";
 *
 * const schema = toStructuralSchema(z.object({ replicas: z.int().min(0).default(1) }), "spec");
 * console.log(schema.properties?.replicas); // { type: "integer", minimum: 0, default: 1 }
 * ```
 */
export function toStructuralSchema(schema: ZodSchema, path = ""): JSONSchemaProps {
  return convert(schema, { path, ancestors: new Set() });
}

/** Whether a field of this schema may be left out of its object (optional or defaulted). */
export function isOptionalField(schema: ZodSchema): boolean {
  return peel(schema, { path: "", ancestors: new Set() }).optional;
}
