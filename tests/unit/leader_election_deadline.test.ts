// Where the renew deadline counts from when acquiring the Lease was slow (an API server coming
// back from an outage): from the moment the winning write was sent, not from the start of the
// attempt. On the fake clock; the requests are made slow by moving the clock inside them.
import { describe, it } from "node:test";
import { setImmediate } from "node:timers";
import assert from "node:assert/strict";
import { Lease } from "../../lib/api/builtins.ts";
import type { Client } from "../../lib/client/client.ts";
import { newInterceptedClient } from "../../lib/client/interceptor.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import {
  LeaderElectionLostError,
  LeaderElector,
} from "../../lib/leaderelection/leader_election.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";

const namespace = "operators";
const name = "example-leader";
const key = { namespace, name };
// Defaults: lease 15 s, renew deadline 10 s, retry 2 s.
const RENEW_DEADLINE = 10_000;
const STEP = 100;

async function flush(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function advance(clock: FakeClock, ms: number): Promise<void> {
  for (let done = 0; done < ms; done += STEP) {
    clock.advance(Math.min(STEP, ms - done));
    await flush();
  }
}

const unavailable = () =>
  new ApiError({ code: 503, reason: "ServiceUnavailable", message: "the server is coming back" });

/** The Lease as a leader that stepped down before the outage left it: free to take. */
async function seedReleasedLease(client: Client): Promise<void> {
  await client.create<Lease>({
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { ...key },
    spec: {
      holderIdentity: "",
      leaseDurationSeconds: 1,
      renewTime: "2026-01-01T00:00:00.000000Z",
    },
  });
}

interface Slow {
  /** Fake milliseconds the next read of the Lease takes (then reset to 0). */
  getMs: number;
  /** Fake milliseconds each write takes before it lands. */
  updateMs: number;
  /** Every request fails at once while true. */
  down: boolean;
  /** Clock time at which the slow read started. */
  slowReadAt?: number;
  /** Clock times at which writes were sent and answered. */
  writes: { sentAt: number; answeredAt: number }[];
}

function slowClient(clock: FakeClock, slow: Slow): Client {
  return newInterceptedClient(new FakeClient(), {
    get: (inner, type, k, options) => {
      if (slow.down) return Promise.reject(unavailable());
      // The connection hangs until the server is back: the read answers late, but fine.
      if (slow.getMs > 0) slow.slowReadAt = clock.now();
      clock.advance(slow.getMs);
      slow.getMs = 0;
      return inner.get(type, k, options);
    },
    update: async (inner, obj, options) => {
      if (slow.down) throw unavailable();
      const sentAt = clock.now();
      clock.advance(slow.updateMs);
      const written = await inner.update(obj, options);
      slow.writes.push({ sentAt, answeredAt: clock.now() });
      return written;
    },
  });
}

function run(client: Client, clock: FakeClock) {
  const elector = new LeaderElector({ client, namespace, name, identity: "a", clock });
  const stop = new AbortController();
  let outcome: { error?: unknown } | undefined;
  elector.run(stop.signal).then(() => outcome = {}, (error) => outcome = { error });
  return { elector, stop, outcome: () => outcome };
}

const T = { timeout: 20_000 };

/** Waits for the elector to lead, moving the clock; fails after a minute of fake time. */
async function elected(elector: LeaderElector, clock: FakeClock): Promise<void> {
  const start = clock.now();
  while (!elector.isLeader()) {
    if (clock.now() - start > 60_000) assert.fail("the elector never took the Lease");
    await advance(clock, STEP);
  }
}

describe("LeaderElector after a slow acquisition", T, () => {
  it("keeps the Lease it took with a read that waited out most of renewDeadline", T, async () => {
    const clock = new FakeClock();
    const slow: Slow = { getMs: 0, updateMs: 0, down: false, writes: [] };
    const client = slowClient(clock, slow);
    await seedReleasedLease(client);
    slow.getMs = RENEW_DEADLINE - 800; // the attempt's read hangs until the server is back
    const a = run(client, clock);
    await elected(a.elector, clock);
    assert.equal(slow.writes.length, 1, "the acquiring write");
    const late = slow.writes[0].sentAt - slow.slowReadAt!;
    assert.ok(late >= RENEW_DEADLINE - 800 && late < RENEW_DEADLINE, `written ${late} ms late`);

    // Counted from the start of the attempt, the deadline would fall 800 ms from now, before
    // the first renewal is due: the elector would give the Lease up at once.
    await advance(clock, 3 * RENEW_DEADLINE);
    assert.equal(a.outcome(), undefined, "run() still running");
    assert.equal(a.elector.isLeader(), true);
    assert.ok(slow.writes.length >= 10, `renewed every retryPeriod: ${slow.writes.length} writes`);
    const lease = await client.get(Lease, key);
    assert.equal(lease.spec?.holderIdentity, "a");
    a.stop.abort();
    await advance(clock, STEP);
    assert.deepEqual(a.outcome(), {});
  });

  it(
    "still stops leading within renewDeadline of sending its last successful write",
    T,
    async () => {
      const clock = new FakeClock();
      const slow: Slow = { getMs: 0, updateMs: 0, down: false, writes: [] };
      const client = slowClient(clock, slow);
      await seedReleasedLease(client);
      slow.getMs = 6_000;
      slow.updateMs = 3_000; // a write that lands, but whose answer comes late
      const a = run(client, clock);
      await elected(a.elector, clock);
      const { sentAt, answeredAt } = slow.writes[0];
      assert.ok(sentAt - slow.slowReadAt! >= 6_000, "the write followed the slow read");
      assert.equal(answeredAt - sentAt, 3_000);
      slow.down = true;

      // Others may see the write land as early as it was sent and take over leaseDuration (15 s)
      // later; the leader must be gone by sentAt + renewDeadline, not answeredAt + renewDeadline.
      while (a.outcome() === undefined && clock.now() < answeredAt + RENEW_DEADLINE + 1_000) {
        await advance(clock, STEP);
      }
      const error = a.outcome()?.error;
      assert.ok(error instanceof LeaderElectionLostError, `lost the Lease: ${error}`);
      assert.ok(
        clock.now() <= sentAt + RENEW_DEADLINE,
        `stopped leading at ${clock.now()} ms, after ${sentAt + RENEW_DEADLINE} ms`,
      );
      assert.ok(clock.now() >= sentAt + RENEW_DEADLINE - STEP, `not before its deadline`);
      assert.equal(a.elector.isLeader(), false);
    },
  );
});
