/**
 * The OpenAPI side of the structural-schema conversion of `schema.ts`: one Kubernetes schema
 * node per zod node, emitting only what Kubernetes' structural rules allow (a type on every
 * node, no `$ref`, `$schema` or `additionalProperties: false`), with the `x-kubernetes-*`
 * keys checked as the API server checks them when it installs a CRD.
 *
 * @module
 */

import type * as apiextensionsv1 from "./generated/apiextensions_v1.ts";
import {
  type AnySchema,
  checksOf,
  child,
  type Def,
  defOf,
  fieldPath,
  peel,
  type Peeled,
  refuse,
  REFUSED,
  type Walk,
} from "./schema_walk.ts";

type JSONSchemaProps = apiextensionsv1.JSONSchemaProps;
type ValidationRule = apiextensionsv1.ValidationRule;

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

/** The structural schema node of `schema`, met where `walk` says. */
export function convert(schema: AnySchema, walk: Walk): JSONSchemaProps {
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
