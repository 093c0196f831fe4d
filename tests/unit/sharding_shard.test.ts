// The shard side: the gate a sharded controller's requests pass as they leave the queue, the
// drain hand-over (wait for the in-flight reconcile, then one tested patch), children released
// first, and a moved object that does not look deleted to the cache.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { setImmediate } from "node:timers/promises";
import { ConfigMap, Secret } from "../../lib/api/builtins.ts";
import type { DeepReadonly } from "../../lib/api/readonly.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import type { Cache } from "../../lib/cache/cache.ts";
import type { ResourceEventHandler } from "../../lib/cache/dispatcher.ts";
import { Reflector } from "../../lib/cache/reflector.ts";
import { Store } from "../../lib/cache/store.ts";
import type { StoreChange } from "../../lib/cache/dispatcher.ts";
import { Controller } from "../../lib/controller/controller.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import type { Request } from "../../lib/reconcile/reconcile.ts";
import { drainLabel, shardLabel } from "../../lib/sharding/labels.ts";
import { Departures, ShardGate } from "../../lib/sharding/shard.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";

const RING = "r";
const SHARD = shardLabel(RING);
const DRAIN = drainLabel(RING);

/** The part of a cache the gate reads: one kind's objects and handlers, by namespace/name. */
class FakeShardCache {
  readonly objects = new Map<string, DeepReadonly<KubeObject>>();
  readonly handlers: ResourceEventHandler<KubeObject>[] = [];

  static key(kind: string, namespace: string | undefined, name: string): string {
    return `${kind}|${namespace ?? ""}/${name}`;
  }

  asCache(): Cache {
    return this as unknown as Cache;
  }

  getInformer() {
    return Promise.resolve({
      addEventHandler: (handler: ResourceEventHandler<KubeObject>) => {
        this.handlers.push(handler);
        return { remove() {}, hasSynced: () => true };
      },
    });
  }

  get(type: { kind: string }, key: Request): Promise<DeepReadonly<KubeObject>> {
    const obj = this.objects.get(FakeShardCache.key(type.kind, key.namespace, key.name));
    if (obj) return Promise.resolve(obj);
    return Promise.reject(
      new ApiError({ kind: "Status", status: "Failure", code: 404, reason: "NotFound" }),
    );
  }

  list(type: { kind: string }, options: { namespace?: string }) {
    const items = [...this.objects.entries()]
      .filter(([key]) => key.startsWith(`${type.kind}|${options.namespace ?? ""}/`))
      .map(([, obj]) => obj);
    return Promise.resolve({ items });
  }

  /** Stores `obj` and tells the handlers (of the parent kind) about it. */
  put(obj: KubeObject, notify = true): void {
    const key = FakeShardCache.key(obj.kind!, obj.metadata?.namespace, obj.metadata!.name!);
    const previous = this.objects.get(key);
    const frozen = structuredClone(obj) as DeepReadonly<KubeObject>;
    this.objects.set(key, frozen);
    if (!notify) return;
    for (const h of this.handlers) {
      if (previous) h.onUpdate?.(previous, frozen);
      else h.onAdd?.(frozen, false);
    }
  }

  remove(obj: KubeObject, notify: boolean): void {
    const key = FakeShardCache.key(obj.kind!, obj.metadata?.namespace, obj.metadata!.name!);
    const previous = this.objects.get(key);
    this.objects.delete(key);
    if (notify && previous) { for (const h of this.handlers) h.onDelete?.(previous); }
  }
}

function parent(labels: Record<string, string>): ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { namespace: "ns", name: "p", uid: "uid-p", labels },
  };
}

function child(labels: Record<string, string>): Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      namespace: "ns",
      name: "p-child",
      uid: "uid-c",
      labels,
      ownerReferences: [{
        apiVersion: "v1",
        kind: "ConfigMap",
        name: "p",
        uid: "uid-p",
        controller: true,
      }],
    },
  };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await setImmediate();
}

function setup(initial: { parent: ConfigMap; child?: Secret }) {
  const client = new FakeClient({
    objects: [initial.parent, ...(initial.child ? [initial.child] : [])],
  });
  const cache = new FakeShardCache();
  const clock = new FakeClock();
  const drained: { kind: string; seconds: number }[] = [];
  const departures = new Departures(RING);
  const gate = new ShardGate({
    ring: RING,
    shard: "a",
    type: ConfigMap,
    owns: [Secret],
    cache: cache.asCache(),
    client,
    clock,
    departures,
    metrics: { drained: (_ring, kind, seconds) => drained.push({ kind, seconds }) },
  });
  return { client, cache, clock, drained, departures, gate };
}

const request: Request = { namespace: "ns", name: "p" };

describe("ShardGate", () => {
  it("waits for the in-flight reconcile, then hands the object over: children first, labels tested", async () => {
    const { client, cache, clock, drained, departures, gate } = setup({
      parent: parent({ [SHARD]: "a" }),
      child: child({ [SHARD]: "a" }),
    });
    const stop = new AbortController();
    await gate.start(stop.signal);
    cache.put(parent({ [SHARD]: "a" }));
    cache.put(child({ [SHARD]: "a" }), false);

    assert.equal(await gate.admit(request), true, "its own object is reconciled");
    // The sharder marks it while the reconcile runs.
    await client.patch(parent({ [SHARD]: "a" }), {
      type: "application/merge-patch+json",
      data: () => ({ metadata: { labels: { [DRAIN]: "true" } } }),
    });
    cache.put(parent({ [SHARD]: "a", [DRAIN]: "true" }));
    await settle();
    assert.equal(
      (await client.get(ConfigMap, request)).metadata?.labels?.[SHARD],
      "a",
      "not acknowledged while the reconcile runs",
    );
    assert.equal(await gate.admit(request), false, "a draining object is not reconciled again");

    clock.advance(250);
    gate.finished(request);
    await settle();
    assert.deepEqual((await client.get(ConfigMap, request)).metadata?.labels ?? {}, {});
    assert.deepEqual(
      (await client.get(Secret, { namespace: "ns", name: "p-child" })).metadata?.labels ?? {},
      {},
      "its child is released too",
    );
    assert.deepEqual(drained, [{ kind: "ConfigMap", seconds: 0.25 }]);

    // Its watch now says the object left; neither that nor the child's leaving is a delete.
    assert.ok(departures.isDeparture(ConfigMap, parent({ [SHARD]: "a", [DRAIN]: "true" })));
    assert.ok(departures.isDeparture(Secret, child({ [SHARD]: "a" })));
    assert.ok(!departures.isDeparture(Secret, child({ [SHARD]: "a" })), "once only");
    cache.remove(parent({}), false);
    assert.equal(await gate.admit(request), false, "a moved-away object is not reconciled");
    stop.abort();
  });

  it("takes back an object it handed over when the ring brings it back, and drains it again", async () => {
    const { client, cache, drained, gate } = setup({ parent: parent({ [SHARD]: "a" }) });
    const stop = new AbortController();
    await gate.start(stop.signal);
    await client.patch(parent({ [SHARD]: "a" }), {
      type: "application/merge-patch+json",
      data: () => ({ metadata: { labels: { [DRAIN]: "true" } } }),
    });
    cache.put(parent({ [SHARD]: "a", [DRAIN]: "true" }));
    await settle();
    assert.deepEqual((await client.get(ConfigMap, request)).metadata?.labels ?? {}, {});
    cache.remove(parent({}), false); // it left; no request came for it while away

    // The sharder assigns it to this shard again.
    await client.patch(parent({}), {
      type: "application/merge-patch+json",
      data: () => ({ metadata: { labels: { [SHARD]: "a" } } }),
    });
    cache.put(parent({ [SHARD]: "a" }));
    assert.equal(await gate.admit(request), true, "back: reconciled here again");
    gate.finished(request);

    // And a later move drains it afresh.
    await client.patch(parent({}), {
      type: "application/merge-patch+json",
      data: () => ({ metadata: { labels: { [DRAIN]: "true" } } }),
    });
    cache.put(parent({ [SHARD]: "a", [DRAIN]: "true" }));
    await settle();
    assert.deepEqual((await client.get(ConfigMap, request)).metadata?.labels ?? {}, {});
    assert.equal(drained.length, 2, "two hand-overs acknowledged");
    stop.abort();
  });

  it("admits an object that is back before its add event reached the gate", async () => {
    const { client, cache, gate } = setup({ parent: parent({ [SHARD]: "a" }) });
    const stop = new AbortController();
    await gate.start(stop.signal);
    await client.patch(parent({ [SHARD]: "a" }), {
      type: "application/merge-patch+json",
      data: () => ({ metadata: { labels: { [DRAIN]: "true" } } }),
    });
    cache.put(parent({ [SHARD]: "a", [DRAIN]: "true" }));
    await settle();
    assert.deepEqual((await client.get(ConfigMap, request)).metadata?.labels ?? {}, {});
    cache.remove(parent({}), false);
    cache.put(parent({ [SHARD]: "a", [DRAIN]: "true" }), false);
    assert.equal(await gate.admit(request), false, "an old state with the mark is not ours");
    cache.put(parent({ [SHARD]: "a" }), false); // back, its event not yet handled
    assert.equal(await gate.admit(request), true);
    stop.abort();
  });

  it("re-reads instead of clobbering when the drain mark was withdrawn meanwhile", async () => {
    const { client, cache, drained, gate } = setup({ parent: parent({ [SHARD]: "a" }) });
    const stop = new AbortController();
    await gate.start(stop.signal);
    // The cache still shows the mark; the API server no longer has it.
    cache.put(parent({ [SHARD]: "a", [DRAIN]: "true" }));
    await settle();
    assert.equal((await client.get(ConfigMap, request)).metadata?.labels?.[SHARD], "a");
    assert.deepEqual(drained, []);
    cache.put(parent({ [SHARD]: "a" }));
    assert.equal(await gate.admit(request), true, "still ours: reconciled again");
    stop.abort();
  });

  it("admits only its own objects, and a real delete of one of them", async () => {
    const { cache, gate } = setup({ parent: parent({ [SHARD]: "a" }) });
    const stop = new AbortController();
    await gate.start(stop.signal);
    assert.equal(await gate.admit(request), false, "not in this shard's cache");
    cache.put(parent({ [SHARD]: "b" }));
    assert.equal(await gate.admit(request), false, "labelled for another shard");
    cache.put(parent({ [SHARD]: "a" }));
    assert.equal(await gate.admit(request), true);
    gate.finished(request);
    cache.remove(parent({ [SHARD]: "a" }), true);
    assert.equal(await gate.admit(request), true, "its delete is reconciled here");
    gate.finished(request);
    stop.abort();
  });
});

describe("a controller with an admission", () => {
  it("reconciles only what the admission admits, and tells it when each reconcile ended", async () => {
    const reconciled: string[] = [];
    const finished: string[] = [];
    const controller = new Controller("gated", (req) => {
      reconciled.push(req.name);
    }, {
      admission: {
        admit: (req) => Promise.resolve(req.name !== "theirs"),
        finished: (req) => finished.push(req.name),
      },
    });
    assert.ok(controller.sharded);
    const stop = new AbortController();
    const running = controller.start(stop.signal);
    controller.queue.add({ namespace: "ns", name: "theirs" });
    controller.queue.add({ namespace: "ns", name: "ours" });
    for (let i = 0; i < 100 && reconciled.length === 0; i++) await setImmediate();
    await settle();
    stop.abort();
    await running;
    assert.deepEqual(reconciled, ["ours"]);
    assert.deepEqual(finished, ["ours"]);
    assert.equal(controller.queue.len(), 0);
  });
});

describe("the reflector with departures", () => {
  const labelled = (name: string, labels: Record<string, string>, rv: string): ConfigMap => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { namespace: "ns", name, resourceVersion: rv, labels },
  });

  it("drops an object that left without a delete event, on a watch delete and on a relist", () => {
    const changes: StoreChange<ConfigMap>[] = [];
    const store = new Store<ConfigMap>();
    const departures = new Departures(RING);
    const reflector = new Reflector(store, {
      dispatcher: { dispatch: (change) => changes.push(change) },
      isDeparture: (obj) => departures.isDeparture(ConfigMap, obj),
    });
    reflector.apply({ type: "Init" });
    for (const name of ["moving", "deleted", "vanishing", "staying"]) {
      const labels = name === "deleted" || name === "staying"
        ? { [SHARD]: "a" }
        : { [SHARD]: "a", [DRAIN]: "true" };
      reflector.apply({ type: "InitApply", object: labelled(name, labels, "1") });
    }
    reflector.apply({ type: "InitDone", resourceVersion: "1" });
    changes.length = 0;

    // The API server sends the previous state in both cases.
    reflector.apply({
      type: "Delete",
      object: labelled("moving", { [SHARD]: "a", [DRAIN]: "true" }, "2"),
    });
    reflector.apply({ type: "Delete", object: labelled("deleted", { [SHARD]: "a" }, "3") });
    assert.deepEqual(changes.map((c) => c.type === "delete" ? c.obj.metadata?.name : c.type), [
      "deleted",
    ]);
    assert.equal(store.get("ns/moving"), undefined);

    // A relist without "vanishing" (it left while the watch was down): no delete either.
    changes.length = 0;
    reflector.apply({ type: "Init" });
    reflector.apply({ type: "InitApply", object: labelled("staying", { [SHARD]: "a" }, "1") });
    reflector.apply({ type: "InitDone", resourceVersion: "5" });
    assert.deepEqual(changes.filter((c) => c.type === "delete"), []);
    assert.deepEqual(store.list().map((o) => o.metadata?.name), ["staying"]);
  });
});
