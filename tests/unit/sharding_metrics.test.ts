// The sharding metrics as a scrape shows them: each hook's family and labels, the object counts
// read at scrape time from every shard's counter (and no longer once it is stopped), the
// families shared by every caller on one registry, and a failing counter failing the scrape.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Registry } from "../../lib/metrics/registry.ts";
import { type ObjectCounter, shardingMetrics } from "../../lib/sharding/metrics.ts";

/** The samples of a scrape, as `name{label="value",…}` (labels sorted) to value. */
async function scrape(registry: Registry): Promise<Map<string, number>> {
  const samples = new Map<string, number>();
  for (const line of (await registry.metrics()).split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = line.match(/^([a-z_]+)(?:\{(.*)\})? (\S+)$/);
    assert.ok(match, `a sample line: ${line}`);
    const labels = (match[2] ?? "").split(/,(?=[a-z_]+=")/).filter(Boolean).sort().join(",");
    samples.set(labels ? `${match[1]}{${labels}}` : match[1], Number(match[3]));
  }
  return samples;
}

/** The samples whose name starts with `prefix`. */
function only(samples: Map<string, number>, prefix: string): Record<string, number> {
  return Object.fromEntries([...samples].filter(([key]) => key.startsWith(prefix)));
}

describe("shardingMetrics", () => {
  it("registers nothing but empty families until a hook reports", async () => {
    const registry = new Registry();
    shardingMetrics(registry);
    for (
      const name of [
        "rudder_shard_objects",
        "rudder_shard_ring_members",
        "rudder_shard_member",
        "rudder_shard_moves_total",
        "rudder_shard_drains_total",
        "rudder_shard_drain_duration_seconds",
      ]
    ) {
      assert.ok(registry.get(name), `${name} is registered`);
    }
    assert.equal((await scrape(registry)).size, 0, "no series before any report");
  });

  it("sets the ring's members and this shard's membership, 1 or 0", async () => {
    const registry = new Registry();
    const metrics = shardingMetrics(registry);
    metrics.ringMembers("r", 3);
    metrics.ringMembers("r", 2);
    metrics.ringMembers("other", 5);
    metrics.member("r", "shard-0", true);
    metrics.member("r", "shard-1", true);
    metrics.member("r", "shard-1", false);
    const samples = await scrape(registry);
    assert.deepEqual(only(samples, "rudder_shard_ring_members"), {
      'rudder_shard_ring_members{ring="r"}': 2,
      'rudder_shard_ring_members{ring="other"}': 5,
    });
    assert.deepEqual(only(samples, "rudder_shard_member"), {
      'rudder_shard_member{ring="r",shard="shard-0"}': 1,
      'rudder_shard_member{ring="r",shard="shard-1"}': 0,
    });
  });

  it("counts moves, and drains with their duration, by ring and kind", async () => {
    const registry = new Registry();
    const metrics = shardingMetrics(registry);
    metrics.moved("r", "Pod");
    metrics.moved("r", "Pod");
    metrics.moved("r", "ConfigMap");
    metrics.drained("r", "Pod", 0.004);
    metrics.drained("r", "Pod", 0.5);
    const samples = await scrape(registry);
    assert.deepEqual(only(samples, "rudder_shard_moves_total"), {
      'rudder_shard_moves_total{kind="Pod",ring="r"}': 2,
      'rudder_shard_moves_total{kind="ConfigMap",ring="r"}': 1,
    });
    assert.deepEqual(only(samples, "rudder_shard_drains_total"), {
      'rudder_shard_drains_total{kind="Pod",ring="r"}': 2,
    });
    const pod = 'kind="Pod",ring="r"';
    assert.equal(samples.get(`rudder_shard_drain_duration_seconds_count{${pod}}`), 2);
    assert.equal(samples.get(`rudder_shard_drain_duration_seconds_sum{${pod}}`), 0.504);
    // Buckets double from 5 ms, 14 of them: 0.005 … 40.96 s, then +Inf.
    const bucket = (le: string) =>
      samples.get(`rudder_shard_drain_duration_seconds_bucket{kind="Pod",le="${le}",ring="r"}`);
    assert.equal(bucket("0.005"), 1);
    assert.equal(bucket("0.32"), 1, "cumulative: the fast drain only");
    assert.equal(bucket("0.64"), 2);
    assert.equal(bucket("40.96"), 2);
    assert.equal(bucket("+Inf"), 2);
    assert.equal(bucket("81.92"), undefined, "no fifteenth bucket");
    const buckets = [...samples.keys()].filter((k) => k.includes("_bucket{"));
    assert.equal(buckets.length, 15);
  });

  it("reads the object counts of every counter at each scrape, until it is stopped", async () => {
    const registry = new Registry();
    const metrics = shardingMetrics(registry);
    let pods = 4;
    let reads = 0;
    const shard0: ObjectCounter = () => {
      reads++;
      return Promise.resolve([
        { ring: "r", shard: "shard-0", kind: "Pod", count: pods },
        { ring: "r", shard: "shard-0", kind: "ConfigMap", count: 1 },
      ]);
    };
    const shard1: ObjectCounter = () =>
      Promise.resolve([{ ring: "r", shard: "shard-1", kind: "Pod", count: 7 }]);
    const stop0 = metrics.countObjects(shard0);
    // Another caller on the same registry (another controller's shard) shares the family.
    const stop1 = shardingMetrics(registry).countObjects(shard1);
    assert.equal(reads, 0, "counted at scrape time only");
    assert.deepEqual(only(await scrape(registry), "rudder_shard_objects"), {
      'rudder_shard_objects{kind="Pod",ring="r",shard="shard-0"}': 4,
      'rudder_shard_objects{kind="ConfigMap",ring="r",shard="shard-0"}': 1,
      'rudder_shard_objects{kind="Pod",ring="r",shard="shard-1"}': 7,
    });
    pods = 9;
    assert.equal(
      (await scrape(registry)).get('rudder_shard_objects{kind="Pod",ring="r",shard="shard-0"}'),
      9,
    );
    assert.equal(reads, 2);
    stop0();
    assert.deepEqual(
      only(await scrape(registry), "rudder_shard_objects"),
      { 'rudder_shard_objects{kind="Pod",ring="r",shard="shard-1"}': 7 },
      "a stopped counter's series are gone, not left at their last value",
    );
    assert.equal(reads, 2);
    stop1();
    assert.deepEqual(only(await scrape(registry), "rudder_shard_objects"), {});
  });

  it("gives overlapping scrapes every series, never the gauge between its reset and its sets", async () => {
    const registry = new Registry();
    const metrics = shardingMetrics(registry);
    const release: (() => void)[] = [];
    /** A counter whose n-th read answers at once when `slow[n]` is false, else when released. */
    const counter = (kind: string, count: number, slow: boolean[]): ObjectCounter => {
      let reads = 0;
      return () => {
        const answer = [{ ring: "r", shard: "s", kind, count }];
        if (!slow[reads++]) return Promise.resolve(answer);
        return new Promise((resolve) => release.push(() => resolve(answer)));
      };
    };
    // The first scrape waits on Secrets, the second on Pods: the first must finish with the Pods
    // the second has just reset and not yet counted again.
    metrics.countObjects(counter("Pod", 3, [false, true]));
    metrics.countObjects(counter("Secret", 5, [true, false]));
    const want = {
      'rudder_shard_objects{kind="Pod",ring="r",shard="s"}': 3,
      'rudder_shard_objects{kind="Secret",ring="r",shard="s"}': 5,
    };
    const first = scrape(registry);
    await new Promise((resolve) => setImmediate(resolve));
    const second = scrape(registry);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(release.length, 2, "each scrape waits on one counter");
    release[0]();
    assert.deepEqual(only(await first, "rudder_shard_objects"), want);
    release[1]();
    assert.deepEqual(only(await second, "rudder_shard_objects"), want);
  });

  it("keeps the counters of one registry apart from another's", async () => {
    const a = new Registry();
    const b = new Registry();
    shardingMetrics(a).countObjects(() =>
      Promise.resolve([{ ring: "r", shard: "a", kind: "Pod", count: 1 }])
    );
    shardingMetrics(b).ringMembers("r", 1);
    assert.deepEqual(only(await scrape(b), "rudder_shard_objects"), {});
    assert.equal(Object.keys(only(await scrape(a), "rudder_shard_objects")).length, 1);
    assert.deepEqual(only(await scrape(a), "rudder_shard_ring_members"), {});
  });

  it("shares the families of a registry between callers", async () => {
    const registry = new Registry();
    shardingMetrics(registry).moved("r", "Pod");
    shardingMetrics(registry).moved("r", "Pod");
    assert.equal(
      (await scrape(registry)).get('rudder_shard_moves_total{kind="Pod",ring="r"}'),
      2,
    );
  });

  it("fails the scrape, naming the family, when a counter fails", async () => {
    const registry = new Registry();
    const stop = shardingMetrics(registry).countObjects(() =>
      Promise.reject(new Error("cache stopped"))
    );
    await assert.rejects(registry.metrics(), /collecting rudder_shard_objects: cache stopped/);
    stop();
    await registry.metrics();
  });

  it("refuses a registry holding a family of the same name that it did not make", () => {
    const registry = new Registry();
    const first = new Registry();
    shardingMetrics(first);
    registry.register(first.get("rudder_shard_moves_total")!);
    assert.throws(
      () => shardingMetrics(registry),
      /already has a metric named rudder_shard_moves_total/,
    );
  });
});
