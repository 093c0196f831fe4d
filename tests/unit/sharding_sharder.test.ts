// The sharder's decisions: assign by the ring (children by their owner), drain an object whose
// shard is alive, move one off a dead shard at once, withdraw a drain the ring takes back; the
// patches that carry them out test the labels first; the webhook assigns on create.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Deployment } from "../../lib/api/builtins.ts";
import type { Lease } from "../../lib/api/builtins.ts";
import { applyJsonPatch } from "../../lib/client/json_patch.ts";
import { drainLabel, objectRingKey, shardLabel } from "../../lib/sharding/labels.ts";
import { RingMembers } from "../../lib/sharding/membership.ts";
import { assignPatch, drainPatch, releasePatch, undrainPatch } from "../../lib/sharding/patches.ts";
import { HashRing } from "../../lib/sharding/ring.ts";
import { decideMove } from "../../lib/sharding/sharder.ts";
import { ownedTarget } from "../../lib/sharding/writer.ts";
import { shardAssigner, shardWebhook } from "../../lib/sharding/webhook.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import type { AdmissionRequest } from "../../lib/webhook/admission.ts";
import type { KubeObject } from "../../lib/api/resource.ts";

const RING = "r";
const SHARD = shardLabel(RING);
const DRAIN = drainLabel(RING);

describe("decideMove", () => {
  const alive = (shard: string) => shard === "a" || shard === "b";
  it("drains from a live shard, moves off a dead one, and withdraws a drain taken back", () => {
    assert.equal(decideMove("a", false, "a", alive), "none");
    assert.equal(decideMove("a", false, "b", alive), "drain");
    assert.equal(decideMove("a", true, "b", alive), "none", "already draining: wait for the ack");
    assert.equal(decideMove("dead", false, "b", alive), "move");
    assert.equal(decideMove("dead", true, "b", alive), "move", "a dead shard never acknowledges");
    assert.equal(decideMove("a", true, "a", alive), "undrain");
    assert.equal(decideMove("a", false, undefined, alive), "none", "no ring, no move");
  });
});

describe("ownedTarget", () => {
  const ring = new HashRing(["a", "b", "c"]);
  const key = "apps/Deployment/ns/web";
  it("follows a settled owner, and goes where a moving or unassigned owner goes", () => {
    assert.equal(ownedTarget(key, { [SHARD]: "c" }, ring, RING), "c");
    assert.equal(
      ownedTarget(key, { [SHARD]: "c", [DRAIN]: "true" }, ring, RING),
      ring.shardFor(key),
    );
    assert.equal(ownedTarget(key, { [SHARD]: "gone" }, ring, RING), ring.shardFor(key));
    assert.equal(ownedTarget(key, undefined, ring, RING), ring.shardFor(key));
  });
});

describe("label patches", () => {
  const obj = (labels?: Record<string, string>) => ({ metadata: { name: "x", labels } });
  const apply = (target: unknown, ops: ReturnType<typeof assignPatch>) =>
    applyJsonPatch(structuredClone(target), ops) as {
      metadata: { labels?: Record<string, string> };
    };

  it("assigns an object with or without labels, and off a dead shard clearing its drain", () => {
    assert.deepEqual(
      apply(obj(), assignPatch(undefined, SHARD, DRAIN, "a", undefined)).metadata.labels,
      {
        [SHARD]: "a",
      },
    );
    assert.deepEqual(
      apply(obj({ app: "x" }), assignPatch({ app: "x" }, SHARD, DRAIN, "a", undefined)).metadata
        .labels,
      { app: "x", [SHARD]: "a" },
    );
    const dead = { [SHARD]: "dead", [DRAIN]: "true" };
    assert.deepEqual(
      apply(obj(dead), assignPatch(dead, SHARD, DRAIN, "b", undefined)).metadata.labels,
      {
        [SHARD]: "b",
      },
    );
  });

  it("fails instead of overwriting when the labels changed since they were read", () => {
    const read = { [SHARD]: "a" };
    assert.throws(() => apply(obj({ [SHARD]: "b" }), drainPatch(read, SHARD, DRAIN, "a")));
    assert.throws(() =>
      apply(obj({ [SHARD]: "b" }), assignPatch(read, SHARD, DRAIN, "c", undefined))
    );
    assert.throws(() =>
      apply(
        obj({ [SHARD]: "a" }),
        releasePatch({ [SHARD]: "a", [DRAIN]: "true" }, SHARD, DRAIN, "a"),
      )
    );
    const draining = { [SHARD]: "a", [DRAIN]: "true" };
    assert.deepEqual(
      apply(obj(draining), undrainPatch(draining, SHARD, DRAIN, "a")).metadata.labels,
      {
        [SHARD]: "a",
      },
    );
    assert.deepEqual(
      apply(obj(draining), releasePatch(draining, SHARD, DRAIN, "a")).metadata.labels,
      {},
    );
  });
});

describe("the assigning webhook", () => {
  const T0 = Date.now();
  const lease = (name: string): Lease => ({
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name },
    spec: { holderIdentity: name, leaseDurationSeconds: 60, renewTime: new Date(T0).toISOString() },
  });

  function review(object: KubeObject, kind = object.kind!): AdmissionRequest<KubeObject> {
    return {
      uid: "1",
      kind: { group: kind === "Deployment" ? "apps" : "", version: "v1", kind },
      resource: { group: "", version: "v1", resource: "x" },
      operation: "CREATE",
      userInfo: {},
      namespace: "ns",
      object,
    };
  }

  it("labels a sharded object with its ring shard and a child with its owner's shard", async () => {
    const members = new RingMembers({ ring: RING });
    members.update([lease("a"), lease("b"), lease("c")]);
    const owner = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { namespace: "ns", name: "web", labels: { [SHARD]: "b" } },
    };
    const assign = shardAssigner({
      ring: RING,
      members,
      sharded: () => [Deployment],
      client: new FakeClient({ objects: [owner] }),
    });
    const fresh = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "api" } };
    const target = members.ring.shardFor(
      objectRingKey({ ...fresh, metadata: { namespace: "ns", name: "api" } }),
    );
    assert.deepEqual((await assign(review(fresh))).patch, [
      { op: "add", path: "/metadata/labels", value: { [SHARD]: target } },
    ]);
    const childOf = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "web-config",
        labels: { app: "web" },
        ownerReferences: [{
          apiVersion: "apps/v1",
          kind: "Deployment",
          name: "web",
          uid: "u",
          controller: true,
        }],
      },
    };
    assert.deepEqual((await assign(review(childOf))).patch, [
      { op: "add", path: "/metadata/labels/shard.rudder.dev~1r", value: "b" },
    ]);
    // Not sharded, already assigned, or no ring yet: allowed unchanged.
    const plain = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "plain" } };
    assert.equal((await assign(review(plain))).patch, undefined);
    const assigned = { ...fresh, metadata: { name: "x", labels: { [SHARD]: "c" } } };
    assert.equal((await assign(review(assigned))).patch, undefined);
    members.update([]);
    assert.equal((await assign(review(fresh))).patch, undefined);
    members.stop();
  });

  it("is configured for CREATE of the sharded kinds without a shard label, ignoring failures", () => {
    const webhook = shardWebhook({
      ring: RING,
      kinds: [Deployment, ConfigMap],
      clientConfig: { service: { namespace: "ops", name: "op-webhook" } },
    });
    assert.equal(webhook.failurePolicy, "Ignore");
    assert.equal(webhook.sideEffects, "None");
    assert.equal(webhook.clientConfig.service?.path, "/shard-r");
    assert.deepEqual(webhook.objectSelector, {
      matchExpressions: [{ key: SHARD, operator: "DoesNotExist" }],
    });
    assert.deepEqual(webhook.rules?.map((r) => [r.apiGroups, r.resources, r.operations]), [
      [["apps"], ["deployments"], ["CREATE"]],
      [[""], ["configmaps"], ["CREATE"]],
    ]);
  });
});
