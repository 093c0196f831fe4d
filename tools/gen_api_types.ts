/**
 * Generates `lib/api/generated/`: TypeScript types of the built-in Kubernetes APIs and the
 * strategic-merge-patch metadata of their schemas, read from the OpenAPI v3 documents a real
 * kube-apiserver serves (the test control plane, see `lib/testing/`).
 *
 * Usage: `deno run -A tools/gen_api_types.ts` (needs the control-plane binaries, as the
 * integration tests do). It rewrites every file in `lib/api/generated/` and then checks that
 * `deno fmt` would leave them as they are. `tests/integration/generated_types.test.ts` runs
 * {@linkcode generateApiTypes} against a fresh server and compares the result with the
 * committed files, so the types cannot drift from the API server silently.
 *
 * What is generated, per group-version (one file each, e.g. `apps_v1.ts`), plus `meta_v1.ts`
 * (`io.k8s.apimachinery.pkg.apis.meta.v1`) and `primitives.ts` (leaf types):
 *
 * - one exported `interface` per object schema, named by the last segment of the schema name;
 *   properties are optional unless the schema lists them in `required`, and descriptions
 *   become JSDoc;
 * - for every kind of the file's own group-version (a schema whose
 *   `x-kubernetes-group-version-kind` names that group-version and that has `apiVersion` and
 *   `kind` properties), `apiVersion` and `kind` are required string literals;
 * - a `type` alias for schemas without properties (e.g. `FieldsV1`).
 *
 * Names: within a file every name is the schema's last segment. Should two schemas of one file
 * share it, each gets the PascalCase of its package's last two segments as a prefix (e.g.
 * `ApiResourceQuantity` for `io.k8s.apimachinery.pkg.api.resource.Quantity`). An imported name
 * that equals a local (or another imported) name is imported under an alias made of the
 * exporting file's PascalCase name and the type name (e.g. `import type { Event as CoreV1Event }
 * from "./core_v1.ts"`). With Kubernetes 1.36 neither case occurs; the rules keep the output
 * deterministic should a later version bring one.
 *
 * `patch_metadata.ts` holds what strategic merge patch needs to know about each schema (the
 * `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` of a property, and which
 * object schema a property, list item or map value has), and `KIND_SCHEMAS`, the schema of each
 * `apiVersion/kind`. Only schemas and properties that can change how a patch is computed are
 * listed: a property without an entry is merged like JSON merge patch (maps recursively, lists
 * replaced), which is also what strategic merge patch does with it.
 *
 * The output is emitted already formatted as `deno fmt` formats it, so that generating in
 * memory (on Deno or Bun) gives exactly the committed bytes.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { RestClient } from "../lib/kube/rest.ts";
import { ENVTEST_KUBERNETES_VERSION } from "../lib/testing/assets.ts";
import { Environment } from "../lib/testing/envtest.ts";

/** A group-version whose types are generated, and the OpenAPI package its schemas live in. */
export interface GeneratedGroupVersion {
  /** API group; `""` for the core group. */
  group: string;
  /** API version, e.g. `v1`. */
  version: string;
  /** Prefix of its schema names, e.g. `io.k8s.api.apps.v1`. */
  package: string;
}

/** The group-versions whose types are generated. */
export const GENERATED_GROUP_VERSIONS: readonly GeneratedGroupVersion[] = [
  { group: "", version: "v1", package: "io.k8s.api.core.v1" },
  {
    group: "admissionregistration.k8s.io",
    version: "v1",
    package: "io.k8s.api.admissionregistration.v1",
  },
  {
    group: "apiextensions.k8s.io",
    version: "v1",
    package: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
  },
  { group: "apps", version: "v1", package: "io.k8s.api.apps.v1" },
  { group: "authentication.k8s.io", version: "v1", package: "io.k8s.api.authentication.v1" },
  { group: "authorization.k8s.io", version: "v1", package: "io.k8s.api.authorization.v1" },
  { group: "autoscaling", version: "v1", package: "io.k8s.api.autoscaling.v1" },
  { group: "autoscaling", version: "v2", package: "io.k8s.api.autoscaling.v2" },
  { group: "batch", version: "v1", package: "io.k8s.api.batch.v1" },
  { group: "certificates.k8s.io", version: "v1", package: "io.k8s.api.certificates.v1" },
  { group: "coordination.k8s.io", version: "v1", package: "io.k8s.api.coordination.v1" },
  { group: "discovery.k8s.io", version: "v1", package: "io.k8s.api.discovery.v1" },
  { group: "events.k8s.io", version: "v1", package: "io.k8s.api.events.v1" },
  { group: "networking.k8s.io", version: "v1", package: "io.k8s.api.networking.v1" },
  { group: "node.k8s.io", version: "v1", package: "io.k8s.api.node.v1" },
  { group: "policy", version: "v1", package: "io.k8s.api.policy.v1" },
  { group: "rbac.authorization.k8s.io", version: "v1", package: "io.k8s.api.rbac.v1" },
  { group: "scheduling.k8s.io", version: "v1", package: "io.k8s.api.scheduling.v1" },
  { group: "storage.k8s.io", version: "v1", package: "io.k8s.api.storage.v1" },
];

const META_PACKAGE = "io.k8s.apimachinery.pkg.apis.meta.v1";
const META_FILE = "meta_v1.ts";
const PRIMITIVES_FILE = "primitives.ts";
const PATCH_METADATA_FILE = "patch_metadata.ts";
const SCHEMA_REF_PREFIX = "#/components/schemas/";
/** `deno fmt`'s line width in this repository (deno.json). */
const LINE_WIDTH = 100;

/**
 * Leaf types of apimachinery (and apiextensions' `JSON`), written by hand because their
 * OpenAPI schemas describe custom JSON encodings. They all go to `primitives.ts`.
 */
const PRIMITIVE_TYPES: Record<string, { type: string; note: string }> = {
  "io.k8s.apimachinery.pkg.api.resource.Quantity": {
    type: "string | number",
    note: 'The server returns a string (e.g. `"500m"`, `"1Gi"`); it also accepts a number.',
  },
  "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
    type: "string | number",
    note: 'An integer or a string, e.g. a port number or a port name, `1` or `"25%"`.',
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.Time": {
    type: "string",
    note: 'RFC 3339 in seconds, e.g. `"2024-01-02T03:04:05Z"`.',
  },
  "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": {
    type: "string",
    note: 'RFC 3339 with microseconds, e.g. `"2024-01-02T03:04:05.123456Z"`.',
  },
  "io.k8s.apimachinery.pkg.runtime.RawExtension": {
    type: "Record<string, unknown>",
    note: "An embedded object, usually a complete API object with `apiVersion` and `kind`.",
  },
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": {
    type: "unknown",
    note: "Any JSON value.",
  },
};

/**
 * Schemas whose OpenAPI says nothing about their shape (they marshal to one of several JSON
 * types); these types follow their Go `MarshalJSON`.
 */
const TYPE_OVERRIDES: Record<string, string> = {
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray":
    "JSONSchemaProps | JSONSchemaProps[]",
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool":
    "JSONSchemaProps | boolean",
  "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray":
    "JSONSchemaProps | string[]",
};

/** A group-version-kind as OpenAPI's `x-kubernetes-group-version-kind` lists it. */
interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** The part of an OpenAPI v3 schema the generator reads. */
interface Schema {
  type?: string;
  format?: string;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: Schema | boolean;
  $ref?: string;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  "x-kubernetes-group-version-kind"?: GroupVersionKind[];
  "x-kubernetes-patch-strategy"?: string;
  "x-kubernetes-patch-merge-key"?: string;
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
}

interface OpenAPIIndex {
  paths: Record<string, { serverRelativeURL: string }>;
}

interface OpenAPIDocument {
  components?: { schemas?: Record<string, Schema> };
}

/** A group-version's `apiVersion`: `v1` for core, `group/version` otherwise. */
function apiVersionOf(group: string, version: string): string {
  return group === "" ? version : `${group}/${version}`;
}

/** The generated file of a group-version: first label of the group (or `core`), version. */
export function fileNameOf(gv: { group: string; version: string }): string {
  return `${gv.group === "" ? "core" : gv.group.split(".")[0]}_${gv.version}.ts`;
}

function packageOf(schemaName: string): string {
  return schemaName.slice(0, schemaName.lastIndexOf("."));
}

function lastSegment(schemaName: string): string {
  return schemaName.slice(schemaName.lastIndexOf(".") + 1);
}

function pascalCase(text: string): string {
  return text.split(/[^A-Za-z0-9]+/).filter((part) => part !== "")
    .map((part) => part[0].toUpperCase() + part.slice(1)).join("");
}

/** The file a schema is emitted in, or `undefined` when no generated file covers it. */
function fileOfSchema(schemaName: string): string | undefined {
  if (schemaName in PRIMITIVE_TYPES) return PRIMITIVES_FILE;
  const pkg = packageOf(schemaName);
  if (pkg === META_PACKAGE) return META_FILE;
  const gv = GENERATED_GROUP_VERSIONS.find((candidate) => candidate.package === pkg);
  return gv ? fileNameOf(gv) : undefined;
}

/** The name of the schema a `$ref` (or a single-element `allOf` of one) points at. */
function refOf(schema: Schema): string | undefined {
  const ref = schema.$ref ?? (schema.allOf?.length === 1 ? schema.allOf[0].$ref : undefined);
  if (ref === undefined) {
    if (schema.allOf) throw new Error(`unsupported allOf: ${JSON.stringify(schema.allOf)}`);
    return undefined;
  }
  if (!ref.startsWith(SCHEMA_REF_PREFIX)) throw new Error(`unsupported $ref ${ref}`);
  return ref.slice(SCHEMA_REF_PREFIX.length);
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sameGroupVersionKind(a: GroupVersionKind, b: GroupVersionKind): boolean {
  return a.group === b.group && a.version === b.version && a.kind === b.kind;
}

function withoutGroupVersionKinds(schema: Schema): Schema {
  const { "x-kubernetes-group-version-kind": _, ...rest } = schema;
  return rest;
}

/** Fetches the OpenAPI documents of the generated group-versions and merges their schemas. */
async function fetchSchemas(rest: RestClient): Promise<Map<string, Schema>> {
  const index = await rest.request<OpenAPIIndex>({ path: "/openapi/v3" });
  const schemas = new Map<string, Schema>();
  for (const gv of GENERATED_GROUP_VERSIONS) {
    const key = gv.group === "" ? `api/${gv.version}` : `apis/${gv.group}/${gv.version}`;
    const entry = index.paths[key];
    if (!entry) throw new Error(`the API server serves no OpenAPI document for ${key}`);
    const url = new URL(entry.serverRelativeURL, "https://server.invalid");
    const document = await rest.request<OpenAPIDocument>({
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
    });
    for (const [name, schema] of Object.entries(document.components?.schemas ?? {})) {
      const known = schemas.get(name);
      if (!known) {
        schemas.set(name, schema);
        continue;
      }
      // Documents repeat shared schemas; they differ only in the GVKs each document lists.
      if (
        !isDeepStrictEqualJSON(withoutGroupVersionKinds(known), withoutGroupVersionKinds(schema))
      ) {
        throw new Error(`schema ${name} differs between OpenAPI documents`);
      }
      const kinds = [...(known["x-kubernetes-group-version-kind"] ?? [])];
      for (const gvk of schema["x-kubernetes-group-version-kind"] ?? []) {
        if (!kinds.some((other) => sameGroupVersionKind(other, gvk))) kinds.push(gvk);
      }
      if (kinds.length > 0) {
        schemas.set(name, { ...known, "x-kubernetes-group-version-kind": kinds });
      }
    }
  }
  return schemas;
}

function isDeepStrictEqualJSON(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const aKeys = Object.keys(a);
  const bKeys = Object.keys(b);
  if (aKeys.length !== bKeys.length) return false;
  const bRecord = b as Record<string, unknown>;
  return aKeys.every((key) =>
    Object.hasOwn(bRecord, key) &&
    isDeepStrictEqualJSON((a as Record<string, unknown>)[key], bRecord[key])
  );
}

// ---------------------------------------------------------------------------------------------
// Emitting TypeScript

/** The file header: what the file holds, where it comes from, and not to edit it. */
function header(what: string, kubernetesVersion: string): string {
  return [
    "/**",
    ` * ${what}`,
    " *",
    ` * Generated by tools/gen_api_types.ts from the OpenAPI of Kubernetes ${kubernetesVersion}.`,
    " * Do not edit: run `deno run -A tools/gen_api_types.ts` to regenerate.",
    " *",
    " * @module",
    " */",
  ].join("\n");
}

/** A JSDoc block at `indent`; one line when it fits. */
/** Kubernetes' source at the version whose OpenAPI the types come from. */
const KUBERNETES_SOURCE =
  `https://github.com/kubernetes/kubernetes/blob/v${ENVTEST_KUBERNETES_VERSION}`;

function jsDoc(text: string | undefined, indent: string): string[] {
  if (text === undefined || text.trim() === "") return [];
  // The OpenAPI links some descriptions to Kubernetes' source by root-relative paths, which
  // lead nowhere in the API reference: point them at the source of the version served.
  const lines = text.replaceAll("*/", "*\\/").replaceAll("](/pkg/", `](${KUBERNETES_SOURCE}/pkg/`)
    .split("\n").map((line) => line.trimEnd());
  while (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  while (lines.length > 0 && lines[0] === "") lines.shift();
  // deno fmt keeps one blank line of a run in a JSDoc block.
  for (let i = lines.length - 1; i > 0; i--) {
    if (lines[i] === "" && lines[i - 1] === "") lines.splice(i, 1);
  }
  if (lines.length === 1 && indent.length + lines[0].length + 7 <= LINE_WIDTH) {
    return [`${indent}/** ${lines[0]} */`];
  }
  return [
    `${indent}/**`,
    ...lines.map((line) => line === "" ? `${indent} *` : `${indent} * ${line}`),
    `${indent} */`,
  ];
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function propertyKey(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/** Per-file state: local names and the imports a file needs. */
class FileEmitter {
  /** Imported names by source file: exported name → local alias. */
  readonly imports = new Map<string, Map<string, string>>();

  readonly fileName: string;
  /** Local type name of every schema, by schema name (all files). */
  readonly names: Map<string, { file: string; name: string }>;
  /** Names declared in this file. */
  readonly localNames: Set<string>;

  constructor(
    fileName: string,
    names: Map<string, { file: string; name: string }>,
    localNames: Set<string>,
  ) {
    this.fileName = fileName;
    this.names = names;
    this.localNames = localNames;
  }

  /** The name this file uses for the type of `schemaName`, importing it when needed. */
  reference(schemaName: string): string {
    const target = this.names.get(schemaName);
    if (!target) throw new Error(`reference to unknown schema ${schemaName}`);
    if (target.file === this.fileName) return target.name;
    let fromFile = this.imports.get(target.file);
    if (!fromFile) this.imports.set(target.file, fromFile = new Map());
    const known = fromFile.get(target.name);
    if (known) return known;
    let alias = target.name;
    const taken = (candidate: string) =>
      this.localNames.has(candidate) ||
      [...this.imports.values()].some((names) => [...names.values()].includes(candidate));
    if (taken(alias)) alias = pascalCase(target.file.replace(/\.ts$/, "")) + target.name;
    if (taken(alias)) {
      throw new Error(`cannot find a free name for ${schemaName} in ${this.fileName}`);
    }
    fromFile.set(target.name, alias);
    return alias;
  }

  /**
   * The TypeScript type of a (property) schema: refs by name, `int64`/`int32`/`double` as
   * `number`, `byte` (base64) and `date-time` as `string`, maps as `Record<string, T>`, and
   * schemas that say nothing (e.g. `x-kubernetes-preserve-unknown-fields` without a type) as
   * `unknown`.
   */
  typeOf(schema: Schema): string {
    const ref = refOf(schema);
    if (ref !== undefined) return this.reference(ref);
    if (schema["x-kubernetes-int-or-string"]) {
      return this.reference("io.k8s.apimachinery.pkg.util.intstr.IntOrString");
    }
    const union = schema.oneOf ?? schema.anyOf;
    if (union) return [...new Set(union.map((branch) => this.typeOf(branch)))].join(" | ");
    switch (schema.type) {
      case "string":
        return "string";
      case "integer":
      case "number":
        return "number";
      case "boolean":
        return "boolean";
      case "array": {
        const item = this.typeOf(schema.items ?? {});
        return /[ |&]/.test(item) && !item.startsWith("Record<") ? `(${item})[]` : `${item}[]`;
      }
      case "object":
        if (schema.properties) {
          throw new Error(`inline object schemas are not supported: ${JSON.stringify(schema)}`);
        }
        if (typeof schema.additionalProperties === "object") {
          return `Record<string, ${this.typeOf(schema.additionalProperties)}>`;
        }
        return "Record<string, unknown>";
      case undefined:
        if (schema.properties || schema.items) {
          throw new Error(`schema without a type: ${JSON.stringify(schema)}`);
        }
        return "unknown";
      default:
        throw new Error(`unsupported schema type ${schema.type}`);
    }
  }

  /** The import statements, sorted by file and name, each on one line when it fits. */
  importLines(): string[] {
    const lines: string[] = [];
    for (const file of [...this.imports.keys()].sort(compareStrings)) {
      const specifiers = [...this.imports.get(file)!.entries()]
        .sort(([a], [b]) =>
          compareStrings(a.toLowerCase(), b.toLowerCase()) || compareStrings(a, b)
        )
        .map(([name, alias]) => name === alias ? name : `${name} as ${alias}`);
      const oneLine = `import type { ${specifiers.join(", ")} } from "./${file}";`;
      if (oneLine.length <= LINE_WIDTH) lines.push(oneLine);
      else {
        lines.push("import type {", ...specifiers.map((s) => `  ${s},`), `} from "./${file}";`);
      }
    }
    return lines;
  }
}

/**
 * The doc of a property the OpenAPI does not describe (a few do not), so that every exported
 * member has one: the summary of the schema it refers to, or what it is.
 */
function fallbackDescription(
  schemaName: string,
  property: string,
  schemas: Map<string, Schema>,
): string {
  const propertySchema = schemas.get(schemaName)!.properties![property];
  const ref = refOf(propertySchema) ??
    (propertySchema.items ? refOf(propertySchema.items) : undefined);
  const description = ref === undefined ? undefined : schemas.get(ref)?.description;
  if (description !== undefined) return description.split("\n")[0];
  if (lastSegment(schemaName) === "JSONSchemaProps") {
    return `The JSON Schema keyword \`${property}\`.`;
  }
  return `The \`${property}\` field of ${lastSegment(schemaName)}.`;
}

/** What one generated file declares: schema names, with the group-version it belongs to. */
interface FilePlan {
  fileName: string;
  title: string;
  groupVersion?: GeneratedGroupVersion;
  schemaNames: string[];
}

/** The kinds of `gv` a schema declares, when it is a top-level object of that group-version. */
function ownKinds(schema: Schema, gv: GeneratedGroupVersion | undefined): string[] {
  if (!gv || !schema.properties?.apiVersion || !schema.properties?.kind) return [];
  return (schema["x-kubernetes-group-version-kind"] ?? [])
    .filter((gvk) => gvk.group === gv.group && gvk.version === gv.version)
    .map((gvk) => gvk.kind).sort(compareStrings);
}

function emitTypesFile(
  plan: FilePlan,
  schemas: Map<string, Schema>,
  names: Map<string, { file: string; name: string }>,
  kubernetesVersion: string,
): string {
  const localNames = new Set(plan.schemaNames.map((name) => names.get(name)!.name));
  const emitter = new FileEmitter(plan.fileName, names, localNames);
  const declarations: string[][] = [];
  for (const schemaName of plan.schemaNames) {
    const schema = schemas.get(schemaName)!;
    const name = names.get(schemaName)!.name;
    const body: string[] = [];
    declarations.push(body);
    const primitive = PRIMITIVE_TYPES[schemaName];
    if (primitive) {
      body.push(...jsDoc(`${schema.description ?? name}\n\n${primitive.note}`, ""));
      body.push(`export type ${name} = ${primitive.type};`);
      continue;
    }
    body.push(...jsDoc(schema.description ?? `${name} (${schemaName}).`, ""));
    const override = TYPE_OVERRIDES[schemaName];
    if (override) {
      body.push(`export type ${name} = ${override};`);
      continue;
    }
    if (!schema.properties || Object.keys(schema.properties).length === 0) {
      body.push(`export type ${name} = ${emitter.typeOf(schema)};`);
      continue;
    }
    const kinds = ownKinds(schema, plan.groupVersion);
    const required = new Set(schema.required ?? []);
    body.push(`export interface ${name} {`);
    for (const property of Object.keys(schema.properties).sort(compareStrings)) {
      const propertySchema = schema.properties[property];
      let type: string;
      let optional = !required.has(property);
      if (kinds.length > 0 && property === "apiVersion") {
        type = JSON.stringify(apiVersionOf(plan.groupVersion!.group, plan.groupVersion!.version));
        optional = false;
      } else if (kinds.length > 0 && property === "kind") {
        type = kinds.map((kind) => JSON.stringify(kind)).join(" | ");
        optional = false;
      } else {
        type = emitter.typeOf(propertySchema);
      }
      body.push(
        ...jsDoc(
          propertySchema.description ?? fallbackDescription(schemaName, property, schemas),
          "  ",
        ),
      );
      body.push(`  ${propertyKey(property)}${optional ? "?" : ""}: ${type};`);
    }
    body.push("}");
  }
  const sections = [header(plan.title, kubernetesVersion)];
  const imports = emitter.importLines();
  if (imports.length > 0) sections.push(imports.join("\n"));
  sections.push(...declarations.map((lines) => lines.join("\n")));
  return sections.join("\n\n") + "\n";
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch metadata

/** One property's entry in `PATCH_METADATA` (mirrors `PropertyPatchInfo` in the output). */
interface PropertyPatchInfo {
  ref?: string;
  list?: true;
  map?: true;
  strategy?: string;
  mergeKey?: string;
}

/** The object schema a property refers to, directly or as list item or map value. */
function objectRefOf(
  schema: Schema,
  schemas: Map<string, Schema>,
): { ref: string; list?: true; map?: true } | undefined {
  const isObject = (name: string) =>
    !(name in PRIMITIVE_TYPES) && !(name in TYPE_OVERRIDES) &&
    Object.keys(schemas.get(name)?.properties ?? {}).length > 0;
  const direct = refOf(schema);
  if (direct !== undefined) return isObject(direct) ? { ref: direct } : undefined;
  let inner: Schema | undefined;
  let shape: { list?: true; map?: true } = {};
  if (schema.type === "array") {
    inner = schema.items;
    shape = { list: true };
  } else if (schema.type === "object" && typeof schema.additionalProperties === "object") {
    inner = schema.additionalProperties;
    shape = { map: true };
  }
  if (inner === undefined) return undefined;
  const ref = refOf(inner);
  if (ref !== undefined) return isObject(ref) ? { ref, ...shape } : undefined;
  // PropertyPatchInfo cannot describe a list of lists of objects; no built-in schema has one.
  if (objectRefOf(inner, schemas) !== undefined) {
    throw new Error(`unsupported nesting of objects in lists or maps: ${JSON.stringify(schema)}`);
  }
  return undefined;
}

/**
 * The patch metadata of every schema that has something to say: a property with a patch
 * strategy, or one whose object schema (transitively) has one.
 */
function computePatchMetadata(
  schemaNames: string[],
  schemas: Map<string, Schema>,
): Map<string, Map<string, PropertyPatchInfo>> {
  const candidates = new Map<string, Map<string, PropertyPatchInfo>>();
  for (const schemaName of schemaNames) {
    const properties = schemas.get(schemaName)!.properties ?? {};
    const entries = new Map<string, PropertyPatchInfo>();
    for (const property of Object.keys(properties).sort(compareStrings)) {
      const schema = properties[property];
      const strategy = schema["x-kubernetes-patch-strategy"];
      if (
        strategy !== undefined &&
        !["merge", "retainKeys", "merge,retainKeys", "replace"].includes(strategy)
      ) {
        throw new Error(`unknown patch strategy ${strategy} of ${schemaName}.${property}`);
      }
      const objectRef = objectRefOf(schema, schemas);
      // A list without strategy `merge` is replaced whole: the schema of its items is moot.
      const mergedList = strategy?.split(",").includes("merge") ?? false;
      const info: PropertyPatchInfo = objectRef?.list && !mergedList ? {} : { ...objectRef };
      if (strategy !== undefined) {
        info.strategy = strategy;
        if (schema.type === "array") info.list = true;
      }
      const mergeKey = schema["x-kubernetes-patch-merge-key"];
      if (mergeKey !== undefined) info.mergeKey = mergeKey;
      if (Object.keys(info).length > 0) entries.set(property, info);
    }
    candidates.set(schemaName, entries);
  }
  // Keep the schemas that matter: a strategy of their own, or a reference to one that matters.
  const matters = new Set<string>();
  for (let changed = true; changed;) {
    changed = false;
    for (const [schemaName, entries] of candidates) {
      if (matters.has(schemaName)) continue;
      for (const info of entries.values()) {
        if (info.strategy !== undefined || (info.ref !== undefined && matters.has(info.ref))) {
          matters.add(schemaName);
          changed = true;
          break;
        }
      }
    }
  }
  const metadata = new Map<string, Map<string, PropertyPatchInfo>>();
  for (const schemaName of schemaNames) {
    if (!matters.has(schemaName)) continue;
    const kept = new Map<string, PropertyPatchInfo>();
    for (const [property, info] of candidates.get(schemaName)!) {
      if (info.strategy === undefined && !(info.ref !== undefined && matters.has(info.ref))) {
        continue;
      }
      if (info.ref !== undefined && !matters.has(info.ref)) {
        const { ref: _ref, ...rest } = info;
        kept.set(property, rest);
      } else kept.set(property, info);
    }
    metadata.set(schemaName, kept);
  }
  return metadata;
}

/** An object literal on one line when it fits at `indent`, else one property per line. */
function objectLiteral(
  prefix: string,
  entries: [string, string][],
  indent: string,
  suffix: string,
) {
  const oneLine = `${indent}${prefix}{ ${
    entries.map(([k, v]) => `${k}: ${v}`).join(", ")
  } }${suffix}`;
  if (oneLine.length <= LINE_WIDTH) return [oneLine];
  return [
    `${indent}${prefix}{`,
    ...entries.flatMap(([k, v]) => {
      const line = `${indent}  ${k}: ${v},`;
      // deno fmt moves a value that does not fit to the next line.
      return line.length <= LINE_WIDTH ? [line] : [`${indent}  ${k}:`, `${indent}    ${v},`];
    }),
    `${indent}}${suffix}`,
  ];
}

/** A `"key": "value",` line of a string record, broken after the colon when too long. */
function stringEntry(key: string, value: string, indent: string): string[] {
  const oneLine = `${indent}${JSON.stringify(key)}: ${JSON.stringify(value)},`;
  if (oneLine.length <= LINE_WIDTH) return [oneLine];
  return [`${indent}${JSON.stringify(key)}:`, `${indent}  ${JSON.stringify(value)},`];
}

function emitPatchMetadataFile(
  metadata: Map<string, Map<string, PropertyPatchInfo>>,
  kindSchemas: [string, string][],
  kubernetesVersion: string,
): string {
  const lines = [
    header(
      "Strategic merge patch metadata of the built-in Kubernetes schemas, and the schema of " +
        "each kind.",
      kubernetesVersion,
    ),
    "",
    "/** How strategic merge patch treats one property of an API schema. */",
    "export interface PropertyPatchInfo {",
    "  /**",
    "   * Full name of the object schema of the value; with `list`, of each item; with `map`, of",
    "   * each value.",
    "   */",
    "  ref?: string;",
    "  /** The property is a list. */",
    "  list?: true;",
    "  /** The property is a map from strings to `ref` objects. */",
    "  map?: true;",
    "  /** `x-kubernetes-patch-strategy`: how a patch merges the value. */",
    '  strategy?: "merge" | "retainKeys" | "merge,retainKeys" | "replace";',
    "  /** `x-kubernetes-patch-merge-key`: the field that identifies an item of a merged list. */",
    "  mergeKey?: string;",
    "}",
    "",
    "/** The patch information of the properties of one schema, by property name. */",
    "export type SchemaPatchInfo = Record<string, PropertyPatchInfo>;",
    "",
    "/**",
    " * Strategic merge patch metadata by full schema name (e.g. `io.k8s.api.core.v1.PodSpec`).",
    " * Schemas and properties without an entry have nothing that strategic merge patch treats",
    " * specially: their maps merge key by key and their lists are replaced.",
    " */",
    "export const PATCH_METADATA: Record<string, SchemaPatchInfo> = {",
  ];
  for (const [schemaName, properties] of metadata) {
    if (properties.size === 0) {
      lines.push(`  ${JSON.stringify(schemaName)}: {},`);
      continue;
    }
    lines.push(`  ${JSON.stringify(schemaName)}: {`);
    for (const [property, info] of properties) {
      const entries: [string, string][] = [];
      if (info.ref !== undefined) entries.push(["ref", JSON.stringify(info.ref)]);
      if (info.list) entries.push(["list", "true"]);
      if (info.map) entries.push(["map", "true"]);
      if (info.strategy !== undefined) entries.push(["strategy", JSON.stringify(info.strategy)]);
      if (info.mergeKey !== undefined) entries.push(["mergeKey", JSON.stringify(info.mergeKey)]);
      lines.push(...objectLiteral(`${propertyKey(property)}: `, entries, "    ", ","));
    }
    lines.push("  },");
  }
  lines.push(
    "};",
    "",
    "/**",
    ' * The schema name of each built-in kind, by `"<apiVersion>/<kind>"` (e.g.',
    ' * `"apps/v1/Deployment"`, `"v1/Pod"`).',
    " */",
    "export const KIND_SCHEMAS: Record<string, string> = {",
  );
  for (const [key, schemaName] of kindSchemas) lines.push(...stringEntry(key, schemaName, "  "));
  lines.push("};", "");
  return lines.join("\n");
}

// ---------------------------------------------------------------------------------------------

/**
 * Reads the OpenAPI v3 documents of {@linkcode GENERATED_GROUP_VERSIONS} from the API server
 * and returns the generated files: file name (in `lib/api/generated/`) → content.
 *
 * @example
 * ```ts ignore
 * import { RestClient } from "../lib/kube/rest.ts";
 * import { ENVTEST_KUBERNETES_VERSION } from "../lib/testing/assets.ts";
import { Environment } from "../lib/testing/envtest.ts";
 *
 * const env = new Environment();
 * const rest = new RestClient(await env.start());
 * const files = await generateApiTypes(rest);
 * console.log([...files.keys()]); // ["admissionregistration_v1.ts", …, "storage_v1.ts"]
 * rest.close();
 * await env.stop();
 * ```
 */
export async function generateApiTypes(rest: RestClient): Promise<Map<string, string>> {
  const version = await rest.request<{ gitVersion: string }>({ path: "/version" });
  const kubernetesVersion = version.gitVersion.replace(/[-+].*$/, "");
  const schemas = await fetchSchemas(rest);
  const schemaNames = [...schemas.keys()].sort(compareStrings);

  // Plan the files and the name of every schema.
  const plans = new Map<string, FilePlan>();
  plans.set(PRIMITIVES_FILE, {
    fileName: PRIMITIVES_FILE,
    title: "Leaf types of the Kubernetes API machinery: quantities, int-or-strings, times and " +
      "raw JSON.",
    schemaNames: [],
  });
  plans.set(META_FILE, {
    fileName: META_FILE,
    title: "Types of `meta/v1` (`io.k8s.apimachinery.pkg.apis.meta.v1`): object and list " +
      "metadata, label selectors, conditions, status and options.",
    schemaNames: [],
  });
  for (const gv of GENERATED_GROUP_VERSIONS) {
    plans.set(fileNameOf(gv), {
      fileName: fileNameOf(gv),
      title: `Types of the Kubernetes API group-version \`${
        apiVersionOf(gv.group, gv.version)
      }\` (\`${gv.package}\`).`,
      groupVersion: gv,
      schemaNames: [],
    });
  }
  for (const schemaName of schemaNames) {
    const file = fileOfSchema(schemaName);
    if (file === undefined) {
      throw new Error(`schema ${schemaName} belongs to no generated file; add its package`);
    }
    plans.get(file)!.schemaNames.push(schemaName);
  }
  const names = new Map<string, { file: string; name: string }>();
  for (const plan of plans.values()) {
    const counts = new Map<string, number>();
    for (const schemaName of plan.schemaNames) {
      counts.set(lastSegment(schemaName), (counts.get(lastSegment(schemaName)) ?? 0) + 1);
    }
    for (const schemaName of plan.schemaNames) {
      const short = lastSegment(schemaName);
      const pkg = packageOf(schemaName).split(".");
      const name = counts.get(short)! > 1 ? pascalCase(pkg.slice(-2).join("_")) + short : short;
      names.set(schemaName, { file: plan.fileName, name });
    }
  }

  const files = new Map<string, string>();
  for (const plan of [...plans.values()].sort((a, b) => compareStrings(a.fileName, b.fileName))) {
    files.set(plan.fileName, emitTypesFile(plan, schemas, names, kubernetesVersion));
  }

  const metadataSchemas = schemaNames.filter((name) => {
    const file = fileOfSchema(name);
    return file !== undefined && file !== PRIMITIVES_FILE;
  });
  const kindSchemas: [string, string][] = [];
  for (const schemaName of metadataSchemas) {
    const gv = GENERATED_GROUP_VERSIONS.find((candidate) =>
      candidate.package === packageOf(schemaName)
    );
    for (const kind of ownKinds(schemas.get(schemaName)!, gv)) {
      kindSchemas.push([`${apiVersionOf(gv!.group, gv!.version)}/${kind}`, schemaName]);
    }
  }
  kindSchemas.sort(([a], [b]) => compareStrings(a, b));
  files.set(
    PATCH_METADATA_FILE,
    emitPatchMetadataFile(
      computePatchMetadata(metadataSchemas, schemas),
      kindSchemas,
      kubernetesVersion,
    ),
  );
  return new Map([...files.entries()].sort(([a], [b]) => compareStrings(a, b)));
}

/** The directory the generated files are written to. */
export const GENERATED_DIRECTORY: string = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "lib",
  "api",
  "generated",
);

/** Writes `files` into {@linkcode GENERATED_DIRECTORY}, removing generated files no longer made. */
export function writeGeneratedFiles(files: Map<string, string>): void {
  mkdirSync(GENERATED_DIRECTORY, { recursive: true });
  for (const entry of readdirSync(GENERATED_DIRECTORY)) {
    if (entry.endsWith(".ts") && !files.has(entry)) rmSync(join(GENERATED_DIRECTORY, entry));
  }
  for (const [name, content] of files) writeFileSync(join(GENERATED_DIRECTORY, name), content);
}

async function main(): Promise<void> {
  const env = new Environment();
  const config = await env.start();
  const rest = new RestClient(config);
  let files: Map<string, string>;
  try {
    files = await generateApiTypes(rest);
  } finally {
    rest.close();
    await env.stop();
  }
  writeGeneratedFiles(files);
  console.log(`wrote ${files.size} files to ${GENERATED_DIRECTORY}`);
  // The generator emits formatted code; fail loudly if deno fmt disagrees, as the freshness
  // test compares the generator's output with the committed (formatted) files byte by byte.
  if (!basename(process.execPath).startsWith("deno")) {
    console.warn("not running on Deno: skipped checking the files with deno fmt");
    return;
  }
  const check = spawnSync(process.execPath, ["fmt", "--check", GENERATED_DIRECTORY], {
    stdio: "inherit",
  });
  if (check.status !== 0) {
    throw new Error("deno fmt would reformat the generated files: fix the generator's layout");
  }
}

if (import.meta.main) await main();
