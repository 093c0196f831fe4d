// Which way each call of the cached client goes: reads of cached kinds to the cache (and only
// the options a cache understands), reads of uncached kinds and of bare group-version-kinds to
// the API reader, writes to the API reader and then to the cache's read-your-own-writes
// bookkeeping (only when they answer with the object itself), deletes straight through. The cache
// here is a recording stand-in, so each assertion is about the cached client alone.
import { after, before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Deployment, Secret } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import { deepFreeze } from "../../lib/api/readonly.ts";
import type { Cache, CacheGetOptions, CacheListOptions } from "../../lib/cache/cache.ts";
import { newCachedClient } from "../../lib/cache/cached_client.ts";
import type { ObjectKey, ObjectList, ResourceRef } from "../../lib/client/client.ts";
import { newInterceptedClient } from "../../lib/client/interceptor.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import { FakeClient } from "../../lib/testing/fake_client/client.ts";
import { installTestTracing, spansNamed } from "../support/tracing.ts";
import type { InMemorySpanExporter } from "@opentelemetry/sdk-trace";

const T = { timeout: 30_000 };
const NS = "team";

interface CacheCall {
  verb: "get" | "list";
  kind: string;
  key?: ObjectKey;
  options?: CacheGetOptions | CacheListOptions;
}

/** A cache that answers every read with objects marked as its own, and records everything. */
function recordingCache() {
  const calls: CacheCall[] = [];
  const observed: KubeObject[] = [];
  const fromCache = (kind: string, name: string) =>
    deepFreeze({
      apiVersion: "v1",
      kind,
      metadata: { namespace: NS, name, annotations: { from: "cache" } },
    });
  const unexpected = () => {
    throw new Error("the cached client has no reason to call this");
  };
  const cache: Cache = {
    start: unexpected,
    waitForCacheSync: unexpected,
    unsynced: unexpected,
    health: unexpected,
    getInformer: unexpected,
    indexField: unexpected,
    get: (ref: ResourceRef<KubeObject>, key: ObjectKey, options?: CacheGetOptions) => {
      calls.push({ verb: "get", kind: ref.kind, key, options });
      return Promise.resolve(fromCache(ref.kind, key.name) as never);
    },
    list: (ref: ResourceRef<KubeObject>, options?: CacheListOptions) => {
      calls.push({ verb: "list", kind: ref.kind, options });
      const list: ObjectList<unknown> = {
        apiVersion: "v1",
        kind: `${ref.kind}List`,
        metadata: { resourceVersion: "1" },
        items: [fromCache(ref.kind, "c1"), fromCache(ref.kind, "c2")],
      };
      return Promise.resolve(list as never);
    },
    observeWrite: (obj: KubeObject) => {
      observed.push(obj);
    },
  };
  return { cache, calls, observed };
}

/** A fake API server, with every call it gets recorded as `verb kind [subresource]`. */
function recordingApi(objects: KubeObject[] = []) {
  const calls: string[] = [];
  const listOptions: unknown[] = [];
  const fake = new FakeClient({ objects });
  const api = newInterceptedClient(fake, {
    get: (client, type, key, options) => {
      calls.push(`get ${type.kind}`);
      return client.get(type, key, options);
    },
    list: (client, type, options) => {
      calls.push(`list ${type.kind}`);
      listOptions.push(options);
      return client.list(type, options);
    },
    create: (client, obj, options) => {
      calls.push(`create ${obj.kind}`);
      return client.create(obj, options);
    },
    update: (client, obj, options) => {
      calls.push(`update ${obj.kind}`);
      return client.update(obj, options);
    },
    patch: (client, obj, patch, options) => {
      calls.push(`patch ${obj.kind}`);
      return client.patch(obj, patch, options);
    },
    apply: (client, obj, options) => {
      calls.push(`apply ${obj.kind}`);
      return client.apply(obj, options);
    },
    delete: (client, obj, options) => {
      calls.push(`delete ${obj.kind}`);
      return client.delete(obj, options);
    },
    deleteAllOf: (client, type, options) => {
      calls.push(`deleteAllOf ${type.kind}`);
      return client.deleteAllOf(type, options);
    },
    subResourceGet: (client, sub, obj, options) => {
      calls.push(`get ${obj.kind} ${sub}`);
      return client.subResource(sub).get(obj, options);
    },
    subResourceCreate: (client, sub, obj, body, options) => {
      calls.push(`create ${obj.kind} ${sub}`);
      return client.subResource(sub).create(obj, body, options);
    },
    subResourceUpdate: (client, sub, obj, options) => {
      calls.push(`update ${obj.kind} ${sub}`);
      return client.subResource(sub).update(obj, options);
    },
    subResourcePatch: (client, sub, obj, patch, options) => {
      calls.push(`patch ${obj.kind} ${sub}`);
      return client.subResource(sub).patch(obj, patch, options);
    },
    subResourceApply: (client, sub, obj, options) => {
      calls.push(`apply ${obj.kind} ${sub}`);
      return client.subResource(sub).apply(obj, options);
    },
  });
  return { api, fake, calls, listOptions };
}

function configMap(name: string, data: Record<string, string> = {}): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: NS, name }, data };
}

function secret(name: string): Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { namespace: NS, name },
    stringData: { k: "v" },
  };
}

function web(): Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { namespace: NS, name: "web" },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { containers: [{ name: "web", image: "nginx" }] },
      },
    },
  };
}

const fromCache = (obj: { metadata?: { annotations?: Record<string, string> } }) =>
  obj.metadata?.annotations?.from === "cache";

describe("the cached client's reads", T, () => {
  it("serve a resource type from the cache, passing only the signal to get", async () => {
    const { cache, calls } = recordingCache();
    const { api, calls: apiCalls } = recordingApi([configMap("a")]);
    const client = newCachedClient(cache, api);
    const signal = new AbortController().signal;
    const got = await client.get(ConfigMap, { namespace: NS, name: "a" }, {
      signal,
      resourceVersion: "0",
    });
    assert.ok(fromCache(got));
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].key, { namespace: NS, name: "a" });
    assert.deepEqual(calls[0].options, { signal }, "a cache has no resourceVersion to read at");
    await client.get(ConfigMap, { namespace: NS, name: "a" });
    assert.deepEqual(calls[1].options, { signal: undefined });
    assert.deepEqual(apiCalls, []);
  });

  it("list a resource type from the cache with the caller's options", async () => {
    const { cache, calls } = recordingCache();
    const { api, calls: apiCalls } = recordingApi();
    const client = newCachedClient(cache, api);
    const options = { namespace: NS, labelSelector: "app=web", limit: 5 };
    const list = await client.list(ConfigMap, options);
    assert.deepEqual(list.items.map((i) => i.metadata?.name), ["c1", "c2"]);
    assert.ok(list.items.every(fromCache));
    assert.deepEqual(calls, [{ verb: "list", kind: "ConfigMap", options }]);
    await client.list(ConfigMap);
    assert.deepEqual(calls[1].options, {}, "no options: an empty set, not undefined");
    assert.deepEqual(apiCalls, []);
  });

  it("listAll of a cached kind is one cache list, without the page size", async () => {
    const { cache, calls } = recordingCache();
    const { api, calls: apiCalls } = recordingApi();
    const client = newCachedClient(cache, api);
    const names: string[] = [];
    for await (
      const cm of client.listAll(ConfigMap, {
        namespace: NS,
        labelSelector: "app=web",
        pageSize: 1,
      })
    ) {
      assert.ok(fromCache(cm));
      names.push(cm.metadata?.name ?? "");
    }
    assert.deepEqual(names, ["c1", "c2"], "every object despite a page size of 1");
    assert.deepEqual(calls, [{
      verb: "list",
      kind: "ConfigMap",
      options: { namespace: NS, labelSelector: "app=web" },
    }]);
    for await (const _ of client.listAll(ConfigMap)) break;
    assert.deepEqual(calls[1].options, {});
    assert.deepEqual(apiCalls, []);
  });

  it("read uncached kinds from the API reader, and cached kinds still from the cache", async () => {
    const { cache, calls } = recordingCache();
    const { api, calls: apiCalls, listOptions } = recordingApi([
      secret("s1"),
      secret("s2"),
      secret("s3"),
      configMap("a"),
    ]);
    const client = newCachedClient(cache, api, { uncached: [Secret] });
    const got = await client.get(Secret, { namespace: NS, name: "s1" });
    assert.equal(got.metadata?.name, "s1");
    assert.ok(!fromCache(got));
    const list = await client.list(Secret, { namespace: NS });
    assert.deepEqual(list.items.map((s) => s.metadata?.name), ["s1", "s2", "s3"]);
    const all: string[] = [];
    for await (const s of client.listAll(Secret, { namespace: NS, pageSize: 2 })) {
      all.push(s.metadata?.name ?? "");
    }
    assert.deepEqual(all, ["s1", "s2", "s3"]);
    assert.deepEqual(apiCalls, ["get Secret", "list Secret", "list Secret", "list Secret"]);
    assert.equal((listOptions[1] as { limit?: number }).limit, 2, "the API reader pages");
    assert.deepEqual(calls, [], "the cache is never asked about an uncached kind");
    assert.ok(fromCache(await client.get(ConfigMap, { namespace: NS, name: "a" })));
    assert.equal(calls.length, 1);
  });

  it("read bare group-version-kinds from the API reader unless cacheUnstructured", async () => {
    const gvk = { apiVersion: "v1", kind: "ConfigMap" };
    const key = { namespace: NS, name: "a" };
    {
      const { cache, calls } = recordingCache();
      const { api, calls: apiCalls } = recordingApi([configMap("a")]);
      const client = newCachedClient(cache, api);
      assert.ok(!fromCache(await client.get(gvk, key)));
      assert.equal((await client.list(gvk, { namespace: NS })).items.length, 1);
      const all = [];
      for await (const u of client.listAll(gvk)) all.push(u);
      assert.equal(all.length, 1);
      assert.deepEqual(apiCalls, ["get ConfigMap", "list ConfigMap", "list ConfigMap"]);
      assert.deepEqual(calls, []);
    }
    {
      const { cache, calls } = recordingCache();
      const { api, calls: apiCalls } = recordingApi([configMap("a")]);
      const client = newCachedClient(cache, api, { cacheUnstructured: true });
      assert.ok(fromCache(await client.get(gvk, key)));
      assert.ok((await client.list(gvk)).items.every(fromCache));
      const all = [];
      for await (const u of client.listAll(gvk)) all.push(u);
      assert.ok(all.length === 2 && all.every(fromCache));
      assert.deepEqual(calls.map((c) => c.verb), ["get", "list", "list"]);
      assert.deepEqual(apiCalls, []);
    }
    {
      // `uncached` names kinds by apiVersion and kind, so it covers the bare form too.
      const { cache, calls } = recordingCache();
      const { api, calls: apiCalls } = recordingApi([configMap("a")]);
      const client = newCachedClient(cache, api, {
        cacheUnstructured: true,
        uncached: [ConfigMap],
      });
      assert.ok(!fromCache(await client.get(gvk, key)));
      assert.ok(!fromCache(await client.get(ConfigMap, key)));
      assert.deepEqual(apiCalls, ["get ConfigMap", "get ConfigMap"]);
      assert.deepEqual(calls, []);
    }
  });

  it("expose the cache, the API reader and the API reader's mapper", () => {
    const { cache } = recordingCache();
    const { api } = recordingApi();
    const client = newCachedClient(cache, api);
    assert.equal(client.cache, cache);
    assert.equal(client.apiReader, api);
    assert.equal(client.mapper, api.mapper);
  });
});

describe("the cached client's writes", T, () => {
  let cacheParts: ReturnType<typeof recordingCache>;
  let apiParts: ReturnType<typeof recordingApi>;
  let client: ReturnType<typeof newCachedClient>;

  beforeEach(() => {
    cacheParts = recordingCache();
    apiParts = recordingApi([configMap("existing", { v: "1" }), web()]);
    client = newCachedClient(cacheParts.cache, apiParts.api);
  });

  it("create, update, patch and apply go to the API and are observed, as returned", async () => {
    const created = await client.create(configMap("new", { v: "1" }), { fieldManager: "me" });
    assert.ok(created.metadata?.resourceVersion, "the API's answer, with a resourceVersion");
    const updated = await client.update({ ...created, data: { v: "2" } });
    const patched = await client.patch(
      { ...updated, data: { v: "3" } },
      mergeFrom(updated),
    );
    const applied = await client.apply(configMap("new", { v: "4" }), {
      fieldManager: "me",
      force: true,
    });
    assert.deepEqual(apiParts.calls, [
      "create ConfigMap",
      "update ConfigMap",
      "patch ConfigMap",
      "apply ConfigMap",
    ]);
    assert.deepEqual(cacheParts.observed.map((o) => (o as ConfigMap).data?.v), [
      "1",
      "2",
      "3",
      "4",
    ]);
    const results = [created, updated, patched, applied];
    cacheParts.observed.forEach((o, i) =>
      assert.equal(o, results[i], `write ${i}: the returned object itself`)
    );
    assert.deepEqual(cacheParts.calls, [], "a write reads nothing from the cache");
  });

  it("a failed write is not observed, and its error reaches the caller", async () => {
    await assert.rejects(client.create(configMap("existing")), /already exists/);
    await assert.rejects(
      client.update({
        ...configMap("existing"),
        metadata: { namespace: NS, name: "existing", resourceVersion: "999" },
      }),
      /Conflict|modified|conflict/,
    );
    await assert.rejects(
      client.patch(configMap("missing"), mergeFrom(configMap("missing", { v: "0" }))),
      /not found/,
    );
    await assert.rejects(
      client.apply(configMap("x"), { fieldManager: "" } as never),
      /fieldManager/,
    );
    assert.deepEqual(cacheParts.observed, []);
  });

  it("delete and deleteAllOf go to the API with their options and are not anticipated", async () => {
    const existing = await apiParts.fake.get(ConfigMap, { namespace: NS, name: "existing" });
    await client.delete(existing, { dryRun: true });
    await apiParts.fake.get(ConfigMap, { namespace: NS, name: "existing" }); // dry run: still there
    await client.delete(existing, { preconditions: { uid: existing.metadata?.uid } });
    await assert.rejects(
      apiParts.fake.get(ConfigMap, { namespace: NS, name: "existing" }),
      /not found/,
    );
    await client.create(configMap("one"));
    await client.create(configMap("two"));
    cacheParts.observed.length = 0;
    await client.deleteAllOf(ConfigMap, { namespace: NS, fieldSelector: "metadata.name=one" });
    const left = await apiParts.fake.list(ConfigMap, { namespace: NS });
    assert.deepEqual(left.items.map((c) => c.metadata?.name), ["two"]);
    assert.deepEqual(apiParts.calls.filter((c) => c.startsWith("delete")), [
      "delete ConfigMap",
      "delete ConfigMap",
      "deleteAllOf ConfigMap",
    ]);
    assert.deepEqual(cacheParts.observed, [], "deletes are left to the watch");
    await assert.rejects(client.delete(configMap("gone")), /not found/);
  });

  it("status writes are observed; other subresources' writes and reads are not", async () => {
    const deployment = await apiParts.fake.get(Deployment, { namespace: NS, name: "web" });
    const status = await client.status().update({
      ...deployment,
      status: { observedGeneration: 1 },
    });
    assert.equal(cacheParts.observed.at(-1), status);
    const patched = await client.subResource("status").patch(
      { ...status, status: { observedGeneration: 2 } },
      mergeFrom(status),
    );
    assert.equal(cacheParts.observed.at(-1), patched);
    const applied = await client.status().apply({
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { namespace: NS, name: "web" },
      status: { observedGeneration: 3 },
    }, { fieldManager: "me", force: true });
    assert.equal(cacheParts.observed.at(-1), applied);
    assert.equal(cacheParts.observed.length, 3);

    const scale = await client.subResource("scale").get<{ spec?: { replicas?: number } }>(
      deployment,
    );
    assert.equal(scale.spec?.replicas, 1);
    const scaled = await client.subResource("scale").update(deployment, {
      body: {
        apiVersion: "autoscaling/v1",
        kind: "Scale",
        metadata: { namespace: NS, name: "web" },
        spec: { replicas: 4 },
      },
    });
    assert.equal(scaled.kind, "Scale");
    await client.subResource("scale").patch(deployment, mergeFrom({} as KubeObject), {
      body: { apiVersion: "autoscaling/v1", kind: "Scale", spec: { replicas: 5 } } as KubeObject,
    });
    assert.equal(cacheParts.observed.length, 3, "a Scale is not the cached Deployment");
    const now = await apiParts.fake.get(Deployment, { namespace: NS, name: "web" });
    assert.equal(now.spec?.replicas, 5, "the scale writes reached the API");
    assert.deepEqual(apiParts.calls, [
      "update Deployment status",
      "patch Deployment status",
      "apply Deployment status",
      "get Deployment scale",
      "update Deployment scale",
      "patch Deployment scale",
    ]);
  });

  it("a subresource create goes through and is not observed", async () => {
    const pod = await apiParts.fake.create({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { namespace: NS, name: "p" },
      spec: { containers: [{ name: "c", image: "busybox" }] },
    });
    await client.subResource("eviction").create(pod, {
      apiVersion: "policy/v1",
      kind: "Eviction",
      metadata: { namespace: NS, name: "p" },
    });
    assert.deepEqual(apiParts.calls, ["create Pod eviction"]);
    assert.deepEqual(cacheParts.observed, []);
  });
});

describe("the cached client's read spans", T, () => {
  let exporter: InMemorySpanExporter;
  before(() => {
    exporter = installTestTracing();
  });
  after(() => exporter.reset());

  it("name the resource and carry the request's attributes, with rudder.cached", async () => {
    const { cache } = recordingCache();
    const { api } = recordingApi([configMap("a")]);
    const client = newCachedClient(cache, api, { cacheUnstructured: true });
    exporter.reset();
    await client.get(ConfigMap, { namespace: NS, name: "a" });
    await client.list(Deployment, { namespace: "" });
    await client.list({ apiVersion: "example.com/v1", kind: "Widget" }, { namespace: NS });
    const [get] = spansNamed(exporter, "get configmaps");
    assert.ok(get, "a span named after the plural");
    assert.deepEqual({ ...get.attributes }, {
      "rudder.k8s.verb": "get",
      "rudder.k8s.group": "",
      "rudder.k8s.resource": "configmaps",
      "rudder.k8s.kind": "ConfigMap",
      "k8s.namespace.name": NS,
      "rudder.k8s.name": "a",
      "rudder.cached": true,
    });
    const [list] = spansNamed(exporter, "list deployments");
    assert.ok(list);
    assert.equal(list.attributes["rudder.k8s.verb"], "list");
    assert.equal(list.attributes["rudder.k8s.group"], "apps");
    assert.equal(list.attributes["k8s.namespace.name"], undefined, "all namespaces: no name");
    assert.equal(list.attributes["rudder.k8s.name"], undefined);
    assert.equal(list.attributes["rudder.cached"], true);
    const [bare] = spansNamed(exporter, "list Widget");
    assert.ok(bare, "a bare group-version-kind is named by its kind");
    assert.equal(bare.attributes["rudder.k8s.group"], undefined);
    assert.equal(bare.attributes["rudder.k8s.resource"], undefined);
    assert.equal(bare.attributes["rudder.k8s.kind"], "Widget");
  });

  it("are not made for reads that go to the API reader", async () => {
    const { cache } = recordingCache();
    const { api } = recordingApi([secret("s")]);
    const client = newCachedClient(cache, api, { uncached: [Secret] });
    exporter.reset();
    await client.get(Secret, { namespace: NS, name: "s" });
    await client.list(Secret, { namespace: NS });
    const cached = exporter.getFinishedSpans().filter((s) => s.attributes["rudder.cached"]);
    assert.deepEqual(cached, []);
  });
});
