// Leader election on a fake clock and the in-memory client: who may take the Lease and when,
// judged by local observation only; renewals, loss, release, and the hooks. Handover against
// the real API server on the real clock is in tests/integration/leader_election.test.ts.
import { describe, it } from "node:test";
import { setImmediate } from "node:timers";
import assert from "node:assert/strict";
import { Lease } from "../../lib/api/builtins.ts";
import type { Client } from "../../lib/client/client.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { ApiError, isConflict } from "../../lib/kube/errors.ts";
import {
  LeaderElectionLostError,
  type LeaderElectionOptions,
  LeaderElector,
} from "../../lib/leaderelection/leader_election.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import { newInterceptedClient } from "../../lib/client/interceptor.ts";
import { captureLogs } from "../support/logs.ts";

const namespace = "operators";
const name = "example-leader";
const key = { namespace, name };
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;
// Defaults: lease 15 s, renew deadline 10 s, retry 2 s; acquire attempts are 2–4.4 s apart.
const MAX_ACQUIRE_GAP = 2_000 * 2.2;
const STEP = 100;

/** Lets every pending promise chain (the fake client's replies) run. */
async function flush(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Moves the fake clock forward in small steps, letting the electors react after each. */
async function advance(clock: FakeClock, ms: number, eachStep?: () => Promise<void>) {
  for (let done = 0; done < ms; done += STEP) {
    clock.advance(Math.min(STEP, ms - done));
    await flush();
    await eachStep?.();
  }
}

/** Advances until `condition` holds and returns the fake time it took; fails after `maxMs`. */
async function advanceUntil(
  clock: FakeClock,
  what: string,
  condition: () => boolean,
  maxMs: number,
): Promise<number> {
  const start = clock.now();
  while (!condition()) {
    if (clock.now() - start >= maxMs) assert.fail(`${what} did not happen within ${maxMs} ms`);
    await advance(clock, STEP);
  }
  return clock.now() - start;
}

interface Started {
  elector: LeaderElector;
  stop: AbortController;
  /** How run() ended, once it has: `undefined` while it runs. */
  outcome: () => { error?: unknown } | undefined;
  newLeaders: string[];
  statuses: boolean[];
}

/** Starts an elector's run() and records its callbacks and how it ends. */
function start(
  client: Client,
  clock: FakeClock,
  identity: string,
  options: Partial<LeaderElectionOptions> = {},
): Started {
  const newLeaders: string[] = [];
  const statuses: boolean[] = [];
  const elector = new LeaderElector({
    client,
    namespace,
    name,
    identity,
    clock,
    onNewLeader: (leader) => newLeaders.push(leader),
    metrics: {
      leaderStatus: (lease, isLeader) => {
        assert.equal(lease, name);
        statuses.push(isLeader);
      },
    },
    ...options,
  });
  const stop = new AbortController();
  let outcome: { error?: unknown } | undefined;
  elector.run(stop.signal).then(() => outcome = {}, (error) => outcome = { error });
  return { elector, stop, outcome: () => outcome, newLeaders, statuses };
}

function leaseObject(spec: Lease["spec"]): Lease {
  return { apiVersion: "coordination.k8s.io/v1", kind: "Lease", metadata: { ...key }, spec };
}

async function readLease(client: Client): Promise<Lease> {
  return await client.get(Lease, key);
}

/** Writes the Lease as another process would, from its current version. */
async function writeLease(client: Client, change: (lease: Lease) => void): Promise<void> {
  const lease = await readLease(client);
  change(lease);
  await client.update(lease);
}

const failure = () => new ApiError({ code: 503, reason: "ServiceUnavailable", message: "etcd" });

describe("LeaderElector", () => {
  it("creates a missing Lease and leads, reporting the new leader and the metric", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    const a = start(client, clock, "a");
    await a.elector.elected();

    assert.equal(a.elector.isLeader(), true);
    assert.equal(a.elector.leader(), "a");
    const lease = await readLease(client);
    assert.equal(lease.spec?.holderIdentity, "a");
    assert.equal(lease.spec?.leaseDurationSeconds, 15);
    assert.equal(lease.spec?.leaseTransitions, 0);
    assert.match(lease.spec?.acquireTime ?? "", MICRO_TIME);
    assert.equal(lease.spec?.renewTime, lease.spec?.acquireTime);
    assert.deepEqual(a.newLeaders, ["a"]);
    assert.deepEqual(a.statuses, [false, true]);

    a.stop.abort();
    await flush();
    assert.deepEqual(a.outcome(), {});
    assert.equal(a.elector.isLeader(), false);
    assert.deepEqual(a.statuses, [false, true, false]);
    // Without releaseOnCancel the Lease is left to expire.
    assert.equal((await readLease(client)).spec?.holderIdentity, "a");
  });

  it("takes a Lease whose holder is empty at once, counting a transition", async () => {
    const clock = new FakeClock();
    const client = new FakeClient({
      objects: [leaseObject({ holderIdentity: "", leaseDurationSeconds: 1, leaseTransitions: 3 })],
    });
    const a = start(client, clock, "a");
    await a.elector.elected();
    const spec = (await readLease(client)).spec;
    assert.equal(spec?.holderIdentity, "a");
    assert.equal(spec?.leaseTransitions, 4);
    assert.equal(spec?.leaseDurationSeconds, 15);
    a.stop.abort();
  });

  it("never takes a Lease whose holder keeps renewing, however old its renewTime looks", async () => {
    const clock = new FakeClock();
    const client = new FakeClient({
      objects: [leaseObject({
        holderIdentity: "other",
        leaseDurationSeconds: 15,
        // The other host's clock is far behind: only the record changing matters.
        renewTime: "2001-01-01T00:00:00.000000Z",
        leaseTransitions: 2,
      })],
    });
    const a = start(client, clock, "a");
    let renewals = 0;
    await advance(clock, 90_000, async () => {
      if (clock.now() % 2_000 !== 0) return;
      renewals++;
      await writeLease(client, (lease) => {
        lease.spec!.renewTime = `2001-01-01T00:00:${
          String(renewals % 60).padStart(2, "0")
        }.000000Z`;
      });
    });

    assert.equal(a.elector.isLeader(), false);
    assert.equal(a.elector.leader(), "other");
    assert.deepEqual(a.newLeaders, ["other"]);
    assert.deepEqual(a.statuses, [false]);
    assert.equal((await readLease(client)).spec?.holderIdentity, "other");

    const elected = a.elector.elected();
    a.stop.abort();
    await assert.rejects(elected, (err: unknown) => (err as Error).name === "AbortError");
    await flush();
    assert.deepEqual(a.outcome(), {});
  });

  it("takes over once the record has not changed for leaseDuration of local time, even with a renewTime in the future", async () => {
    const clock = new FakeClock();
    const future = new Date(Date.now() + 86_400_000).toISOString().replace("Z", "000Z");
    const client = new FakeClient({
      objects: [leaseObject({
        holderIdentity: "other",
        leaseDurationSeconds: 15,
        acquireTime: future,
        renewTime: future,
        leaseTransitions: 5,
      })],
    });
    const a = start(client, clock, "a");
    await flush(); // the first attempt reads the Lease at local time 0

    await advance(clock, 14_900);
    assert.equal(a.elector.isLeader(), false, "the Lease was taken before it expired");
    const waited = await advanceUntil(
      clock,
      "taking over",
      () => a.elector.isLeader(),
      100 + MAX_ACQUIRE_GAP + STEP,
    );
    assert.ok(clock.now() >= 15_000, `took over at ${clock.now()} ms (waited ${waited})`);

    const spec = (await readLease(client)).spec;
    assert.equal(spec?.holderIdentity, "a");
    assert.equal(spec?.leaseTransitions, 6);
    assert.notEqual(spec?.acquireTime, future);
    assert.deepEqual(a.newLeaders, ["other", "a"]);
    a.stop.abort();
  });

  it("renews every retryPeriod, keeping acquireTime and leaseTransitions", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    const a = start(client, clock, "a");
    await a.elector.elected();
    const first = (await readLease(client)).spec!;

    let previous = first.renewTime;
    for (let i = 0; i < 5; i++) {
      await advance(clock, 2_000);
      const spec = (await readLease(client)).spec!;
      assert.notEqual(spec.renewTime, previous, `renewal ${i + 1}`);
      assert.ok(spec.renewTime! > previous!);
      assert.match(spec.renewTime!, MICRO_TIME);
      assert.equal(spec.acquireTime, first.acquireTime);
      assert.equal(spec.leaseTransitions, 0);
      assert.equal(spec.holderIdentity, "a");
      previous = spec.renewTime;
    }
    assert.equal(a.elector.isLeader(), true);
    a.stop.abort();
  });

  it("keeps leading through API errors that end before renewDeadline", async () => {
    const clock = new FakeClock();
    let down = false;
    const client = newInterceptedClient(new FakeClient(), {
      get: (inner, type, k, options) =>
        down ? Promise.reject(failure()) : inner.get(type, k, options),
      update: (inner, obj, options) =>
        down ? Promise.reject(failure()) : inner.update(obj, options),
    });
    const a = start(client, clock, "a");
    await a.elector.elected();
    down = true;
    await advance(clock, 7_000);
    assert.equal(a.elector.isLeader(), true);
    down = false;
    await advance(clock, 30_000);
    assert.equal(a.elector.isLeader(), true);
    assert.equal(a.outcome(), undefined);
    a.stop.abort();
  });

  it("stops leading and rejects with LeaderElectionLostError when renewals fail for renewDeadline", async () => {
    const logs = await captureLogs();
    try {
      const clock = new FakeClock();
      let down = false;
      const client = newInterceptedClient(new FakeClient(), {
        get: (inner, type, k, options) =>
          down ? Promise.reject(failure()) : inner.get(type, k, options),
        update: (inner, obj, options) =>
          down ? Promise.reject(failure()) : inner.update(obj, options),
      });
      const a = start(client, clock, "a");
      await a.elector.elected(); // acquired at local time 0
      down = true;

      await advance(clock, 9_900);
      assert.equal(a.elector.isLeader(), true, "gave up before renewDeadline");
      await advance(clock, 200);
      assert.equal(a.elector.isLeader(), false);
      const error = a.outcome()?.error;
      assert.ok(error instanceof LeaderElectionLostError, String(error));
      assert.equal(error.identity, "a");
      assert.deepEqual(error.lease, key);
      assert.ok(error.cause instanceof ApiError);
      assert.match(error.message, /renewDeadline/);
      assert.deepEqual(a.statuses, [false, true, false]);

      const records = logs.records.filter((r) =>
        r.category.join(".") === "rudder.manager.leader-election"
      );
      assert.ok(records.some((r) => r.level === "warning"), "renewal failures are logged");
      assert.ok(records.some((r) => r.level === "error"), "the loss is logged");
    } finally {
      await logs.stop();
    }
  });

  it("says once at info who holds the lease it waits for, and keeps renewals below debug", async () => {
    const logs = await captureLogs();
    try {
      const clock = new FakeClock();
      const client = new FakeClient();
      const a = start(client, clock, "a");
      await a.elector.elected();
      const b = start(client, clock, "b");
      await advance(clock, 30_000); // b retries 15 times; a renews as often
      const records = logs.records.filter((r) =>
        r.category.join(".") === "rudder.manager.leader-election"
      );
      const waiting = records.filter((r) => r.rawMessage.toString().includes("waiting for it"));
      assert.equal(waiting.length, 1, "said once, not at every retry");
      assert.equal(waiting[0].level, "info");
      assert.equal(waiting[0].properties.holder, "a");
      const expires = waiting[0].properties.expiresInSeconds as number;
      assert.ok(expires > 0 && expires <= 15, `expires in ${expires} s`);
      const chatty = records.filter((r) => r.level !== "trace" && r.level !== "info");
      assert.deepEqual(chatty.map((r) => r.rawMessage), [], "nothing above trace while idle");
      assert.equal(b.elector.isLeader(), false);
    } finally {
      await logs.stop();
    }
  });

  it("gives up at renewDeadline even when a renewal request hangs", async () => {
    const clock = new FakeClock();
    let hang = false;
    const client = newInterceptedClient(new FakeClient(), {
      update: (inner, obj, options) => hang ? new Promise(() => {}) : inner.update(obj, options),
    });
    const a = start(client, clock, "a");
    await a.elector.elected();
    hang = true;
    await advance(clock, 9_900);
    assert.equal(a.outcome(), undefined);
    await advance(clock, 200);
    assert.ok(a.outcome()?.error instanceof LeaderElectionLostError);
  });

  it("loses at once, before renewDeadline, when a Conflict shows another holder", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    const a = start(client, clock, "a");
    await a.elector.elected();
    await writeLease(client, (lease) => {
      lease.spec!.holderIdentity = "intruder";
      lease.spec!.leaseTransitions = 1;
    });

    const took = await advanceUntil(
      clock,
      "the loss",
      () => a.outcome() !== undefined,
      2_000 + STEP,
    );
    assert.ok(took < 10_000);
    const error = a.outcome()?.error;
    assert.ok(error instanceof LeaderElectionLostError, String(error));
    assert.match(error.message, /intruder/);
    assert.equal(a.elector.isLeader(), false);
    assert.equal(a.elector.leader(), "intruder");
    assert.deepEqual(a.newLeaders, ["a", "intruder"]);
    // It did not write over the new holder.
    assert.equal((await readLease(client)).spec?.holderIdentity, "intruder");
  });

  it("keeps leading after a Conflict from a change that left it the holder", async () => {
    const clock = new FakeClock();
    let conflicts = 0;
    const client = newInterceptedClient(new FakeClient(), {
      update: async (inner, obj, options) => {
        try {
          return await inner.update(obj, options);
        } catch (err) {
          if (isConflict(err)) conflicts++;
          throw err;
        }
      },
    });
    const a = start(client, clock, "a");
    await a.elector.elected();
    await writeLease(client, (lease) => {
      lease.metadata!.labels = { team: "platform" };
    });
    await advance(clock, 20_000);
    assert.equal(conflicts, 1);
    assert.equal(a.elector.isLeader(), true);
    const lease = await readLease(client);
    assert.equal(lease.spec?.holderIdentity, "a");
    assert.deepEqual(lease.metadata?.labels, { team: "platform" });
    a.stop.abort();
  });

  it("recreates the Lease when it is deleted while leading", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    const a = start(client, clock, "a");
    await a.elector.elected();
    await client.delete(await readLease(client));
    await advance(clock, 2_000);
    assert.equal(a.elector.isLeader(), true);
    assert.equal((await readLease(client)).spec?.holderIdentity, "a");
    a.stop.abort();
  });

  it("with releaseOnCancel empties the holder on stop, and the next candidate takes over at its next attempt", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    const a = start(client, clock, "a", { releaseOnCancel: true });
    await a.elector.elected();
    const b = start(client, clock, "b");
    await advance(clock, 10_000);
    assert.equal(b.elector.isLeader(), false);
    assert.equal(b.elector.leader(), "a");

    a.stop.abort();
    await flush();
    assert.deepEqual(a.outcome(), {});
    const released = (await readLease(client)).spec;
    assert.equal(released?.holderIdentity, "");
    assert.equal(released?.leaseDurationSeconds, 1);
    assert.equal(released?.leaseTransitions, 0);

    const took = await advanceUntil(
      clock,
      "b leading",
      () => b.elector.isLeader(),
      MAX_ACQUIRE_GAP + STEP,
    );
    assert.ok(took < 15_000, `handover took ${took} ms`);
    const spec = (await readLease(client)).spec;
    assert.equal(spec?.holderIdentity, "b");
    assert.equal(spec?.leaseTransitions, 1);
    assert.equal(spec?.leaseDurationSeconds, 15);
    assert.deepEqual(b.newLeaders, ["a", "b"]);
    assert.deepEqual(b.statuses, [false, true]);
    b.stop.abort();
  });

  it("without releaseOnCancel the next candidate waits out leaseDuration, and never two lead at once", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    const a = start(client, clock, "a");
    await a.elector.elected();
    const b = start(client, clock, "b");
    const c = start(client, clock, "c");
    const electors = [a, b, c];
    const leaders = () => electors.filter((e) => e.elector.isLeader()).length;
    await advance(clock, 30_000, () => {
      assert.equal(leaders(), 1);
      return Promise.resolve();
    });

    a.stop.abort();
    await flush();
    assert.equal((await readLease(client)).spec?.holderIdentity, "a");
    // a renewed at most retryPeriod before it stopped; the others need leaseDuration after that.
    await advance(clock, 12_900, () => {
      assert.equal(leaders(), 0);
      return Promise.resolve();
    });
    await advanceUntil(clock, "a new leader", () => leaders() === 1, 2_000 + 2 * MAX_ACQUIRE_GAP);
    await advance(clock, 30_000, () => {
      assert.equal(leaders(), 1);
      return Promise.resolve();
    });
    const spec = (await readLease(client)).spec;
    assert.ok(spec?.holderIdentity === "b" || spec?.holderIdentity === "c");
    assert.equal(spec?.leaseTransitions, 1);
    b.stop.abort();
    c.stop.abort();
  });

  it("elected() rejects with the abort reason when run() stops before leading; run() runs once", async () => {
    const clock = new FakeClock();
    const client = new FakeClient({
      objects: [leaseObject({ holderIdentity: "other", leaseDurationSeconds: 15 })],
    });
    const elector = new LeaderElector({ client, namespace, name, identity: "a", clock });
    const stop = new AbortController();
    const running = elector.run(stop.signal);
    await assert.rejects(elector.run(stop.signal), /already started/);
    await advance(clock, 5_000);
    const reason = new Error("shutting down");
    stop.abort(reason);
    await running;
    await assert.rejects(elector.elected(), (err) => err === reason);
  });

  it("survives throwing hooks", async () => {
    const clock = new FakeClock();
    const client = new FakeClient();
    const elector = new LeaderElector({
      client,
      namespace,
      name,
      clock,
      onNewLeader: () => {
        throw new Error("hook");
      },
      metrics: {
        leaderStatus: () => {
          throw new Error("metric");
        },
      },
    });
    const stop = new AbortController();
    const running = elector.run(stop.signal);
    await elector.elected();
    await advance(clock, 5_000);
    assert.equal(elector.isLeader(), true);
    stop.abort();
    await running;
  });

  it("checks its options and makes a hostname_uuid identity", () => {
    const client = new FakeClient();
    const elector = new LeaderElector({ client, namespace, name });
    assert.match(
      elector.identity,
      /^.+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
    );
    assert.notEqual(new LeaderElector({ client, namespace, name }).identity, elector.identity);
    assert.throws(
      () => new LeaderElector({ client, namespace, name, leaseDuration: 10_000 }),
      RangeError,
    );
    assert.throws(
      () => new LeaderElector({ client, namespace, name, renewDeadline: 2_400 }),
      RangeError,
    );
    assert.throws(() => new LeaderElector({ client, namespace, name, retryPeriod: 0 }), RangeError);
    assert.throws(() => new LeaderElector({ client, namespace: "", name }), TypeError);
    assert.throws(() => new LeaderElector({ client, namespace, name, identity: "" }), TypeError);
  });
});
