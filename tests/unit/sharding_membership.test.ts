// Ring membership from shard Leases: live while held and not expired, re-evaluated when the
// first Lease would expire, and a released Lease (no holder) is out at once.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Lease } from "../../lib/api/builtins.ts";
import { liveShards, RingMembers } from "../../lib/sharding/membership.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";

const T0 = Date.parse("2026-01-01T00:00:00Z");

function lease(name: string, renewedAt: number, seconds = 15, holder = name): Lease {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name, namespace: "ops", labels: { "sharding.rudder.dev/ring": "r" } },
    spec: {
      holderIdentity: holder,
      leaseDurationSeconds: seconds,
      renewTime: new Date(renewedAt).toISOString().replace("Z", "000Z"),
    },
  };
}

describe("liveShards", () => {
  it("counts Leases that are held and renewed within their duration", () => {
    const { members, nextExpiry } = liveShards([
      lease("b", T0),
      lease("a", T0 - 10_000),
      lease("expired", T0 - 15_000),
      lease("released", T0, 15, ""),
    ], T0);
    assert.deepEqual(members, ["a", "b"]);
    assert.equal(nextExpiry, T0 + 5_000);
  });
});

describe("RingMembers", () => {
  it("tells its listeners when a shard joins, and when one expires without any write", () => {
    const clock = new FakeClock();
    const members = new RingMembers({ ring: "r", clock, wallClock: () => T0 + clock.now() });
    const seen: string[][] = [];
    members.onChange((ring) => seen.push([...ring.members]));
    members.update([lease("a", T0)]);
    members.update([lease("a", T0), lease("b", T0 + 1_000, 3)]);
    assert.deepEqual(seen, [["a"], ["a", "b"]]);
    assert.ok(members.ring.has("b"));

    clock.advance(3_999); // b's Lease lasts until T0 + 4 000
    assert.deepEqual(seen.length, 2);
    clock.advance(20);
    assert.deepEqual(seen.at(-1), ["a"], "b expired");
    clock.advance(11_000);
    assert.deepEqual(seen.at(-1), [], "a expired too");
    members.stop();
    assert.equal(clock.pending(), 0);
  });

  it("drops a released Lease at once and ignores updates that change nothing", () => {
    const clock = new FakeClock();
    const members = new RingMembers({ ring: "r", clock, wallClock: () => T0 + clock.now() });
    let changes = 0;
    members.onChange(() => changes++);
    members.update([lease("a", T0), lease("b", T0)]);
    members.update([lease("a", T0 + 2_000), lease("b", T0 + 2_000)]); // renewals only
    assert.equal(changes, 1);
    members.update([lease("a", T0 + 2_000), lease("b", T0 + 2_000, 1, "")]);
    assert.equal(changes, 2);
    assert.deepEqual(members.ring.members, ["a"]);
    members.stop();
  });
});
