// The client contract, continued: custom resources are defaulted, pruned and validated by the
// structural schema `defineResource` generates for their CRD, with the API server's errors.
// Part of `clientContract`, so it runs against kube-apiserver and against the FakeClient.
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import {
  CustomResourceDefinition,
  defineResource,
  intOrString,
  type ObjectOf,
} from "../../lib/api/mod.ts";
import { type KubeObject, resourceType } from "../../lib/api/resource.ts";
import type { Client } from "../../lib/client/client.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import {
  ApiError,
  ignoreAlreadyExists,
  isInvalid,
  isNotFound,
  type StatusCause,
} from "../../lib/kube/errors.ts";

const Sprocket = defineResource({
  group: "contract.rudder.dev",
  version: "v1",
  kind: "Sprocket",
  scope: "Namespaced",
  spec: z.object({
    image: z.string().min(1).max(20),
    replicas: z.int().min(0).max(10).default(1),
    mode: z.enum(["fast", "safe"]).default("safe"),
    tag: z.string().regex(/^v[0-9]+$/).optional(),
    ports: z.array(z.object({
      name: z.string(),
      port: z.int().min(1).max(65535),
      protocol: z.enum(["TCP", "UDP"]).default("TCP"),
    })).max(2).optional(),
    tuning: z.object({ level: z.string().default("normal"), extra: z.int().optional() })
      .prefault({}),
    maxUnavailable: intOrString().optional(),
    settings: z.unknown().optional(),
  }),
  status: z.object({ phase: z.enum(["Pending", "Ready"]).optional() }),
});
type Sprocket = ObjectOf<typeof Sprocket>;

/** A kind whose CRD a scenario tightens after objects exist. */
interface Gear extends KubeObject {
  spec?: { teeth?: number; name?: string; size?: number; color?: string };
  status?: { phase?: string };
}

const Gear = resourceType<Gear>({
  group: "contract.rudder.dev",
  version: "v1",
  kind: "Gear",
  scope: "Namespaced",
  subresources: ["status"],
});

const gearCRD: CustomResourceDefinition = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "gears.contract.rudder.dev" },
  spec: {
    group: "contract.rudder.dev",
    scope: "Namespaced",
    names: { plural: "gears", singular: "gear", kind: "Gear", listKind: "GearList" },
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: {
        openAPIV3Schema: {
          type: "object",
          properties: {
            spec: {
              type: "object",
              properties: { teeth: { type: "integer" }, name: { type: "string" } },
            },
            status: { type: "object", properties: { phase: { type: "string" } } },
          },
        },
      },
    }],
  },
};

/** The Gear schema made stricter: `size` required, at most 10 teeth, a defaulted colour. */
const tighterGearSpec = {
  type: "object",
  required: ["size"],
  properties: {
    teeth: { type: "integer", maximum: 10 },
    name: { type: "string" },
    size: { type: "integer" },
    color: { type: "string", default: "red" },
  },
};

/** Causes sorted by field and reason: the API server lists them in no fixed order. */
function sorted(causes: readonly StatusCause[] | undefined): StatusCause[] {
  return [...(causes ?? [])].sort((a, b) =>
    `${a.field} ${a.reason} ${a.message}`.localeCompare(`${b.field} ${b.reason} ${b.message}`)
  );
}

async function invalid(promise: Promise<unknown>): Promise<ApiError> {
  let caught: unknown;
  await assert.rejects(promise, (err: unknown) => {
    caught = err;
    return true;
  });
  assert.ok(caught instanceof ApiError, `expected an ApiError, got ${caught}`);
  assert.ok(isInvalid(caught), caught.message);
  assert.equal(caught.code, 422);
  return caught;
}

/**
 * Declares the schema scenarios; `context` gives the client and namespace once the contract's
 * own `before` has run, `unique` a name no other scenario uses.
 */
export function schemaContract(
  context: () => { client: Client; namespace: string },
  unique: (prefix: string) => string,
): void {
  describe("custom resources and their schema", () => {
    let client: Client;
    let namespace: string;

    before(async () => {
      ({ client, namespace } = context());
      await client.create(Sprocket.crd()).catch(ignoreAlreadyExists);
      // A real API server serves the kind a moment after the CRD is created.
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          await client.list(Sprocket, { namespace });
          break;
        } catch (err) {
          if (!isNotFound(err) || Date.now() > deadline) throw err;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    });

    const sprocket = (name: string, spec: unknown): Sprocket =>
      ({
        apiVersion: "contract.rudder.dev/v1",
        kind: "Sprocket",
        metadata: { name, namespace },
        spec,
      }) as Sprocket;

    it("create without a required field fails with Invalid naming the field", async () => {
      const name = unique("sprocket-required");
      const err = await invalid(client.create(sprocket(name, { replicas: 2 })));
      assert.deepEqual(err.details?.name, name);
      assert.equal(err.details?.group, "contract.rudder.dev");
      assert.equal(err.details?.kind, "Sprocket");
      assert.deepEqual(err.details?.causes, [
        { reason: "FieldValueRequired", message: "Required value", field: "spec.image" },
      ]);
      assert.equal(
        err.status?.message,
        `Sprocket.contract.rudder.dev "${name}" is invalid: spec.image: Required value`,
      );
      const noSpec = await invalid(client.create(sprocket(unique("sprocket-nospec"), undefined)));
      assert.deepEqual(noSpec.details?.causes?.map((c) => [c.field, c.reason]), [
        ["spec", "FieldValueRequired"],
      ]);
      await assert.rejects(client.get(Sprocket, { namespace, name }), isNotFound);
    });

    it("create fills the schema's defaults, inside list items and defaulted objects too", async () => {
      const name = unique("sprocket-defaults");
      const created = await client.create(
        sprocket(name, { image: "nginx", ports: [{ name: "http", port: 80 }] }),
      );
      assert.deepEqual(created.spec, {
        image: "nginx",
        replicas: 1,
        mode: "safe",
        ports: [{ name: "http", port: 80, protocol: "TCP" }],
        tuning: { level: "normal" },
      });
      assert.deepEqual(await client.get(Sprocket, { namespace, name }), created);
      const dryRun = await client.create(sprocket(unique("sprocket-dry"), { image: "a" }), {
        dryRun: true,
      });
      assert.equal(dryRun.spec.replicas, 1);
    });

    it("an update that drops a defaulted field gets the default again, without a new generation", async () => {
      const created = await client.create(sprocket(unique("sprocket-redefault"), { image: "a" }));
      const updated = await client.update({ ...created, spec: { image: "a" } as Sprocket["spec"] });
      assert.equal(updated.spec.replicas, 1);
      assert.equal(updated.spec.mode, "safe");
      assert.equal(updated.metadata?.generation, 1);
    });

    it("a wrong type fails with Invalid: FieldValueTypeInvalid on the field", async () => {
      const name = unique("sprocket-type");
      const err = await invalid(client.create(sprocket(name, { image: "a", replicas: "three" })));
      assert.deepEqual(err.details?.causes, [{
        reason: "FieldValueTypeInvalid",
        message: 'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        field: "spec.replicas",
      }]);
      assert.equal(
        err.status?.message,
        `Sprocket.contract.rudder.dev "${name}" is invalid: spec.replicas: Invalid value: ` +
          '"string": spec.replicas in body must be of type integer: "string"',
      );
    });

    it("enum, bounds, lengths, patterns and item counts are checked, each cause as the server gives it", async () => {
      const err = await invalid(client.create(sprocket(unique("sprocket-many"), {
        image: "x".repeat(21),
        replicas: -1,
        mode: "slow",
        tag: "latest",
        ports: [{ port: 0 }, { name: "b", port: 2 }, { name: "c", port: 3 }],
        tuning: { level: 5 },
        maxUnavailable: 1.5,
      })));
      assert.deepEqual(
        sorted(err.details?.causes),
        sorted([
          {
            reason: "FieldValueTooLong",
            message: "Too long: may not be more than 20 bytes",
            field: "spec.image",
          },
          {
            reason: "FieldValueInvalid",
            message:
              "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
            field: "spec.replicas",
          },
          {
            reason: "FieldValueNotSupported",
            message: 'Unsupported value: "slow": supported values: "fast", "safe"',
            field: "spec.mode",
          },
          {
            reason: "FieldValueInvalid",
            message: "Invalid value: \"latest\": spec.tag in body should match '^v[0-9]+$'",
            field: "spec.tag",
          },
          {
            reason: "FieldValueTooMany",
            message: "Too many: 3: must have at most 2 items",
            field: "spec.ports",
          },
          { reason: "FieldValueRequired", message: "Required value", field: "spec.ports[0].name" },
          {
            reason: "FieldValueInvalid",
            message:
              "Invalid value: 0: spec.ports[0].port in body should be greater than or equal to 1",
            field: "spec.ports[0].port",
          },
          {
            reason: "FieldValueTypeInvalid",
            message:
              'Invalid value: "integer": spec.tuning.level in body must be of type string: "integer"',
            field: "spec.tuning.level",
          },
          {
            reason: "FieldValueTypeInvalid",
            message:
              'Invalid value: "number": spec.maxUnavailable in body must be of type integer,string: "number"',
            field: "spec.maxUnavailable",
          },
          {
            reason: "FieldValueInvalid",
            message:
              'Invalid value: "": "spec.maxUnavailable" must validate at least one schema (anyOf)',
            field: "<nil>",
          },
          {
            reason: "FieldValueTypeInvalid",
            message:
              'Invalid value: "number": spec.maxUnavailable in body must be of type integer: "number"',
            field: "spec.maxUnavailable",
          },
          {
            reason: "FieldValueInvalid",
            message: 'Invalid value: "": Checked value must be of type integer (default format) ' +
              "in spec.maxUnavailable",
            field: "<nil>",
          },
        ]),
      );
    });

    it("unknown fields are pruned, not refused; a field that keeps unknown fields keeps them", async () => {
      const name = unique("sprocket-prune");
      const created = await client.create({
        ...sprocket(name, {
          image: "a",
          colour: "red",
          tuning: { level: "high", turbo: true },
          ports: [{ name: "http", port: 80, weight: 3 }],
          settings: { anything: { goes: [1, "two"] } },
        }),
        extra: "dropped",
      } as Sprocket);
      assert.deepEqual(created.spec, {
        image: "a",
        replicas: 1,
        mode: "safe",
        tuning: { level: "high" },
        ports: [{ name: "http", port: 80, protocol: "TCP" }],
        settings: { anything: { goes: [1, "two"] } },
      });
      assert.equal((created as unknown as Record<string, unknown>).extra, undefined);
      const got = await client.get(Sprocket, { namespace, name });
      assert.deepEqual(got.spec, created.spec);
    });

    it("updates and patches are validated too, and null for a non-nullable field is dropped", async () => {
      const created = await client.create(sprocket(unique("sprocket-update"), { image: "a" }));
      const err = await invalid(
        client.update({ ...created, spec: { ...created.spec, replicas: 11 } }),
      );
      assert.deepEqual(err.details?.causes?.map((c) => [c.field, c.reason]), [
        ["spec.replicas", "FieldValueInvalid"],
      ]);
      const changed = structuredClone(created);
      (changed.spec as Record<string, unknown>).mode = "slow";
      const patchErr = await invalid(client.patch(changed, mergeFrom(created)));
      assert.deepEqual(patchErr.details?.causes?.map((c) => [c.field, c.reason]), [
        ["spec.mode", "FieldValueNotSupported"],
      ]);
      const nulled = await client.update({
        ...created,
        spec: { ...created.spec, tag: null, replicas: null } as unknown as Sprocket["spec"],
      });
      assert.equal("tag" in nulled.spec, false);
      assert.equal(nulled.spec.replicas, 1);
    });

    it("server-side apply defaults and validates; a field the schema does not declare fails it", async () => {
      const name = unique("sprocket-apply");
      const applied = await client.apply(sprocket(name, { image: "a" }), {
        fieldManager: "contract",
      });
      assert.equal(applied.spec.replicas, 1);
      const missing = await invalid(
        client.apply(sprocket(unique("sprocket-apply-missing"), { replicas: 2 }), {
          fieldManager: "contract",
        }),
      );
      assert.deepEqual(missing.details?.causes?.map((c) => [c.field, c.reason]), [
        ["spec.image", "FieldValueRequired"],
      ]);
      let caught: unknown;
      await assert.rejects(
        client.apply(sprocket(name, { image: "a", colour: "red" }), { fieldManager: "contract" }),
        (err: unknown) => {
          caught = err;
          return true;
        },
      );
      assert.ok(caught instanceof ApiError);
      assert.equal(caught.code, 500);
      assert.equal(
        caught.status?.message,
        `failed to create typed patch object (${namespace}/${name}; contract.rudder.dev/v1, ` +
          "Kind=Sprocket): .spec.colour: field not declared in schema",
      );
    });

    it("a schema tightened later checks changed values only, and its new defaults show at once", async () => {
      await client.create(gearCRD).catch(ignoreAlreadyExists);
      const gear = (name: string, spec: Gear["spec"]): Gear => ({
        apiVersion: "contract.rudder.dev/v1",
        kind: "Gear",
        metadata: { name, namespace },
        spec,
      });
      const name = unique("gear");
      const deadline = Date.now() + 30_000;
      // A real API server serves the kind a moment after the CRD is created.
      for (;;) {
        try {
          await client.list(Gear, { namespace });
          break;
        } catch (err) {
          if (!isNotFound(err) || Date.now() > deadline) throw err;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      const created = await client.create(gear(name, { teeth: 50, name: "x" }));
      const crd = await client.get(CustomResourceDefinition, { name: gearCRD.metadata!.name! });
      const tighter = structuredClone(crd);
      tighter.spec.versions[0].schema!.openAPIV3Schema!.properties!.spec = tighterGearSpec;
      await client.update(tighter);
      // A real API server takes the new schema a moment after the update.
      for (;;) {
        const taken = await client.create(gear(unique("gear-probe"), { teeth: 50 }), {
          dryRun: true,
        }).then(() => false, (err) => isInvalid(err));
        if (taken) break;
        if (Date.now() > deadline) assert.fail("the tightened Gear schema was never enforced");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }

      const read = await client.get(Gear, { namespace, name });
      assert.deepEqual(read.spec, { teeth: 50, name: "x", color: "red" });
      assert.equal(read.metadata?.resourceVersion, created.metadata?.resourceVersion);
      const labelled = await client.update({
        ...read,
        metadata: { ...read.metadata, labels: { a: "b" } },
      });
      assert.equal(labelled.metadata?.generation, 1);
      const withStatus = await client.status().update({ ...labelled, status: { phase: "Ok" } });
      assert.equal(withStatus.status?.phase, "Ok");
      const renamed = await invalid(
        client.update({ ...withStatus, spec: { ...withStatus.spec, name: "y" } }),
      );
      assert.deepEqual(renamed.details?.causes, [
        { reason: "FieldValueRequired", message: "Required value", field: "spec.size" },
      ]);
      const more = await invalid(
        client.update({ ...withStatus, spec: { ...withStatus.spec, teeth: 60, size: 1 } }),
      );
      assert.deepEqual(more.details?.causes?.map((c) => [c.field, c.reason]), [
        ["spec.teeth", "FieldValueInvalid"],
      ]);
    });

    it("the status subresource validates and prunes status", async () => {
      const created = await client.create(sprocket(unique("sprocket-status"), { image: "a" }));
      const err = await invalid(
        client.status().update({ ...created, status: { phase: "Lost" } } as unknown as Sprocket),
      );
      assert.deepEqual(err.details?.causes, [{
        reason: "FieldValueNotSupported",
        message: 'Unsupported value: "Lost": supported values: "Pending", "Ready"',
        field: "status.phase",
      }]);
      const ready = await client.status().update({
        ...created,
        status: { phase: "Ready", observed: 3 },
      } as unknown as Sprocket);
      assert.deepEqual(ready.status, { phase: "Ready" });
    });
  });
}
