// The Manager's runnable groups: start group by group (each ready before the next), stop in
// reverse within one grace period, failures reported, lost leadership not waited for.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { GROUPS, Runnables } from "../../lib/manager/runnable_group.ts";
import type { Runnable } from "../../lib/util/runnable.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";

const T = { timeout: 30_000 };

/** Lets every pending promise reaction run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}

/** A runnable that logs its start and its stop, and returns once its signal aborts. */
function recorder(name: string, log: string[], extra: Partial<Runnable> = {}): Runnable {
  return {
    start: (signal) =>
      new Promise<void>((resolve) => {
        log.push(`start ${name}`);
        signal.addEventListener("abort", () => {
          log.push(`stop ${name}`);
          // Returns a moment after its signal: the next group must wait for that.
          setTimeout(() => {
            log.push(`returned ${name}`);
            resolve();
          }, 1);
        }, { once: true });
      }),
    ...extra,
  };
}

/** A readiness the test releases by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { promise, open: () => resolve() };
}

describe("runnable groups", () => {
  it("start group by group, each once the one before is ready", T, async () => {
    const log: string[] = [];
    const runnables = new Runnables();
    const cacheSynced = gate();
    const leading = gate();
    // Added in reverse order: the group decides the order, not the call order.
    runnables.add(recorder("controller", log), "leader runnables");
    runnables.add(
      recorder("elector", log, { ready: () => leading.promise }),
      "leader election",
    );
    runnables.add(recorder("other", log), "others");
    runnables.add({
      ...recorder("cache", log),
      waitForCacheSync: () => cacheSynced.promise.then(() => true),
    } as Runnable, "caches");
    runnables.add(recorder("webhooks", log, { ready: () => Promise.resolve() }), "webhooks");
    runnables.add(recorder("metrics", log, { ready: () => Promise.resolve() }), "HTTP servers");

    const stop = new AbortController();
    const started = runnables.start(stop.signal, (err) => assert.fail(String(err)));
    await settle();
    assert.deepEqual(log, ["start metrics", "start webhooks", "start cache"]);
    cacheSynced.open();
    await settle();
    assert.deepEqual(log.slice(3), ["start other", "start elector"]);
    leading.open();
    await started;
    assert.deepEqual(log.slice(5), ["start controller"]);

    stop.abort();
    const outcome = await runnables.stop({ gracePeriod: 10_000 });
    assert.deepEqual(outcome.stillRunning, []);
  });

  it(
    "start the runnables of one group in the order added, waiting for each one's readiness",
    T,
    async () => {
      const log: string[] = [];
      const runnables = new Runnables();
      const certificate = gate();
      runnables.add(
        recorder("certificates", log, { ready: () => certificate.promise }),
        "webhooks",
      );
      runnables.add(recorder("webhook server", log), "webhooks");
      const started = runnables.start(new AbortController().signal, () => {});
      await settle();
      assert.deepEqual(log, ["start certificates"]);
      certificate.open();
      await started;
      assert.deepEqual(log, ["start certificates", "start webhook server"]);
      await runnables.stop({ gracePeriod: 10_000 });
    },
  );

  it(
    "stop in reverse, each group's runnables returned before the next group is stopped",
    T,
    async () => {
      const log: string[] = [];
      const runnables = new Runnables();
      for (const group of GROUPS) runnables.add(recorder(group, log), group);
      await runnables.start(new AbortController().signal, () => {});
      log.length = 0;
      const outcome = await runnables.stop({ gracePeriod: 10_000 });
      assert.deepEqual(outcome.stillRunning, []);
      const expected = [...GROUPS].reverse().flatMap((g) => [`stop ${g}`, `returned ${g}`]);
      assert.deepEqual(log, expected);
    },
  );

  it("report a runnable that fails, and stop starting when told", T, async () => {
    const log: string[] = [];
    const runnables = new Runnables();
    const broken = new Error("runnable broke");
    runnables.add({ start: () => Promise.reject(broken) }, "others");
    runnables.add({
      ...recorder("cache", log),
      waitForCacheSync: () => Promise.resolve(true),
    } as Runnable, "caches");
    runnables.add(recorder("controller", log), "leader runnables");
    const errors: unknown[] = [];
    const stop = new AbortController();
    // What the manager does with a failure: remember it and stop.
    await runnables.start(stop.signal, (err) => {
      errors.push(err);
      stop.abort();
    });
    assert.deepEqual(errors, [broken]);
    await settle();
    assert.ok(!log.includes("start controller"), "nothing starts after a failure");
    await runnables.stop({ gracePeriod: 10_000 });
    assert.deepEqual(log, ["start cache", "stop cache", "returned cache"]);
  });

  it("report a runnable that throws at once, and one whose readiness fails", T, async () => {
    const runnables = new Runnables();
    runnables.add({
      start: () => {
        throw new Error("thrown at once");
      },
    }, "others");
    runnables.add({
      start: (signal) =>
        new Promise((resolve) => signal.addEventListener("abort", () => resolve())),
      ready: () => Promise.reject(new Error("port taken")),
    }, "HTTP servers");
    const errors: string[] = [];
    await runnables.start(new AbortController().signal, (err) => errors.push(String(err)));
    assert.deepEqual(errors, ["Error: port taken", "Error: thrown at once"]);
    await runnables.stop({ gracePeriod: 10_000 });
  });

  it("stop waiting for a cache that does not sync when the stop comes", T, async () => {
    const runnables = new Runnables();
    runnables.add({
      start: (signal) =>
        new Promise((resolve) => signal.addEventListener("abort", () => resolve())),
      waitForCacheSync: () => new Promise<boolean>(() => {}),
    } as Runnable, "caches");
    const controller = recorder("controller", []);
    runnables.add(controller, "leader runnables");
    const stop = new AbortController();
    const started = runnables.start(stop.signal, () => {});
    await settle();
    stop.abort();
    await started; // ends at once, without the cache ever syncing
    assert.deepEqual((await runnables.stop({ gracePeriod: 10_000 })).stillRunning, []);
  });

  it("cut a runnable that ignores its signal off at the grace period, naming it", T, async () => {
    const clock = new FakeClock();
    const log: string[] = [];
    const runnables = new Runnables();
    class Stubborn implements Runnable {
      start(): Promise<void> {
        return new Promise(() => {});
      }
      needLeaderElection(): boolean {
        return false;
      }
    }
    runnables.add(recorder("metrics", log), "HTTP servers");
    runnables.add(new Stubborn(), "others");
    await runnables.start(new AbortController().signal, () => {});
    const stopping = runnables.stop({ gracePeriod: 30_000, clock });
    await settle();
    assert.ok(!log.includes("stop metrics"), "the servers wait for the group before them");
    clock.advance(29_999);
    await settle();
    assert.ok(!log.includes("stop metrics"));
    clock.advance(1);
    const outcome = await stopping;
    assert.deepEqual(outcome.stillRunning, ["others: Stubborn"]);
    assert.ok(log.includes("stop metrics"), "the groups not yet stopped are aborted");
  });

  it(
    "abort the leader runnables without waiting when leadership is lost, then stop the rest",
    T,
    async () => {
      const log: string[] = [];
      const runnables = new Runnables();
      let controllerSignal: AbortSignal | undefined;
      runnables.add({
        name: "reconciler",
        start: (signal) => {
          controllerSignal = signal;
          return new Promise(() => {}); // a reconcile that never ends
        },
      }, "leader runnables");
      runnables.add(recorder("elector", log), "leader election");
      runnables.add(recorder("cache", log), "caches");
      await runnables.start(new AbortController().signal, () => {});
      const outcome = await runnables.stop({ gracePeriod: 10_000, abandonLeaders: true });
      assert.equal(controllerSignal?.aborted, true, "the leader runnables are told to stop");
      assert.deepEqual(outcome.stillRunning, []);
      assert.deepEqual(log.filter((l) => l.startsWith("stop")), ["stop elector", "stop cache"]);
    },
  );

  it(
    "start a runnable added to a running group at once, and wait for it at the stop",
    T,
    async () => {
      const log: string[] = [];
      const runnables = new Runnables();
      await runnables.start(new AbortController().signal, () => {});
      runnables.add(recorder("late", log), "leader runnables");
      assert.deepEqual(log, ["start late"]);
      assert.equal(runnables.size("leader runnables"), 1);
      await runnables.stop({ gracePeriod: 10_000 });
      assert.deepEqual(log, ["start late", "stop late", "returned late"]);
    },
  );

  it(
    "name what is still running by its name, its class, or its place in the group",
    T,
    async () => {
      const clock = new FakeClock();
      const runnables = new Runnables();
      const forever = () => new Promise<void>(() => {});
      class Watchdog implements Runnable {
        start = forever;
      }
      runnables.add({ name: "janitor", start: forever }, "others");
      runnables.add(new Watchdog(), "others");
      runnables.add({ start: forever }, "others");
      await runnables.start(new AbortController().signal, () => {});
      const stopping = runnables.stop({ gracePeriod: 5, clock });
      clock.advance(5);
      assert.deepEqual((await stopping).stillRunning, [
        "others: janitor",
        "others: Watchdog",
        "others: runnable 3 of others",
      ]);
    },
  );
});
