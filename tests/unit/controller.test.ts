// The controller's worker loop and the builder's rules, with hand-made sources and a fake
// clock. The full loop against the real API server is in tests/integration/controller.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Pod, Secret } from "../../lib/api/builtins.ts";
import { enqueueRequestForObject } from "../../lib/handler/handler.ts";
import type { Cache } from "../../lib/cache/cache.ts";
import { type ControllerHost, newControllerManagedBy } from "../../lib/controller/builder.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { Controller, type ControllerMetrics } from "../../lib/controller/controller.ts";
import {
  isTerminalError,
  type ReconcileContext,
  TerminalError,
} from "../../lib/reconcile/reconcile.ts";
import { type Runnable } from "../../lib/util/runnable.ts";
import type { Request, RequestQueue } from "../../lib/reconcile/reconcile.ts";
import type { Source } from "../../lib/source/source.ts";
import { itemExponentialFailure } from "../../lib/workqueue/rate_limiter.ts";
import { eventually } from "../support/eventually.ts";

/** A source the test feeds by hand; `synced` decides whether it ever syncs. */
function manualSource(synced = true): Source & { queue?: RequestQueue } {
  const source: Source & { queue?: RequestQueue } = {
    description: synced ? "manual source" : "never-syncing source",
    start(_signal, queue) {
      source.queue = queue;
      return Promise.resolve();
    },
    waitForSync: (signal) =>
      synced ? Promise.resolve() : new Promise((_, reject) => {
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      }),
  };
  return source;
}

const req = (name: string): Request => ({ namespace: "ns", name });

describe("Controller", () => {
  it("treats every kind of throw as an error to retry, and a TerminalError as final", async () => {
    const clock = new FakeClock(0);
    const attempts = new Map<string, number>();
    const results: string[] = [];
    const metrics: ControllerMetrics = {
      reconcileTotal: (_c, result) => results.push(result),
    };
    const controller = new Controller("throws", (request) => {
      const n = (attempts.get(request.name) ?? 0) + 1;
      attempts.set(request.name, n);
      if (n > 1) return {};
      switch (request.name) {
        case "string":
          throw "a plain string";
        case "rejected":
          return Promise.reject(new Error("rejected"));
        case "terminal":
          throw new TerminalError(new Error("never works"));
        case "wrapped-terminal":
          throw new Error("outer", { cause: new TerminalError("inner") });
      }
      return {};
    }, { clock, metrics, rateLimiter: itemExponentialFailure(5, 1000) });
    const source = manualSource();
    controller.watch(source);
    const stop = new AbortController();
    const running = controller.start(stop.signal);
    await eventually("the source started", () => source.queue !== undefined);
    for (const name of ["string", "rejected", "terminal", "wrapped-terminal"]) {
      source.queue!.add(req(name));
    }
    await eventually("the first attempts ran", () => attempts.size === 4);
    clock.advance(5);
    await eventually(
      "the retries ran",
      () => attempts.get("string") === 2 && attempts.get("rejected") === 2,
    );
    clock.advance(10_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(attempts.get("terminal"), 1);
    assert.equal(attempts.get("wrapped-terminal"), 1);
    assert.ok(isTerminalError(new Error("outer", { cause: new TerminalError("inner") })));
    assert.equal(results.filter((r) => r === "error").length, 4);
    stop.abort();
    await running;
  });

  it("aborts a reconcile's signal after reconciliationTimeout, and requeues as asked", async () => {
    const clock = new FakeClock(0);
    let seen: ReconcileContext | undefined;
    let calls = 0;
    const controller = new Controller("timeouts", async (_request, ctx) => {
      calls++;
      seen = ctx;
      if (calls === 1) {
        await new Promise((resolve) =>
          ctx.signal.addEventListener("abort", resolve, { once: true })
        );
        return { requeue: true };
      }
      return { requeueAfter: 1000 };
    }, { clock, reconciliationTimeout: 30, rateLimiter: itemExponentialFailure(7, 1000) });
    const source = manualSource();
    controller.watch(source);
    const stop = new AbortController();
    const running = controller.start(stop.signal);
    await eventually("started", () => source.queue !== undefined);
    source.queue!.add(req("slow"));
    await eventually(
      "the timeout aborted the first reconcile",
      () => seen?.signal.aborted === true,
    );
    assert.match(seen!.reconcileID, /^[0-9a-f-]{36}$/);
    clock.advance(7); // requeue: true goes through the rate limiter
    await eventually("the rate-limited requeue ran", () => calls === 2);
    clock.advance(999);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls, 2, "requeueAfter waits its full interval");
    clock.advance(1);
    await eventually("requeueAfter ran", () => calls === 3);
    stop.abort();
    await running;
  });

  it("starts a request's backoff over after requeueAfter: its next failure waits the base delay", async () => {
    const clock = new FakeClock(0);
    const script = ["error", "error", "error", "requeueAfter", "error", "done"];
    let calls = 0;
    const controller = new Controller("backoff-reset", () => {
      const step = script[calls++];
      if (step === "error") throw new Error("not yet");
      return step === "requeueAfter" ? { requeueAfter: 1000 } : {};
    }, { clock, rateLimiter: itemExponentialFailure(10, 100_000) });
    const source = manualSource();
    controller.watch(source);
    const stop = new AbortController();
    const running = controller.start(stop.signal);
    await eventually("the source started", () => source.queue !== undefined);
    source.queue!.add(req("a"));
    const waits: number[] = [];
    for (let n = 1; n < script.length; n++) {
      await eventually(
        `reconcile ${n} (${script[n - 1]}) queued the request again`,
        () => calls === n && clock.pending() === 1,
      );
      const wait = clock.nextDueAt()! - clock.now();
      waits.push(wait);
      clock.advance(wait);
    }
    await eventually("the last reconcile ran", () => calls === script.length);
    // Three failures back off 10, 20, 40 ms; after requeueAfter the count starts again at 10,
    // not at the 80 ms a fourth failure in a row would wait.
    assert.deepEqual(waits, [10, 20, 40, 1000, 10]);
    stop.abort();
    await running;
  });

  for (const how of ["requeueAfter", "requeue", "an error"] as const) {
    it(`keeps a request's priority when ${how} queues it again`, async () => {
      const clock = new FakeClock(0);
      const order: string[] = [];
      let releaseGate!: () => void;
      const gate = new Promise<void>((resolve) => releaseGate = resolve);
      const controller = new Controller(`priority-${how.replace(" ", "-")}`, async (request) => {
        order.push(request.name);
        if (request.name === "gate") await gate;
        // Only urgent's first reconcile asks to run again.
        if (request.name !== "urgent" || order.filter((n) => n === "urgent").length > 1) return {};
        if (how === "requeueAfter") return { requeueAfter: 50 };
        if (how === "requeue") return { requeue: true };
        throw new Error("retry me");
      }, { clock, rateLimiter: itemExponentialFailure(50, 1000) });
      const source = manualSource();
      controller.watch(source);
      const stop = new AbortController();
      const running = controller.start(stop.signal);
      await eventually("the source started", () => source.queue !== undefined);
      source.queue!.add(req("urgent"), { priority: 10 });
      await eventually("urgent ran and waits 50 ms", () => clock.pending() === 1);
      // The one worker is held while a request of priority 5 and the requeued one get ready.
      source.queue!.add(req("gate"), { priority: 100 });
      await eventually("the worker is held", () => order.includes("gate"));
      source.queue!.add(req("routine"), { priority: 5 });
      clock.advance(50);
      releaseGate();
      await eventually("both ran", () => order.length === 4);
      assert.deepEqual(order, ["urgent", "gate", "urgent", "routine"]);
      stop.abort();
      await running;
    });
  }

  it("fails when its sources do not sync within cacheSyncTimeout, naming them", async () => {
    const controller = new Controller("unsynced", () => ({}), { cacheSyncTimeout: 50 });
    controller.watch(manualSource(true));
    controller.watch(manualSource(false));
    await assert.rejects(
      controller.start(new AbortController().signal),
      /controller unsynced: timed out after 50 ms waiting for caches to sync: never-syncing source/,
    );
  });

  it("can be started once, and needs leader election unless told otherwise", async () => {
    const controller = new Controller("once", () => ({}));
    assert.equal(controller.needLeaderElection(), true);
    assert.equal(
      new Controller("free", () => ({}), { needLeaderElection: false }).needLeaderElection(),
      false,
    );
    const stop = new AbortController();
    stop.abort();
    await controller.start(stop.signal);
    await assert.rejects(controller.start(stop.signal), /already started/);
    assert.throws(() => new Controller("", () => ({})), /needs a name/);
  });
});

describe("newControllerManagedBy", () => {
  function host(): ControllerHost & { runnables: Runnable[] } {
    const runnables: Runnable[] = [];
    return {
      runnables,
      getCache: () => ({}) as Cache,
      add: (runnable) => runnables.push(runnable),
    };
  }

  it("names controllers after the for kind, keeps names unique per host, and registers them", () => {
    const h = host();
    const controller = newControllerManagedBy(h).for(ConfigMap).owns(Secret)
      .watchesMetadata(Pod, enqueueRequestForObject()).build(() => ({}));
    assert.equal(controller.name, "configmap");
    assert.deepEqual(controller.watched.map((w) => [w.type.kind, w.relation]), [
      ["ConfigMap", "for"],
      ["Secret", "owns"],
      ["Pod", "metadata"],
    ]);
    assert.deepEqual(h.runnables, [controller]);
    assert.throws(
      () => newControllerManagedBy(h).for(ConfigMap).complete(() => ({})),
      /a controller named configmap already exists/,
    );
    newControllerManagedBy(h).named("second").for(ConfigMap).complete({ reconcile: () => ({}) });
    newControllerManagedBy(host()).for(ConfigMap).complete(() => ({})); // another host, same name
    assert.equal(h.runnables.length, 2);
  });

  it("refuses a controller without for() or named(), owns() without for(), and for() twice", () => {
    assert.throws(
      () => newControllerManagedBy(host()).complete(() => ({})),
      /needs for\(type\) or named\(name\)/,
    );
    assert.throws(
      () => newControllerManagedBy(host()).named("x").owns(ConfigMap).complete(() => ({})),
      /owns\(\) needs for\(\)/,
    );
    assert.throws(
      () => newControllerManagedBy(host()).for(ConfigMap).for(ConfigMap),
      /already called/,
    );
  });
});
