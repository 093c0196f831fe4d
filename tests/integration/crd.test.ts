// CRDs made by defineResource against the real API server: each installs and becomes
// Established; the server enforces every rule of the schema (types, bounds, enums, patterns,
// list map keys, int-or-string, CEL) and fills defaults; several versions share one stored
// version; printer columns appear in Table output; the scale and status subresources and
// selectable fields work; and the client validates writes when asked.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import {
  conditionsSchema,
  labelSelectorSchema,
  objectMetaSchema,
  phaseSchema,
} from "../../lib/api/meta.ts";
import { defineResource, type ObjectOf, type Unstructured } from "../../lib/api/resource.ts";
import { celRule, embeddedResource, intOrString, listType, mapType } from "../../lib/api/schema.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { rawPatch } from "../../lib/client/patch.ts";
import { ApiError, isInvalid } from "../../lib/kube/errors.ts";
import { type RequestInfo, RestClient } from "../../lib/kube/rest.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { setStatusCondition } from "../../lib/conditions/conditions.ts";

const Widget = defineResource({
  group: "crd.rudder.example.com",
  version: "v1",
  kind: "Widget",
  scope: "Namespaced",
  shortNames: ["wd"],
  categories: ["rudder-test"],
  description: "A widget: everything a spec can hold.",
  spec: celRule(
    z.object({
      replicas: z.int().min(0).max(50).default(1).describe("Desired replicas."),
      mode: z.enum(["fast", "safe"]).default("safe"),
      color: z.string().default("blue"),
      maxUnavailable: intOrString().default("25%"),
      minReplicas: z.int().min(0).optional(),
      maxReplicas: z.int().optional(),
      template: z.object({
        image: z.string().min(1),
        labels: z.record(z.string(), z.string()).optional(),
        ports: listType(
          z.array(z.object({
            name: z.string().regex(/^[a-z]+$/),
            port: z.int().min(1).max(65535),
            protocol: z.enum(["TCP", "UDP"]).default("TCP"),
          })),
          "map",
          ["name"],
        ).optional(),
      }),
      tags: z.array(z.string().max(10)).max(3).optional(),
    }),
    "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
    "minReplicas must not exceed maxReplicas",
  ),
  status: z.object({
    replicas: z.int().optional(),
    selector: z.string().optional(),
    phase: phaseSchema(["Pending", "Running", "Failed"]).optional(),
    conditions: conditionsSchema.optional(),
  }),
  validations: [{ rule: "self.metadata.name != 'forbidden'", message: "that name is taken" }],
  printerColumns: [
    { name: "Replicas", jsonPath: ".spec.replicas" },
    { name: "Mode", jsonPath: ".spec.mode" },
    { name: "Phase", jsonPath: ".status.phase" },
    { name: "Color", jsonPath: ".spec.color", priority: 1 },
  ],
  subresources: {
    scale: {
      specReplicasPath: ".spec.replicas",
      statusReplicasPath: ".status.replicas",
      labelSelectorPath: ".status.selector",
    },
  },
  selectableFields: [".spec.color"],
});
type Widget = ObjectOf<typeof Widget>;

/** Every construct the converter emits, to show the API server accepts each. */
const Sink = defineResource({
  group: "crd.rudder.example.com",
  version: "v1",
  kind: "Sink",
  scope: "Cluster",
  spec: z.object({
    strings: z.object({
      email: z.email().optional(),
      uuid: z.uuid().optional(),
      uri: z.url().optional(),
      when: z.iso.datetime().optional(),
      day: z.iso.date().optional(),
      ip: z.ipv4().optional(),
      net: z.cidrv4().optional(),
      data: z.base64().optional(),
      caseless: z.string().regex(/^ab+$/i).optional(),
      affixed: z.string().startsWith("x-").endsWith("!").optional(),
      sized: z.string().length(3).optional(),
      either: z.union([z.string().max(3), z.email()]).optional(),
    }).default({}),
    numbers: z.object({
      int32: z.int32().optional(),
      positive: z.number().positive().lt(1).optional(),
      step: z.int().multipleOf(5).optional(),
      literal: z.literal([1, 2, 3]).optional(),
    }).default({}),
    nullable: z.string().nullable().optional(),
    flag: z.boolean().default(false),
    loose: z.looseObject({ known: z.string().optional() }).optional(),
    anything: z.unknown(),
    resources: z.partialRecord(z.enum(["cpu", "memory"]), intOrString()).optional(),
    set: listType(z.array(z.string()), "set").optional(),
    atomic: mapType(z.record(z.string(), z.string()), "atomic").optional(),
    template: embeddedResource(z.looseObject({})).optional(),
    selector: labelSelectorSchema.optional(),
    owner: objectMetaSchema.optional().describe("Metadata kept as it is."),
  }),
});

/** One version stored, another served and deprecated, with different schemas. */
const GizmoV1beta1 = defineResource({
  group: "crd.rudder.example.com",
  version: "v1beta1",
  kind: "Gizmo",
  scope: "Namespaced",
  deprecated: true,
  spec: z.object({ size: z.int(), legacy: z.string().optional() }),
});
const Gizmo = defineResource({
  group: "crd.rudder.example.com",
  version: "v1",
  kind: "Gizmo",
  scope: "Namespaced",
  spec: z.object({ size: z.int().min(1), color: z.string().optional() }),
  versions: [GizmoV1beta1],
});

const ALL = [Widget, Sink, Gizmo];
const env = new Environment({ crds: ALL });
const namespace = "crd-it";
const requests: RequestInfo[] = [];
let config: KubeConfig;
let client: Client;
let rest: RestClient;

before(async () => {
  config = await env.start();
  client = newClient(config, { onRequest: (info) => requests.push(info) });
  rest = new RestClient(config);
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
});

after(async () => {
  rest?.close();
  await env.stop();
});

/** A Widget as a user would write it, leaving defaulted fields to the server. */
function widget(name: string, spec: Record<string, unknown> = {}): Unstructured {
  return {
    apiVersion: Widget.apiVersion,
    kind: Widget.kind,
    metadata: { name, namespace },
    spec: { template: { image: "nginx" }, ...spec },
  };
}

/** Asserts that creating `obj` fails with 422 Invalid, naming `field` (unless `null`). */
async function assertRejected(
  obj: Unstructured,
  field: string | null,
  detail?: RegExp,
): Promise<void> {
  const err = await client.create(obj).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ApiError, `expected the API server to reject it, got ${err}`);
  assert.ok(isInvalid(err), `expected 422 Invalid, got ${err.code} ${err.reason}`);
  const fields = (err.details?.causes ?? []).map((c) => c.field);
  if (field !== null) {
    assert.ok(
      fields.includes(field) || err.message.includes(`${field}:`),
      `expected ${field} in ${JSON.stringify(fields)} / ${err.message}`,
    );
  }
  if (detail) assert.match(err.message, detail);
}

describe("CRDs from defineResource on the API server", () => {
  it("installs each one, Established, with the schema as it was given", async () => {
    for (const type of ALL) {
      const expected = type.crd();
      const crd = await rest.request<typeof expected & { status: Record<string, never> }>({
        path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${expected.metadata.name}`,
      });
      const established = (crd.status.conditions as { type: string; status: string }[])
        .find((c) => c.type === "Established");
      assert.equal(established?.status, "True", `${type.kind} is not established`);
      assert.deepEqual(crd.spec.names, {
        ...expected.spec.names,
        // The API server fills these in when they are left out.
        ...(expected.spec.names.listKind ? {} : { listKind: `${type.kind}List` }),
      });
      for (const [i, version] of expected.spec.versions.entries()) {
        assert.deepEqual(
          crd.spec.versions[i].schema,
          version.schema,
          `${type.kind} ${version.name}: the stored schema differs from the one sent`,
        );
      }
    }
  });

  it("accepts a valid object and fills every default from .default()", async () => {
    const created = await client.create(widget("defaults"));
    const read = await client.get(Widget, { namespace, name: "defaults" });
    assert.equal(read.metadata?.uid, created.metadata?.uid);
    assert.deepEqual(read.spec, {
      replicas: 1,
      mode: "safe",
      color: "blue",
      maxUnavailable: "25%",
      template: { image: "nginx" },
    });
    // The object the server stored parses as the resource type says.
    assert.equal(Widget.parse(read).spec.replicas, 1);

    await client.create(widget("ported", {
      maxUnavailable: 2,
      template: { image: "nginx", ports: [{ name: "http", port: 80 }], labels: { a: "b" } },
      tags: ["x", "y"],
      minReplicas: 1,
      maxReplicas: 3,
    }));
    const ported = await client.get(Widget, { namespace, name: "ported" });
    assert.equal(ported.spec.maxUnavailable, 2);
    assert.deepEqual(ported.spec.template.ports, [{ name: "http", port: 80, protocol: "TCP" }]);
  });

  it("rejects each broken rule with the field named: bounds, enums, types, patterns, lists, CEL", async () => {
    await assertRejected(
      widget("neg", { replicas: -1 }),
      "spec.replicas",
      /greater than or equal to 0/,
    );
    await assertRejected(widget("many", { replicas: 51 }), "spec.replicas");
    await assertRejected(widget("frac", { replicas: 1.5 }), "spec.replicas");
    await assertRejected(widget("enum", { mode: "turbo" }), "spec.mode", /Unsupported value/);
    await assertRejected(widget("ios", { maxUnavailable: true }), "spec.maxUnavailable");
    await assertRejected(widget("noimage", { template: {} }), "spec.template.image", /Required/);
    await assertRejected(widget("empty", { template: { image: "" } }), "spec.template.image");
    await assertRejected(
      widget("labels", { template: { image: "x", labels: { a: 1 } } }),
      "spec.template.labels.a",
    );
    await assertRejected(
      widget("pattern", { template: { image: "x", ports: [{ name: "HTTP", port: 80 }] } }),
      "spec.template.ports[0].name",
    );
    await assertRejected(
      widget("dupe", {
        template: { image: "x", ports: [{ name: "a", port: 1 }, { name: "a", port: 2 }] },
      }),
      "spec.template.ports[1]",
      /Duplicate value/,
    );
    await assertRejected(widget("tags", { tags: ["a", "b", "c", "d"] }), "spec.tags");
    await assertRejected(widget("longtag", { tags: ["abcdefghijk"] }), "spec.tags[0]");
    await assertRejected(
      widget("cel", { minReplicas: 5, maxReplicas: 2 }),
      "spec",
      /minReplicas must not exceed maxReplicas/,
    );
    await assertRejected(widget("forbidden"), null, /that name is taken/);
    await assertRejected(
      { apiVersion: Widget.apiVersion, kind: Widget.kind, metadata: { name: "nospec", namespace } },
      "spec",
      /Required/,
    );
    const names = (await client.list(Widget, { namespace })).items.map((w) => w.metadata?.name);
    assert.deepEqual(names.sort(), ["defaults", "ported"]);
  });

  it("accepts every construct the conversion emits, and enforces them", async () => {
    const sink = {
      apiVersion: Sink.apiVersion,
      kind: Sink.kind,
      metadata: { name: "full" },
      spec: {
        strings: {
          email: "a@example.com",
          uuid: "0b6a3a8e-3f7e-4c1b-9d8e-1f2a3b4c5d6e",
          uri: "https://example.com/x",
          when: "2025-01-02T03:04:05Z",
          day: "2025-01-02",
          ip: "10.0.0.1",
          net: "10.0.0.0/8",
          data: "aGVsbG8=",
          caseless: "ABBB",
          affixed: "x-yes!",
          sized: "abc",
          either: "long@example.com",
        },
        numbers: { int32: 7, positive: 0.5, step: 10, literal: 2 },
        nullable: null,
        loose: { known: "k", unknown: { kept: true } },
        anything: [1, "two", { three: 3 }],
        resources: { cpu: "500m", memory: 1024 },
        set: ["a", "b"],
        atomic: { k: "v" },
        template: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "t" }, data: {} },
        selector: { matchExpressions: [{ key: "tier", operator: "In", values: ["web"] }] },
        owner: { name: "o", labels: { a: "b" } },
      },
    };
    const parsed = Sink.safeParse(sink);
    assert.ok(parsed.success, parsed.error?.message ?? "");
    await client.create(sink);
    const read = await client.get(Sink, { name: "full" });
    assert.deepEqual(read.spec, { ...sink.spec, flag: false });

    const broken = (spec: Record<string, unknown>) => ({
      ...sink,
      metadata: { name: `broken-${Object.keys(spec)[0]}` },
      spec: { ...sink.spec, ...spec },
    });
    await assertRejected(broken({ strings: { email: "not-an-email" } }), "spec.strings.email");
    await assertRejected(broken({ strings: { caseless: "ac" } }), "spec.strings.caseless");
    await assertRejected(broken({ strings: { affixed: "x-no" } }), "spec.strings.affixed");
    await assertRejected(broken({ strings: { either: "toolong" } }), "spec.strings.either");
    await assertRejected(broken({ numbers: { positive: 1 } }), "spec.numbers.positive");
    await assertRejected(broken({ numbers: { step: 7 } }), "spec.numbers.step");
    await assertRejected(broken({ numbers: { literal: 4 } }), "spec.numbers.literal");
    await assertRejected(broken({ numbers: { int32: 2 ** 31 } }), "spec.numbers.int32");
    await assertRejected(broken({ set: ["a", "a"] }), "spec.set[1]", /Duplicate value/);
    await assertRejected(broken({ resources: { cpu: true } }), "spec.resources.cpu");
    await assertRejected(
      broken({ selector: { matchExpressions: [{ key: "t", operator: "Is" }] } }),
      "spec.selector.matchExpressions[0].operator",
    );
    await assertRejected(broken({ template: { kind: "ConfigMap" } }), "spec.template.apiVersion");
  });

  it("stores one version and serves both, converting only apiVersion", async () => {
    const crd = await rest.request<{ status: { storedVersions: string[] } }>({
      path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${Gizmo.crd().metadata.name}`,
    });
    assert.deepEqual(crd.status.storedVersions, ["v1"]);

    await client.create({
      apiVersion: GizmoV1beta1.apiVersion,
      kind: "Gizmo",
      metadata: { name: "old", namespace },
      spec: { size: 3, legacy: "kept?" },
    });
    await client.create({
      apiVersion: Gizmo.apiVersion,
      kind: "Gizmo",
      metadata: { name: "new", namespace },
      spec: { size: 2, color: "red" },
    });
    const oldAsV1 = await client.get(Gizmo, { namespace, name: "old" });
    assert.equal(oldAsV1.apiVersion, "crd.rudder.example.com/v1");
    // Stored as v1: fields v1 does not know are pruned on the way in.
    assert.deepEqual(oldAsV1.spec, { size: 3 });
    const newAsV1beta1 = await client.get(GizmoV1beta1, { namespace, name: "new" });
    assert.equal(newAsV1beta1.apiVersion, "crd.rudder.example.com/v1beta1");
    // Read as v1beta1, the object is pruned by v1beta1's schema, which has no color.
    assert.deepEqual(newAsV1beta1.spec, { size: 2 });
    // Each version validates with its own schema.
    await assert.rejects(
      client.create({
        apiVersion: Gizmo.apiVersion,
        kind: "Gizmo",
        metadata: { name: "zero", namespace },
        spec: { size: 0 },
      }),
      isInvalid,
    );
  });

  it("shows the printer columns in the server's Table output", async () => {
    const table = await rest.request<{
      kind: string;
      columnDefinitions: { name: string; type: string; priority: number }[];
      rows: { cells: unknown[]; object: { metadata: { name: string } } }[];
    }>({
      path: `/apis/${Widget.apiVersion}/namespaces/${namespace}/${Widget.plural}`,
      accept: "application/json;as=Table;g=meta.k8s.io;v=v1",
    });
    assert.equal(table.kind, "Table");
    const columns = table.columnDefinitions.map((c) => c.name);
    // Columns of their own replace the default Age column.
    assert.deepEqual(columns, ["Name", "Replicas", "Mode", "Phase", "Color"]);
    assert.equal(table.columnDefinitions[1].type, "integer");
    assert.equal(table.columnDefinitions[4].priority, 1);
    const row = table.rows.find((r) => r.object.metadata.name === "defaults")!;
    assert.deepEqual(row.cells.slice(0, 3), ["defaults", 1, "safe"]);
    assert.equal(row.cells[4], "blue");
  });

  it("scales through the scale subresource, as kubectl scale does", async () => {
    await client.create(widget("scaled", { replicas: 2 }));
    const obj = await client.get(Widget, { namespace, name: "scaled" });
    await client.status().update({
      ...obj,
      status: { replicas: 2, selector: "app=scaled", phase: "Running" },
    });
    const scale = await client.subResource("scale").get<{
      kind: string;
      spec: { replicas: number };
      status: { replicas: number; selector: string };
    }>(obj);
    assert.equal(scale.kind, "Scale");
    assert.equal(scale.spec.replicas, 2);
    assert.deepEqual(scale.status, { replicas: 2, selector: "app=scaled" });

    // kubectl scale: a merge patch of the Scale's spec.replicas.
    await client.subResource("scale").patch(
      obj,
      rawPatch("application/merge-patch+json", { spec: { replicas: 7 } }),
    );
    assert.equal((await client.get(Widget, { namespace, name: "scaled" })).spec.replicas, 7);
    // And an update of the whole Scale.
    const current = await client.subResource("scale").get<typeof scale & Unstructured>(obj);
    await client.subResource("scale").update(obj, {
      body: { ...current, spec: { replicas: 4 } },
    });
    assert.equal((await client.get(Widget, { namespace, name: "scaled" })).spec.replicas, 4);
    // The schema's bounds hold through the subresource too.
    await assert.rejects(
      client.subResource("scale").patch(
        obj,
        rawPatch("application/merge-patch+json", { spec: { replicas: 99 } }),
      ),
      isInvalid,
    );
  });

  it("keeps status apart: writes of the object ignore it, status writes ignore the spec", async () => {
    const created = await client.create({
      ...widget("status"),
      status: { phase: "Failed" },
    }) as Widget;
    assert.equal(created.status, undefined);
    const obj = await client.get(Widget, { namespace, name: "status" });
    const conditions: NonNullable<NonNullable<Widget["status"]>["conditions"]> = [];
    setStatusCondition(conditions, { type: "Ready", status: "True", reason: "Reconciled" });
    const updated = await client.status().update({
      ...obj,
      spec: { ...obj.spec, replicas: 9 },
      status: { phase: "Running", conditions },
    });
    assert.equal(updated.status?.phase, "Running");
    assert.equal(updated.status?.conditions?.[0].type, "Ready");
    assert.equal(updated.spec.replicas, 1);
    await assert.rejects(
      client.status().update({ ...updated, status: { phase: "Sleeping" as "Running" } }),
      isInvalid,
    );
    const again = await client.update({ ...updated, status: { phase: "Failed" } });
    assert.equal(again.status?.phase, "Running");
  });

  it("selects objects by a selectable field", async () => {
    await client.create(widget("red", { color: "red" }));
    await client.create(widget("green", { color: "green" }));
    const red = await client.list(Widget, { namespace, fieldSelector: { "spec.color": "red" } });
    assert.deepEqual(red.items.map((w) => w.metadata?.name), ["red"]);
    const notBlue = await client.list(Widget, { namespace, fieldSelector: "spec.color!=blue" });
    assert.deepEqual(notBlue.items.map((w) => w.metadata?.name).sort(), ["green", "red"]);
    // A field that is not selectable is refused.
    await assert.rejects(
      client.list(Widget, { namespace, fieldSelector: { "spec.mode": "safe" } }),
      (err: unknown) => err instanceof ApiError && err.code === 400,
    );
  });

  it("validates writes in the client when asked, before anything reaches the server", async () => {
    const seen: RequestInfo[] = [];
    const validating = newClient(config, {
      types: [Widget],
      validate: true,
      onRequest: (info) => seen.push(info),
    });
    const bad = Widget.parse(widget("client-checked"));
    bad.spec.replicas = -3;
    const err = await validating.create(bad).then(() => undefined, (e: unknown) => e);
    assert.ok(isInvalid(err), `expected 422 Invalid, got ${err}`);
    assert.deepEqual((err as ApiError).details?.causes?.map((c) => c.field), ["spec.replicas"]);
    assert.equal(seen.length, 0, "the invalid object was sent");

    const good = Widget.parse(widget("client-checked"));
    const created = await validating.create(good);
    assert.equal(seen.filter((r) => r.method === "POST").length, 1);
    await assert.rejects(
      validating.update({ ...created, spec: { ...created.spec, mode: "turbo" as "fast" } }),
      isInvalid,
    );
    await assert.rejects(
      validating.status().update({ ...created, status: { phase: "Sleeping" as "Running" } }),
      isInvalid,
    );
    assert.equal(seen.filter((r) => r.method === "PUT").length, 0);
    const updated = await validating.update({ ...created, spec: { ...created.spec, replicas: 3 } });
    assert.equal(updated.spec.replicas, 3);
  });
});
