/**
 * Walking zod v4's own definitions (`schema._zod.def`) for the structural-schema conversion of
 * `schema.ts`: a node's wrappers (optional, nullable, default, readonly, lazy, nullish union
 * members) peeled off, its checks and metadata read, and the constructs that cannot become a
 * structural schema refused with a {@linkcode StructuralSchemaError} naming the path.
 *
 * @module
 */

import { z } from "zod";

/** A zod schema of any flavour, as the walker meets it. */
export type AnySchema = z.core.$ZodType;

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

/** A zod definition, read field by field. */
export type Def = z.core.$ZodTypeDef & Record<string, unknown>;

/** The definition of a schema. */
export function defOf(schema: AnySchema): Def {
  return schema._zod.def as Def;
}

/** The checks of a schema, its own first when it is a format schema (`z.email()`, `z.int()`). */
export function checksOf(schema: AnySchema): Record<string, unknown>[] {
  const own = schema._zod.traits.has("$ZodCheck") ? [defOf(schema)] : [];
  return [...own, ...(defOf(schema).checks ?? []).map((c) => c._zod.def as never)];
}

/** What the walker knows while it descends. */
export interface Walk {
  path: string;
  /** Schemas being converted above this node: meeting one again means recursion. */
  ancestors: Set<AnySchema>;
}

/** The walk one level down, at `path`, below `schema`. */
export function child(walk: Walk, path: string, schema: AnySchema): Walk {
  return { path, ancestors: new Set([...walk.ancestors, schema]) };
}

/** The path of a field `key` below `parent`: `spec.replicas`, `spec[my-key]`. */
export function fieldPath(parent: string, key: string): string {
  const plain = /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key);
  if (!parent) return plain ? key : `[${key}]`;
  return plain ? `${parent}.${key}` : `${parent}[${key}]`;
}

/** A node's wrappers peeled off: the core schema and what the wrappers said. */
export interface Peeled {
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

/** Why each kind of zod node cannot become a structural schema. */
export const REFUSED: Record<string, string> = {
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

/** Refuses the node at `walk`: a {@linkcode StructuralSchemaError} naming its path. */
export function refuse(walk: Walk, reason: string): never {
  throw new StructuralSchemaError(walk.path, reason);
}

/** The metadata zod's global registry holds for a schema. */
function metaOf(schema: AnySchema): Record<string, unknown> | undefined {
  return z.globalRegistry.get(schema) as Record<string, unknown> | undefined;
}

/** Whether a schema accepts only null or only undefined. */
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
export function peel(schema: AnySchema, walk: Walk): Peeled {
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
        if (!(current instanceof z.core.$ZodLazy)) break;
        current = current._zod.innerType;
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

/** A default as JSON, refused when it does not survive the trip. */
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

/** Structural equality of a JSON value and a value that should be one. */
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
