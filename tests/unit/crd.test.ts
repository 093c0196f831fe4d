// zod schemas to structural OpenAPI schemas, construct by construct, the constructs refused
// with their paths, and the CRDs defineResource builds: versions, columns, subresources,
// selectable fields and CEL rules. The API server's view of the same CRDs is in
// tests/integration/crd.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import {
  celRule,
  embeddedResource,
  intOrString,
  type JSONSchemaProps,
  listType,
  mapType,
  StructuralSchemaError,
  toStructuralSchema,
} from "../../lib/api/schema.ts";
import { conditionsSchema, labelSelectorSchema, phaseSchema } from "../../lib/api/meta.ts";
import { defineResource } from "../../lib/api/resource.ts";

/** The schema of `field` converted alone, at `spec.field`. */
function convert(schema: z.ZodType): JSONSchemaProps {
  return toStructuralSchema(schema, "spec.field");
}

/** Asserts that converting `spec` throws a StructuralSchemaError at `path` matching `reason`. */
function assertRefused(spec: z.ZodType, path: string, reason: RegExp): void {
  assert.throws(
    () => toStructuralSchema(spec, "spec"),
    (err: unknown) => {
      assert.ok(err instanceof StructuralSchemaError, `not a StructuralSchemaError: ${err}`);
      assert.equal(err.path, path);
      assert.match(err.message, reason);
      assert.ok(err.message.startsWith(`${path}: `), err.message);
      return true;
    },
  );
}

/** Every node of a structural schema has a type, or is int-or-string / preserves unknowns. */
function assertStructural(node: Record<string, unknown>, where = "(root)"): void {
  const exempt = node["x-kubernetes-int-or-string"] || node["x-kubernetes-preserve-unknown-fields"];
  assert.ok(typeof node.type === "string" || exempt, `${where} has no type`);
  assert.equal(node.$ref, undefined, `${where} has $ref`);
  assert.equal(node.$schema, undefined, `${where} has $schema`);
  assert.notEqual(node.additionalProperties, false, `${where} has additionalProperties: false`);
  for (const [key, child] of Object.entries((node.properties ?? {}) as Record<string, never>)) {
    assertStructural(child, `${where}.${key}`);
  }
  if (node.items) assertStructural(node.items as never, `${where}[*]`);
  if (typeof node.additionalProperties === "object") {
    assertStructural(node.additionalProperties as never, `${where}.*`);
  }
}

describe("zod to structural schema", () => {
  it("converts strings with lengths, patterns and the formats Kubernetes knows", () => {
    assert.deepEqual(convert(z.string().min(1).max(63).regex(/^[a-z]+$/)), {
      type: "string",
      minLength: 1,
      maxLength: 63,
      pattern: "^[a-z]+$",
    });
    assert.deepEqual(convert(z.string().length(4)), { type: "string", minLength: 4, maxLength: 4 });
    assert.deepEqual(convert(z.email()), { type: "string", format: "email" });
    assert.deepEqual(convert(z.string().email()), { type: "string", format: "email" });
    assert.deepEqual(convert(z.uuid()), { type: "string", format: "uuid" });
    assert.deepEqual(convert(z.url()), { type: "string", format: "uri" });
    assert.deepEqual(convert(z.iso.datetime()), { type: "string", format: "date-time" });
    assert.deepEqual(convert(z.iso.date()), { type: "string", format: "date" });
    assert.deepEqual(convert(z.ipv4()), { type: "string", format: "ipv4" });
    assert.deepEqual(convert(z.cidrv6()), { type: "string", format: "cidr" });
    assert.deepEqual(convert(z.base64()), { type: "string", format: "byte" });
    // A zod-only format: its ECMAScript pattern would not compile in RE2, so it is left out.
    assert.deepEqual(convert(z.nanoid()), { type: "string" });
    assert.deepEqual(convert(z.string().regex(/^a$/i)), { type: "string", pattern: "(?i)^a$" });
    assert.deepEqual(convert(z.string().startsWith("x-").endsWith("!")), {
      type: "string",
      allOf: [{ pattern: "^x-.*" }, { pattern: ".*!$" }],
    });
  });

  it("converts numbers: integers, bounds, exclusive bounds, multiples and formats", () => {
    assert.deepEqual(convert(z.number()), { type: "number" });
    assert.deepEqual(convert(z.int().min(0).max(10)), { type: "integer", minimum: 0, maximum: 10 });
    assert.deepEqual(convert(z.number().int().nonnegative()), { type: "integer", minimum: 0 });
    assert.deepEqual(convert(z.number().positive().lt(1)), {
      type: "number",
      minimum: 0,
      exclusiveMinimum: true,
      maximum: 1,
      exclusiveMaximum: true,
    });
    assert.deepEqual(convert(z.number().multipleOf(5)), { type: "number", multipleOf: 5 });
    assert.deepEqual(convert(z.int32()), {
      type: "integer",
      format: "int32",
      minimum: -2147483648,
      maximum: 2147483647,
    });
    assert.deepEqual(convert(z.float64()), { type: "number", format: "double" });
    // The tighter of two bounds wins, whatever their order.
    assert.deepEqual(convert(z.int().min(5).min(2).max(3).max(9)), {
      type: "integer",
      minimum: 5,
      maximum: 3,
    });
  });

  it("converts booleans, enums and literals", () => {
    assert.deepEqual(convert(z.boolean()), { type: "boolean" });
    assert.deepEqual(convert(z.enum(["Always", "Never"])), {
      type: "string",
      enum: ["Always", "Never"],
    });
    assert.deepEqual(convert(z.literal("only")), { type: "string", enum: ["only"] });
    assert.deepEqual(convert(z.literal([1, 2, 3])), { type: "integer", enum: [1, 2, 3] });
    assert.deepEqual(convert(z.union([z.literal("a"), z.literal("b"), z.enum(["c"])])), {
      type: "string",
      enum: ["a", "b", "c"],
    });
    // A TypeScript enum compiles to this object (Node strips types and cannot run `enum`).
    const Policy = { Retain: "Retain", Delete: "Delete" } as const;
    assert.deepEqual(convert(z.enum(Policy)), { type: "string", enum: ["Retain", "Delete"] });
  });

  it("converts objects with required and optional fields, and nested objects", () => {
    const schema = z.object({
      name: z.string(),
      nickname: z.string().optional(),
      replicas: z.int().default(1),
      anything: z.unknown(),
      nested: z.object({ deep: z.object({ value: z.boolean() }) }),
    });
    assert.deepEqual(convert(schema), {
      type: "object",
      properties: {
        name: { type: "string" },
        nickname: { type: "string" },
        replicas: { type: "integer", default: 1 },
        anything: { "x-kubernetes-preserve-unknown-fields": true },
        nested: {
          type: "object",
          properties: {
            deep: {
              type: "object",
              properties: { value: { type: "boolean" } },
              required: ["value"],
            },
          },
          required: ["deep"],
        },
      },
      required: ["name", "nested"],
    });
    assert.deepEqual(convert(z.object({})), { type: "object" });
  });

  it("keeps unknown fields of loose objects and drops a strict object's strictness", () => {
    assert.deepEqual(convert(z.looseObject({ a: z.string() })), {
      type: "object",
      properties: { a: { type: "string" } },
      required: ["a"],
      "x-kubernetes-preserve-unknown-fields": true,
    });
    assert.deepEqual(convert(z.strictObject({ a: z.string() })), {
      type: "object",
      properties: { a: { type: "string" } },
      required: ["a"],
    });
    assert.deepEqual(convert(z.any()), { "x-kubernetes-preserve-unknown-fields": true });
  });

  it("converts records to additionalProperties, and enum-keyed records to properties", () => {
    assert.deepEqual(convert(z.record(z.string(), z.int())), {
      type: "object",
      additionalProperties: { type: "integer" },
    });
    assert.deepEqual(convert(z.record(z.string(), z.object({ on: z.boolean() }))), {
      type: "object",
      additionalProperties: {
        type: "object",
        properties: { on: { type: "boolean" } },
        required: ["on"],
      },
    });
    assert.deepEqual(convert(z.record(z.enum(["cpu", "memory"]), z.string())), {
      type: "object",
      properties: { cpu: { type: "string" }, memory: { type: "string" } },
      required: ["cpu", "memory"],
    });
    assert.deepEqual(convert(z.partialRecord(z.enum(["cpu"]), z.string())), {
      type: "object",
      properties: { cpu: { type: "string" } },
    });
  });

  it("converts arrays with item counts", () => {
    assert.deepEqual(convert(z.array(z.string()).min(1).max(3)), {
      type: "array",
      items: { type: "string" },
      minItems: 1,
      maxItems: 3,
    });
    assert.deepEqual(convert(z.array(z.array(z.int())).length(2)), {
      type: "array",
      items: { type: "array", items: { type: "integer" } },
      minItems: 2,
      maxItems: 2,
    });
  });

  it("converts nullable, nullish and null unions to nullable", () => {
    assert.deepEqual(convert(z.string().nullable()), { type: "string", nullable: true });
    assert.deepEqual(convert(z.union([z.int(), z.null()])), { type: "integer", nullable: true });
    const obj = convert(z.object({ a: z.string().nullish(), b: z.string().nullable() }));
    assert.deepEqual(obj, {
      type: "object",
      properties: { a: { type: "string", nullable: true }, b: { type: "string", nullable: true } },
      required: ["b"],
    });
  });

  it("converts defaults of every shape, and prefaults", () => {
    assert.deepEqual(convert(z.string().default("x")), { type: "string", default: "x" });
    assert.deepEqual(convert(z.array(z.string()).default(["a"])), {
      type: "array",
      items: { type: "string" },
      default: ["a"],
    });
    assert.deepEqual(convert(z.object({ a: z.int().default(1) }).prefault({})), {
      type: "object",
      properties: { a: { type: "integer", default: 1 } },
      default: {},
    });
    assert.deepEqual(convert(z.boolean().default(false).optional()), {
      type: "boolean",
      default: false,
    });
  });

  it("takes descriptions and titles from .describe() and .meta(), the outermost first", () => {
    assert.deepEqual(convert(z.string().describe("The name.")), {
      type: "string",
      description: "The name.",
    });
    assert.deepEqual(convert(z.int().meta({ description: "Inner", title: "Count" }).optional()), {
      type: "integer",
      description: "Inner",
      title: "Count",
    });
    assert.deepEqual(convert(z.int().describe("Inner").optional().describe("Outer")), {
      type: "integer",
      description: "Outer",
    });
    // Metadata survives further checks: .min() clones with the described schema as parent.
    assert.deepEqual(convert(z.string().describe("kept").min(2)), {
      type: "string",
      description: "kept",
      minLength: 2,
    });
  });

  it("makes int-or-string fields from intOrString() and from a union of an integer and a string", () => {
    const expected = {
      "x-kubernetes-int-or-string": true,
      anyOf: [{ type: "integer" }, { type: "string" }],
    };
    assert.deepEqual(convert(intOrString()), expected);
    assert.deepEqual(convert(z.union([z.string(), z.int()])), expected);
    assert.deepEqual(convert(intOrString().default("25%").describe("Max unavailable.")), {
      ...expected,
      description: "Max unavailable.",
      default: "25%",
    });
    assert.equal(intOrString().parse(3), 3);
    assert.equal(intOrString().parse("30%"), "30%");
    assert.equal(intOrString().safeParse(1.5).success, false);
  });

  it("sets list types, map keys, map types and embedded resources through helpers", () => {
    const ports = listType(
      z.array(z.object({ name: z.string(), port: z.int() })),
      "map",
      ["name"],
    );
    assert.deepEqual(convert(ports), {
      type: "array",
      items: {
        type: "object",
        properties: { name: { type: "string" }, port: { type: "integer" } },
        required: ["name", "port"],
      },
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["name"],
    });
    assert.deepEqual(convert(listType(z.array(z.string()), "set").optional()), {
      type: "array",
      items: { type: "string" },
      "x-kubernetes-list-type": "set",
    });
    assert.deepEqual(convert(mapType(z.record(z.string(), z.string()), "atomic")), {
      type: "object",
      additionalProperties: { type: "string" },
      "x-kubernetes-map-type": "atomic",
    });
    assert.deepEqual(convert(embeddedResource(z.looseObject({}))), {
      type: "object",
      "x-kubernetes-preserve-unknown-fields": true,
      "x-kubernetes-embedded-resource": true,
    });
    assert.throws(() => listType(z.array(z.string()), "map"), /needs the names of its key fields/);
  });

  it("adds CEL rules, several of them, at the level they were put on", () => {
    const range = celRule(
      celRule(z.object({ min: z.int(), max: z.int() }), "self.min <= self.max", "min > max"),
      { rule: "self.max < 100", reason: "FieldValueForbidden", fieldPath: ".max" },
    );
    const schema = z.object({ range: range.optional(), name: celRule(z.string(), "self != ''") });
    const node = convert(schema);
    assert.deepEqual(node.properties!.range["x-kubernetes-validations"], [
      { rule: "self.min <= self.max", message: "min > max" },
      { rule: "self.max < 100", reason: "FieldValueForbidden", fieldPath: ".max" },
    ]);
    assert.deepEqual(node.properties!.name, {
      type: "string",
      "x-kubernetes-validations": [{ rule: "self != ''" }],
    });
    // The helpers return a copy: the original schema is unchanged.
    const plain = z.string();
    celRule(plain, "self != 'x'");
    assert.deepEqual(convert(plain), { type: "string" });
  });

  it("copies x-kubernetes-* keys set with .meta()", () => {
    assert.deepEqual(
      convert(z.array(z.string()).meta({ "x-kubernetes-list-type": "atomic" })),
      { type: "array", items: { type: "string" }, "x-kubernetes-list-type": "atomic" },
    );
  });

  it("converts unions of one type with different checks to anyOf, and pipes of one type", () => {
    assert.deepEqual(convert(z.union([z.string().max(3), z.email()])), {
      type: "string",
      anyOf: [{ maxLength: 3 }, { format: "email" }],
    });
    assert.deepEqual(convert(z.string().pipe(z.string().min(2))), {
      type: "string",
      minLength: 2,
    });
    assert.deepEqual(convert(z.union([z.int(), z.number().max(2)])), { type: "number" });
  });

  it("makes the shared fragments the way Kubernetes' own types are", () => {
    const conditions = convert(conditionsSchema);
    assert.equal(conditions["x-kubernetes-list-type"], "map");
    assert.deepEqual(conditions["x-kubernetes-list-map-keys"], ["type"]);
    const items = conditions.items as JSONSchemaProps;
    assert.deepEqual(items.required, [
      "type",
      "status",
      "lastTransitionTime",
      "reason",
      "message",
    ]);
    assert.deepEqual(items.properties!.status.enum, [
      "True",
      "False",
      "Unknown",
    ]);
    const selector = convert(labelSelectorSchema);
    assert.equal(selector["x-kubernetes-map-type"], "atomic");
    assert.deepEqual(convert(phaseSchema(["Pending", "Ready"])), {
      type: "string",
      description: "The phase of the resource: Pending, Ready.",
      enum: ["Pending", "Ready"],
    });
  });

  it("gives every node of a large schema a type, and no $ref or additionalProperties: false", () => {
    const schema = z.object({
      a: z.array(z.record(z.string(), z.object({ b: z.string().nullable() }))),
      c: intOrString(),
      d: z.looseObject({ e: z.unknown() }),
      f: z.strictObject({ g: z.array(z.enum(["x", "y"])) }),
      h: conditionsSchema.optional(),
      i: labelSelectorSchema.optional(),
    });
    assertStructural(convert(schema) as never);
  });
});

describe("constructs that cannot become structural schemas", () => {
  it("refuses a transform inside a spec, naming its path", () => {
    const spec = z.object({
      template: z.object({ replicas: z.string().transform((s) => Number(s)) }),
    });
    assertRefused(
      spec,
      "spec.template.replicas",
      /a zod transform cannot become a structural schema/,
    );
    assertRefused(
      z.object({ n: z.preprocess((v) => Number(v), z.number()) }),
      "spec.n",
      /transform/,
    );
  });

  it("refuses unions of objects, mixed unions, intersections and tuples", () => {
    assertRefused(
      z.object({
        source: z.discriminatedUnion("kind", [
          z.object({ kind: z.literal("git"), url: z.string() }),
          z.object({ kind: z.literal("s3"), bucket: z.string() }),
        ]),
      }),
      "spec.source",
      /union of objects.*celRule/,
    );
    assertRefused(
      z.object({ x: z.union([z.string(), z.boolean()]) }),
      "spec.x",
      /union of string, boolean is not a structural schema/,
    );
    assertRefused(
      z.object({ x: z.union([z.string(), z.number()]) }),
      "spec.x",
      /intOrString/,
    );
    assertRefused(
      z.object({ both: z.object({ a: z.string() }).and(z.object({ b: z.string() })) }),
      "spec.both",
      /intersection/,
    );
    assertRefused(z.object({ pair: z.tuple([z.string(), z.int()]) }), "spec.pair", /tuple/);
  });

  it("refuses values that are not JSON, coercion, overwrites and catch", () => {
    assertRefused(z.object({ at: z.date() }), "spec.at", /z\.iso\.datetime/);
    assertRefused(z.object({ n: z.bigint() }), "spec.n", /bigint/);
    assertRefused(z.object({ m: z.map(z.string(), z.string()) }), "spec.m", /z\.record/);
    assertRefused(z.object({ s: z.set(z.string()) }), "spec.s", /listType/);
    assertRefused(z.object({ n: z.coerce.number() }), "spec.n", /coercing/);
    assertRefused(z.object({ s: z.string().trim() }), "spec.s", /overwrite/);
    assertRefused(z.object({ s: z.string().catch("x") }), "spec.s", /catch/);
    assertRefused(z.object({ f: z.custom<string>() }), "spec.f", /custom/);
    assertRefused(
      z.object({ d: z.object({ when: z.string().default(() => new Date() as never) }) }),
      "spec.d.when",
      /a default must be a JSON value/,
    );
  });

  it("names paths through arrays ([*]) and records (.*)", () => {
    assertRefused(
      z.object({ items: z.array(z.object({ at: z.date() })) }),
      "spec.items[*].at",
      /Date/,
    );
    assertRefused(
      z.object({ byName: z.record(z.string(), z.object({ n: z.bigint() })) }),
      "spec.byName.*.n",
      /bigint/,
    );
    assertRefused(z.object({ "a.b": z.date() }), "spec[a.b]", /Date/);
  });

  it("refuses recursive schemas, typed catchalls and patterns RE2 cannot run", () => {
    interface Node {
      name: string;
      children: Node[];
    }
    const node: z.ZodType<Node> = z.object({
      name: z.string(),
      get children() {
        return z.array(node);
      },
    });
    assertRefused(z.object({ tree: node }), "spec.tree.children[*]", /recursive/);
    type Lazy = { next?: Lazy };
    const lazy: z.ZodType<Lazy> = z.lazy(() => z.object({ next: lazy.optional() }));
    assertRefused(z.object({ list: lazy }), "spec.list.next", /recursive/);
    // A lazy schema that does not recurse is fine.
    assert.deepEqual(convert(z.lazy(() => z.string())), { type: "string" });
    assertRefused(
      z.object({ extra: z.object({ a: z.string() }).catchall(z.int()) }),
      "spec.extra",
      /typed catchall/,
    );
    assertRefused(z.object({ p: z.string().regex(/^(?!x)/) }), "spec.p", /RE2/);
  });

  it("refuses list and map settings that do not fit the node", () => {
    assertRefused(
      z.object({ l: listType(z.array(z.object({ a: z.string() })), "map", ["name"]) }),
      "spec.l",
      /list map key "name" is not a field of the items/,
    );
    assertRefused(
      z.object({
        l: listType(z.array(z.object({ name: z.string().optional() })), "map", ["name"]),
      }),
      "spec.l",
      /must be required or have a default/,
    );
    assertRefused(
      z.object({ l: listType(z.array(z.object({ a: z.string() })), "set") }),
      "spec.l",
      /"set" needs scalar/,
    );
    assertRefused(z.object({ s: listType(z.string(), "atomic") }), "spec.s", /needs an array/);
    assertRefused(z.object({ s: mapType(z.string(), "atomic") }), "spec.s", /needs an object/);
  });

  it("refuses them in defineResource too, naming the version", () => {
    assert.throws(
      () =>
        defineResource({
          group: "example.com",
          version: "v1",
          kind: "Broken",
          scope: "Namespaced",
          spec: z.object({
            template: z.object({ replicas: z.string().transform((s) => Number(s)) }),
          }),
        }),
      (err: unknown) => {
        assert.ok(err instanceof StructuralSchemaError);
        assert.equal(
          err.message,
          "Broken v1: spec.template.replicas: a zod transform cannot become a structural schema",
        );
        assert.equal(err.path, "spec.template.replicas");
        return true;
      },
    );
  });
});

const spec = z.object({
  replicas: z.int().min(0).default(1),
  color: z.enum(["red", "blue"]).default("red"),
  started: z.iso.datetime().optional(),
});
const status = z.object({
  replicas: z.int().optional(),
  selector: z.string().optional(),
  phase: z.string().optional(),
});

describe("CRDs from defineResource", () => {
  it("names the CRD and fills names, scope and the one version", () => {
    const Thing = defineResource({
      group: "things.example.com",
      version: "v1alpha1",
      kind: "Thing",
      scope: "Cluster",
      shortNames: ["th"],
      categories: ["all", "example"],
      description: "A thing.",
      spec,
    });
    const crd = Thing.crd();
    assert.equal(crd.apiVersion, "apiextensions.k8s.io/v1");
    assert.equal(crd.kind, "CustomResourceDefinition");
    assert.equal(crd.metadata.name, "things.things.example.com");
    assert.deepEqual(crd.spec.names, {
      kind: "Thing",
      listKind: "ThingList",
      plural: "things",
      singular: "thing",
      shortNames: ["th"],
      categories: ["all", "example"],
    });
    assert.equal(crd.spec.scope, "Cluster");
    assert.equal(crd.spec.versions.length, 1);
    const [version] = crd.spec.versions;
    assert.equal(version.name, "v1alpha1");
    assert.equal(version.served, true);
    assert.equal(version.storage, true);
    assert.equal(version.subresources, undefined);
    const root = version.schema!.openAPIV3Schema!;
    assert.equal(root.type, "object");
    assert.equal(root.description, "A thing.");
    assert.deepEqual(Object.keys(root.properties!), ["apiVersion", "kind", "metadata", "spec"]);
    assert.deepEqual(root.properties!.metadata, { type: "object" });
    assert.deepEqual(root.required, ["spec"]);
    assert.deepEqual(root.properties!.spec, toStructuralSchema(spec, "spec"));
  });

  it("returns a fresh copy from each crd() call", () => {
    const Thing = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Thing",
      scope: "Namespaced",
      spec,
    });
    const first = Thing.crd();
    first.spec.versions[0].name = "changed";
    assert.equal(Thing.crd().spec.versions[0].name, "v1");
  });

  it("turns the status subresource on with a status schema, and scale on request", () => {
    const Scaled = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Scaled",
      scope: "Namespaced",
      spec,
      status,
      subresources: {
        scale: {
          specReplicasPath: ".spec.replicas",
          statusReplicasPath: ".status.replicas",
          labelSelectorPath: ".status.selector",
        },
      },
    });
    const [version] = Scaled.crd().spec.versions;
    assert.deepEqual(version.subresources, {
      status: {},
      scale: {
        specReplicasPath: ".spec.replicas",
        statusReplicasPath: ".status.replicas",
        labelSelectorPath: ".status.selector",
      },
    });
    assert.deepEqual(Scaled.subresources, ["status", "scale"]);
    assert.ok(version.schema!.openAPIV3Schema!.properties!.status);

    const NoStatusResource = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Quiet",
      scope: "Namespaced",
      spec,
      status,
      subresources: { status: false },
    });
    assert.equal(NoStatusResource.crd().spec.versions[0].subresources, undefined);
    assert.deepEqual(NoStatusResource.subresources, []);
  });

  it("checks scale paths against the schema", () => {
    const scaled = (paths: { specReplicasPath: string; statusReplicasPath: string }) => () =>
      defineResource({
        group: "example.com",
        version: "v1",
        kind: "Scaled",
        scope: "Namespaced",
        spec,
        status,
        subresources: { scale: paths },
      });
    assert.throws(
      scaled({ specReplicasPath: ".spec.replica", statusReplicasPath: ".status.replicas" }),
      /scale subresource: \.spec\.replica is not a field of the schema/,
    );
    assert.throws(
      scaled({ specReplicasPath: ".status.replicas", statusReplicasPath: ".status.replicas" }),
      /must be under \.spec/,
    );
    assert.throws(
      scaled({ specReplicasPath: ".spec.color", statusReplicasPath: ".status.replicas" }),
      /\.spec\.color is a string, not a integer/,
    );
  });

  it("makes printer columns, telling their types from the schema", () => {
    const Shown = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Shown",
      scope: "Namespaced",
      spec,
      status,
      printerColumns: [
        { name: "Replicas", jsonPath: ".spec.replicas" },
        { name: "Color", jsonPath: ".spec.color", description: "The color." },
        { name: "Started", jsonPath: ".spec.started", priority: 1 },
        {
          name: "Ready",
          type: "string",
          jsonPath: '.status.conditions[?(@.type=="Ready")].status',
        },
        { name: "Age", jsonPath: ".metadata.creationTimestamp" },
      ],
    });
    assert.deepEqual(Shown.crd().spec.versions[0].additionalPrinterColumns, [
      { name: "Replicas", type: "integer", jsonPath: ".spec.replicas" },
      { name: "Color", type: "string", jsonPath: ".spec.color", description: "The color." },
      { name: "Started", type: "date", jsonPath: ".spec.started", priority: 1 },
      {
        name: "Ready",
        type: "string",
        jsonPath: '.status.conditions[?(@.type=="Ready")].status',
      },
      { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
    ]);
  });

  it("refuses a printer column on a missing field, or of a type it cannot tell", () => {
    const withColumn = (column: { name: string; jsonPath: string }) => () =>
      defineResource({
        group: "example.com",
        version: "v1",
        kind: "Shown",
        scope: "Namespaced",
        spec,
        printerColumns: [column],
      });
    assert.throws(
      withColumn({ name: "Size", jsonPath: ".spec.size" }),
      /printer column "Size": \.spec\.size is not a field of the schema/,
    );
    assert.throws(
      withColumn({ name: "Ready", jsonPath: ".status.conditions[0].status" }),
      /printer column "Ready": give its type/,
    );
  });

  it("lists selectable fields, which must be strings, integers or booleans", () => {
    const Selectable = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Selectable",
      scope: "Namespaced",
      spec,
      selectableFields: [".spec.color", { jsonPath: ".spec.replicas" }],
    });
    assert.deepEqual(Selectable.crd().spec.versions[0].selectableFields, [
      { jsonPath: ".spec.color" },
      { jsonPath: ".spec.replicas" },
    ]);
    assert.throws(
      () =>
        defineResource({
          group: "example.com",
          version: "v1",
          kind: "Selectable",
          scope: "Namespaced",
          spec: z.object({ tags: z.array(z.string()) }),
          selectableFields: [".spec.tags"],
        }),
      /selectable field: \.spec\.tags is a array/,
    );
  });

  it("puts top-level CEL rules on the object's schema", () => {
    const Ruled = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Ruled",
      scope: "Namespaced",
      spec,
      validations: [
        "self.metadata.name.startsWith('r')",
        { rule: "self.spec.replicas < 5", message: "at most 4 replicas" },
      ],
    });
    const root = Ruled.crd().spec.versions[0].schema!.openAPIV3Schema!;
    assert.deepEqual(root["x-kubernetes-validations"], [
      { rule: "self.metadata.name.startsWith('r')" },
      { rule: "self.spec.replicas < 5", message: "at most 4 replicas" },
    ]);
  });

  it("leaves spec out of required when its schema is optional or defaulted", () => {
    const Loose = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Loose",
      scope: "Namespaced",
      spec: z.object({ a: z.string().optional() }).optional(),
    });
    assert.equal(Loose.crd().spec.versions[0].schema!.openAPIV3Schema!.required, undefined);
    assert.throws(
      () =>
        defineResource({
          group: "example.com",
          version: "v1",
          kind: "Flat",
          scope: "Namespaced",
          spec: z.string(),
        }),
      /spec must be an object schema/,
    );
  });

  it("serves several versions from one CRD with exactly one stored", () => {
    const ThingV1beta1 = defineResource({
      group: "example.com",
      version: "v1beta1",
      kind: "Thing",
      scope: "Namespaced",
      spec: z.object({ size: z.int() }),
      deprecated: true,
      deprecationWarning: "use v1",
    });
    const Thing = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Thing",
      scope: "Namespaced",
      spec,
      versions: [
        ThingV1beta1,
        { name: "v1alpha1", served: false, spec: z.object({ legacy: z.string() }) },
      ],
    });
    const versions = Thing.crd().spec.versions;
    assert.deepEqual(
      versions.map((v) => [v.name, v.served, v.storage, v.deprecated ?? false]),
      [["v1", true, true, false], ["v1beta1", true, false, true], [
        "v1alpha1",
        false,
        false,
        false,
      ]],
    );
    assert.equal(versions[1].deprecationWarning, "use v1");
    assert.deepEqual(
      Object.keys(versions[1].schema!.openAPIV3Schema!.properties!.spec.properties!),
      [
        "size",
      ],
    );
    // One of the other versions can be the stored one instead.
    const Moved = defineResource({
      group: "example.com",
      version: "v2",
      kind: "Thing",
      scope: "Namespaced",
      spec,
      versions: [{ name: "v1", spec, storage: true }],
    });
    assert.deepEqual(Moved.crd().spec.versions.map((v) => v.storage), [false, true]);
  });

  it("refuses two stored versions, a version twice, and a version of another kind", () => {
    const base = {
      group: "example.com",
      kind: "Thing",
      scope: "Namespaced" as const,
      spec,
    };
    assert.throws(
      () =>
        defineResource({
          ...base,
          version: "v1",
          storage: true,
          versions: [{ name: "v2", spec, storage: true }],
        }),
      /exactly one version must be stored; v1, v2 are/,
    );
    assert.throws(
      () => defineResource({ ...base, version: "v1", versions: [{ name: "v1", spec }] }),
      /version v1 is defined twice/,
    );
    const Other = defineResource({ ...base, kind: "Other", version: "v2" });
    assert.throws(
      () => defineResource({ ...base, version: "v1", versions: [Other] }),
      /version v2 is of Other\.example\.com, not Thing\.example\.com/,
    );
  });

  it("refuses a status subresource without a status schema", () => {
    assert.throws(
      () =>
        defineResource({
          group: "example.com",
          version: "v1",
          kind: "Thing",
          scope: "Namespaced",
          spec,
          subresources: { status: true },
        }),
      /the status subresource needs a status schema/,
    );
  });
});
