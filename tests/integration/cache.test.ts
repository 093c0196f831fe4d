// The cache and the cached client against the real API server: scoped caches, frozen
// zero-copy reads, field indexes, metadata-only kinds and read-your-own-writes.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Pod, Secret } from "../../lib/api/builtins.ts";
import { type Cache, newCache } from "../../lib/cache/cache.ts";
import { newCachedClient } from "../../lib/cache/cached_client.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { TcpProxy } from "../support/tcp_proxy.ts";
import { eventually } from "../support/eventually.ts";

const FAST = { backoff: { initial: 50, max: 500 } };

function pod(name: string, namespace = "default") {
  return {
    apiVersion: "v1" as const,
    kind: "Pod" as const,
    metadata: { name, namespace },
    spec: { containers: [{ name: "app", image: "example.com/app:1" }] },
  };
}

const env = new Environment();
let config: KubeConfig;
let client: Client;

before(async () => {
  config = await env.start();
  client = newClient(config);
  for (const name of ["team-a", "team-b", "team-c"]) {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }
});

after(async () => {
  await env.stop();
});

/** Starts a cache and returns it with a function that stops it. */
function started(cache: Cache): { cache: Cache; stop: () => Promise<void> } {
  const controller = new AbortController();
  const running = cache.start(controller.signal);
  return {
    cache,
    stop: async () => {
      controller.abort();
      await running;
    },
  };
}

describe("cache", () => {
  it("makes reads right after start wait for the first list, with and without a signal", async () => {
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "early", namespace: "team-b" },
    });
    for (const signal of [undefined, new AbortController().signal]) {
      const { cache, stop } = started(newCache(config, { informer: FAST }));
      try {
        // Not awaited in between: the informer is made and has not listed yet.
        const [got, listed] = await Promise.all([
          cache.get(ConfigMap, { namespace: "team-b", name: "early" }, { signal }),
          cache.list(ConfigMap, { namespace: "team-b", signal }),
        ]);
        assert.equal(got.metadata?.name, "early");
        assert.ok(listed.items.some((c) => c.metadata?.name === "early"));
        // Synced now: a read is answered from the store at once.
        assert.equal(await cache.get(ConfigMap, { namespace: "team-b", name: "early" }), got);
      } finally {
        await stop();
      }
    }
  });

  it("with a status.phase!=Succeeded field selector never holds a Succeeded pod and sees new ones", async () => {
    const { cache, stop } = started(newCache(config, {
      defaultNamespaces: { default: { fieldSelector: "status.phase!=Succeeded" } },
      informer: FAST,
    }));
    try {
      const seenPhases: string[] = [];
      const informer = await cache.getInformer(Pod);
      informer.addEventHandler({
        onAdd: (p) => seenPhases.push(p.status?.phase ?? ""),
        onUpdate: (_, p) => seenPhases.push(p.status?.phase ?? ""),
      });
      await cache.waitForCacheSync();
      const first = await client.create(pod("first"));
      await eventually(
        "the new pod is cached",
        async () =>
          (await cache.list(Pod, { namespace: "default" })).items.some((p) =>
            p.metadata?.name === "first"
          ),
      );
      const done = await client.status().update({ ...first, status: { phase: "Succeeded" } });
      assert.equal(done.status?.phase, "Succeeded");
      await eventually("the Succeeded pod leaves the cache", async () => {
        const names = (await cache.list(Pod, { namespace: "default" })).items.map((p) =>
          p.metadata?.name
        );
        return !names.includes("first");
      });
      await assert.rejects(cache.get(Pod, { namespace: "default", name: "first" }), isNotFound);
      await client.create(pod("second"));
      await eventually(
        "the next pod is cached",
        async () =>
          (await cache.list(Pod, { namespace: "default" })).items.some((p) =>
            p.metadata?.name === "second"
          ),
      );
      assert.ok(!seenPhases.includes("Succeeded"), `phases seen: ${seenPhases.join(", ")}`);
      assert.ok((await cache.list(Pod)).items.every((p) => p.status?.phase !== "Succeeded"));
    } finally {
      await stop();
    }
  });

  it("returns the stored object itself, frozen: no copy, and mutation throws", async () => {
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "frozen", namespace: "team-a" },
      data: { a: "1" },
    });
    const { cache, stop } = started(newCache(config, { informer: FAST }));
    try {
      const key = { namespace: "team-a", name: "frozen" };
      await eventually(
        "cached",
        async () => !!(await cache.get(ConfigMap, key).catch(() => undefined)),
      );
      const one = await cache.get(ConfigMap, key);
      const two = await cache.get(ConfigMap, key);
      const listed = (await cache.list(ConfigMap, { namespace: "team-a" })).items.find((c) =>
        c.metadata?.name === "frozen"
      );
      assert.equal(one, two, "two reads give the same object");
      assert.equal(one, listed, "get and list give the same object");
      assert.ok(Object.isFrozen(one) && Object.isFrozen(one.data) && Object.isFrozen(one.metadata));
      assert.throws(() => {
        (one.data as Record<string, string>).a = "2";
      }, TypeError);
      assert.equal(one.metadata?.managedFields, undefined, "managedFields are stripped by default");
    } finally {
      await stop();
    }
  });

  it("scopes namespaced kinds to the configured namespaces, each with its own selector", async () => {
    for (const [namespace, tier] of [["team-a", "web"], ["team-b", "db"], ["team-c", "web"]]) {
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `scoped-${tier}`, namespace, labels: { tier } },
      });
    }
    const { cache, stop } = started(newCache(config, {
      defaultNamespaces: { "team-a": {}, "team-b": { labelSelector: "tier=web" } },
      informer: FAST,
    }));
    try {
      const names = (await cache.list(ConfigMap)).items
        .filter((c) => c.metadata?.name?.startsWith("scoped-"))
        .map((c) => `${c.metadata?.namespace}/${c.metadata?.name}`);
      assert.deepEqual(names.sort(), ["team-a/scoped-web"]);
      await assert.rejects(
        cache.get(ConfigMap, { namespace: "team-c", name: "scoped-web" }),
        /namespace team-c is not cached/,
      );
      // Cluster-scoped kinds ignore the namespaces.
      const namespaces = await cache.list({ apiVersion: "v1", kind: "Namespace" });
      assert.ok(namespaces.items.length >= 3);
    } finally {
      await stop();
    }
  });

  it("lists by an indexed field, and refuses a field selector on a field without an index", async () => {
    await client.create(pod("on-node", "team-b"));
    const { cache, stop } = started(newCache(config, { informer: FAST }));
    try {
      cache.indexField(
        Pod,
        "spec.containers.image",
        (p) => p.spec?.containers.map((c) => c.image ?? "") ?? [],
      );
      const byImage = await cache.list(Pod, {
        fieldSelector: { "spec.containers.image": "example.com/app:1" },
      });
      assert.ok(byImage.items.some((p) => p.metadata?.name === "on-node"));
      await assert.rejects(cache.list(Pod, { fieldSelector: "spec.nodeName=x" }), /indexField/);
      assert.throws(
        () => cache.indexField(Pod, "spec.containers.image", () => []),
        /already has an index/,
      );
    } finally {
      await stop();
    }
  });

  it("caches only metadata for a kind marked metadataOnly", async () => {
    await client.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "big", namespace: "team-a" },
      stringData: { password: "s3cret" },
    });
    const { cache, stop } = started(
      newCache(config, { byObject: [{ type: Secret, metadataOnly: true }], informer: FAST }),
    );
    try {
      const secret = await cache.get(Secret, { namespace: "team-a", name: "big" });
      assert.equal(secret.kind, "Secret");
      assert.equal(secret.metadata?.name, "big");
      assert.equal(secret.data, undefined, "no data is cached");
    } finally {
      await stop();
    }
  });

  it("refuses reads before start, and with readerFailOnMissingInformer reads of kinds without an informer", async () => {
    const cache = newCache(config, { readerFailOnMissingInformer: true, informer: FAST });
    await assert.rejects(cache.get(ConfigMap, { namespace: "a", name: "b" }), /not started/);
    const { stop } = started(cache);
    try {
      await assert.rejects(cache.list(ConfigMap), /no informer for ConfigMap/);
      await cache.getInformer(ConfigMap);
      await cache.list(ConfigMap);
    } finally {
      await stop();
    }
  });

  it("reports false from waitForCacheSync when it gives up, naming the informers that did not sync", async () => {
    // A user without RBAC bindings: every list is forbidden, so nothing ever syncs.
    const nobody = await env.addUser({ name: "nobody" });
    const { cache, stop } = started(newCache(nobody, { informer: FAST }));
    try {
      await cache.getInformer(ConfigMap);
      assert.equal(await cache.waitForCacheSync(AbortSignal.timeout(500)), false);
      assert.deepEqual(cache.unsynced(), ["ConfigMap"]);
      const [health] = cache.health();
      assert.match(health.lastError ?? "", /forbidden/);
    } finally {
      await stop();
    }
  });
});

describe("cached client", () => {
  it("reads its own writes before the watch delivers them, and the watch's newer versions win", async () => {
    const namespace = "team-b";
    const proxy = new TcpProxy({ host: "127.0.0.1", port: Number(new URL(config.server).port) });
    await proxy.start();
    const rest = new RestClient({ ...config, server: `https://127.0.0.1:${proxy.port}` });
    const { cache, stop } = started(newCache(config, { rest, informer: FAST }));
    const cached = newCachedClient(cache, client);
    try {
      const created = await cached.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "ryow", namespace },
        data: { v: "1" },
      });
      assert.equal((await cached.get(ConfigMap, { namespace, name: "ryow" })).data?.v, "1");
      // Cut the cache off from the API server: only read-your-own-writes can show the update.
      proxy.refuse(true);
      proxy.cut();
      const updated = await cached.update({ ...created, data: { v: "2" } });
      const read = await cached.get(ConfigMap, { namespace, name: "ryow" });
      assert.equal(read.data?.v, "2");
      assert.equal(read.metadata?.resourceVersion, updated.metadata?.resourceVersion);
      assert.ok(Object.isFrozen(read));
      const listed = await cached.list(ConfigMap, { namespace });
      assert.equal(listed.items.find((c) => c.metadata?.name === "ryow")?.data?.v, "2");
      // Someone else writes a newer version; once the watch is back it wins.
      await client.update({ ...updated, data: { v: "3" } });
      proxy.refuse(false);
      await eventually(
        "the watch's newer version wins",
        async () => (await cached.get(ConfigMap, { namespace, name: "ryow" })).data?.v === "3",
      );
    } finally {
      await stop();
      rest.close();
      await proxy.stop();
    }
  });

  it("reads an object that its own write moved out of the cache's selector as absent", async () => {
    const namespace = "team-c";
    const { cache, stop } = started(newCache(config, {
      defaultNamespaces: { [namespace]: { labelSelector: "cached=yes" } },
      informer: FAST,
    }));
    const cached = newCachedClient(cache, client);
    try {
      const cm = await cached.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "leaving", namespace, labels: { cached: "yes" } },
      });
      assert.ok(await cached.get(ConfigMap, { namespace, name: "leaving" }));
      await cached.update({ ...cm, metadata: { ...cm.metadata, labels: { cached: "no" } } });
      await assert.rejects(cached.get(ConfigMap, { namespace, name: "leaving" }), isNotFound);
    } finally {
      await stop();
    }
  });

  it("reads uncached kinds and unstructured objects from the API server", async () => {
    const { cache, stop } = started(
      newCache(config, { readerFailOnMissingInformer: true, informer: FAST }),
    );
    const cached = newCachedClient(cache, client, { uncached: [Secret] });
    try {
      await client.create({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "direct", namespace: "team-a" },
        stringData: { k: "v" },
      });
      const secret = await cached.get(Secret, { namespace: "team-a", name: "direct" });
      assert.ok(secret.data?.k, "an uncached kind is read in full from the API server");
      const unstructured = await cached.get({ apiVersion: "v1", kind: "Secret" }, {
        namespace: "team-a",
        name: "direct",
      });
      assert.equal(unstructured.metadata?.name, "direct");
    } finally {
      await stop();
    }
  });
});
