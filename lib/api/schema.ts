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
 * @module
 */

import { z } from "zod";
import type * as apiextensionsv1 from "./generated/apiextensions_v1.ts";

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

type AnySchema = ZodSchema;

/** A node of a structural OpenAPI v3 schema, as a CRD holds it (apiextensions.k8s.io/v1). */
export type JSONSchemaProps = apiextensionsv1.JSONSchemaProps;

/** A CEL validation rule (`x-kubernetes-validations`): `rule`, and `message` and friends. */
export type ValidationRule = apiextensionsv1.ValidationRule;

/**
 * A zod schema cannot become a structural schema. `path` names the field inside the resource
 * (`spec.items[*].name`, `spec.labels.*` for a record's values).
 */
export class StructuralSchemaError extends Error {
  /** Where in the schema: `spec.template.replicas`. */
  readonly path: string;
  /** Why the construct there cannot become a structural schema. */
  readonly reason: string;

  /** Builds the error for the field at `path`; `context` (e.g. `Example v1`) leads the message. */
  constructor(path: string, reason: string, context?: string) {
    super(`${context ? `${context}: ` : ""}${path || "(root)"}: ${reason}`);
    this.name = "StructuralSchemaError";
    this.path = path;
    this.reason = reason;
  }
}

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

// ---------------------------------------------------------------------------------------------
// The conversion.

type Def = z.core.$ZodTypeDef & Record<string, unknown>;

function defOf(schema: AnySchema): Def {
  return schema._zod.def as Def;
}

/** Kubernetes' names for zod's string formats; a format missing here is left out of the CRD. */
const STRING_FORMATS: Record<string, string> = {
  email: "email",
  uuid: "uuid",
  guid: "uuid",
  url: "uri",
  datetime: "date-time",
  date: "date",
  ipv4: "ipv4",
  ipv6: "ipv6",
  cidrv4: "cidr",
  cidrv6: "cidr",
  mac: "mac",
  base64: "byte",
  hostname: "hostname",
};

/** String checks whose pattern is the user's own (or simple enough for RE2), kept as `pattern`. */
const PATTERN_FORMATS = new Set([
  "regex",
  "lowercase",
  "uppercase",
  "includes",
  "starts_with",
  "ends_with",
]);

const INT32_RANGE = [-2147483648, 2147483647] as const;
const UINT32_RANGE = [0, 4294967295] as const;

/** The checks of a schema, its own first when it is a format schema (`z.email()`, `z.int()`). */
function checksOf(schema: AnySchema): Record<string, unknown>[] {
  const own = schema._zod.traits.has("$ZodCheck") ? [defOf(schema)] : [];
  return [...own, ...(defOf(schema).checks ?? []).map((c) => c._zod.def as never)];
}

/** What the walker knows while it descends. */
interface Walk {
  path: string;
  /** Schemas being converted above this node: meeting one again means recursion. */
  ancestors: Set<AnySchema>;
}

function child(walk: Walk, path: string, schema: AnySchema): Walk {
  return { path, ancestors: new Set([...walk.ancestors, schema]) };
}

function fieldPath(parent: string, key: string): string {
  const plain = /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key);
  if (!parent) return plain ? key : `[${key}]`;
  return plain ? `${parent}.${key}` : `${parent}[${key}]`;
}

/** A node's wrappers peeled off: the core schema and what the wrappers said. */
interface Peeled {
  core: AnySchema;
  /** Input may omit the value: optional, defaulted, or any/unknown. */
  optional: boolean;
  nullable: boolean;
  hasDefault: boolean;
  defaultValue?: unknown;
  /** Metadata of every level, outermost first. */
  metas: Record<string, unknown>[];
  /** The members of a union that had null or undefined members too, without those. */
  unionOptions?: AnySchema[];
}

const REFUSED: Record<string, string> = {
  transform: "a zod transform cannot become a structural schema",
  catch: "a zod catch() cannot become a structural schema: the API server cannot replace " +
    "invalid values; remove it or use .default()",
  intersection: "a zod intersection cannot become a structural schema; combine objects with " +
    ".extend() or a spread of their shapes",
  tuple: "a zod tuple cannot become a structural schema (array items share one schema)",
  date: "a Date is not JSON; use z.iso.datetime() for a timestamp",
  bigint: "a bigint is not JSON; use z.int()",
  map: "a Map is not JSON; use z.record()",
  set: 'a Set is not JSON; use an array with listType(…, "set")',
  symbol: "a symbol cannot become a structural schema",
  function: "a function cannot become a structural schema",
  promise: "a promise cannot become a structural schema",
  file: "a File cannot become a structural schema",
  nan: "NaN is not JSON",
  never: "z.never() cannot become a structural schema",
  void: "z.void() cannot become a structural schema",
  undefined: "z.undefined() alone cannot become a structural schema; use .optional()",
  null: "z.null() alone cannot become a structural schema; use .nullable()",
  custom: "a custom schema (z.custom, z.instanceof) has no structural type",
  success: "z.success() cannot become a structural schema",
};

function refuse(walk: Walk, reason: string): never {
  throw new StructuralSchemaError(walk.path, reason);
}

function metaOf(schema: AnySchema): Record<string, unknown> | undefined {
  return z.globalRegistry.get(schema) as Record<string, unknown> | undefined;
}

function isNullish(schema: AnySchema): "null" | "undefined" | undefined {
  const def = defOf(schema);
  if (def.type === "null") return "null";
  if (def.type === "undefined" || def.type === "void") return "undefined";
  if (def.type === "literal") {
    const values = def.values as unknown[];
    if (values.length === 1 && values[0] === null) return "null";
    if (values.length === 1 && values[0] === undefined) return "undefined";
  }
  return undefined;
}

/** Peels optional, nullable, default, readonly, lazy and nullish union members off a node. */
function peel(schema: AnySchema, walk: Walk): Peeled {
  const peeled: Peeled = {
    core: schema,
    optional: false,
    nullable: false,
    hasDefault: false,
    metas: [],
  };
  let optionalDecided = false;
  const decideOptional = (value: boolean) => {
    if (!optionalDecided) peeled.optional = value;
    optionalDecided = true;
  };
  const seenLazy = new Set<AnySchema>();
  let current = schema;
  for (;;) {
    const meta = metaOf(current);
    if (meta) peeled.metas.push(meta);
    const def = defOf(current);
    switch (def.type) {
      case "optional":
        decideOptional(true);
        current = def.innerType as AnySchema;
        continue;
      case "nonoptional":
        decideOptional(false);
        current = def.innerType as AnySchema;
        continue;
      case "nullable":
        peeled.nullable = true;
        current = def.innerType as AnySchema;
        continue;
      case "default":
      case "prefault":
        decideOptional(true);
        if (!peeled.hasDefault) {
          peeled.hasDefault = true;
          peeled.defaultValue = jsonDefault(def.defaultValue, walk);
        }
        current = def.innerType as AnySchema;
        continue;
      case "readonly":
        current = def.innerType as AnySchema;
        continue;
      case "lazy": {
        if (seenLazy.has(current) || walk.ancestors.has(current)) {
          refuse(walk, "a recursive schema cannot become a structural schema (it has no $ref)");
        }
        seenLazy.add(current);
        // zod caches the getter's result here; calling the getter again makes new schemas.
        current = (current._zod as unknown as { innerType: AnySchema }).innerType;
        continue;
      }
      case "union": {
        const options = def.options as AnySchema[];
        const rest = options.filter((o) => !isNullish(o));
        if (rest.length === options.length || rest.length === 0) break;
        if (options.some((o) => isNullish(o) === "null")) peeled.nullable = true;
        if (options.some((o) => isNullish(o) === "undefined")) decideOptional(true);
        if (rest.length === 1) {
          current = rest[0];
          continue;
        }
        // Several members remain: they are the union, without its null and undefined.
        peeled.unionOptions = rest;
        break;
      }
      case "any":
      case "unknown":
        decideOptional(true);
        break;
    }
    break;
  }
  decideOptional(false);
  peeled.core = current;
  return peeled;
}

function jsonDefault(value: unknown, walk: Walk): unknown {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  if (text === undefined) refuse(walk, "a default must be a JSON value");
  const parsed = JSON.parse(text);
  if (!isDeepEqualJSON(parsed, value)) refuse(walk, "a default must be a JSON value");
  return parsed;
}

function isDeepEqualJSON(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Object.getPrototypeOf(b) !== Object.prototype && !Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) =>
    isDeepEqualJSON((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])
  );
}

/** Keys that describe a node rather than constrain its value: not allowed inside anyOf/allOf. */
const NODE_KEYS = new Set(["type", "description", "title", "default", "nullable"]);

/** The value validations of a leaf node, for a union's `anyOf` or a pipe's merge. */
function valueValidations(node: JSONSchemaProps): JSONSchemaProps {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (!NODE_KEYS.has(key) && !key.startsWith("x-kubernetes-")) out[key] = value;
  }
  return out as JSONSchemaProps;
}

const LEAF_TYPES = new Set(["string", "integer", "number", "boolean"]);

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

function convert(schema: AnySchema, walk: Walk): JSONSchemaProps {
  const peeled = peel(schema, walk);
  const node = convertCore(peeled, walk);
  if (peeled.nullable) node.nullable = true;
  if (peeled.hasDefault) node.default = peeled.defaultValue as JSONSchemaProps["default"];
  applyMeta(node, peeled.metas, walk);
  // type, description and title first: the order people read a CRD in.
  const { type, description, title, ...rest } = node;
  return {
    ...(type === undefined ? {} : { type }),
    ...(description === undefined ? {} : { description }),
    ...(title === undefined ? {} : { title }),
    ...rest,
  };
}

function applyMeta(node: JSONSchemaProps, metas: Record<string, unknown>[], walk: Walk): void {
  const target = node as Record<string, unknown>;
  const rules: ValidationRule[] = [];
  // Outermost first: the first description met wins, rules from every level add up.
  for (const meta of metas) {
    for (const [key, value] of Object.entries(meta)) {
      if (value === undefined) continue;
      if (key === "description" || key === "title") {
        if (typeof value === "string" && target[key] === undefined) target[key] = value;
      } else if (key === "x-kubernetes-validations") {
        for (const rule of value as ValidationRule[]) {
          if (!rules.some((r) => JSON.stringify(r) === JSON.stringify(rule))) rules.push(rule);
        }
      } else if (key.startsWith("x-kubernetes-") && target[key] === undefined) {
        target[key] = Array.isArray(value) ? [...value] : value;
      }
    }
  }
  if (rules.length > 0) {
    // Rules that reached the node already (e.g. from its own schema) come first.
    const existing = (node["x-kubernetes-validations"] ?? []).filter((r) =>
      !rules.some((x) => JSON.stringify(x) === JSON.stringify(r))
    );
    node["x-kubernetes-validations"] = [...existing, ...rules];
  }
  checkExtensions(node, walk);
}

/** Checks the `x-kubernetes-*` keys against the node, as the API server would when installing. */
function checkExtensions(node: JSONSchemaProps, walk: Walk): void {
  const listType = node["x-kubernetes-list-type"];
  if (listType !== undefined) {
    if (node.type !== "array") refuse(walk, `listType "${listType}" needs an array`);
    if (!["atomic", "set", "map"].includes(listType)) {
      refuse(walk, `unknown list type ${JSON.stringify(listType)}`);
    }
    const items = node.items as JSONSchemaProps;
    if (listType === "map") {
      const keys = node["x-kubernetes-list-map-keys"] ?? [];
      if (keys.length === 0) refuse(walk, 'listType "map" needs key fields');
      if (items.type !== "object" || !items.properties) {
        refuse(walk, 'listType "map" needs an array of objects');
      }
      for (const key of keys) {
        const field = items.properties[key];
        if (!field) refuse(walk, `list map key ${JSON.stringify(key)} is not a field of the items`);
        if (!LEAF_TYPES.has(field.type ?? "")) {
          refuse(walk, `list map key ${JSON.stringify(key)} must be a string, number or boolean`);
        }
        if (!(items.required ?? []).includes(key) && field.default === undefined) {
          refuse(walk, `list map key ${JSON.stringify(key)} must be required or have a default`);
        }
      }
    } else if (node["x-kubernetes-list-map-keys"]) {
      refuse(walk, `list map keys need listType "map", not "${listType}"`);
    }
    if (
      listType === "set" && (items.type === "object" || items.type === "array") &&
      items["x-kubernetes-map-type"] !== "atomic" && items["x-kubernetes-list-type"] !== "atomic"
    ) {
      refuse(walk, 'listType "set" needs scalar (or atomic) items');
    }
  }
  const mapType = node["x-kubernetes-map-type"];
  if (mapType !== undefined) {
    if (node.type !== "object") refuse(walk, `mapType "${mapType}" needs an object or record`);
    if (mapType !== "granular" && mapType !== "atomic") {
      refuse(walk, `unknown map type ${JSON.stringify(mapType)}`);
    }
  }
  if (node["x-kubernetes-embedded-resource"] && node.type !== "object") {
    refuse(walk, "an embedded resource must be an object");
  }
  for (const rule of node["x-kubernetes-validations"] ?? []) {
    if (!rule || typeof rule.rule !== "string" || !rule.rule) {
      refuse(walk, "a CEL validation needs a rule");
    }
  }
}

function convertCore(peeled: Peeled, walk: Walk): JSONSchemaProps {
  const schema = peeled.core;
  const def = defOf(schema);
  if ((def as { coerce?: boolean }).coerce) {
    refuse(walk, "a coercing zod schema converts values; the API server would reject them");
  }
  for (const check of def.checks ?? []) {
    if ((check._zod.def as { check: string }).check === "overwrite") {
      refuse(
        walk,
        "a zod overwrite (trim, toLowerCase, …) changes values, which the API server would not",
      );
    }
  }
  switch (def.type) {
    case "string":
      return stringNode(schema, walk);
    case "number":
    case "int":
      return numberNode(schema);
    case "boolean":
      return { type: "boolean" };
    case "enum":
      return enumNode(Object.values(def.entries as Record<string, unknown>), walk);
    case "literal":
      return enumNode(def.values as unknown[], walk);
    case "template_literal":
      return { type: "string", pattern: (schema._zod as { pattern: RegExp }).pattern.source };
    case "any":
    case "unknown":
      return { "x-kubernetes-preserve-unknown-fields": true };
    case "object":
      return objectNode(schema, walk);
    case "record":
      return recordNode(schema, walk);
    case "array":
      return arrayNode(schema, walk);
    case "union":
      return unionNode(peeled.unionOptions ?? def.options as AnySchema[], peeled.metas, def, walk);
    case "pipe":
      return pipeNode(schema, walk);
    default:
      return refuse(
        walk,
        REFUSED[def.type] ?? `a zod ${def.type} cannot become a structural schema`,
      );
  }
}

function stringNode(schema: AnySchema, walk: Walk): JSONSchemaProps {
  const node: JSONSchemaProps = { type: "string" };
  const patterns: string[] = [];
  for (const check of checksOf(schema)) {
    switch (check.check) {
      case "min_length":
        node.minLength = Math.max(node.minLength ?? 0, check.minimum as number);
        break;
      case "max_length":
        node.maxLength = Math.min(node.maxLength ?? Infinity, check.maximum as number);
        break;
      case "length_equals":
        node.minLength = node.maxLength = check.length as number;
        break;
      case "string_format": {
        const format = check.format as string;
        if (PATTERN_FORMATS.has(format)) {
          const pattern = check.pattern as RegExp | undefined;
          if (pattern) patterns.push(patternSource(pattern, walk));
        } else if (STRING_FORMATS[format]) {
          node.format = STRING_FORMATS[format];
        }
        // Other formats (zod-specific ones) are checked by parse only: their patterns use
        // ECMAScript features that the API server's RE2 rejects.
        break;
      }
    }
  }
  if (patterns.length === 1) node.pattern = patterns[0];
  if (patterns.length > 1) node.allOf = patterns.map((pattern) => ({ pattern }));
  return node;
}

function patternSource(pattern: RegExp, walk: Walk): string {
  if (/\(\?<?[=!]|\\[1-9]/.test(pattern.source)) {
    refuse(
      walk,
      `the pattern /${pattern.source}/ uses lookaround or backreferences, which the API ` +
        "server's regular expressions (RE2) do not support",
    );
  }
  if (pattern.flags.includes("i")) return `(?i)${pattern.source}`;
  return pattern.source;
}

function numberNode(schema: AnySchema): JSONSchemaProps {
  const node: JSONSchemaProps = { type: "number" };
  let min: number | undefined;
  let max: number | undefined;
  let exclusiveMin = false;
  let exclusiveMax = false;
  const narrowMin = (value: number, exclusive: boolean) => {
    if (min === undefined || value > min || (value === min && exclusive)) {
      min = value;
      exclusiveMin = exclusive;
    }
  };
  const narrowMax = (value: number, exclusive: boolean) => {
    if (max === undefined || value < max || (value === max && exclusive)) {
      max = value;
      exclusiveMax = exclusive;
    }
  };
  for (const check of checksOf(schema)) {
    switch (check.check) {
      case "greater_than":
        narrowMin(Number(check.value), !check.inclusive);
        break;
      case "less_than":
        narrowMax(Number(check.value), !check.inclusive);
        break;
      case "multiple_of":
        node.multipleOf = Number(check.value);
        break;
      case "number_format":
        switch (check.format) {
          case "safeint":
            node.type = "integer";
            break;
          case "int32":
            node.type = "integer";
            node.format = "int32";
            narrowMin(INT32_RANGE[0], false);
            narrowMax(INT32_RANGE[1], false);
            break;
          case "uint32":
            node.type = "integer";
            node.format = "int64";
            narrowMin(UINT32_RANGE[0], false);
            narrowMax(UINT32_RANGE[1], false);
            break;
          case "float32":
            node.format = "float";
            break;
          case "float64":
            node.format = "double";
            break;
        }
        break;
    }
  }
  if (min !== undefined) {
    node.minimum = min;
    if (exclusiveMin) node.exclusiveMinimum = true;
  }
  if (max !== undefined) {
    node.maximum = max;
    if (exclusiveMax) node.exclusiveMaximum = true;
  }
  return node;
}

function enumNode(values: unknown[], walk: Walk): JSONSchemaProps {
  const kept = values.filter((v) => v !== null && v !== undefined);
  if (kept.length === 0) refuse(walk, "an enum or literal needs at least one non-null value");
  const types = new Set(kept.map((v) => typeof v));
  if (types.size > 1) {
    refuse(
      walk,
      `an enum mixes ${[...types].join(" and ")} values; a structural schema has one type`,
    );
  }
  const [kind] = types;
  let type: string;
  if (kind === "string") type = "string";
  else if (kind === "boolean") type = "boolean";
  else if (kind === "number") {
    type = kept.every((v) => Number.isInteger(v)) ? "integer" : "number";
  } else {
    return refuse(walk, `a ${kind} literal cannot become a structural schema`);
  }
  return { type, enum: [...new Set(kept)] as JSONSchemaProps["enum"] };
}

function objectNode(schema: AnySchema, walk: Walk): JSONSchemaProps {
  if (walk.ancestors.has(schema)) {
    refuse(walk, "a recursive schema cannot become a structural schema (it has no $ref)");
  }
  const def = defOf(schema);
  const shape = def.shape as Record<string, AnySchema>;
  const properties: Record<string, JSONSchemaProps> = {};
  const required: string[] = [];
  for (const key of Object.keys(shape)) {
    const field = shape[key];
    const path = fieldPath(walk.path, key);
    properties[key] = convert(field, child(walk, path, schema));
    if (!peel(field, { path, ancestors: walk.ancestors }).optional) required.push(key);
  }
  const node: JSONSchemaProps = { type: "object" };
  if (Object.keys(properties).length > 0) node.properties = properties;
  if (required.length > 0) node.required = required;
  const catchall = def.catchall as AnySchema | undefined;
  if (catchall) {
    const type = defOf(catchall).type;
    if (type === "unknown" || type === "any") {
      node["x-kubernetes-preserve-unknown-fields"] = true;
    } else if (type !== "never") {
      // A strict object (catchall never) becomes a plain one: the API server prunes unknown
      // fields, or rejects them under fieldValidation=Strict.
      refuse(
        walk,
        "an object with a typed catchall cannot become a structural schema (properties and " +
          "additionalProperties exclude each other); use a record field for the extra keys",
      );
    }
  }
  return node;
}

function recordNode(schema: AnySchema, walk: Walk): JSONSchemaProps {
  const def = defOf(schema);
  const keyType = def.keyType as AnySchema;
  const valueType = def.valueType as AnySchema;
  const keyDef = defOf(keyType);
  const keyValues = keyDef.type === "enum"
    ? Object.values(keyDef.entries as Record<string, unknown>)
    : keyDef.type === "literal"
    ? keyDef.values as unknown[]
    : undefined;
  const next = child(walk, `${walk.path}.*`, schema);
  if (walk.ancestors.has(schema)) {
    refuse(walk, "a recursive schema cannot become a structural schema (it has no $ref)");
  }
  if (keyValues) {
    // A record over an enum is an object with exactly those keys (all of them unless partial).
    const properties: Record<string, JSONSchemaProps> = {};
    for (const key of keyValues.map(String)) {
      properties[key] = convert(valueType, child(walk, fieldPath(walk.path, key), schema));
    }
    const node: JSONSchemaProps = { type: "object", properties };
    const valueOptional = peel(valueType, next).optional;
    if (!def.partial && !valueOptional) node.required = keyValues.map(String);
    return node;
  }
  if (keyDef.type !== "string") {
    refuse(walk, "a record's keys must be strings (or an enum of strings)");
  }
  return { type: "object", additionalProperties: convert(valueType, next) };
}

function arrayNode(schema: AnySchema, walk: Walk): JSONSchemaProps {
  if (walk.ancestors.has(schema)) {
    refuse(walk, "a recursive schema cannot become a structural schema (it has no $ref)");
  }
  const def = defOf(schema);
  const node: JSONSchemaProps = {
    type: "array",
    items: convert(def.element as AnySchema, child(walk, `${walk.path}[*]`, schema)),
  };
  for (const check of checksOf(schema)) {
    if (check.check === "min_length") node.minItems = check.minimum as number;
    if (check.check === "max_length") node.maxItems = check.maximum as number;
    if (check.check === "length_equals") node.minItems = node.maxItems = check.length as number;
  }
  return node;
}

function isIntegerSchema(node: JSONSchemaProps): boolean {
  return node.type === "integer";
}

function unionNode(
  options: AnySchema[],
  metas: Record<string, unknown>[],
  def: Def,
  walk: Walk,
): JSONSchemaProps {
  const nodes = options.map((option) => convert(option, walk));
  const types = nodes.map((n) => n.type ?? "");
  if (
    metas.some((m) => m["x-kubernetes-int-or-string"]) ||
    (nodes.length === 2 && types.includes("string") &&
      nodes.some((n) => isIntegerSchema(n)))
  ) {
    if (!(nodes.length === 2 && types.includes("string") && nodes.some(isIntegerSchema))) {
      refuse(walk, "an int-or-string field must be a union of an integer and a string");
    }
    return {
      "x-kubernetes-int-or-string": true,
      anyOf: [{ type: "integer" }, { type: "string" }],
    };
  }
  if ("discriminator" in def || types.includes("object") || types.includes("array")) {
    refuse(
      walk,
      "a union of objects or arrays is not a structural schema; use one object with optional " +
        "fields and a CEL rule (celRule) to require one of them",
    );
  }
  let type = types[0];
  if (types.every((t) => t === "integer" || t === "number")) {
    type = types.every((t) => t === "integer") ? "integer" : "number";
  } else if (!types.every((t) => t === type) || !LEAF_TYPES.has(type)) {
    if (types.includes("string") && types.includes("number")) {
      refuse(
        walk,
        "a union of a number and a string is not a structural schema; use intOrString() for " +
          "an integer or a string",
      );
    }
    refuse(
      walk,
      `a union of ${[...new Set(types.map((t) => t || "any"))].join(", ")} is not a ` +
        "structural schema (one type per node)",
    );
  }
  const node: JSONSchemaProps = { type };
  if (nodes.every((n) => n.enum && Object.keys(valueValidations(n)).length === 1)) {
    node.enum = [...new Set(nodes.flatMap((n) => n.enum!))];
    return node;
  }
  const branches = nodes.map(valueValidations);
  if (branches.every((b) => Object.keys(b).length > 0)) node.anyOf = branches;
  return node;
}

function pipeNode(schema: AnySchema, walk: Walk): JSONSchemaProps {
  const def = defOf(schema);
  const input = def.in as AnySchema;
  const output = def.out as AnySchema;
  if (
    def.transform || def.reverseTransform || defOf(input).type === "transform" ||
    defOf(output).type === "transform"
  ) {
    refuse(walk, REFUSED.transform);
  }
  const a = convert(input, walk);
  const b = convert(output, walk);
  if (a.type !== b.type) {
    refuse(
      walk,
      `a pipe from ${a.type ?? "any"} to ${b.type ?? "any"} cannot become a structural schema`,
    );
  }
  if (!LEAF_TYPES.has(a.type ?? "")) {
    refuse(walk, "a pipe between objects or arrays cannot become a structural schema");
  }
  const extra = valueValidations(b);
  const merged: JSONSchemaProps = { ...a };
  const conflicts: JSONSchemaProps = {};
  for (const [key, value] of Object.entries(extra)) {
    const k = key as keyof JSONSchemaProps;
    if (merged[k] === undefined) (merged as Record<string, unknown>)[k] = value;
    else if (JSON.stringify(merged[k]) !== JSON.stringify(value)) {
      (conflicts as Record<string, unknown>)[k] = value;
    }
  }
  if (Object.keys(conflicts).length > 0) merged.allOf = [...(merged.allOf ?? []), conflicts];
  return merged;
}
