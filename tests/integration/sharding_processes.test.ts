// Sharding with replicas as separate processes (the example in examples/sharded-operator, on the
// runtime running this file) against one API server, with the default 15 s shard and sharder
// Leases. The ring goes 1 → 3 → 2 → 3 replicas, one replica is killed with SIGKILL, one is
// restarted in place (same POD_NAME), the sharder is killed in the middle of a move while objects
// are created (no webhook: they are born unassigned), and objects are created while the ring
// changes. With a sharder Lease longer than the 10 s an object may go without a shard, only the
// other replicas' fallback keeps that bound while the sharder's Lease runs out. Every reconcile's start and end is recorded per process: the records must show no
// object reconciled by two processes at once, and no finalizer run for an object that only moved.
// The time bounds are correctness bounds with slack for a loaded machine, not measurements.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Lease } from "../../lib/api/builtins.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { Shardling } from "../../examples/sharded-operator/api/shardling.ts";
import { RING } from "../../examples/sharded-operator/main.ts";
import { eventually } from "../support/eventually.ts";
import {
  assignments as assignmentsIn,
  createShardlings as createShardlingsIn,
  DRAIN_LABEL,
  intervals,
  metricValue,
  overlaps,
  type Replica,
  SHARD_LABEL,
  ShardReplicas,
  unsettled,
} from "../support/shard_replicas.ts";

// The default Lease duration and renew deadline (ShardingOptions): the sharder's failover takes
// up to the Lease duration plus a retry period, longer than MAX_UNASSIGNED_MS, so the fallback
// must bridge it. Only the two SIGKILLs wait for a Lease to expire. Retries every 1 s rather than
// 2 s, so that a restarted replica whose first attempt fails on a busy machine still resumes its
// shard within the 3 s the restart test allows.
const LEASE_DURATION = 15_000;
const RENEW_DEADLINE = 10_000;
const RETRY_PERIOD = 1_000;
/** Objects at the start; more are created while the ring changes. */
const OBJECTS = 150;
const CREATED_DURING_CHANGE = 30;
/** Objects created just after the sharder is killed. */
const CREATED_DURING_FAILOVER = 20;
/** How long any object may be without a shard label. */
const MAX_UNASSIGNED_MS = 10_000;
/** A process's start on a loaded machine, from spawn to serving. */
const START_TIMEOUT = 60_000;
/** How long a settled ring may take after a change (a start, a stop, a Lease expiring). */
const SETTLE_TIMEOUT = 60_000;

const namespace = "sharding-it";

const env = new Environment({ crds: [Shardling] });
const recordDir = mkdtempSync(join(tmpdir(), "rudder-sharding-it-"));
let client: Client;
let replicas: ShardReplicas;
/** Deleted on purpose at the end: the only objects whose finalizer may run. */
const deleted = new Set<string>();

/** Unassigned-time watch: polls the objects and keeps the longest time one had no shard. */
const unassigned = {
  since: new Map<string, number>(),
  longest: 0,
  longestKey: "",
  stop: new AbortController(),
  done: Promise.resolve(),
};

async function watchUnassigned(): Promise<void> {
  while (!unassigned.stop.signal.aborted) {
    try {
      const now = Date.now();
      const { items } = await client.list(Shardling, { namespace });
      const seen = new Set<string>();
      for (const item of items) {
        if (item.metadata?.deletionTimestamp) continue;
        const key = `${namespace}/${item.metadata!.name}`;
        if (item.metadata?.labels?.[SHARD_LABEL]) continue;
        seen.add(key);
        const since = unassigned.since.get(key) ?? now;
        unassigned.since.set(key, since);
        if (now - since > unassigned.longest) {
          unassigned.longest = now - since;
          unassigned.longestKey = key;
        }
      }
      for (const key of unassigned.since.keys()) if (!seen.has(key)) unassigned.since.delete(key);
    } catch {
      // The next poll tries again; a failed list is no evidence either way.
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

before(async () => {
  client = newClient(await env.start());
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  replicas = new ShardReplicas({
    kubeconfig: env.kubeconfigPath,
    namespace,
    recordDir,
    leaseDuration: LEASE_DURATION,
    renewDeadline: RENEW_DEADLINE,
    retryPeriod: RETRY_PERIOD,
  });
  unassigned.done = watchUnassigned();
});

after(async () => {
  unassigned.stop.abort();
  await replicas?.killAll();
  await unassigned.done;
  await env.stop();
  rmSync(recordDir, { recursive: true, force: true });
});

const createShardlings = (prefix: string, count: number) =>
  createShardlingsIn(client, namespace, prefix, count);
const assignments = () => assignmentsIn(client, namespace);

/** Waits until every object is on one of `shards`, reconciled there, its ConfigMap with it. */
async function settle(shards: string[], timeout = SETTLE_TIMEOUT): Promise<void> {
  let reason: string | undefined = "not checked";
  await eventually(
    `the ring settles on ${shards.join(", ")}`,
    async () => (reason = await unsettled(client, namespace, shards)) === undefined,
    timeout,
    250,
  ).catch((err) => {
    throw new Error(`${(err as Error).message}: ${reason}`);
  });
}

async function metrics(replica: Replica): Promise<string> {
  const url = await replica.metricsURL;
  const response = await fetch(`${url}/metrics`);
  return await response.text();
}

/** Waits until a replica serves and reports ready (its shard Lease held, caches synced). */
async function ready(replica: Replica): Promise<void> {
  const url = await Promise.race([
    replica.healthURL,
    replica.exited.then((code) => {
      throw new Error(`${replica.name} exited with ${code}: ${replica.output().slice(-2000)}`);
    }),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${replica.name} did not serve`)), START_TIMEOUT)
    ),
  ]);
  await eventually(
    `${replica.name} is ready`,
    async () => {
      const response = await fetch(`${url}/readyz`).catch(() => undefined);
      await response?.body?.cancel();
      return response?.status === 200;
    },
    START_TIMEOUT,
    100,
  );
}

async function sharderName(): Promise<string | undefined> {
  const lease = await client.get(Lease, { namespace, name: `${RING}-sharder` }).catch(() => null);
  return lease?.spec?.holderIdentity ?? undefined;
}

function countBy(map: Map<string, string | undefined>): Map<string | undefined, number> {
  const counts = new Map<string | undefined, number>();
  for (const shard of map.values()) counts.set(shard, (counts.get(shard) ?? 0) + 1);
  return counts;
}

/** The running replica named `name`; fails naming how it ended when it is not running. */
function byName(name: string): Replica {
  const running = replicas.running.find((r) => r.name === name);
  if (running) return running;
  const last = replicas.all.filter((r) => r.name === name).at(-1);
  throw new Error(
    last
      ? `${name} is not running (it exited): ${last.output().slice(-2000)}`
      : `${name} was never started`,
  );
}

describe("sharding across replica processes", { timeout: 600_000 }, () => {
  it("assigns every object to the only replica, which reconciles each", {
    timeout: 120_000,
  }, async () => {
    const a = replicas.start("replica-a");
    await ready(a);
    await createShardlings("s", OBJECTS);
    await settle(["replica-a"]);
    assert.equal(await sharderName(), "replica-a");
  });

  it("spreads the objects over 3 replicas through drains, with objects created meanwhile", {
    timeout: 180_000,
  }, async () => {
    const before = await assignments();
    const b = replicas.start("replica-b");
    const c = replicas.start("replica-c");
    // Objects created while the ring changes are assigned like the others.
    await createShardlings("during-up", CREATED_DURING_CHANGE);
    await Promise.all([ready(b), ready(c)]);
    // Until the sharder has seen both new replicas the ring looks settled on replica-a alone.
    await eventually(
      "the sharder assigns objects to replica-b and replica-c",
      async () => {
        const shards = new Set((await assignments()).values());
        return shards.has("replica-b") && shards.has("replica-c");
      },
      SETTLE_TIMEOUT,
      250,
    );
    await settle(["replica-a", "replica-b", "replica-c"]);

    const after = await assignments();
    const counts = countBy(after);
    const total = OBJECTS + CREATED_DURING_CHANGE;
    assert.equal(after.size, total);
    for (const shard of ["replica-a", "replica-b", "replica-c"]) {
      const share = (counts.get(shard) ?? 0) / total;
      assert.ok(share > 0.15 && share < 0.55, `${shard} holds ${(share * 100).toFixed(1)} %`);
    }
    // Every object that left replica-a was drained by it: it acknowledged each move.
    const movedFromA = [...before].filter(([name]) => after.get(name) !== "replica-a").length;
    assert.ok(movedFromA > 0);
    const drains = metricValue(await metrics(byName("replica-a")), "rudder_shard_drains_total", {
      ring: RING,
    }) ?? 0;
    assert.ok(drains >= movedFromA, `replica-a acknowledged ${drains} drains, ${movedFromA} moved`);
    const sharder = byName((await sharderName())!);
    const moves = metricValue(await metrics(sharder), "rudder_shard_moves_total", { ring: RING });
    assert.ok((moves ?? 0) >= movedFromA, `the sharder counted ${moves} moves`);
  });

  it("hands a gracefully stopped replica's objects to the others, and only those (3 → 2)", {
    timeout: 120_000,
  }, async () => {
    const before = await assignments();
    const c = byName("replica-c");
    await replicas.stop(c, "SIGTERM");
    assert.equal(await c.exited, 0, c.output().slice(-2000));
    await settle(["replica-a", "replica-b"]);
    const after = await assignments();
    for (const [name, shard] of before) {
      if (shard !== "replica-c") assert.equal(after.get(name), shard, `${name} stayed`);
    }
    const lease = await client.get(Lease, { namespace, name: "replica-c" }).catch(() => null);
    assert.ok(!lease?.spec?.holderIdentity, "replica-c released its Lease");
  });

  it("moves about a third of the objects, all to the new replica (2 → 3)", {
    timeout: 120_000,
  }, async () => {
    const before = await assignments();
    const d = replicas.start("replica-d");
    await ready(d);
    // Until the sharder has seen the new replica the ring looks settled on a and b already.
    await eventually(
      "the sharder assigns objects to replica-d",
      async () => [...(await assignments()).values()].includes("replica-d"),
      SETTLE_TIMEOUT,
      250,
    );
    await settle(["replica-a", "replica-b", "replica-d"]);
    const after = await assignments();
    let moved = 0;
    for (const [name, shard] of before) {
      if (after.get(name) === shard) continue;
      moved++;
      assert.equal(after.get(name), "replica-d", `${name} moved from ${shard} to the new replica`);
    }
    const fraction = moved / before.size;
    assert.ok(fraction > 0.15 && fraction < 0.55, `${(fraction * 100).toFixed(1)} % moved`);
  });

  it("reconciles a SIGKILLed replica's objects elsewhere within the Lease duration + 5 s", {
    timeout: 120_000,
  }, async () => {
    const sharder = await sharderName();
    const victim = byName(["replica-b", "replica-d", "replica-a"].find((n) => n !== sharder)!);
    const mine = [...await assignments()].filter(([, shard]) => shard === victim.name)
      .map(([name]) => `${namespace}/${name}`);
    assert.ok(mine.length > 0);
    const killedAt = await replicas.stop(victim, "SIGKILL");
    const others = replicas.running.map((r) => r.name);
    let late: string[] = mine;
    await eventually(
      "another replica reconciled each of the dead replica's objects",
      () => {
        const done = new Set(
          intervals(replicas.records())
            .filter((i) => i.ended && i.pid !== victim.pid && i.from > killedAt)
            .map((i) => i.key),
        );
        late = mine.filter((key) => !done.has(key));
        return late.length === 0;
      },
      SETTLE_TIMEOUT,
      100,
    ).catch((err) => {
      throw new Error(`${(err as Error).message}: ${late.length} not yet, e.g. ${late[0]}`);
    });
    // The first reconcile elsewhere of each object, after the kill: the slowest is the bound.
    const firstElsewhere = new Map<string, number>();
    for (const i of intervals(replicas.records())) {
      if (!i.ended || i.pid === victim.pid || i.from <= killedAt) continue;
      firstElsewhere.set(i.key, Math.min(firstElsewhere.get(i.key) ?? Infinity, i.to));
    }
    const slowest = Math.max(...mine.map((key) => firstElsewhere.get(key)! - killedAt));
    assert.ok(
      slowest <= LEASE_DURATION + 5_000,
      `the last of ${mine.length} objects was reconciled ${slowest} ms after the kill`,
    );
    await settle(others);
  });

  it("resumes a replica restarted with the same POD_NAME within 3 s of its start", {
    timeout: 120_000,
  }, async () => {
    // Back to 3 replicas first (the killed one's name is free again).
    const revived = replicas.start("replica-e");
    await ready(revived);
    const shards = replicas.running.map((r) => r.name);
    await settle(shards);

    const sharder = await sharderName();
    const old = byName(shards.find((n) => n !== sharder)!);
    await replicas.stop(old, "SIGKILL");
    const again = replicas.start(old.name);
    await again.metricsURL; // it serves: the process is up
    const up = Date.now();
    await eventually(
      `${old.name} holds its shard Lease again`,
      async () => {
        const text = await metrics(again).catch(() => "");
        return metricValue(text, "rudder_shard_member", { ring: RING, shard: old.name }) === 1;
      },
      30_000,
      50,
    );
    const resumed = Date.now() - up;
    const leaseLog = again.output().split("\n").filter((line) => /lease/i.test(line));
    assert.ok(
      resumed <= 3_000,
      `held its Lease again ${resumed} ms after it served: ${leaseLog.join("\n").slice(-3000)}`,
    );
    await settle(shards);
  });

  it(
    "finishes the moves, assigns new objects and takes over the shard of a sharder killed mid-move",
    {
      timeout: 180_000,
    },
    async () => {
      const sharder = byName((await sharderName())!);
      const joining = replicas.start("replica-f");
      // Kill the sharder as soon as it has marked an object for a move.
      let sawDrain = false;
      await eventually(
        "the sharder starts moving objects",
        async () => {
          const { items } = await client.list(Shardling, { namespace });
          sawDrain = items.some((item) => item.metadata?.labels?.[DRAIN_LABEL]);
          return sawDrain || joining.exitedAt !== undefined;
        },
        SETTLE_TIMEOUT,
        20,
      );
      const mine = [...await assignments()].filter(([, shard]) => shard === sharder.name)
        .map(([name]) => `${namespace}/${name}`);
      const killedAt = await replicas.stop(sharder, "SIGKILL");
      assert.ok(sawDrain, "a move was in progress when the sharder died");
      // Born unassigned while the dead sharder's Lease still runs: the fallback labels them.
      await createShardlings("during-failover", CREATED_DURING_FAILOVER);
      await eventually(
        "the objects created after the kill are assigned",
        async () => {
          const { items } = await client.list(Shardling, { namespace });
          return items.filter((item) => item.metadata?.name?.startsWith("during-failover"))
            .every((item) => item.metadata?.labels?.[SHARD_LABEL]);
        },
        LEASE_DURATION,
        100,
      );
      const stillSharder = (await sharderName()) === sharder.name;
      // The dead sharder's own objects are reconciled elsewhere within the Lease duration + 5 s.
      let late: string[] = mine;
      await eventually(
        "another replica reconciled each of the dead sharder's objects",
        () => {
          const done = new Set(
            intervals(replicas.records())
              .filter((i) => i.ended && i.pid !== sharder.pid && i.from > killedAt)
              .map((i) => i.key),
          );
          late = mine.filter((key) => !done.has(key));
          return late.length === 0;
        },
        SETTLE_TIMEOUT,
        100,
      ).catch((err) => {
        throw new Error(`${(err as Error).message}: ${late.length} not yet, e.g. ${late[0]}`);
      });
      const firstElsewhere = new Map<string, number>();
      for (const i of intervals(replicas.records())) {
        if (!i.ended || i.pid === sharder.pid || i.from <= killedAt) continue;
        firstElsewhere.set(i.key, Math.min(firstElsewhere.get(i.key) ?? Infinity, i.to));
      }
      const slowest = Math.max(0, ...mine.map((key) => firstElsewhere.get(key)! - killedAt));
      assert.ok(
        slowest <= LEASE_DURATION + 5_000,
        `the last of ${mine.length} objects was reconciled ${slowest} ms after the kill`,
      );
      await ready(joining);
      const shards = replicas.running.map((r) => r.name);
      await settle(shards);
      assert.notEqual(await sharderName(), sharder.name);
      assert.ok(shards.includes((await sharderName())!));
      // The new objects were labelled while the dead sharder still held its Lease: by a fallback.
      let fallbackAssigned = 0;
      for (const replica of replicas.running) {
        fallbackAssigned += metricValue(
          await metrics(replica),
          "rudder_shard_fallback_assignments_total",
          { ring: RING, kind: "Shardling", reason: "unassigned" },
        ) ?? 0;
      }
      assert.ok(
        !stillSharder || fallbackAssigned >= CREATED_DURING_FAILOVER,
        `the fallbacks assigned ${fallbackAssigned} objects`,
      );
    },
  );

  it("never reconciled one object in two processes at once", { timeout: 30_000 }, () => {
    const all = intervals(replicas.records());
    const pids = new Set(all.map((i) => i.pid));
    assert.ok(pids.size >= 6, `reconciles by ${pids.size} processes`);
    const found = overlaps(all);
    assert.deepEqual(
      found.slice(0, 5).map(([x, y]) =>
        `${x.key}: ${x.pid} ${x.from}–${x.to} and ${y.pid} ${y.from}–${y.to}`
      ),
      [],
      `${found.length} overlapping reconciles`,
    );
  });

  it("never left an object without a shard for more than 10 s", { timeout: 30_000 }, () => {
    assert.ok(
      unassigned.longest <= MAX_UNASSIGNED_MS,
      `${unassigned.longestKey} had no shard for ${unassigned.longest} ms`,
    );
  });

  it("ran the finalizer for deleted objects only, never for one that only moved", {
    timeout: 120_000,
  }, async () => {
    const names = [...(await assignments()).keys()].slice(0, 20);
    for (const name of names) {
      await client.delete({
        apiVersion: Shardling.apiVersion,
        kind: "Shardling",
        metadata: { name, namespace },
      });
      deleted.add(`${namespace}/${name}`);
    }
    await eventually(
      "the deleted Shardlings are gone (their finalizer ran)",
      async () => {
        // Not assignments(): it leaves out objects that are only being deleted.
        const { items } = await client.list(Shardling, { namespace });
        const left = new Set(items.map((item) => item.metadata?.name));
        return names.every((name) => !left.has(name));
      },
      SETTLE_TIMEOUT,
      250,
    );
    const finalized = new Set(
      replicas.records().filter((r) => r.event === "finalize").map((r) => r.key),
    );
    assert.deepEqual([...finalized].filter((key) => !deleted.has(key)), []);
    assert.deepEqual([...deleted].filter((key) => !finalized.has(key)), []);
  });
});
