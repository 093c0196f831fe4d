// The overlap check of the sharding process test (tests/support/shard_replicas.ts) can fail: two
// processes reconciling one object at once are found, one after the other are not, and a process
// killed in the middle of a reconcile holds the object until it exited.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  intervals,
  metricValue,
  overlaps,
  type ReconcileRecord,
  type Replica,
} from "../support/shard_replicas.ts";

const T = { timeout: 10_000 };

function replica(name: string, exitedAt?: number): Replica {
  return { name, exitedAt } as Replica;
}

function records(lines: [string, string, number, number, Replica][]): ReconcileRecord[] {
  return lines.map(([event, key, pid, at, r]) => ({
    event: event as ReconcileRecord["event"],
    key,
    pid,
    at,
    replica: r,
  }));
}

describe("the reconcile records of shard replicas", () => {
  const a = replica("a");
  const b = replica("b");

  it("find two processes reconciling one object at once", T, () => {
    const found = overlaps(intervals(records([
      ["start", "ns/x", 1, 100, a],
      ["start", "ns/x", 2, 150, b],
      ["end", "ns/x", 1, 200, a],
      ["end", "ns/x", 2, 250, b],
    ])));
    assert.equal(found.length, 1);
    assert.deepEqual(found[0].map((i) => i.pid), [1, 2]);
  });

  it("accept one after the other, and two objects at once", T, () => {
    assert.deepEqual(
      overlaps(intervals(records([
        ["start", "ns/x", 1, 100, a],
        ["end", "ns/x", 1, 200, a],
        ["start", "ns/x", 2, 200.5, b],
        ["start", "ns/y", 1, 201, a],
        ["end", "ns/x", 2, 300, b],
        ["end", "ns/y", 1, 300, a],
      ]))),
      [],
    );
  });

  it("count a reconcile cut short by a kill as lasting until the process exited", T, () => {
    const killed = replica("k", 500);
    const all = intervals(records([
      ["start", "ns/x", 1, 100, killed],
      ["start", "ns/x", 2, 400, b],
      ["end", "ns/x", 2, 450, b],
    ]));
    assert.deepEqual(all.find((i) => i.pid === 1), {
      key: "ns/x",
      pid: 1,
      from: 100,
      to: 500,
      ended: false,
    });
    assert.equal(overlaps(all).length, 1);
  });

  it("read a metric summed over the series that match", T, () => {
    const text = [
      "# TYPE rudder_shard_drains_total counter",
      'rudder_shard_drains_total{ring="r",kind="Shardling"} 3',
      'rudder_shard_drains_total{ring="r",kind="ConfigMap"} 2',
      'rudder_shard_drains_total{ring="other",kind="Shardling"} 7',
    ].join("\n");
    assert.equal(metricValue(text, "rudder_shard_drains_total", { ring: "r" }), 5);
    assert.equal(
      metricValue(text, "rudder_shard_drains_total", { ring: "r", kind: "Shardling" }),
      3,
    );
    assert.equal(metricValue(text, "rudder_shard_moves_total"), undefined);
  });
});
