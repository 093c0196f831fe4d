// FakeClient and the structural schema of custom resources: what the contract suite does not
// reach (types given to the constructor, seeds, ratcheting, list types, formats, apply, CRDs
// written by hand). The messages are those kube-apiserver 1.36 sends for the same objects.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { defineResource, listType, type ObjectOf } from "../../lib/api/mod.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import { ApiError, isInvalid, type StatusCause } from "../../lib/kube/errors.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";

const Website = defineResource({
  group: "tutorial.rudder.dev",
  version: "v1",
  kind: "Website",
  scope: "Namespaced",
  spec: z.object({
    image: z.string(),
    replicas: z.int().min(1).default(2),
    hosts: listType(z.array(z.string()), "set").optional(),
    routes: listType(
      z.array(z.object({ path: z.string(), backend: z.string().default("web") })),
      "map",
      ["path"],
    ).optional(),
    owner: z.uuid().optional(),
    since: z.iso.date().optional(),
  }),
  status: z.object({ url: z.string().optional() }),
});
type Website = ObjectOf<typeof Website>;

const key = { namespace: "default", name: "site" };

function site(spec: unknown, name = key.name): Website {
  return {
    apiVersion: "tutorial.rudder.dev/v1",
    kind: "Website",
    metadata: { namespace: "default", name },
    spec,
  } as Website;
}

async function causesOf(promise: Promise<unknown>): Promise<StatusCause[]> {
  let caught: unknown;
  await assert.rejects(promise, (err: unknown) => {
    caught = err;
    return true;
  });
  assert.ok(caught instanceof ApiError && isInvalid(caught), String(caught));
  return caught.details?.causes ?? [];
}

describe("FakeClient with a type made by defineResource", () => {
  it("refuses a Website without a required field, as the API server does", async () => {
    const client = new FakeClient({ types: [Website] });
    let caught: unknown;
    await assert.rejects(client.create(site({ replicas: 3 })), (err: unknown) => {
      caught = err;
      return true;
    });
    assert.ok(caught instanceof ApiError);
    assert.equal(caught.code, 422);
    assert.equal(
      caught.message,
      "POST /apis/tutorial.rudder.dev/v1/namespaces/default/websites: " +
        'Website.tutorial.rudder.dev "site" is invalid: spec.image: Required value (422 Invalid)',
    );
    assert.deepEqual(caught.details, {
      name: "site",
      group: "tutorial.rudder.dev",
      kind: "Website",
      causes: [{ reason: "FieldValueRequired", message: "Required value", field: "spec.image" }],
    });
  });

  it("fills the schema's defaults on create, also in list items", async () => {
    const client = new FakeClient({ types: [Website] });
    const created = await client.create(site({ image: "nginx", routes: [{ path: "/" }] }));
    assert.deepEqual(created.spec, {
      image: "nginx",
      replicas: 2,
      routes: [{ path: "/", backend: "web" }],
    });
  });

  it("defaults and prunes initial objects but does not validate them", async () => {
    const client = new FakeClient({
      types: [Website],
      objects: [site({ bogus: true, routes: [{ path: "/" }] })],
    });
    const seeded = await client.get(Website, key);
    assert.deepEqual(seeded.spec, { replicas: 2, routes: [{ path: "/", backend: "web" }] });
    // Ratcheting: writes that leave the invalid spec as it was are accepted, as on a server.
    const labelled = structuredClone(seeded);
    labelled.metadata!.labels = { a: "b" };
    const patched = await client.patch(labelled, mergeFrom(seeded));
    const withStatus = await client.status().update({ ...patched, status: { url: "http://x" } });
    assert.equal(withStatus.status?.url, "http://x");
    // A change of the spec is checked, and the missing image is reported again.
    const causes = await causesOf(
      client.update({ ...withStatus, spec: { ...withStatus.spec, replicas: 0 } }),
    );
    assert.deepEqual(causes.map((c) => c.field).sort(), ["spec.image", "spec.replicas"]);
  });

  it("ratchets by field: an unchanged invalid field passes while another changes", async () => {
    const client = new FakeClient({
      types: [Website],
      objects: [site({ image: "a", replicas: 0 })],
    });
    const stored = await client.get(Website, key);
    const updated = await client.update({ ...stored, spec: { ...stored.spec, image: "b" } });
    assert.equal(updated.spec.image, "b");
    assert.equal(updated.spec.replicas, 0);
  });

  it("refuses duplicates in list-type sets and maps", async () => {
    const client = new FakeClient({ types: [Website] });
    const causes = await causesOf(client.create(site({
      image: "a",
      hosts: ["a.example", "b.example", "a.example"],
      routes: [{ path: "/" }, { path: "/", backend: "api" }],
    })));
    assert.deepEqual(causes, [
      {
        reason: "FieldValueDuplicate",
        message: 'Duplicate value: "a.example"',
        field: "spec.hosts[2]",
      },
      {
        reason: "FieldValueDuplicate",
        message: 'Duplicate value: {"path":"/"}',
        field: "spec.routes[1]",
      },
    ]);
  });

  it("lets duplicates stored before stay while other fields change, as the server does", async () => {
    const client = new FakeClient({
      types: [Website],
      objects: [site({ image: "a", hosts: ["x", "x"] })],
    });
    const stored = await client.get(Website, key);
    const updated = await client.update({ ...stored, spec: { ...stored.spec, image: "b" } });
    assert.deepEqual(updated.spec.hosts, ["x", "x"]);
  });

  it("checks the common string formats", async () => {
    const client = new FakeClient({ types: [Website] });
    const causes = await causesOf(
      client.create(site({ image: "a", owner: "nope", since: "2024-02-30" })),
    );
    assert.deepEqual(causes, [
      {
        reason: "FieldValueTypeInvalid",
        message: 'Invalid value: "nope": spec.owner in body must be of type uuid: "nope"',
        field: "spec.owner",
      },
      {
        reason: "FieldValueTypeInvalid",
        message:
          'Invalid value: "2024-02-30": spec.since in body must be of type date: "2024-02-30"',
        field: "spec.since",
      },
    ]);
    await client.create(site({
      image: "a",
      owner: "0b7a2c1e-4c3d-4e5f-8a9b-0c1d2e3f4a5b",
      since: "2024-02-29",
    }));
  });

  it("server-side apply defaults and validates like the other writes", async () => {
    const client = new FakeClient({ types: [Website] });
    const applied = await client.apply(site({ image: "a" }), { fieldManager: "test" });
    assert.equal(applied.spec.replicas, 2);
    const causes = await causesOf(
      client.apply(site({ image: "a", replicas: 0 }), { fieldManager: "test" }),
    );
    assert.deepEqual(causes.map((c) => [c.field, c.reason]), [[
      "spec.replicas",
      "FieldValueInvalid",
    ]]);
  });

  it("leaves kinds without a schema alone", async () => {
    const client = new FakeClient({
      objects: [{
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: "loose.example.com" },
        spec: {
          group: "example.com",
          scope: "Namespaced",
          names: { plural: "loose", singular: "loose", kind: "Loose", listKind: "LooseList" },
          versions: [{ name: "v1", served: true, storage: true }],
        },
      }],
    });
    const created = await client.create({
      apiVersion: "example.com/v1",
      kind: "Loose",
      metadata: { namespace: "default", name: "x" },
      spec: { anything: [1, null] },
    });
    assert.deepEqual((created as { spec?: unknown }).spec, { anything: [1, null] });
  });
});
