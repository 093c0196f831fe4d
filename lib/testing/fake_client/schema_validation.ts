/**
 * Custom resources checked against their structural schema, as kube-apiserver 1.36 checks
 * them: on decoding a request body it prunes fields the schema does not know, drops `null`s of
 * non-nullable fields without a default and fills defaults ({@linkcode decodeWithSchema}); its
 * strategy then validates the object ({@linkcode validateWithSchema}) with the OpenAPI value
 * validations, list-type sets and maps, and ratcheting on updates (a value left as it was is not
 * checked again). The causes have the fields, reasons and messages the real server sends.
 * Server-side apply refuses a configuration with undeclared fields ({@linkcode undeclaredField}).
 *
 * Not done: CEL rules (`x-kubernetes-validations`), the rules a schema may set on `metadata`,
 * and formats other than `date`, `date-time`, `uuid`, `ipv4`, `byte`, `k8s-short-name` and
 * `k8s-long-name` (others, e.g. `email`, are accepted unchecked).
 *
 * @module
 */

import type { JSONSchemaProps } from "../../api/schema.ts";
import type { StatusCause } from "../../kube/errors.ts";
import { isJsonObject, jsonClone, jsonEqual, type JsonObject } from "../../util/json.ts";

/** Fields the API server keeps at the root of an object (and of an embedded resource). */
const META_FIELDS = new Set(["apiVersion", "kind", "metadata"]);

/** The schema of a field of an object node: its property, else `additionalProperties`. */
function fieldSchema(node: JSONSchemaProps | undefined, key: string): JSONSchemaProps | undefined {
  if (!node) return undefined;
  const property = node.properties?.[key];
  if (property) return property;
  return typeof node.additionalProperties === "object" ? node.additionalProperties : undefined;
}

/** Removes the fields `node` does not describe, as the API server prunes a request body. */
function prune(value: unknown, node: JSONSchemaProps | undefined, root: boolean): void {
  const preserve = node?.["x-kubernetes-preserve-unknown-fields"] === true;
  const embedded = root || node?.["x-kubernetes-embedded-resource"] === true;
  if (Array.isArray(value)) {
    for (const item of value) prune(item, node?.items as JSONSchemaProps | undefined, false);
  } else if (isJsonObject(value)) {
    for (const key of Object.keys(value)) {
      if (embedded && META_FIELDS.has(key)) continue;
      const child = fieldSchema(node, key);
      if (child) prune(value[key], child, false);
      else if (!preserve) delete value[key];
    }
  }
}

/** Drops `null`s of fields that may not be null and have no default to take their place. */
function dropNulls(value: unknown, node: JSONSchemaProps | undefined): void {
  if (Array.isArray(value)) {
    for (const item of value) dropNulls(item, node?.items as JSONSchemaProps | undefined);
  } else if (isJsonObject(value)) {
    for (const key of Object.keys(value)) {
      const child = fieldSchema(node, key);
      if (value[key] === null && child && !child.nullable && child.default === undefined) {
        delete value[key];
      } else dropNulls(value[key], child);
    }
  }
}

/** Fills defaults where a field is missing (or a non-nullable `null`), then inside every field. */
function fillDefaults(value: unknown, node: JSONSchemaProps | undefined): void {
  if (!node) return;
  if (Array.isArray(value)) {
    const items = node.items as JSONSchemaProps | undefined;
    if (!items) return;
    for (let i = 0; i < value.length; i++) {
      if (value[i] === null && !items.nullable && items.default !== undefined) {
        value[i] = jsonClone(items.default);
      }
      fillDefaults(value[i], items);
    }
  } else if (isJsonObject(value)) {
    for (const [key, property] of Object.entries(node.properties ?? {})) {
      if (property.default === undefined) continue;
      if (!(key in value) || (value[key] === null && !property.nullable)) {
        value[key] = jsonClone(property.default);
      }
    }
    // Defaults just filled in get their own fields' defaults too.
    for (const key of Object.keys(value)) fillDefaults(value[key], fieldSchema(node, key));
  }
}

/**
 * What the API server does to a custom resource it decodes (a request body or a stored
 * object): prunes unknown fields, drops non-nullable `null`s without a default, fills defaults.
 * `obj` is changed in place.
 */
export function decodeWithSchema(obj: JsonObject, schema: JSONSchemaProps): void {
  if (schema["x-kubernetes-preserve-unknown-fields"] !== true) {
    prune(obj, schema, true);
    dropNulls(obj, schema);
  }
  fillDefaults(obj, schema);
}

/**
 * The first field of a server-side apply configuration its schema does not declare, as a path
 * like `.spec.colour`: the API server refuses such a configuration rather than pruning it.
 */
export function undeclaredField(
  value: unknown,
  node: JSONSchemaProps | undefined,
  path = "",
): string | undefined {
  if (node?.["x-kubernetes-preserve-unknown-fields"] === true && !node.properties) return undefined;
  const embedded = path === "" || node?.["x-kubernetes-embedded-resource"] === true;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = undeclaredField(
        item,
        node?.items as JSONSchemaProps | undefined,
        `${path}[${i}]`,
      );
      if (found) return found;
    }
  } else if (isJsonObject(value)) {
    for (const key of Object.keys(value).sort()) {
      if (embedded && META_FIELDS.has(key)) continue;
      const child = fieldSchema(node, key);
      if (!child) {
        if (node?.["x-kubernetes-preserve-unknown-fields"] === true) continue;
        return `${path}.${key}`;
      }
      const found = undeclaredField(value[key], child, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

// ---- validation ---------------------------------------------------------------------------------

/** A value of the object before the update, correlated with the new one; `NONE` when there is none. */
const NONE: unique symbol = Symbol("none");
type Old = unknown | typeof NONE;

/** How Go prints a value in a field error: strings quoted, numbers and booleans bare. */
function shown(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (value === null || value === undefined) return "null";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** The JSON type of a value, as kube-openapi names it in type errors. */
function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** `1 item`, `2 items`. */
const items = (count: number) => `${count} item${count === 1 ? "" : "s"}`;

const invalid = (field: string, value: unknown, detail: string): StatusCause => ({
  reason: "FieldValueInvalid",
  message: `Invalid value: ${shown(value)}: ${detail}`,
  field,
});

const typeInvalid = (field: string, value: unknown, expected: string): StatusCause => ({
  reason: "FieldValueTypeInvalid",
  message: `Invalid value: "${jsonType(value)}": ${field} in body must be of type ${expected}: ` +
    `"${jsonType(value)}"`,
  field,
});

const formatInvalid = (field: string, value: string, format: string): StatusCause => ({
  reason: "FieldValueTypeInvalid",
  message: `Invalid value: ${shown(value)}: ${field} in body must be of type ${format}: ` +
    shown(value),
  field,
});

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const SHORT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LONG_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function validDate(year: string, month: string, day: string): boolean {
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  return date.getUTCMonth() === Number(month) - 1 && date.getUTCDate() === Number(day);
}

/** The formats checked, by their name with dashes removed (as the API server normalizes them). */
const FORMATS: Record<string, (value: string) => boolean> = {
  uuid: (v) => UUID.test(v),
  ipv4: (v) => IPV4.test(v),
  date: (v) => {
    const m = DATE.exec(v);
    return m !== null && validDate(m[1], m[2], m[3]);
  },
  datetime: (v) => {
    const m = DATE_TIME.exec(v);
    return m !== null && validDate(m[1], m[2], m[3]) && Number(m[4]) < 24 &&
      Number(m[5]) < 60 && Number(m[6]) < 61;
  },
  byte: (v) => BASE64.test(v),
  k8sshortname: (v) => v.length <= 63 && SHORT_NAME.test(v),
  k8slongname: (v) => v.length <= 253 && LONG_NAME.test(v),
};

/** The causes of a value of the wrong type; a fraction where an integer belongs gets two. */
function typeMismatch(field: string, value: unknown, type: string, causes: StatusCause[]): void {
  causes.push(typeInvalid(field, value, type));
  if (type === "integer" && jsonType(value) === "number") {
    causes.push(
      invalid("<nil>", "", `Checked value must be of type integer (default format) in ${field}`),
    );
  }
}

/** Validation of one value against one node; `old` is the value it replaces, when correlated. */
function validateNode(
  node: JSONSchemaProps,
  value: unknown,
  field: string,
  old: Old,
  causes: StatusCause[],
): void {
  // Ratcheting: a value left as it was is not checked again, so a schema may tighten.
  if (old !== NONE && jsonEqual(old, value)) return;
  if (value === null && node.nullable) return;
  const intOrString = node["x-kubernetes-int-or-string"] === true;
  const type = node.type;
  const actual = jsonType(value);
  if (intOrString) {
    if (actual !== "integer" && actual !== "string") {
      causes.push(typeInvalid(field, value, "integer,string"));
      causes.push(invalid("<nil>", "", `"${field}" must validate at least one schema (anyOf)`));
      // The server reports how the value failed the integer branch of the anyOf, too.
      typeMismatch(field, value, "integer", causes);
      return;
    }
  } else if (type && !(actual === type || (type === "number" && actual === "integer"))) {
    typeMismatch(field, value, type, causes);
    return;
  }
  if (node.enum && !node.enum.some((allowed) => jsonEqual(allowed, value))) {
    causes.push({
      reason: "FieldValueNotSupported",
      message: `Unsupported value: ${shown(value)}: supported values: ` +
        node.enum.map((allowed) => JSON.stringify(String(allowed))).join(", "),
      field,
    });
  }
  if (typeof value === "number") validateNumber(node, value, field, causes);
  else if (typeof value === "string") validateString(node, value, field, causes);
  else if (Array.isArray(value)) validateArray(node, value, field, old, causes);
  else if (isJsonObject(value)) validateObject(node, value, field, old, causes, false);
  for (const branch of node.allOf ?? []) validateNode(branch, value, field, NONE, causes);
  if (node.anyOf && !intOrString) {
    const tries = node.anyOf.map((branch) => {
      const found: StatusCause[] = [];
      validateNode(branch, value, field, NONE, found);
      return found;
    });
    if (tries.every((found) => found.length > 0)) {
      causes.push(invalid("<nil>", "", `"${field}" must validate at least one schema (anyOf)`));
      causes.push(...tries[0]);
    }
  }
}

function validateNumber(
  node: JSONSchemaProps,
  value: number,
  field: string,
  causes: StatusCause[],
): void {
  const { minimum, maximum, multipleOf } = node;
  if (minimum !== undefined) {
    if (node.exclusiveMinimum ? value <= minimum : value < minimum) {
      const than = node.exclusiveMinimum ? "greater than" : "greater than or equal to";
      causes.push(invalid(field, value, `${field} in body should be ${than} ${minimum}`));
    }
  }
  if (maximum !== undefined) {
    if (node.exclusiveMaximum ? value >= maximum : value > maximum) {
      const than = node.exclusiveMaximum ? "less than" : "less than or equal to";
      causes.push(invalid(field, value, `${field} in body should be ${than} ${maximum}`));
    }
  }
  if (multipleOf !== undefined && multipleOf > 0) {
    const quotient = value / multipleOf;
    if (Math.abs(quotient - Math.round(quotient)) > 1e-9) {
      causes.push(invalid(field, value, `${field} in body should be a multiple of ${multipleOf}`));
    }
  }
}

function validateString(
  node: JSONSchemaProps,
  value: string,
  field: string,
  causes: StatusCause[],
): void {
  // Lengths count characters (runes), as Go's validator does, whatever the message says.
  const length = [...value].length;
  if (node.minLength !== undefined && length < node.minLength) {
    causes.push(
      invalid(field, value, `${field} in body should be at least ${node.minLength} chars long`),
    );
  }
  if (node.maxLength !== undefined && length > node.maxLength) {
    causes.push({
      reason: "FieldValueTooLong",
      message: `Too long: may not be more than ${node.maxLength} bytes`,
      field,
    });
  }
  if (node.pattern !== undefined && !patternOf(node.pattern).test(value)) {
    causes.push(invalid(field, value, `${field} in body should match '${node.pattern}'`));
  }
  const check = node.format ? FORMATS[node.format.replaceAll("-", "")] : undefined;
  if (check && !check(value)) causes.push(formatInvalid(field, value, node.format!));
}

const patterns = new Map<string, RegExp>();

/** A schema's RE2 pattern as a JavaScript one (`(?i)` becomes the `i` flag). */
function patternOf(source: string): RegExp {
  let pattern = patterns.get(source);
  if (!pattern) {
    pattern = source.startsWith("(?i)")
      ? new RegExp(source.slice(4), "iu")
      : new RegExp(source, "u");
    patterns.set(source, pattern);
  }
  return pattern;
}

/** The item of the old list a new item is correlated with: only lists of type `map` have one. */
function oldItem(node: JSONSchemaProps, item: unknown, old: Old): Old {
  if (old === NONE || !Array.isArray(old) || node["x-kubernetes-list-type"] !== "map") return NONE;
  if (!isJsonObject(item)) return NONE;
  const keys = node["x-kubernetes-list-map-keys"] ?? [];
  const found = old.find((candidate) =>
    isJsonObject(candidate) && keys.every((key) => jsonEqual(candidate[key], item[key]))
  );
  return found === undefined ? NONE : found;
}

function validateArray(
  node: JSONSchemaProps,
  value: unknown[],
  field: string,
  old: Old,
  causes: StatusCause[],
): void {
  if (node.minItems !== undefined && value.length < node.minItems) {
    causes.push(
      invalid(field, value.length, `${field} in body should have at least ${node.minItems} items`),
    );
  }
  if (node.maxItems !== undefined && value.length > node.maxItems) {
    causes.push({
      reason: "FieldValueTooMany",
      message: `Too many: ${value.length}: must have at most ${items(node.maxItems)}`,
      field,
    });
  }
  const itemSchema = node.items as JSONSchemaProps | undefined;
  if (!itemSchema) return;
  value.forEach((item, i) => {
    validateNode(itemSchema, item, `${field}[${i}]`, oldItem(node, item, old), causes);
  });
}

function validateObject(
  node: JSONSchemaProps,
  value: JsonObject,
  field: string,
  old: Old,
  causes: StatusCause[],
  root: boolean,
): void {
  const child = (key: string) => (field ? `${field}.${key}` : key);
  for (const key of node.required ?? []) {
    if (!(key in value)) {
      causes.push({ reason: "FieldValueRequired", message: "Required value", field: child(key) });
    }
  }
  const count = Object.keys(value).length;
  if (node.minProperties !== undefined && count < node.minProperties) {
    causes.push(
      invalid(
        field,
        count,
        `${field} in body should have at least ${node.minProperties} properties`,
      ),
    );
  }
  if (node.maxProperties !== undefined && count > node.maxProperties) {
    causes.push({
      reason: "FieldValueTooMany",
      message: `Too many: ${count}: must have at most ${items(node.maxProperties)}`,
      field,
    });
  }
  const oldObject = old !== NONE && isJsonObject(old) ? old : undefined;
  for (const [key, item] of Object.entries(value)) {
    if (root && META_FIELDS.has(key)) continue;
    const schema = fieldSchema(node, key);
    if (!schema) continue;
    const previous = oldObject && key in oldObject ? oldObject[key] : NONE;
    validateNode(schema, item, child(key), previous, causes);
  }
}

/** What makes an item of a list of type `set` (itself) or `map` (its key fields) unique. */
function identity(node: JSONSchemaProps, item: unknown): unknown {
  if (node["x-kubernetes-list-type"] === "set" || !isJsonObject(item)) return item;
  const keys = node["x-kubernetes-list-map-keys"] ?? [];
  return Object.fromEntries(keys.filter((key) => key in item).map((key) => [key, item[key]]));
}

/** Duplicates in lists of type `set` (equal items) and `map` (equal keys), at any depth. */
function listDuplicates(
  node: JSONSchemaProps | undefined,
  value: unknown,
  field: string,
  causes: StatusCause[],
  root = false,
): void {
  if (!node) return;
  if (Array.isArray(value)) {
    const listType = node["x-kubernetes-list-type"];
    if (listType === "set" || listType === "map") {
      const seen = new Map<string, number>();
      value.forEach((item, i) => {
        const id = identity(node, item);
        const text = JSON.stringify(id);
        const times = seen.get(text) ?? 0;
        seen.set(text, times + 1);
        // Reported once, at the first repetition, as the server does.
        if (times === 1) {
          causes.push({
            reason: "FieldValueDuplicate",
            message: `Duplicate value: ${shown(id)}`,
            field: `${field}[${i}]`,
          });
        }
      });
    }
    const items = node.items as JSONSchemaProps | undefined;
    value.forEach((item, i) => listDuplicates(items, item, `${field}[${i}]`, causes));
  } else if (isJsonObject(value)) {
    for (const [key, item] of Object.entries(value)) {
      if (root && META_FIELDS.has(key)) continue;
      listDuplicates(fieldSchema(node, key), item, field ? `${field}.${key}` : key, causes);
    }
  }
}

/** Value validations, then duplicates in sets and maps unless the old value had some too. */
function check(
  node: JSONSchemaProps,
  value: unknown,
  field: string,
  old: Old,
  root: boolean,
): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!root) validateNode(node, value, field, old, causes);
  else if (isJsonObject(value)) validateObject(node, value, field, old, causes, true);
  const duplicates: StatusCause[] = [];
  listDuplicates(node, value, field, duplicates, root);
  if (duplicates.length > 0 && old !== NONE) {
    const before: StatusCause[] = [];
    listDuplicates(node, old, field, before, root);
    if (before.length > 0) return causes;
  }
  return [...causes, ...duplicates];
}

/**
 * The causes of a 422 Invalid for `obj` under `schema`: the whole object, or only its
 * `status` for a write of the status subresource. `old` is the stored object on updates: its
 * unchanged values are not checked again, nor sets and maps whose old value had duplicates.
 */
export function validateWithSchema(
  schema: JSONSchemaProps,
  obj: JsonObject,
  old: JsonObject | undefined,
  only?: "status",
): StatusCause[] {
  if (only !== "status") return check(schema, obj, "", old ?? NONE, true);
  const node = schema.properties?.status;
  if (!node || !("status" in obj)) return [];
  return check(node, obj.status, "status", old && "status" in old ? old.status : NONE, false);
}
