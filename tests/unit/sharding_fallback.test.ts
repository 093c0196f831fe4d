// The fallback every ring member runs: an object still unassigned after its grace is assigned
// (a child to its owner's shard), never by the replica that is the sharder nor by one that is not
// a member; a lost race (409, 422) is not retried until the object is seen again; a gone shard's
// objects move after a grace, by whichever replica claims its Lease (one only), and not while
// another writer's claim lasts; label patches that add a shard label test the resourceVersion.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { setImmediate } from "node:timers/promises";
import { ConfigMap, Deployment, Lease } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import type { Client } from "../../lib/client/client.ts";
import { newInterceptedClient } from "../../lib/client/interceptor.ts";
import { applyJsonPatch } from "../../lib/client/json_patch.ts";
import { rawPatch } from "../../lib/client/patch.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { Fallback } from "../../lib/sharding/fallback.ts";
import { drainLabel, objectRingKey, shardLabel } from "../../lib/sharding/labels.ts";
import { RingMembers } from "../../lib/sharding/membership.ts";
import { assignPatch, drainPatch } from "../../lib/sharding/patches.ts";
import { type ListPage, ShardWriter } from "../../lib/sharding/writer.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";

const RING = "r";
const SHARD = shardLabel(RING);
const DRAIN = drainLabel(RING);
const NS = "ns";
const OPS = "ops";
const T0 = Date.parse("2026-01-01T00:00:00Z");
const GRACE = 2_500;
const DEAD_GRACE = 1_000;

function lease(name: string, seconds: number, holder = name): Lease {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name, namespace: OPS, labels: { "sharding.rudder.dev/ring": RING } },
    spec: {
      holderIdentity: holder,
      leaseDurationSeconds: seconds,
      renewTime: new Date(T0).toISOString().replace("Z", "000Z"),
    },
  };
}

function deployment(name: string, labels?: Record<string, string>): KubeObject {
  return { apiVersion: "apps/v1", kind: "Deployment", metadata: { namespace: NS, name, labels } };
}

function childOf(owner: string, name: string, labels?: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      namespace: NS,
      name,
      labels,
      ownerReferences: [
        {
          apiVersion: "apps/v1",
          kind: "Deployment",
          name: owner,
          uid: `u-${owner}`,
          controller: true,
        },
      ],
    },
  };
}

/** Lets the fallback's promise chains run after a timer fired. */
async function flush(): Promise<void> {
  for (let i = 0; i < 50; i++) await setImmediate();
}

/** One ring with its API objects, and replicas' fallbacks over it. */
class World {
  readonly clock = new FakeClock();
  readonly fake: FakeClient;
  readonly members: RingMembers;
  readonly assigned: { replica: string; kind: string; reason: string }[] = [];
  readonly fallbacks: Fallback[] = [];
  patches = 0;

  constructor(objects: KubeObject[], leases: Lease[]) {
    this.fake = new FakeClient({ objects: [...objects, ...leases] });
    this.members = new RingMembers({
      ring: RING,
      clock: this.clock,
      wallClock: () => T0 + this.clock.now(),
    });
  }

  /** What the Lease informer would do: the ring from the Leases as stored now. */
  async refresh(): Promise<void> {
    this.members.update((await this.fake.list(Lease, { namespace: OPS })).items);
  }

  fallback(
    replica: string,
    options: { sharder?: () => boolean; member?: () => boolean; client?: Client } = {},
  ): Fallback {
    const counted = newInterceptedClient(options.client ?? this.fake, {
      patch: (client, obj, patch, opts) => {
        this.patches++;
        return client.patch(obj, patch, opts);
      },
    });
    const listPage: ListPage = async (type, query) => {
      const list = await this.fake.list(type, {
        namespace: query.namespace,
        labelSelector: query.labelSelector,
        limit: query.limit,
        continue: query.continue,
      });
      return { items: list.items as KubeObject[], continue: list.metadata?.continue };
    };
    const fallback = new Fallback({
      ring: RING,
      kinds: () => [{ type: Deployment, owns: [ConfigMap] }],
      members: this.members,
      writer: new ShardWriter({
        ring: RING,
        members: this.members,
        client: counted,
        listPage,
        pageSize: 2,
        leaseNamespace: OPS,
        identity: `${RING}-fallback/${replica}`,
        claimSeconds: 15,
        wallClock: () => T0 + this.clock.now(),
      }),
      member: options.member ?? (() => true),
      sharder: options.sharder ?? (() => false),
      clock: this.clock,
      metrics: {
        fallbackAssigned: (_ring, kind, reason) => this.assigned.push({ replica, kind, reason }),
      },
    });
    fallback.start();
    this.fallbacks.push(fallback);
    return fallback;
  }

  async get(kind: "Deployment" | "ConfigMap", name: string): Promise<KubeObject> {
    return await this.fake.get(kind === "Deployment" ? Deployment : ConfigMap, {
      namespace: NS,
      name,
    });
  }

  async advance(ms: number): Promise<void> {
    this.clock.advance(ms);
    await flush();
  }

  async stop(): Promise<void> {
    for (const fallback of this.fallbacks) await fallback.stop();
    this.members.stop();
  }
}

describe("the fallback's assignment of unassigned objects", () => {
  it("assigns an object still unassigned after the grace, a child to its owner's shard", async () => {
    const world = new World(
      [
        deployment("web", { app: "web" }),
        childOf("web", "web-config"),
        deployment("api"),
        { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: NS, name: "plain" } },
      ],
      [lease("a", 3600), lease("b", 3600)],
    );
    await world.refresh();
    const fallback = world.fallback("a");
    const web = await world.get("Deployment", "web");
    fallback.observe(Deployment, web);
    fallback.observe(ConfigMap, await world.get("ConfigMap", "web-config"));
    // Owned by nothing sharded: not sharding's.
    fallback.observe(ConfigMap, await world.get("ConfigMap", "plain"));

    await world.advance(GRACE - 1);
    assert.equal(world.patches, 0, "the sharder has the grace to do it first");
    // The elected sharder assigns api within the grace: the fallback forgets it.
    fallback.observe(Deployment, await world.get("Deployment", "api"));
    await world.fake.patch(
      deployment("api"),
      rawPatch("application/merge-patch+json", { metadata: { labels: { [SHARD]: "b" } } }),
    );
    fallback.observe(Deployment, await world.get("Deployment", "api"));
    await world.advance(1);

    const target = world.members.ring.shardFor(objectRingKey(web))!;
    assert.deepEqual((await world.get("Deployment", "web")).metadata?.labels, {
      app: "web",
      [SHARD]: target,
    });
    // The child follows its owner: where the owner is now, or where it goes.
    assert.equal((await world.get("ConfigMap", "web-config")).metadata?.labels?.[SHARD], target);
    assert.equal(world.patches, 2);
    assert.deepEqual(world.assigned.map((a) => a.reason), ["unassigned", "unassigned"]);
    await world.advance(60_000);
    assert.equal(world.patches, 2, "nothing more to do");
    assert.equal((await world.get("Deployment", "api")).metadata?.labels?.[SHARD], "b");
    assert.equal((await world.get("ConfigMap", "plain")).metadata?.labels, undefined);
    await world.stop();
  });

  it("leaves it to its own sharder, and does nothing while not a member", async () => {
    const world = new World([deployment("web")], [lease("a", 3600)]);
    await world.refresh();
    let sharder = true;
    let member = true;
    const fallback = world.fallback("a", { sharder: () => sharder, member: () => member });
    fallback.observe(Deployment, await world.get("Deployment", "web"));
    await world.advance(30_000);
    assert.equal(world.patches, 0, "this replica's sharder assigns it");
    sharder = false;
    member = false;
    await world.advance(30_000);
    assert.equal(world.patches, 0, "not holding its shard Lease");
    member = true;
    await world.advance(2_000);
    assert.equal((await world.get("Deployment", "web")).metadata?.labels?.[SHARD], "a");
    await world.stop();
  });

  it("loses a race without overwriting anything and tries again only when it sees the object again", async () => {
    const world = new World([deployment("web")], [lease("a", 3600)]);
    await world.refresh();
    const fallback = world.fallback("a");
    const read = await world.get("Deployment", "web");
    fallback.observe(Deployment, read);
    // A user labels it meanwhile: the label map appears after the fallback read the object.
    await world.fake.patch(
      read,
      rawPatch("application/merge-patch+json", { metadata: { labels: { team: "x" } } }),
    );
    await world.advance(GRACE);
    assert.equal(world.patches, 1);
    assert.deepEqual((await world.get("Deployment", "web")).metadata?.labels, { team: "x" });
    await world.advance(60_000);
    assert.equal(world.patches, 1, "a lost race is not retried on its own");

    fallback.observe(Deployment, await world.get("Deployment", "web")); // the watch's update
    await world.advance(0);
    assert.deepEqual((await world.get("Deployment", "web")).metadata?.labels, {
      team: "x",
      [SHARD]: "a",
    });
    await world.stop();
  });

  it("takes a 409 as a lost race too", async () => {
    const world = new World([deployment("web")], [lease("a", 3600)]);
    await world.refresh();
    const conflicting = newInterceptedClient(world.fake, {
      patch: () =>
        Promise.reject(
          new ApiError({ kind: "Status", status: "Failure", code: 409, reason: "Conflict" }),
        ),
    });
    const fallback = world.fallback("a", { client: conflicting });
    fallback.observe(Deployment, await world.get("Deployment", "web"));
    await world.advance(GRACE + 60_000);
    assert.equal(world.patches, 1);
    assert.deepEqual(world.assigned, []);
    await world.stop();
  });
});

describe("the fallback's takeover of a gone shard", () => {
  function deadShardWorld(): World {
    const objects: KubeObject[] = [];
    for (let i = 0; i < 5; i++) {
      objects.push(
        deployment(`d${i}`, { [SHARD]: "dead", ...(i === 0 ? { [DRAIN]: "true" } : {}) }),
      );
      objects.push(childOf(`d${i}`, `d${i}-config`, { [SHARD]: "dead" }));
    }
    objects.push(deployment("stays", { [SHARD]: "a" }));
    // Left behind on the gone shard by an owner that had moved on: it follows its owner.
    objects.push(childOf("stays", "stays-config", { [SHARD]: "dead" }));
    return new World(objects, [lease("a", 3600), lease("b", 3600), lease("dead", 5)]);
  }

  it("moves its objects after the grace, children with their owner, and releases its Lease", async () => {
    const world = deadShardWorld();
    await world.refresh();
    world.fallback("a");
    assert.deepEqual(world.members.ring.members, ["a", "b", "dead"]);
    await world.advance(5_010); // the dead shard's Lease expires
    assert.deepEqual(world.members.ring.members, ["a", "b"]);
    await world.advance(DEAD_GRACE - 20);
    assert.equal(world.patches, 0, "the sharder has the grace to do it first");
    await world.advance(20);
    await world.advance(0);

    for (let i = 0; i < 5; i++) {
      const owner = await world.get("Deployment", `d${i}`);
      const target = world.members.ring.shardFor(objectRingKey(owner));
      assert.deepEqual(owner.metadata?.labels, { [SHARD]: target }, `d${i} moved, undrained`);
      const child = await world.get("ConfigMap", `d${i}-config`);
      assert.equal(child.metadata?.labels?.[SHARD], target, `d${i}'s child with it`);
    }
    assert.equal((await world.get("Deployment", "stays")).metadata?.labels?.[SHARD], "a");
    assert.equal((await world.get("ConfigMap", "stays-config")).metadata?.labels?.[SHARD], "a");
    assert.equal(world.assigned.length, 11);
    assert.ok(world.assigned.every((a) => a.reason === "dead-shard"));
    const released = await world.fake.get(Lease, { namespace: OPS, name: "dead" });
    assert.equal(released.spec?.holderIdentity, "", "claimed, then released");
    await world.stop();
  });

  it("lets one of two replicas win the claim, so each object moves once", async () => {
    const world = deadShardWorld();
    await world.refresh();
    world.fallback("a");
    world.fallback("b");
    await world.advance(5_010 + DEAD_GRACE);
    for (let i = 0; i < 10; i++) await world.advance(CLAIM_POLL);
    assert.equal(world.assigned.length, 11, "eleven objects, each moved once");
    assert.equal(new Set(world.assigned.map((a) => a.replica)).size, 1, "by one replica");
    assert.equal(world.patches, 11);
    await world.stop();
  });

  it("waits while another writer's claim lasts, then finishes what it left", async () => {
    const world = deadShardWorld();
    await world.refresh();
    world.fallback("a");
    await world.advance(5_010);
    // The sharder claims the gone shard's Lease (and dies before moving anything).
    const current = await world.fake.get(Lease, { namespace: OPS, name: "dead" });
    await world.fake.update({
      ...current,
      spec: {
        ...current.spec,
        holderIdentity: "r-sharder/b",
        leaseDurationSeconds: 10,
        renewTime: new Date(T0 + world.clock.now()).toISOString().replace("Z", "000Z"),
      },
    });
    await world.refresh();
    await world.advance(DEAD_GRACE + 8_000);
    assert.equal(world.patches, 0, "the claim lasts 10 s");
    await world.advance(3_000);
    assert.equal(world.assigned.length, 11, "moved once the claim ran out");
    await world.stop();
  });

  it("stops when the shard comes back", async () => {
    const world = deadShardWorld();
    await world.refresh();
    world.fallback("a");
    await world.advance(5_010);
    const current = await world.fake.get(Lease, { namespace: OPS, name: "dead" });
    await world.fake.update({
      ...current,
      spec: {
        ...current.spec,
        renewTime: new Date(T0 + world.clock.now()).toISOString().replace("Z", "000Z"),
      },
    });
    await world.refresh();
    await world.advance(DEAD_GRACE * 3);
    assert.equal(world.patches, 0);
    await world.stop();
  });
});

const CLAIM_POLL = 1_000;

describe("label patches against concurrent label changes", () => {
  const apply = (target: unknown, ops: ReturnType<typeof assignPatch>) =>
    applyJsonPatch(structuredClone(target), ops) as {
      metadata: { labels?: Record<string, string> };
    };

  it("never replaces labels that appeared after the object was read", () => {
    // Read without labels at version 1; a user's label map arrived at version 2.
    const now = { metadata: { name: "x", resourceVersion: "2", labels: { team: "x" } } };
    assert.throws(() => apply(now, assignPatch(undefined, SHARD, DRAIN, "a", "1")));
    // Read with other labels; another replica assigned it meanwhile.
    const assigned = { metadata: { name: "x", resourceVersion: "3", labels: { [SHARD]: "b" } } };
    assert.throws(() => apply(assigned, assignPatch({}, SHARD, DRAIN, "a", "2")));
    // A drain mark needs only its shard: a reconciler's status write meanwhile does not fail it.
    assert.deepEqual(
      apply(
        { metadata: { resourceVersion: "5", labels: { [SHARD]: "a" } } },
        drainPatch({ [SHARD]: "a" }, SHARD, DRAIN, "a"),
      ).metadata.labels,
      { [SHARD]: "a", [DRAIN]: "true" },
    );
    // Unchanged since read: applies, keeping what is there.
    const same = { metadata: { name: "x", resourceVersion: "2", labels: { team: "x" } } };
    assert.deepEqual(
      apply(same, assignPatch({ team: "x" }, SHARD, DRAIN, "a", "2")).metadata.labels,
      {
        team: "x",
        [SHARD]: "a",
      },
    );
    const bare = { metadata: { name: "x", resourceVersion: "1" } };
    assert.deepEqual(apply(bare, assignPatch(undefined, SHARD, DRAIN, "a", "1")).metadata.labels, {
      [SHARD]: "a",
    });
  });
});
