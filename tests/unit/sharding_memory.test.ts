// What a shard keeps after a hand-over: nothing about an object that left its cache (a large
// hand-over used to leave every handed-over object in the gate's drain table), and the burst of
// hand-overs ends with one full collection once it has been quiet, never during it.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { setImmediate } from "node:timers/promises";
import { ConfigMap, Secret } from "../../lib/api/builtins.ts";
import type { DeepReadonly } from "../../lib/api/readonly.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import type { Cache } from "../../lib/cache/cache.ts";
import type { ResourceEventHandler } from "../../lib/cache/dispatcher.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { drainLabel, shardLabel } from "../../lib/sharding/labels.ts";
import { Departures, ShardGate } from "../../lib/sharding/shard.ts";
import { BurstCollector } from "../../lib/sharding/sharding.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { collectGarbage } from "../../lib/util/runtime.ts";

const RING = "r";
const SHARD = shardLabel(RING);
const DRAIN = drainLabel(RING);

function object(name: string, labels: Record<string, string>): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "ns", name, labels } };
}

/** The part of a cache the gate reads, for one kind without children. */
function fakeCache() {
  const objects = new Map<string, DeepReadonly<KubeObject>>();
  const handlers: ResourceEventHandler<KubeObject>[] = [];
  const cache = {
    getInformer: () =>
      Promise.resolve({
        addEventHandler: (handler: ResourceEventHandler<KubeObject>) => {
          handlers.push(handler);
          return { remove() {}, hasSynced: () => true };
        },
      }),
    get: (_type: unknown, key: { namespace?: string; name: string }) => {
      const obj = objects.get(`${key.namespace}/${key.name}`);
      return obj ? Promise.resolve(obj) : Promise.reject(
        new ApiError({ kind: "Status", status: "Failure", code: 404, reason: "NotFound" }),
      );
    },
    list: () => Promise.resolve({ items: [] }),
  };
  return {
    cache: cache as unknown as Cache,
    put(obj: ConfigMap) {
      const key = `${obj.metadata?.namespace}/${obj.metadata?.name}`;
      const previous = objects.get(key);
      const stored = structuredClone(obj) as DeepReadonly<KubeObject>;
      objects.set(key, stored);
      for (const h of handlers) {
        if (previous) h.onUpdate?.(previous, stored);
        else h.onAdd?.(stored, false);
      }
    },
    /** The watch drops it: the reflector asks whether it is a departure, as it does. */
    leave(obj: ConfigMap, departures: Departures): boolean {
      const key = `${obj.metadata?.namespace}/${obj.metadata?.name}`;
      const previous = objects.get(key);
      objects.delete(key);
      return departures.isDeparture(ConfigMap, previous ?? obj);
    },
  };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await setImmediate();
}

describe("a shard after a hand-over", () => {
  it("forgets the drain of every object once it has left its cache", async () => {
    const names = Array.from({ length: 50 }, (_, i) => `o-${i}`);
    // The sharder marked them all to drain.
    const client = new FakeClient({
      objects: names.map((n) => object(n, { [SHARD]: "a", [DRAIN]: "true" })),
    });
    const { cache, put, leave } = fakeCache();
    const departures = new Departures(RING);
    const gate = new ShardGate({
      ring: RING,
      shard: "a",
      type: ConfigMap,
      owns: [],
      cache,
      client,
      clock: new FakeClock(),
      departures,
    });
    const stop = new AbortController();
    await gate.start(stop.signal);
    for (const name of names) put(object(name, { [SHARD]: "a", [DRAIN]: "true" }));
    await settle();
    for (const name of names) {
      assert.deepEqual(
        (await client.get(ConfigMap, { namespace: "ns", name })).metadata?.labels,
        {},
      );
      assert.ok(gate.isDraining({ namespace: "ns", name }), "handed over, not yet gone");
    }

    for (const name of names) {
      assert.ok(leave(object(name, { [SHARD]: "a", [DRAIN]: "true" }), departures));
    }
    for (const name of names) {
      assert.ok(!gate.isDraining({ namespace: "ns", name }), `${name} is forgotten`);
      assert.equal(await gate.admit({ namespace: "ns", name }), false, "and not reconciled here");
    }
    stop.abort();
  });

  it("keeps a drain of its kind when an object of another kind of the same name leaves", async () => {
    const client = new FakeClient({ objects: [object("p", { [SHARD]: "a", [DRAIN]: "true" })] });
    const { cache, put } = fakeCache();
    const departures = new Departures(RING);
    const gate = new ShardGate({
      ring: RING,
      shard: "a",
      type: ConfigMap,
      owns: [Secret],
      cache,
      client,
      clock: new FakeClock(),
      departures,
    });
    const stop = new AbortController();
    await gate.start(stop.signal);
    put(object("p", { [SHARD]: "a", [DRAIN]: "true" }));
    await settle();
    const secret: Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { namespace: "ns", name: "p", labels: { [SHARD]: "a", [DRAIN]: "true" } },
    };
    assert.ok(departures.isDeparture(Secret, secret));
    assert.ok(gate.isDraining({ namespace: "ns", name: "p" }));
    stop.abort();
  });
});

describe("BurstCollector", () => {
  it("collects once a burst of enough events has been quiet, never during it", () => {
    const clock = new FakeClock();
    let collections = 0;
    const burst = new BurstCollector({
      min: 3,
      quietMs: 2_000,
      clock,
      collect: () => {
        collections++;
        return true;
      },
    });
    for (let i = 0; i < 5; i++) {
      burst.note();
      clock.advance(1_000);
    }
    assert.equal(collections, 0, "not while events keep coming");
    clock.advance(1_000);
    assert.equal(collections, 1);
    clock.advance(10_000);
    assert.equal(collections, 1, "once per burst");

    burst.note();
    burst.note();
    clock.advance(5_000);
    assert.equal(collections, 1, "a burst too small to be worth a collection");

    for (let i = 0; i < 3; i++) burst.note();
    burst.stop();
    clock.advance(5_000);
    assert.equal(collections, 1, "a stopped collector does not collect");
    assert.equal(clock.pending(), 0, "and leaves no timer");
  });

  it("asks the runtime for a full collection where it offers one", () => {
    const collected = collectGarbage();
    assert.equal(
      collected,
      "Bun" in globalThis || typeof Reflect.get(globalThis, "gc") === "function",
    );
  });
});
