// Leader election against the real API server on the real clock, with short durations: one
// leader among candidates, handover when the leader stops (waiting out the lease, or at once
// after a release), and loss when the API server is gone for renewDeadline. The handover bounds
// are correctness bounds with generous slack, not performance measurements.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Lease } from "../../lib/api/builtins.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import {
  LeaderElectionLostError,
  type LeaderElectionOptions,
  LeaderElector,
} from "../../lib/leaderelection/leader_election.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { eventually } from "../support/eventually.ts";

const LEASE_DURATION = 3_000;
const RENEW_DEADLINE = 2_000;
const RETRY_PERIOD = 500;
// Acquire attempts are retryPeriod × [1, 2.2) apart (client-go's jitter).
const MAX_ACQUIRE_GAP = RETRY_PERIOD * 2.2;
const SLACK = 1_000;

const namespace = "leader-election-it";
const env = new Environment();
let config: KubeConfig;
let client: Client;

interface Candidate {
  elector: LeaderElector;
  stop: AbortController;
  /** Settles with run()'s outcome; never rejects. */
  done: Promise<{ error?: unknown }>;
}

function candidate(
  name: string,
  identity: string,
  options: Partial<LeaderElectionOptions> = {},
): Candidate {
  const elector = new LeaderElector({
    // Each replica has its own client, as separate processes would.
    client: newClient(config),
    namespace,
    name,
    identity,
    leaseDuration: LEASE_DURATION,
    renewDeadline: RENEW_DEADLINE,
    retryPeriod: RETRY_PERIOD,
    ...options,
  });
  const stop = new AbortController();
  const done = elector.run(stop.signal).then(() => ({}), (error) => ({ error }));
  return { elector, stop, done };
}

/** Waits until one of `candidates` leads, then checks for a while that exactly one does. */
async function soleLeader(candidates: Candidate[], name: string): Promise<Candidate> {
  await Promise.race(candidates.map((c) => c.elector.elected()));
  const until = performance.now() + 4 * RETRY_PERIOD;
  while (performance.now() < until) {
    const leaders = candidates.filter((c) => c.elector.isLeader());
    assert.equal(leaders.length, 1, "exactly one candidate leads");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const leader = candidates.find((c) => c.elector.isLeader())!;
  const lease = await client.get(Lease, { namespace, name });
  assert.equal(lease.spec?.holderIdentity, leader.elector.identity);
  for (const c of candidates) assert.equal(c.elector.leader(), leader.elector.identity);
  return leader;
}

/** Milliseconds from now until `c` leads. */
async function timeUntilLeading(c: Candidate, since: number): Promise<number> {
  await eventually("the other candidate leads", () => c.elector.isLeader(), 30_000, 10);
  return performance.now() - since;
}

before(async () => {
  config = await env.start();
  client = newClient(config);
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
});

after(async () => {
  await env.stop();
});

describe("leader election against the API server", () => {
  it("elects exactly one of two candidates; when the leader stops without releasing, the other leads after the lease expires", async () => {
    const name = "no-release";
    const candidates = [candidate(name, "replica-a"), candidate(name, "replica-b")];
    const leader = await soleLeader(candidates, name);
    const other = candidates.find((c) => c !== leader)!;

    const stoppedAt = performance.now();
    leader.stop.abort();
    assert.deepEqual(await leader.done, {});
    assert.equal(
      (await client.get(Lease, { namespace, name })).spec?.holderIdentity,
      leader.elector.identity,
      "the lease is left to expire",
    );

    const took = await timeUntilLeading(other, stoppedAt);
    // Not before the lease expired: the last renewal was at most a retryPeriod before the stop.
    assert.ok(took >= LEASE_DURATION - 2 * RETRY_PERIOD, `took over after only ${took} ms`);
    // The other saw the last renewal within one attempt gap and takes over within another.
    const bound = LEASE_DURATION + 2 * MAX_ACQUIRE_GAP + SLACK;
    assert.ok(took <= bound, `took over after ${took} ms, bound ${bound} ms`);

    const lease = await client.get(Lease, { namespace, name });
    assert.equal(lease.spec?.holderIdentity, other.elector.identity);
    assert.equal(lease.spec?.leaseTransitions, 1);
    assert.equal(lease.spec?.leaseDurationSeconds, 3);
    other.stop.abort();
    assert.deepEqual(await other.done, {});
  });

  it("with releaseOnCancel, hands over within about one retryPeriod", async () => {
    const name = "release";
    const candidates = [
      candidate(name, "replica-a", { releaseOnCancel: true }),
      candidate(name, "replica-b", { releaseOnCancel: true }),
    ];
    const leader = await soleLeader(candidates, name);
    const other = candidates.find((c) => c !== leader)!;

    const stoppedAt = performance.now();
    leader.stop.abort();
    assert.deepEqual(await leader.done, {});
    const took = await timeUntilLeading(other, stoppedAt);
    const bound = MAX_ACQUIRE_GAP + SLACK;
    assert.ok(took <= bound, `took over after ${took} ms, bound ${bound} ms`);

    other.stop.abort();
    assert.deepEqual(await other.done, {});
    // The last one out leaves the Lease free, marked as client-go does.
    const lease = await client.get(Lease, { namespace, name });
    assert.equal(lease.spec?.holderIdentity ?? "", "");
    assert.equal(lease.spec?.leaseDurationSeconds, 1);
    assert.equal(lease.spec?.leaseTransitions, 1);
  });

  it("stops leading with LeaderElectionLostError when the API server is gone for renewDeadline", async () => {
    const name = "outage";
    const only = candidate(name, "replica-a");
    await only.elector.elected();
    await new Promise((resolve) => setTimeout(resolve, 2 * RETRY_PERIOD));
    assert.equal(only.elector.isLeader(), true);

    try {
      await env.stopAPIServer({ timeout: 0 });
      const downAt = performance.now();
      const { error } = await only.done;
      const took = performance.now() - downAt;
      assert.ok(error instanceof LeaderElectionLostError, String(error));
      assert.equal(error.identity, "replica-a");
      assert.deepEqual(error.lease, { namespace, name });
      assert.equal(only.elector.isLeader(), false);
      assert.ok(took <= RENEW_DEADLINE + SLACK, `gave up after ${took} ms`);
    } finally {
      await env.startAPIServer();
    }
    // The lease was not released: it still names the lost leader, to expire.
    const lease = await client.get(Lease, { namespace, name });
    assert.equal(lease.spec?.holderIdentity, "replica-a");
  });
});
