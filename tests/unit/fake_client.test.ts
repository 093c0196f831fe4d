// The FakeClient: the client contract first (the same scenarios the real client passes against
// kube-apiserver), then what only a fake does: failure injection through the interceptor,
// initial objects, unknown kinds,
// isolation of the objects it hands out, its clock.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { isNoKindMatch, NoKindMatchError } from "../../lib/api/discovery.ts";
import { type KubeObject, resourceType } from "../../lib/api/resource.ts";
import { type Client } from "../../lib/client/client.ts";
import { newInterceptedClient } from "../../lib/client/interceptor.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import { namespacedClient, withFieldOwner } from "../../lib/client/wrappers.ts";
import { ApiError, isConflict, isNotFound } from "../../lib/kube/errors.ts";
import { ConfigMap, Deployment, Namespace } from "../../lib/api/mod.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import { clientContract } from "../contract/client_contract.ts";

clientContract("FakeClient", () =>
  Promise.resolve({
    client: new FakeClient(),
    namespace: "contract",
    teardown: () => Promise.resolve(),
  }));

function configMap(name: string, data: Record<string, string> = {}): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name }, data };
}

interface Widget extends KubeObject {
  apiVersion: "example.com/v1";
  kind: "Widget";
  spec?: { size?: number; color?: string; replicas?: number };
  status?: { replicas?: number; selector?: string };
}

const Widget = resourceType<Widget>({
  group: "example.com",
  version: "v1",
  kind: "Widget",
  scope: "Namespaced",
  subresources: ["status", "scale"],
});

function widget(name: string, spec: Widget["spec"] = {}): Widget {
  return {
    apiVersion: "example.com/v1",
    kind: "Widget",
    metadata: { namespace: "default", name },
    spec,
  };
}

describe("FakeClient wrapped by newInterceptedClient", () => {
  it(
    "injects an error into one call, then delegates to the fake",
    { timeout: 10_000 },
    async () => {
      let updates = 0;
      const fake = new FakeClient({ objects: [configMap("settings", { mode: "slow" })] });
      const client = newInterceptedClient(fake, {
        update: async (inner, obj, options) => {
          updates++;
          if (updates === 1) {
            throw new ApiError({ code: 409, reason: "Conflict", message: "injected" });
          }
          return await inner.update(obj, options);
        },
      });
      const settings = await client.get(ConfigMap, { namespace: "default", name: "settings" });
      await assert.rejects(client.update({ ...settings, data: { mode: "fast" } }), isConflict);
      const updated = await client.update({ ...settings, data: { mode: "fast" } });
      assert.deepEqual(updated.data, { mode: "fast" });
      assert.equal(updates, 2);
      const got = await client.get(ConfigMap, { namespace: "default", name: "settings" });
      assert.deepEqual(got.data, { mode: "fast" });
    },
  );

  it("may change arguments and results, and sees every verb", { timeout: 10_000 }, async () => {
    const calls: string[] = [];
    const record = (verb: string) => calls.push(verb);
    const client = newInterceptedClient(new FakeClient(), {
      create: async (inner, obj, options) => {
        record("create");
        const labelled = { ...obj, metadata: { ...obj.metadata, labels: { seen: "yes" } } };
        return await inner.create(labelled, options);
      },
      get: async (inner, type, key, options) => {
        record("get");
        return await inner.get(type, key, options);
      },
      list: async (inner, type, options) => {
        record("list");
        return await inner.list(type, options);
      },
      patch: async (inner, obj, patch, options) => {
        record("patch");
        return await inner.patch(obj, patch, options);
      },
      apply: async (inner, obj, options) => {
        record("apply");
        return await inner.apply(obj, options);
      },
      delete: async (inner, obj, options) => {
        record("delete");
        await inner.delete(obj, options);
      },
      deleteAllOf: async (inner, type, options) => {
        record("deleteAllOf");
        await inner.deleteAllOf(type, options);
      },
    });
    const created = await client.create(configMap("a"));
    assert.deepEqual(created.metadata?.labels, { seen: "yes" });
    await client.get(ConfigMap, { namespace: "default", name: "a" });
    const changed = { ...created, data: { k: "v" } };
    await client.patch(changed, mergeFrom(created));
    await client.apply(configMap("b", { x: "1" }), { fieldManager: "test" });
    const names: string[] = [];
    for await (const item of client.listAll(ConfigMap, { namespace: "default", pageSize: 1 })) {
      names.push(item.metadata!.name!);
    }
    assert.deepEqual(names, ["a", "b"]);
    await client.delete(created);
    await client.deleteAllOf(ConfigMap, { namespace: "default" });
    assert.deepEqual(calls, [
      "create",
      "get",
      "patch",
      "apply",
      "list",
      "list",
      "delete",
      "deleteAllOf",
    ]);
    assert.equal((await client.list(ConfigMap, { namespace: "default" })).items.length, 0);
  });

  it("stands in for subresource calls, naming the subresource", { timeout: 10_000 }, async () => {
    const seen: string[] = [];
    const fake = new FakeClient({
      objects: [{
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { namespace: "default", name: "web" },
        spec: { replicas: 1, selector: { matchLabels: { app: "web" } }, template: {} },
      } as Deployment],
    });
    const client = newInterceptedClient(fake, {
      subResourceUpdate: async (inner, subResource, obj, options) => {
        seen.push(`update ${subResource}`);
        if (subResource === "status") {
          throw new ApiError({ code: 500, reason: "InternalError", message: "etcd is down" });
        }
        return await inner.subResource(subResource).update(obj, options);
      },
      subResourceGet: async (inner, subResource, obj, options) => {
        seen.push(`get ${subResource}`);
        return await inner.subResource(subResource).get(obj, options);
      },
      subResourcePatch: async (inner, subResource, obj, patch, options) => {
        seen.push(`patch ${subResource}`);
        return await inner.subResource(subResource).patch(obj, patch, options);
      },
    });
    const web = await client.get(Deployment, { namespace: "default", name: "web" });
    await assert.rejects(
      client.status().update({ ...web, status: { replicas: 1 } }),
      (err: unknown) => err instanceof ApiError && err.code === 500,
    );
    const scale = await client.subResource("scale").get<{ spec: { replicas: number } }>(web);
    assert.equal(scale.spec.replicas, 1);
    await client.subResource("scale").update(web, {
      body: { apiVersion: "autoscaling/v1", kind: "Scale", spec: { replicas: 3 } } as KubeObject,
    });
    const changed = structuredClone(web);
    changed.status = { replicas: 3 };
    await client.status().patch(changed, mergeFrom(web));
    assert.deepEqual(seen, ["update status", "get scale", "update scale", "patch status"]);
    const after = await client.get(Deployment, { namespace: "default", name: "web" });
    assert.equal(after.spec?.replicas, 3);
    assert.equal(after.status?.replicas, 3);
  });
});

describe("FakeClient initial objects", () => {
  it("are stored as given, with a resourceVersion filled in when missing", async () => {
    const given = configMap("given", { k: "v" });
    given.metadata!.uid = "uid-1";
    const versioned = configMap("versioned");
    versioned.metadata!.resourceVersion = "41";
    const client = new FakeClient({ objects: [given, versioned] });
    const got = await client.get(ConfigMap, { namespace: "default", name: "given" });
    assert.deepEqual(got.data, { k: "v" });
    assert.equal(got.metadata?.uid, "uid-1");
    assert.match(got.metadata?.resourceVersion ?? "", /^\d+$/);
    const kept = await client.get(ConfigMap, { namespace: "default", name: "versioned" });
    assert.equal(kept.metadata?.resourceVersion, "41");
    // The given resourceVersion works for an update, and later ones are not reused.
    const updated = await client.update({ ...kept, data: { a: "1" } });
    assert.ok(Number(updated.metadata?.resourceVersion) > 41);
  });

  it("keep their status, which a create would drop", async () => {
    const client = new FakeClient({
      objects: [{
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { namespace: "default", name: "web", generation: 4 },
        status: { readyReplicas: 2, observedGeneration: 4 },
      } as Deployment],
    });
    const web = await client.get(Deployment, { namespace: "default", name: "web" });
    assert.equal(web.status?.readyReplicas, 2);
    assert.equal(web.metadata?.generation, 4);
  });

  it("are owned by before-first-apply, so an apply changing them conflicts", async () => {
    const client = new FakeClient({ objects: [configMap("seeded", { mode: "slow" })] });
    await assert.rejects(
      client.apply(configMap("seeded", { mode: "fast" }), { fieldManager: "mine" }),
      (err: unknown) => isConflict(err) && /before-first-apply/.test((err as Error).message),
    );
    const forced = await client.apply(configMap("seeded", { mode: "fast" }), {
      fieldManager: "mine",
      force: true,
    });
    assert.deepEqual(forced.data, { mode: "fast" });
  });

  it("must name a known kind, a name and (for namespaced kinds) a namespace", () => {
    assert.throws(
      () => new FakeClient({ objects: [{ ...widget("w") }] }),
      (err: unknown) => err instanceof NoKindMatchError && err.kind === "Widget",
    );
    assert.throws(
      () =>
        new FakeClient({
          objects: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "x" } }],
        }),
      /namespace is required/,
    );
    assert.throws(
      () =>
        new FakeClient({
          objects: [{ apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "a" } }],
        }),
      /metadata.name is required/,
    );
    assert.throws(
      () => new FakeClient({ objects: [configMap("twice"), configMap("twice")] }),
      /twice/,
    );
  });

  it("may include CRDs, whose kinds are then known", async () => {
    const client = new FakeClient({
      objects: [widget("w", { size: 1 }), {
        apiVersion: "apiextensions.k8s.io/v1",
        kind: "CustomResourceDefinition",
        metadata: { name: "widgets.example.com" },
        spec: {
          group: "example.com",
          scope: "Namespaced",
          names: { plural: "widgets", kind: "Widget" },
          versions: [{ name: "v1", served: true, storage: true }],
        },
      } as KubeObject],
    });
    const w = await client.get({ apiVersion: "example.com/v1", kind: "Widget" }, {
      namespace: "default",
      name: "w",
    });
    assert.deepEqual(w.spec, { size: 1 });
  });
});

describe("FakeClient kinds", () => {
  it("refuses kinds it does not know with NoKindMatchError, as the real client does", async () => {
    const client = new FakeClient();
    await assert.rejects(client.create(widget("w")), isNoKindMatch);
    await assert.rejects(
      client.get({ apiVersion: "example.com/v1", kind: "Widget" }, {
        namespace: "default",
        name: "w",
      }),
      isNoKindMatch,
    );
    await assert.rejects(
      client.list({ apiVersion: "example.com/v1", kind: "Widget" }),
      isNoKindMatch,
    );
    await assert.rejects(
      client.mapper.resourceTypeFor({ apiVersion: "example.com/v1", kind: "Widget" }),
      isNoKindMatch,
    );
  });

  it("knows the types it is given: generation, status subresource and a conventional scale", async () => {
    const client = new FakeClient({ types: [Widget] });
    assert.equal(await client.mapper.resourceTypeFor(Widget), Widget);
    const created = await client.create({
      ...widget("w", { replicas: 2 }),
      status: { replicas: 5 },
    });
    assert.equal(created.metadata?.generation, 1);
    assert.equal(created.status, undefined);
    // Custom resources need a resourceVersion to be updated.
    await assert.rejects(
      client.update(widget("w", { replicas: 3 })),
      (err: unknown) => err instanceof ApiError && err.code === 422,
    );
    const withStatus = await client.status().update({
      ...created,
      status: { replicas: 2, selector: "app=w" },
    });
    assert.equal(withStatus.metadata?.generation, 1);
    const scale = await client.subResource("scale").get<
      { spec?: { replicas?: number }; status?: { replicas?: number; selector?: string } }
    >(created);
    assert.deepEqual(scale.spec, { replicas: 2 });
    assert.deepEqual(scale.status, { replicas: 2, selector: "app=w" });
    const scaled = await client.subResource("scale").update(created, {
      body: { apiVersion: "autoscaling/v1", kind: "Scale", spec: { replicas: 6 } } as KubeObject,
    });
    assert.equal((scaled as { spec?: { replicas?: number } }).spec?.replicas, 6);
    const got = await client.get(Widget, { namespace: "default", name: "w" });
    assert.equal(got.spec?.replicas, 6);
    assert.equal(got.metadata?.generation, 2);
  });

  it("lets field selectors use the selectable fields it is told about", async () => {
    const client = new FakeClient({
      types: [Widget],
      selectableFields: [{ type: Widget, fields: ["spec.color"] }],
    });
    await client.create(widget("red", { color: "red" }));
    await client.create(widget("blue", { color: "blue" }));
    const red = await client.list(Widget, {
      namespace: "default",
      fieldSelector: { "spec.color": "red" },
    });
    assert.deepEqual(red.items.map((w) => w.metadata?.name), ["red"]);
    await assert.rejects(
      client.list(Widget, { fieldSelector: "spec.size=1" }),
      (err: unknown) => err instanceof ApiError && err.code === 400,
    );
  });

  it("forgets a CRD's objects when the CRD is deleted", async () => {
    const crd = {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: { name: "widgets.example.com" },
      spec: {
        group: "example.com",
        scope: "Namespaced",
        names: { plural: "widgets", kind: "Widget" },
        versions: [{ name: "v1", served: true, storage: true }],
      },
    } as KubeObject;
    const client = new FakeClient();
    const created = await client.create(crd);
    const established =
      (created as { status?: { conditions?: { type: string; status: string }[] } })
        .status?.conditions?.find((c) => c.type === "Established");
    assert.equal(established?.status, "True");
    await client.create(widget("w"));
    await client.delete(crd);
    assert.equal((await client.list(Widget, { namespace: "default" })).items.length, 0);
  });
});

describe("FakeClient isolation", () => {
  it("hands out copies: changing a returned or given object never changes the store", async () => {
    const seed = configMap("seed", { k: "v" });
    const client = new FakeClient({ objects: [seed] });
    seed.data!.k = "changed after construction";
    const input = configMap("input", { k: "v" });
    const created = await client.create(input);
    input.data!.k = "changed after create";
    created.data!.k = "changed the result";
    const got = await client.get(ConfigMap, { namespace: "default", name: "seed" });
    got.data!.k = "changed a read";
    const listed = await client.list(ConfigMap, { namespace: "default" });
    listed.items[0].metadata!.labels = { changed: "yes" };
    assert.deepEqual((await client.get(ConfigMap, { namespace: "default", name: "seed" })).data, {
      k: "v",
    });
    assert.deepEqual((await client.get(ConfigMap, { namespace: "default", name: "input" })).data, {
      k: "v",
    });
    const again = await client.list(ConfigMap, { namespace: "default" });
    assert.equal(again.items[0].metadata?.labels, undefined);
  });

  it("keeps separate fakes apart", async () => {
    const one = new FakeClient();
    const two = new FakeClient();
    await one.create(configMap("only-in-one"));
    await assert.rejects(
      two.get(ConfigMap, { namespace: "default", name: "only-in-one" }),
      isNotFound,
    );
  });
});

describe("FakeClient details", () => {
  it("takes timestamps from its clock", async () => {
    let now = new Date("2030-01-02T03:04:05.678Z");
    const client = new FakeClient({ clock: () => now });
    const created = await client.create<ConfigMap>({
      ...configMap("timed"),
      metadata: { namespace: "default", name: "timed", finalizers: ["example.com/hold"] },
    });
    assert.equal(created.metadata?.creationTimestamp, "2030-01-02T03:04:05Z");
    now = new Date("2030-01-02T04:00:00Z");
    await client.delete(created);
    const deleting = await client.get(ConfigMap, { namespace: "default", name: "timed" });
    assert.equal(deleting.metadata?.deletionTimestamp, "2030-01-02T04:00:00Z");
  });

  it("counts resourceVersions globally, and a list reports the latest", async () => {
    const client = new FakeClient();
    const a = await client.create(configMap("a"));
    const b = await client.create(configMap("b"));
    assert.ok(Number(b.metadata?.resourceVersion) > Number(a.metadata?.resourceVersion));
    const list = await client.list(ConfigMap);
    assert.equal(list.metadata.resourceVersion, b.metadata?.resourceVersion);
  });

  it("labels a Namespace with its name and marks it Active, as the API server does", async () => {
    const client = new FakeClient();
    const ns = await client.create<Namespace>({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "team" },
    });
    assert.equal(ns.metadata?.labels?.["kubernetes.io/metadata.name"], "team");
    assert.equal(ns.status?.phase, "Active");
    assert.equal(ns.metadata?.namespace, undefined);
  });

  it("works under the client wrappers", async () => {
    const fake = new FakeClient();
    const client: Client = namespacedClient(withFieldOwner(fake, "owner"), "default");
    const created = await client.create(
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "w" } } as ConfigMap,
    );
    assert.equal(created.metadata?.namespace, "default");
    await client.apply(
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "w" },
        data: { a: "1" },
      } as ConfigMap,
      { fieldManager: "owner" },
    );
    // The wrapper's field owner made the create; its own apply of new fields does not conflict.
    const got = await fake.get(ConfigMap, { namespace: "default", name: "w" });
    assert.deepEqual(got.data, { a: "1" });
  });

  it("server-side apply keeps a list it alone owns exactly as applied", async () => {
    const client = new FakeClient();
    const base = (finalizers: string[]) => ({
      ...configMap("listed"),
      metadata: { namespace: "default", name: "listed", finalizers },
    });
    await client.apply(base(["example.com/a", "example.com/b"]), { fieldManager: "mine" });
    const shrunk = await client.apply(base(["example.com/a"]), { fieldManager: "mine" });
    assert.deepEqual(shrunk.metadata?.finalizers, ["example.com/a"]);
  });
});
