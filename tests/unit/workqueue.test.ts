import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import { realClock } from "../../lib/util/clock.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { itemExponentialFailure } from "../../lib/workqueue/rate_limiter.ts";
import {
  type GetResult,
  LOW_PRIORITY,
  WorkQueue,
  type WorkQueueOptions,
} from "../../lib/workqueue/workqueue.ts";

function fakeQueue<K = string>(options: WorkQueueOptions<K> = {}) {
  const clock = new FakeClock();
  const queue = new WorkQueue<K>({ clock, ...options });
  return { clock, queue };
}

/**
 * The item `get` hands out right now, or undefined when none is ready. An item that is ready
 * is taken synchronously by `get`; otherwise the abort releases the getter at once.
 */
async function poll<K>(queue: WorkQueue<K>): Promise<K | undefined> {
  const abort = new AbortController();
  const pending = queue.get(abort.signal);
  abort.abort();
  const result = await pending;
  return result.shutdown ? undefined : result.item;
}

/** Takes every ready item, in the order `get` hands them out, marking each done. */
async function drainReady<K>(queue: WorkQueue<K>): Promise<K[]> {
  const items: K[] = [];
  for (let item = await poll(queue); item !== undefined; item = await poll(queue)) {
    items.push(item);
    queue.done(item);
  }
  return items;
}

/** Whether `promise` has settled once pending callbacks have run. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(() => settled = true, () => settled = true);
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return settled;
}

describe("WorkQueue: de-duplication and processing", () => {
  it("queues an item once however often it is added", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    queue.add("b");
    queue.add("a");
    queue.add("a");
    assert.equal(queue.len(), 2);
    assert.deepEqual(await drainReady(queue), ["a", "b"]);
  });

  it("identifies object items by content, whatever their key order", () => {
    const { queue } = fakeQueue<{ namespace: string; name: string }>();
    queue.add({ namespace: "ns", name: "a" });
    queue.add({ name: "a", namespace: "ns" });
    queue.add({ namespace: "ns", name: "b" });
    assert.equal(queue.len(), 2);
  });

  it("uses a given keyOf", () => {
    const { queue } = fakeQueue<{ id: number; note: string }>({ keyOf: (item) => String(item.id) });
    queue.add({ id: 1, note: "first" });
    queue.add({ id: 1, note: "second" });
    assert.equal(queue.len(), 1);
  });

  it("rate-limits by the queue's keyOf when no limiter is given", () => {
    const { queue } = fakeQueue<{ id: number; note: string }>({ keyOf: (item) => String(item.id) });
    queue.addRateLimited({ id: 1, note: "first" });
    queue.addRateLimited({ id: 1, note: "second" });
    // One key for the limiter as for the queue: the second failure counts against the first.
    assert.equal(queue.numRequeues({ id: 1, note: "third" }), 2);
  });

  it("never hands out an item being processed; re-added meanwhile, it comes back once after done", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    assert.equal(await poll(queue), "a");
    queue.add("a");
    queue.add("a");
    assert.equal(queue.len(), 0);
    assert.equal(await poll(queue), undefined);
    queue.done("a");
    assert.equal(queue.len(), 1);
    assert.equal(await poll(queue), "a");
    assert.equal(await poll(queue), undefined);
    queue.done("a");
    assert.equal(await poll(queue), undefined);
  });

  it("hands a re-added item to a getter already waiting when it is done", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    assert.equal(await poll(queue), "a");
    const waiting = queue.get();
    queue.add("a");
    assert.equal(await isSettled(waiting), false);
    queue.done("a");
    assert.deepEqual(await waiting, { item: "a", priority: 0, shutdown: false });
  });

  it("hands out other items while one is processed", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    assert.equal(await poll(queue), "a");
    queue.add("a");
    queue.add("b");
    assert.equal(await poll(queue), "b");
  });

  it("ignores done for an item not being processed", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    queue.done("a");
    queue.done("never-added");
    assert.deepEqual(await drainReady(queue), ["a"]);
  });

  it("serves waiting getters in the order they called", async () => {
    const { queue } = fakeQueue();
    const getters = [queue.get(), queue.get(), queue.get()];
    queue.add("x");
    queue.add("y");
    queue.add("z");
    const results = await Promise.all(getters);
    assert.deepEqual(results.map((r) => (r.shutdown ? "shutdown" : r.item)), ["x", "y", "z"]);
  });
});

describe("WorkQueue: delays", () => {
  it("hands a delayed item out when its delay has passed, not before", async () => {
    const { clock, queue } = fakeQueue();
    queue.addAfter("a", 100);
    assert.equal(queue.len(), 0);
    clock.advance(99);
    assert.equal(await poll(queue), undefined);
    clock.advance(1);
    assert.equal(queue.len(), 1);
    assert.equal(await poll(queue), "a");
  });

  it("wakes a waiting getter when a delay ends", async () => {
    const { clock, queue } = fakeQueue();
    const waiting = queue.get();
    queue.addAfter("a", 10);
    clock.advance(10);
    assert.equal(((await waiting) as { item: string }).item, "a");
  });

  it("keeps many delayed items on one heap with exactly one armed timer", async () => {
    const { clock, queue } = fakeQueue();
    const count = 200;
    const delays = Array.from({ length: count }, (_, i) => ((i * 73) % count) + 1);
    for (const [i, delay] of delays.entries()) {
      queue.addAfter(`item-${i}`, delay);
      assert.equal(clock.pending(), 1);
      assert.equal(clock.nextDueAt(), Math.min(...delays.slice(0, i + 1)));
    }
    const order: number[] = [];
    for (let t = 1; t <= count; t++) {
      clock.advance(1);
      for (const item of await drainReady(queue)) order.push(delays[Number(item.slice(5))]);
      assert.equal(clock.pending(), t < count ? 1 : 0);
    }
    assert.equal(order.length, count);
    assert.deepEqual(order, [...order].sort((a, b) => a - b));
  });

  it("hands items due at the same time out in the order they were added", async () => {
    const { clock, queue } = fakeQueue();
    for (const item of ["c", "a", "b"]) queue.addAfter(item, 50);
    clock.advance(50);
    assert.deepEqual(await drainReady(queue), ["c", "a", "b"]);
  });

  it("keeps the earlier due time when a delayed item is added with another delay", async () => {
    const { clock, queue } = fakeQueue();
    queue.addAfter("sooner", 100);
    queue.addAfter("sooner", 30);
    queue.addAfter("kept", 30);
    queue.addAfter("kept", 100);
    assert.equal(clock.pending(), 1);
    assert.equal(clock.nextDueAt(), 30);
    clock.advance(30);
    assert.deepEqual((await drainReady(queue)).sort(), ["kept", "sooner"]);
    assert.equal(clock.pending(), 0);
  });

  it("makes a delayed item ready at once when it is added without delay", async () => {
    const { clock, queue } = fakeQueue();
    queue.addAfter("a", 1_000);
    queue.add("a");
    assert.equal(queue.len(), 1);
    assert.equal(clock.pending(), 0);
    assert.equal(await poll(queue), "a");
    queue.done("a");
    clock.advance(1_000);
    assert.equal(await poll(queue), undefined);
  });

  it("leaves a ready item ready when it is added with a delay", () => {
    const { clock, queue } = fakeQueue();
    queue.add("a");
    queue.addAfter("a", 1_000);
    assert.equal(queue.len(), 1);
    assert.equal(clock.pending(), 0);
  });

  it("re-arms the timer for the next item when the earliest is made ready", () => {
    const { clock, queue } = fakeQueue();
    queue.addAfter("a", 10);
    queue.addAfter("b", 20);
    queue.add("a");
    assert.equal(clock.pending(), 1);
    assert.equal(clock.nextDueAt(), 20);
  });

  it("adds a non-positive delay at once", () => {
    const { clock, queue } = fakeQueue();
    queue.addAfter("zero", 0);
    queue.addAfter("negative", -5);
    queue.addAfter("nan", Number.NaN);
    assert.equal(queue.len(), 3);
    assert.equal(clock.pending(), 0);
  });

  it("holds an item delayed while it is processed until both the delay and done", async () => {
    const { clock, queue } = fakeQueue();
    queue.add("a");
    assert.equal(await poll(queue), "a");
    queue.addAfter("a", 10);
    clock.advance(10);
    assert.equal(await poll(queue), undefined);
    queue.done("a");
    assert.equal(await poll(queue), "a");
  });

  it("fires delays longer than the runtime's timer limit on time", async () => {
    const { clock, queue } = fakeQueue();
    const delay = 2 ** 32;
    queue.addAfter("far", delay);
    clock.advance(2 ** 31);
    assert.equal(await poll(queue), undefined);
    assert.equal(clock.pending(), 1);
    clock.advance(delay - 2 ** 31 - 1);
    assert.equal(await poll(queue), undefined);
    clock.advance(1);
    assert.equal(await poll(queue), "far");
  });
});

describe("WorkQueue: priority", () => {
  it("hands out the highest priority first, in arrival order within a priority", async () => {
    const { queue } = fakeQueue();
    queue.add("low", { priority: LOW_PRIORITY });
    queue.add("normal-1");
    queue.add("high-1", { priority: 10 });
    queue.add("normal-2", { priority: 0 });
    queue.add("high-2", { priority: 10 });
    queue.add("normal-3");
    assert.deepEqual(await drainReady(queue), [
      "high-1",
      "high-2",
      "normal-1",
      "normal-2",
      "normal-3",
      "low",
    ]);
  });

  it("keeps first-in first-out order within one priority", async () => {
    const { queue } = fakeQueue();
    const items = Array.from({ length: 50 }, (_, i) => `item-${i}`);
    for (const item of items) queue.add(item);
    assert.deepEqual(await drainReady(queue), items);
  });

  it("raises a queued item added again with a higher priority, never lowers it", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    queue.add("b");
    queue.add("c");
    queue.add("c", { priority: 5 });
    queue.add("a", { priority: -10 });
    assert.deepEqual(await drainReady(queue), ["c", "a", "b"]);
  });

  it("gives a raised resync item its place among the higher priority", async () => {
    const { queue } = fakeQueue();
    queue.add("resync-1", { priority: LOW_PRIORITY });
    queue.add("resync-2", { priority: LOW_PRIORITY });
    queue.add("changed");
    queue.add("resync-2");
    assert.deepEqual(await drainReady(queue), ["resync-2", "changed", "resync-1"]);
  });

  it("keeps the highest priority of a delayed item", async () => {
    const { clock, queue } = fakeQueue();
    queue.add("other");
    queue.addAfter("a", 10, { priority: 3 });
    queue.addAfter("a", 20);
    clock.advance(10);
    const next = await queue.get();
    assert.deepEqual(next, { item: "a", priority: 3, shutdown: false });
  });

  it("reports the priority an item was handed out with", async () => {
    const { queue } = fakeQueue();
    queue.add("a", { priority: LOW_PRIORITY });
    assert.deepEqual(await queue.get(), { item: "a", priority: -100, shutdown: false });
  });

  it("rejects a NaN priority", () => {
    const { queue } = fakeQueue();
    assert.throws(() => queue.add("a", { priority: Number.NaN }), RangeError);
  });
});

describe("WorkQueue: rate limiting", () => {
  it("delays rate-limited retries 5, 10, 20, 40 ms by default and starts over after forget", async () => {
    const { clock, queue } = fakeQueue();
    for (const expected of [5, 10, 20, 40]) {
      queue.addRateLimited("a");
      assert.equal(clock.nextDueAt(), clock.now() + expected);
      clock.advance(expected - 1);
      assert.equal(await poll(queue), undefined);
      clock.advance(1);
      assert.equal(await poll(queue), "a");
      queue.done("a");
    }
    assert.equal(queue.numRequeues("a"), 4);
    queue.forget("a");
    assert.equal(queue.numRequeues("a"), 0);
    queue.addRateLimited("a");
    assert.equal(clock.nextDueAt(), clock.now() + 5);
  });

  it("uses the given rate limiter", () => {
    const { clock, queue } = fakeQueue({ rateLimiter: itemExponentialFailure(100, 150) });
    queue.addRateLimited("a");
    assert.equal(clock.nextDueAt(), 100);
    queue.addRateLimited("b");
    queue.addRateLimited("b");
    assert.equal(queue.numRequeues("b"), 2);
  });

  it("keeps the priority of a rate-limited add", async () => {
    const { clock, queue } = fakeQueue();
    queue.add("plain");
    queue.addRateLimited("retried", { priority: 1 });
    clock.advance(5);
    assert.deepEqual(await drainReady(queue), ["retried", "plain"]);
  });
});

describe("WorkQueue: shutting down", () => {
  it("shutDown drops queued and delayed items, ignores adds and answers get with shutdown", async () => {
    const { clock, queue } = fakeQueue();
    queue.add("a");
    queue.addAfter("b", 10);
    queue.shutDown();
    assert.equal(queue.shuttingDown(), true);
    assert.equal(queue.len(), 0);
    assert.equal(clock.pending(), 0);

    queue.add("c");
    queue.addAfter("d", 5);
    queue.addRateLimited("e");
    assert.equal(queue.len(), 0);
    assert.equal(clock.pending(), 0);
    assert.equal(queue.numRequeues("e"), 0);
    clock.advance(10);
    assert.deepEqual(await queue.get(), { shutdown: true });
  });

  it("shutDown releases every getter that is waiting", async () => {
    const { queue } = fakeQueue();
    const waiting = [queue.get(), queue.get()];
    assert.equal(await isSettled(waiting[0]), false);
    queue.shutDown();
    assert.deepEqual(await Promise.all(waiting), [{ shutdown: true }, { shutdown: true }]);
  });

  it("shutDown does not hand out again an item re-added while it was processed", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    assert.equal(await poll(queue), "a");
    queue.add("a");
    queue.shutDown();
    queue.done("a");
    assert.equal(queue.len(), 0);
    assert.deepEqual(await queue.get(), { shutdown: true });
  });

  it("shutDownWithDrain hands out queued items and resolves once in-flight work is done", async () => {
    const { clock, queue } = fakeQueue();
    queue.add("in-flight");
    assert.equal(await poll(queue), "in-flight");
    queue.add("in-flight"); // re-added while processing: still owed after done
    queue.add("queued");
    queue.addAfter("delayed", 10);

    const drained = queue.shutDownWithDrain();
    assert.equal(queue.shuttingDown(), true);
    assert.equal(clock.pending(), 0); // delayed items are dropped
    queue.add("late");
    assert.equal(await isSettled(drained), false);

    assert.equal(await poll(queue), "queued");
    const waiting = queue.get(); // the re-added item is still to come
    assert.equal(await isSettled(waiting), false);
    queue.done("in-flight");
    assert.deepEqual(await waiting, { item: "in-flight", priority: 0, shutdown: false });

    const released = queue.get(); // nothing left to hand out: released at once
    assert.deepEqual(await released, { shutdown: true });
    queue.done("queued");
    assert.equal(await isSettled(drained), false);
    queue.done("in-flight");
    await drained;
    clock.advance(10);
    assert.deepEqual(await queue.get(), { shutdown: true });
  });

  it("shutDownWithDrain resolves at once when nothing is queued or processed", async () => {
    const { queue } = fakeQueue();
    const waiting = queue.get();
    await queue.shutDownWithDrain();
    assert.deepEqual(await waiting, { shutdown: true });
  });

  it("shutDown ends a drain that is waiting", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    assert.equal(await poll(queue), "a");
    queue.add("b");
    const drained = queue.shutDownWithDrain();
    assert.equal(await isSettled(drained), false);
    queue.shutDown();
    await drained;
    assert.deepEqual(await queue.get(), { shutdown: true });
    assert.equal(await queue.shutDownWithDrain(), undefined);
  });

  it("shutDownWithDrain after shutDown resolves at once", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    assert.equal(await poll(queue), "a");
    queue.shutDown();
    assert.equal(await isSettled(queue.shutDownWithDrain()), true);
  });
});

describe("WorkQueue: abort signals", () => {
  it("an aborted signal releases only its own getter", async () => {
    const { queue } = fakeQueue();
    const abort = new AbortController();
    const first = queue.get(abort.signal);
    const second = queue.get();
    abort.abort();
    assert.deepEqual(await first, { shutdown: true });
    assert.equal(queue.shuttingDown(), false);
    queue.add("a");
    assert.deepEqual(await second, { item: "a", priority: 0, shutdown: false });
  });

  it("an item added after an abort is not lost to the aborted getter", async () => {
    const { queue } = fakeQueue();
    const abort = new AbortController();
    const aborted = queue.get(abort.signal);
    abort.abort();
    queue.add("a");
    assert.deepEqual(await aborted, { shutdown: true });
    assert.equal(await poll(queue), "a");
  });

  it("a signal aborted before the call gets nothing, even with items ready", async () => {
    const { queue } = fakeQueue();
    queue.add("a");
    assert.deepEqual(await queue.get(AbortSignal.abort()), { shutdown: true });
    assert.equal(queue.len(), 1);
  });

  it("a signal that never aborts does not hold an item back", async () => {
    const { queue } = fakeQueue();
    const abort = new AbortController();
    const waiting = queue.get(abort.signal);
    queue.add("a");
    assert.deepEqual(await waiting, { item: "a", priority: 0, shutdown: false });
    abort.abort(); // after the hand-out: changes nothing
    assert.equal(await poll(queue), undefined);
    queue.done("a");
  });
});

describe("WorkQueue: metrics", () => {
  function recordingQueue() {
    const events: string[] = [];
    const { clock, queue } = fakeQueue({
      name: "metrics",
      metrics: {
        adds: () => events.push("add"),
        depth: (n) => events.push(`depth ${n}`),
        latency: (s) => events.push(`latency ${s}`),
        workDuration: (s) => events.push(`work ${s}`),
        retries: () => events.push("retry"),
      },
    });
    return { clock, queue, events };
  }

  it("reports adds, depth, queue latency and work duration in seconds", async () => {
    const { clock, queue, events } = recordingQueue();
    assert.equal(queue.name, "metrics");
    queue.add("a");
    queue.add("a"); // a duplicate is no add
    queue.add("b");
    assert.deepEqual(events.splice(0), ["add", "depth 1", "add", "depth 2"]);
    clock.advance(2_000);
    assert.equal(await poll(queue), "a");
    assert.deepEqual(events.splice(0), ["depth 1", "latency 2"]);
    clock.advance(500);
    queue.done("a");
    assert.deepEqual(events.splice(0), ["work 0.5"]);
  });

  it("counts retries for delayed and rate-limited adds, and the add when the delay ends", async () => {
    const { clock, queue, events } = recordingQueue();
    queue.addRateLimited("a");
    queue.addAfter("b", 100);
    assert.deepEqual(events.splice(0), ["retry", "retry"]);
    clock.advance(5);
    assert.deepEqual(events.splice(0), ["add", "depth 1"]);
    clock.advance(95);
    assert.deepEqual(events.splice(0), ["add", "depth 2"]);
    clock.advance(1);
    assert.equal(await poll(queue), "a");
    assert.deepEqual(events.splice(0), ["depth 1", "latency 0.096"]);
  });

  it("counts an item re-added while processing in the depth until it is handed out", async () => {
    const { queue, events } = recordingQueue();
    queue.add("a");
    assert.equal(await poll(queue), "a");
    events.length = 0;
    queue.add("a");
    assert.deepEqual(events.splice(0), ["add", "depth 1"]);
    assert.equal(queue.len(), 0);
    queue.done("a");
    assert.equal(await poll(queue), "a");
    assert.deepEqual(events.splice(0), ["work 0", "depth 0", "latency 0"]);
  });

  it("measures unfinished work and the longest-running item at any time", async () => {
    const { clock, queue } = fakeQueue();
    queue.add("a");
    queue.add("b");
    assert.equal(queue.unfinishedWorkSeconds(), 0);
    assert.equal(queue.longestRunningProcessorSeconds(), 0);
    assert.equal(await poll(queue), "a");
    clock.advance(1_000);
    assert.equal(await poll(queue), "b");
    clock.advance(500);
    assert.equal(queue.unfinishedWorkSeconds(), 2);
    assert.equal(queue.longestRunningProcessorSeconds(), 1.5);
    queue.done("a");
    assert.equal(queue.unfinishedWorkSeconds(), 0.5);
    assert.equal(queue.longestRunningProcessorSeconds(), 0.5);
  });
});

describe("FakeClock", () => {
  it("fires due timers in time order, with now() at each due time", () => {
    const clock = new FakeClock(1_000);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 20);
    clock.setTimeout(() => fired.push(`a@${clock.now()}`), 10);
    clock.setTimeout(() => fired.push(`c@${clock.now()}`), 20);
    clock.setTimeout(() => fired.push(`late@${clock.now()}`), 100);
    assert.equal(clock.pending(), 4);
    clock.advance(50);
    assert.deepEqual(fired, ["a@1010", "b@1020", "c@1020"]);
    assert.equal(clock.now(), 1_050);
    assert.equal(clock.pending(), 1);
    assert.equal(clock.nextDueAt(), 1_100);
  });

  it("fires timers armed by timers when they fall due within the same advance", () => {
    const clock = new FakeClock();
    const fired: number[] = [];
    clock.setTimeout(() => {
      fired.push(clock.now());
      clock.setTimeout(() => fired.push(clock.now()), 5);
    }, 5);
    clock.advance(10);
    assert.deepEqual(fired, [5, 10]);
  });

  it("does not fire cleared timers and rejects going back in time", () => {
    const clock = new FakeClock();
    let fired = false;
    const handle = clock.setTimeout(() => fired = true, 1);
    clock.clearTimeout(handle);
    clock.advance(10);
    assert.equal(fired, false);
    assert.equal(clock.pending(), 0);
    assert.equal(clock.nextDueAt(), undefined);
    assert.throws(() => clock.advance(-1), RangeError);
  });
});

describe("realClock", () => {
  it("reads a monotonic time and fires and clears timers", async () => {
    const before = realClock.now();
    await new Promise<void>((resolve) => realClock.setTimeout(resolve, 1));
    assert.ok(realClock.now() >= before);
    let fired = false;
    const handle = realClock.setTimeout(() => fired = true, 0);
    realClock.clearTimeout(handle);
    const long = realClock.setTimeout(() => fired = true, 2 ** 31 + 10);
    realClock.clearTimeout(long);
    await new Promise<void>((resolve) => realClock.setTimeout(resolve, 5));
    assert.equal(fired, false);
  });
});

describe("WorkQueue on the real clock", () => {
  const runtime = "Deno" in globalThis ? "deno" : "Bun" in globalThis ? "bun" : "node";
  const moduleUrl = new URL("../../lib/workqueue/workqueue.ts", import.meta.url).href;

  function runScript(body: string): { status: number | null; stdout: string; stderr: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rudder-workqueue-"));
    try {
      const file = path.join(dir, "main.ts");
      fs.writeFileSync(file, `import { WorkQueue } from ${JSON.stringify(moduleUrl)};\n${body}`);
      const args = runtime === "deno"
        ? ["run", "-A", "--no-config", file]
        : runtime === "bun"
        ? ["run", file]
        : [file];
      const result = spawnSync(process.execPath, args, { encoding: "utf8", timeout: 60_000 });
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it("does not keep the process alive when idle, even with a getter waiting", () => {
    const result = runScript(`
      const queue = new WorkQueue<string>();
      queue.addAfter("a", 600_000);
      queue.add("a"); // ready now: no timer may be left behind
      const first = await queue.get();
      console.log("got", first.shutdown ? "shutdown" : first.item);
      queue.get().then(() => console.log("unexpected")); // waits for ever
    `);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /got a/);
    assert.doesNotMatch(result.stdout, /unexpected/);
  });

  it("keeps the process alive until a delayed item is handed out", () => {
    const result = runScript(`
      const queue = new WorkQueue<string>();
      queue.addAfter("delayed", 50);
      const next = await queue.get();
      console.log("got", next.shutdown ? "shutdown" : next.item);
    `);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /got delayed/);
  });
});

// Keeps the GetResult type in use, so a change to it breaks this file.
const _typeCheck: GetResult<string>[] = [{ shutdown: true }, {
  item: "a",
  priority: 0,
  shutdown: false,
}];
void _typeCheck;
