// defineResource: the inferred object type (checked by the compiler), the resource type it
// gives every client, cache and builder call, names and plurals, whole-object validation with
// field paths, the client validating writes when asked, and the shared metadata fragments.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import {
  defineResource,
  formatFieldPath,
  isDefinedResource,
  isResourceType,
  type KubeObject,
  type ObjectOf,
  type ResourceType,
  ValidationError,
} from "../../lib/api/resource.ts";
import { ConfigMap } from "../../lib/api/builtins.ts";
import type { ObjectMeta } from "../../lib/api/generated/meta_v1.ts";
import {
  conditionSchema,
  conditionsSchema,
  labelSelectorSchema,
  objectMetaSchema,
  phaseSchema,
} from "../../lib/api/meta.ts";
import { intOrString } from "../../lib/api/schema.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import type { Cache } from "../../lib/cache/cache.ts";
import { type ControllerHost, newControllerManagedBy } from "../../lib/controller/builder.ts";
import { ApiError, isInvalid } from "../../lib/kube/errors.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import type { Transport } from "../../lib/kube/transport.ts";
import { setStatusCondition } from "../../lib/conditions/conditions.ts";

/** True when A and B are the same type; a mismatch fails `deno check`/`deno test`. */
type Equals<A, B> = (<X>() => X extends A ? 1 : 2) extends (<X>() => X extends B ? 1 : 2) ? true
  : false;
function assertType<T extends true>(_proof?: T): void {}

const Example = defineResource({
  group: "example.com",
  version: "v1alpha1",
  kind: "Example",
  scope: "Namespaced",
  shortNames: ["ex"],
  spec: z.object({
    replicas: z.int().min(0).default(1),
    mode: z.enum(["fast", "safe"]).optional(),
    maxUnavailable: intOrString().optional(),
    items: z.array(z.object({ name: z.string().min(1) })).default([]),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  status: z.object({
    phase: phaseSchema(["Pending", "Running"]).optional(),
    conditions: conditionsSchema.optional(),
  }),
});
type Example = ObjectOf<typeof Example>;

const Bare = defineResource({
  group: "example.com",
  version: "v1",
  kind: "Bare",
  scope: "Cluster",
  spec: z.object({ size: z.int() }).optional(),
});

describe("the object type of a defined resource (checked at compile time)", () => {
  it("infers apiVersion and kind as literals, spec from the output of its schema", () => {
    assertType<Equals<Example["apiVersion"], "example.com/v1alpha1">>();
    assertType<Equals<Example["kind"], "Example">>();
    assertType<Equals<Example["spec"]["replicas"], number>>();
    assertType<Equals<Example["spec"]["mode"], "fast" | "safe" | undefined>>();
    assertType<Equals<Example["spec"]["maxUnavailable"], number | string | undefined>>();
    assertType<Equals<Example["spec"]["items"], { name: string }[]>>();
    assertType<Equals<Example["metadata"], ObjectMeta | undefined>>();
    type Status = NonNullable<Example["status"]>;
    assertType<Equals<Status["phase"], "Pending" | "Running" | undefined>>();
    // `replicas` would be `number | undefined` if the input type leaked into the object type.
    // @ts-expect-error spec is required: its schema is not optional
    const _noSpec: Example = { apiVersion: "example.com/v1alpha1", kind: "Example" };
    // @ts-expect-error the apiVersion is the resource's own
    const _wrongVersion: Example["apiVersion"] = "example.com/v1";
  });

  it("makes spec optional when its schema is, and status absent without a status schema", () => {
    type BareObject = ObjectOf<typeof Bare>;
    const bare: BareObject = { apiVersion: "example.com/v1", kind: "Bare" };
    assert.equal(bare.spec, undefined);
    assertType<Equals<BareObject["status"], undefined>>();
    assertType<Equals<BareObject["spec"], { size: number } | undefined>>();
  });

  it("is a ResourceType that the client, the cache and the builder take without casts", () => {
    const resourceType: ResourceType<Example> = Example;
    assert.equal(resourceType.kind, "Example");
    // Never called: these lines are here for the compiler.
    async function _usage(client: Client, cache: Cache, host: ControllerHost) {
      const got = await client.get(Example, { namespace: "a", name: "b" });
      const replicas: number = got.spec.replicas;
      const list = await client.list(Example, { namespace: "a" });
      const first: Example | undefined = list.items[0];
      await client.status().update({ ...got, status: { phase: "Running" } });
      const cached = await cache.get(Example, { namespace: "a", name: "b" });
      const cachedReplicas: number = cached.spec.replicas;
      newControllerManagedBy(host).for(Example).owns(ConfigMap);
      return [replicas, first, cachedReplicas];
    }
    assert.equal(typeof _usage, "function");
  });
});

describe("defineResource", () => {
  it("gives a resource type with names, scope and subresources", () => {
    assert.equal(Example.apiVersion, "example.com/v1alpha1");
    assert.equal(Example.group, "example.com");
    assert.equal(Example.version, "v1alpha1");
    assert.equal(Example.kind, "Example");
    assert.equal(Example.plural, "examples");
    assert.equal(Example.singular, "example");
    assert.equal(Example.listKind, "ExampleList");
    assert.equal(Example.scope, "Namespaced");
    assert.deepEqual(Example.shortNames, ["ex"]);
    assert.deepEqual(Example.subresources, ["status"]);
    assert.deepEqual(Bare.subresources, []);
    assert.ok(Object.isFrozen(Example));
    assert.ok(isResourceType(Example));
    assert.ok(isDefinedResource(Example));
    assert.ok(!isDefinedResource(ConfigMap));
    assert.ok(!isDefinedResource({ apiVersion: "v1", kind: "ConfigMap" }));
  });

  it("pluralises the kind by Kubernetes' rules unless a plural is given", () => {
    const cases: Record<string, string> = {
      Policy: "policies",
      Gateway: "gateways",
      Ingress: "ingresses",
      Box: "boxes",
      Batch: "batches",
      Mesh: "meshes",
      Quiz: "quizes",
      Database: "databases",
    };
    for (const [kind, plural] of Object.entries(cases)) {
      const type = defineResource({
        group: "example.com",
        version: "v1",
        kind,
        scope: "Namespaced",
        spec: z.object({}),
      });
      assert.equal(type.plural, plural, kind);
      assert.equal(type.crd().metadata.name, `${plural}.example.com`);
    }
    const Person = defineResource({
      group: "example.com",
      version: "v1",
      kind: "Person",
      plural: "people",
      singular: "human",
      listKind: "PersonCollection",
      scope: "Namespaced",
      spec: z.object({}),
    });
    assert.equal(Person.plural, "people");
    assert.deepEqual(Person.crd().spec.names, {
      kind: "Person",
      listKind: "PersonCollection",
      plural: "people",
      singular: "human",
    });
  });

  it("refuses names the API server would refuse, saying which", () => {
    const define = (names: Record<string, unknown>) => () =>
      defineResource({
        group: "example.com",
        version: "v1",
        kind: "Thing",
        scope: "Namespaced",
        spec: z.object({}),
        ...names,
      });
    assert.throws(define({ group: "example" }), /group "example" must be a domain/);
    assert.throws(define({ kind: "thing" }), /kind "thing" must be CamelCase/);
    assert.throws(define({ version: "V1" }), /version "V1" must be a lower-case DNS label/);
    assert.throws(define({ shortNames: ["T"] }), /short name "T"/);
    assert.throws(define({ plural: "my_things" }), /plural "my_things"/);
    assert.throws(define({ scope: "Global" }), /scope must be "Namespaced" or "Cluster"/);
  });
});

const valid = {
  apiVersion: "example.com/v1alpha1",
  kind: "Example",
  metadata: {
    name: "demo",
    namespace: "default",
    labels: { app: "demo" },
    managedFields: [{ manager: "kubectl" }],
  },
  spec: { mode: "fast", maxUnavailable: "25%", items: [{ name: "a" }], extra: true },
};

describe("parse and safeParse", () => {
  it("returns the object with defaults applied, unknown spec fields dropped, metadata kept", () => {
    const parsed = Example.parse(valid);
    assert.equal(parsed.spec.replicas, 1);
    assert.equal(parsed.spec.mode, "fast");
    assert.deepEqual(parsed.spec.items, [{ name: "a" }]);
    assert.equal("extra" in parsed.spec, false);
    assert.deepEqual(parsed.metadata, valid.metadata);
    const result = Example.safeParse(valid);
    assert.ok(result.success);
    assert.equal(result.data.spec.replicas, 1);
  });

  it("names every failing field with Kubernetes' path syntax", () => {
    const result = Example.safeParse({
      ...valid,
      metadata: { name: "demo", namespace: "default", labels: { "app.kubernetes.io/name": 1 } },
      spec: { replicas: -1, mode: "turbo", items: [{ name: "a" }, { name: "" }], labels: [] },
    });
    assert.equal(result.success, false);
    const error = result.error!;
    assert.ok(error instanceof ValidationError);
    assert.deepEqual(error.issues.map((i) => i.path), [
      "metadata.labels[app.kubernetes.io/name]",
      "spec.replicas",
      "spec.mode",
      "spec.items[1].name",
      "spec.labels",
    ]);
    assert.match(error.message, /^Example default\/demo is invalid: /);
    assert.match(error.message, /spec\.replicas: Too small: expected number to be >=0/);
    assert.throws(() => Example.parse({ ...valid, spec: { replicas: -1 } }), ValidationError);
  });

  it("checks apiVersion, kind and the presence of spec", () => {
    const result = Example.safeParse({ apiVersion: "example.com/v1", kind: "Other" });
    assert.ok(!result.success);
    assert.deepEqual(result.error.issues.map((i) => i.path), ["apiVersion", "kind", "spec"]);
    assert.match(result.error.message, /^Example is invalid/);
    const notAnObject = Example.safeParse("nope");
    assert.ok(!notAnObject.success);
    assert.equal(notAnObject.error.issues[0].path, "");
    // A spec whose schema is optional may be left out.
    assert.ok(Bare.safeParse({ apiVersion: "example.com/v1", kind: "Bare" }).success);
  });

  it("checks the status when there is one", () => {
    const result = Example.safeParse({
      ...valid,
      status: {
        phase: "Done",
        conditions: [{ type: "Ready", status: "Maybe", reason: "", message: "" }],
      },
    });
    assert.ok(!result.success);
    assert.deepEqual(result.error.issues.map((i) => i.path), [
      "status.phase",
      "status.conditions[0].status",
      "status.conditions[0].lastTransitionTime",
      "status.conditions[0].reason", // empty: too short,
      "status.conditions[0].reason", // and not CamelCase
    ]);
  });

  it("formats field paths as the API server does", () => {
    assert.equal(formatFieldPath(["spec", "items", 0, "name"]), "spec.items[0].name");
    assert.equal(formatFieldPath(["metadata", "labels", "a/b"]), "metadata.labels[a/b]");
    assert.equal(formatFieldPath([]), "");
    assert.equal(formatFieldPath([0]), "[0]");
  });
});

const config: KubeConfig = {
  server: "https://api.test:6443",
  namespace: "default",
  auth: { credentials: () => Promise.resolve({}) },
  source: "unit test",
};

/** A transport that records requests and answers each with the body it was sent. */
function echoTransport() {
  const seen: { method: string; path: string }[] = [];
  const transport: Transport = {
    config,
    async fetch(path, init = {}) {
      seen.push({ method: init.method ?? "GET", path });
      const body = typeof init.body === "string" ? init.body : "{}";
      return await Promise.resolve(
        new Response(body, { status: 200, headers: { "content-type": "application/json" } }),
      );
    },
    close() {},
  };
  return { transport, seen };
}

describe("a client that validates writes", () => {
  const invalid = { ...valid, spec: { replicas: -2, items: [{ name: "" }] } };

  it("rejects an invalid object before sending it, with the API server's kind of error", async () => {
    const { transport, seen } = echoTransport();
    const client = newClient(config, { transport, types: [Example], validate: true });
    const err = await client.create(invalid).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${err}`);
    assert.ok(isInvalid(err));
    assert.equal(err.code, 422);
    assert.deepEqual(err.details?.causes?.map((c) => c.field), [
      "spec.replicas",
      "spec.items[0].name",
    ]);
    assert.match(err.message, /Example\.example\.com "demo" is invalid: spec\.replicas: /);
    assert.ok(err.cause instanceof ValidationError);
    await assert.rejects(client.update(invalid), isInvalid);
    await assert.rejects(client.status().update(invalid), isInvalid);
    assert.deepEqual(seen, []);
  });

  it("sends valid objects, and objects of kinds without a schema, unchanged", async () => {
    const { transport, seen } = echoTransport();
    const client = newClient(config, { transport, types: [Example], validate: true });
    const created = await client.create(valid);
    assert.deepEqual((created as { spec: unknown }).spec, valid.spec);
    await client.update(valid);
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "default" },
      data: { a: "b" },
    });
    assert.deepEqual(seen.map((s) => `${s.method} ${s.path}`), [
      "POST /apis/example.com/v1alpha1/namespaces/default/examples",
      "PUT /apis/example.com/v1alpha1/namespaces/default/examples/demo",
      "POST /api/v1/namespaces/default/configmaps",
    ]);
  });

  it("leaves validation to the API server unless asked", async () => {
    const { transport, seen } = echoTransport();
    const client = newClient(config, { transport, types: [Example] });
    await client.create(invalid);
    assert.equal(seen.length, 1);
  });
});

describe("shared metadata fragments", () => {
  it("accepts the conditions setStatusCondition writes, and refuses malformed ones", () => {
    const conditions: z.output<typeof conditionsSchema> = [];
    setStatusCondition(conditions, { type: "Ready", status: "True", reason: "Reconciled" });
    setStatusCondition(conditions, {
      type: "example.com/Degraded",
      status: "False",
      reason: "AsExpected",
      message: "fine",
      observedGeneration: 3,
    });
    assert.deepEqual(conditionsSchema.parse(conditions), conditions);
    const bad = (change: Record<string, unknown>) =>
      conditionSchema.safeParse({ ...conditions[0], ...change }).success;
    assert.equal(bad({}), true);
    assert.equal(bad({ reason: "not a reason" }), false);
    assert.equal(bad({ status: "Yes" }), false);
    assert.equal(bad({ type: "-bad" }), false);
    assert.equal(bad({ lastTransitionTime: "yesterday" }), false);
    assert.equal(bad({ observedGeneration: -1 }), false);
  });

  it("checks label selectors and phases, and keeps unknown metadata fields", () => {
    assert.ok(labelSelectorSchema.safeParse({ matchLabels: { app: "web" } }).success);
    assert.ok(
      labelSelectorSchema.safeParse({
        matchExpressions: [{ key: "tier", operator: "In", values: ["a"] }],
      }).success,
    );
    assert.ok(
      !labelSelectorSchema.safeParse({ matchExpressions: [{ key: "t", operator: "Is" }] }).success,
    );
    assert.equal(phaseSchema(["A", "B"]).safeParse("C").success, false);
    assert.throws(() => phaseSchema(["A", ""]), /no empty one/);
    const meta = objectMetaSchema.parse({ name: "a", managedFields: [{ manager: "m" }] });
    assert.deepEqual(meta, { name: "a", managedFields: [{ manager: "m" }] });
  });
});

// Keeps KubeObject imported for the type checks above that widen to it.
const _widened: KubeObject = Example.parse(valid);
