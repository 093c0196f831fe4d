// The sharding ring: a stable hash, an even spread, about 1/N of the keys moving when one of
// N shards joins or leaves, and children hashed by their controlling owner.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Deployment } from "../../lib/api/builtins.ts";
import {
  controllingOwner,
  drainLabel,
  objectRingKey,
  ringKey,
  shardLabel,
  validateRingName,
} from "../../lib/sharding/labels.ts";
import { hashKey, HashRing } from "../../lib/sharding/ring.ts";

const KEYS = Array.from({ length: 3_000 }, (_, i) => `example.com/Example/ns-${i % 7}/obj-${i}`);

function spread(ring: HashRing): Map<string, number> {
  const counts = new Map<string, number>(ring.members.map((m) => [m, 0]));
  for (const key of KEYS) counts.set(ring.shardFor(key)!, counts.get(ring.shardFor(key)!)! + 1);
  return counts;
}

function moved(from: HashRing, to: HashRing): string[] {
  return KEYS.filter((key) => from.shardFor(key) !== to.shardFor(key));
}

describe("HashRing", () => {
  it("hashes the same on every runtime (FNV-1a with MurmurHash3's finalizer)", () => {
    // Pinned values: a change here reshuffles every ring in every running operator.
    assert.deepEqual(
      ["example.com/Example/default/a", "shard-0#0", "ünïcode", ""].map(hashKey),
      [207788292, 1829351087, 828506380, 2872998923],
    );
    assert.notEqual(hashKey("a"), hashKey("b"));
  });

  it("spreads 3,000 keys over 3 shards within ±15 %", () => {
    const counts = spread(new HashRing(["replica-0", "replica-1", "replica-2"]));
    for (const [shard, count] of counts) {
      assert.ok(count >= 850 && count <= 1_150, `${shard} has ${count} of 3,000 keys`);
    }
  });

  it("moves 15–35 % of the keys when a 4th shard joins, all of them to the newcomer", () => {
    const three = new HashRing(["replica-0", "replica-1", "replica-2"]);
    const four = new HashRing(["replica-0", "replica-1", "replica-2", "replica-3"]);
    const keys = moved(three, four);
    const fraction = keys.length / KEYS.length;
    assert.ok(fraction >= 0.15 && fraction <= 0.35, `${(fraction * 100).toFixed(1)} % moved`);
    for (const key of keys) assert.equal(four.shardFor(key), "replica-3");
  });

  it("moves only the leaving shard's keys when one of 4 leaves", () => {
    const four = new HashRing(["replica-0", "replica-1", "replica-2", "replica-3"]);
    const three = new HashRing(["replica-0", "replica-1", "replica-3"]);
    const keys = moved(four, three);
    for (const key of keys) assert.equal(four.shardFor(key), "replica-2");
    assert.equal(keys.length, KEYS.filter((key) => four.shardFor(key) === "replica-2").length);
  });

  it("does not depend on the order members are given in, and has no shard when empty", () => {
    const a = new HashRing(["b", "a", "c", "a"]);
    const b = new HashRing(["c", "b", "a"]);
    assert.deepEqual(a.members, ["a", "b", "c"]);
    for (const key of KEYS.slice(0, 200)) assert.equal(a.shardFor(key), b.shardFor(key));
    assert.equal(new HashRing([]).shardFor("x"), undefined);
    assert.ok(new HashRing([]).empty);
    assert.throws(() => new HashRing(["a"], { virtualNodes: 0 }), RangeError);
  });
});

describe("ring keys and labels", () => {
  const owner = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    name: "web",
    uid: "u1",
    controller: true,
  };

  it("keys an object by group, kind, namespace and name", () => {
    assert.equal(
      objectRingKey({
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { namespace: "ns", name: "web" },
      }),
      "apps/Deployment/ns/web",
    );
    assert.equal(
      objectRingKey({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace: "ns", name: "c" },
      }),
      "/ConfigMap/ns/c",
    );
  });

  it("keys an owned object by its controlling owner, so both land on one shard", () => {
    const child = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        namespace: "ns",
        name: "web-config",
        ownerReferences: [{ ...owner, controller: false, name: "other" }, owner],
      },
    };
    assert.equal(objectRingKey(child), "apps/Deployment/ns/web");
    assert.equal(objectRingKey(child, [Deployment]), "apps/Deployment/ns/web");
    // An owner of a kind that is not sharded does not count.
    assert.equal(objectRingKey(child, [ConfigMap]), "/ConfigMap/ns/web-config");
    assert.deepEqual(controllingOwner(child, [Deployment]), {
      group: "apps",
      kind: "Deployment",
      namespace: "ns",
      name: "web",
    });
    const ring = new HashRing(["a", "b", "c"]);
    assert.equal(
      ring.shardFor(objectRingKey(child)),
      ring.shardFor(ringKey({ group: "apps", kind: "Deployment", namespace: "ns", name: "web" })),
    );
  });

  it("names the labels after the ring and accepts only DNS-label ring names", () => {
    assert.equal(shardLabel("example"), "shard.rudder.dev/example");
    assert.equal(drainLabel("example"), "drain.rudder.dev/example");
    validateRingName("example-1");
    for (const bad of ["", "Example", "a_b", "-a", "a".repeat(41)]) {
      assert.throws(() => validateRingName(bad), /DNS label/, bad);
    }
  });
});
