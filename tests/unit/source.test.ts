// The kind source and the channel source: which informer a kind source asks for, how each cache
// notification becomes an event through the predicates, when a source counts as synced, and
// what stopping does; which values of a channel are events and which are objects, and what
// happens when the channel fails or the controller stops.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import { deepFreeze, type DeepReadonly } from "../../lib/api/readonly.ts";
import type { Cache, GetInformerOptions } from "../../lib/cache/cache.ts";
import type { ResourceEventHandler } from "../../lib/cache/dispatcher.ts";
import type { CreateEvent, DeleteEvent, GenericEvent, UpdateEvent } from "../../lib/event/event.ts";
import type { EventHandler } from "../../lib/handler/handler.ts";
import type { RequestQueue } from "../../lib/reconcile/reconcile.ts";
import { newPredicateFuncs, type Predicate } from "../../lib/predicate/predicate.ts";
import { channelSource, kindSource } from "../../lib/source/source.ts";
import { eventObject } from "../../lib/util/tracing.ts";
import { captureLogs } from "../support/logs.ts";
import { eventually } from "../support/eventually.ts";

const T = { timeout: 30_000 };

const queue: RequestQueue = {
  add: () => {},
  addAfter: () => {},
  addRateLimited: () => {},
};

function cm(name: string, meta: Record<string, unknown> = {}): DeepReadonly<ConfigMap> {
  return deepFreeze({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { namespace: "ns", name, ...meta },
  });
}

/** A cache with one informer whose notifications the test sends by hand. */
function fakeCache(informerMade: Promise<void> = Promise.resolve()) {
  const state = {
    asked: [] as { kind: string; options?: GetInformerOptions }[],
    handlers: [] as ResourceEventHandler<KubeObject>[],
    removed: 0,
    synced: false,
  };
  const unexpected = () => {
    throw new Error("a kind source has no reason to call this");
  };
  const cache: Cache = {
    start: unexpected,
    waitForCacheSync: unexpected,
    unsynced: unexpected,
    health: unexpected,
    indexField: unexpected,
    get: unexpected,
    list: unexpected,
    observeWrite: unexpected,
    getInformer: async (type: { kind: string }, options?: GetInformerOptions) => {
      state.asked.push({ kind: type.kind, options });
      await informerMade;
      return await Promise.resolve({
        type: ConfigMap,
        addEventHandler: (handler: ResourceEventHandler<KubeObject>) => {
          state.handlers.push(handler);
          return {
            remove: () => state.removed++,
            hasSynced: () => state.synced,
          };
        },
        hasSynced: () => state.synced,
        health: () => [],
      } as never);
    },
  };
  /** The informer's notifications to the source's one handler. */
  const informer = () => {
    assert.equal(state.handlers.length, 1, "the source registered one handler");
    return state.handlers[0];
  };
  return { cache, state, informer };
}

/**
 * `promise`, or a failure naming `what` after `ms`: a broken abort must fail the test, not hang
 * it (the wait is real only when the code under test is broken).
 */
async function within<V>(ms: number, what: string, promise: Promise<V>): Promise<V> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

type Seen =
  | ["create", CreateEvent<ConfigMap>]
  | ["update", UpdateEvent<ConfigMap>]
  | ["delete", DeleteEvent<ConfigMap>]
  | ["generic", GenericEvent<ConfigMap>];

/** A handler that records each event, and the event object current while it runs. */
function recordingHandler() {
  const seen: Seen[] = [];
  const during: unknown[] = [];
  const queues: RequestQueue[] = [];
  const handler: EventHandler<ConfigMap> = {
    create: (e, q) => {
      seen.push(["create", e]);
      during.push(eventObject());
      queues.push(q);
    },
    update: (e, q) => {
      seen.push(["update", e]);
      during.push(eventObject());
      queues.push(q);
    },
    delete: (e, q) => {
      seen.push(["delete", e]);
      during.push(eventObject());
      queues.push(q);
    },
    generic: (e, q) => {
      seen.push(["generic", e]);
      during.push(eventObject());
      queues.push(q);
    },
  };
  return { handler, seen, during, queues };
}

describe("kindSource", T, () => {
  it("describes itself by kind, and says when it watches metadata only", () => {
    const { cache } = fakeCache();
    const { handler } = recordingHandler();
    assert.equal(kindSource(cache, ConfigMap, handler).description, "kind source: ConfigMap");
    assert.equal(
      kindSource(cache, ConfigMap, handler, { metadataOnly: true }).description,
      "kind source: ConfigMap (metadata)",
    );
  });

  it("asks the cache for the kind's informer, metadata-only when told", async () => {
    for (const metadataOnly of [undefined, false, true]) {
      const { cache, state } = fakeCache();
      const source = kindSource(cache, ConfigMap, recordingHandler().handler, { metadataOnly });
      await source.start(new AbortController().signal, queue);
      assert.deepEqual(state.asked, [{ kind: "ConfigMap", options: { metadataOnly } }]);
    }
  });

  it("turns adds, updates and deletes into events for the handler, on the given queue", async () => {
    const { cache, informer } = fakeCache();
    const { handler, seen, during, queues } = recordingHandler();
    const source = kindSource(cache, ConfigMap, handler);
    await source.start(new AbortController().signal, queue);
    const [a, b, c] = [cm("a"), cm("b"), cm("c")];
    informer().onAdd!(a, true);
    informer().onAdd!(b, false);
    informer().onUpdate!(a, c);
    informer().onDelete!(b);
    assert.deepEqual(seen, [
      ["create", { object: a, isInInitialList: true }],
      ["create", { object: b, isInInitialList: false }],
      ["update", { objectOld: a, objectNew: c }],
      ["delete", { object: b, deleteStateUnknown: false }],
    ]);
    assert.deepEqual(during, [a, b, c, b], "the event's object (an update's new one) is current");
    assert.equal(eventObject(), undefined, "and only while the handler runs");
    assert.ok(queues.every((q) => q === queue));
  });

  it("applies the predicates to each kind of event", async () => {
    const { cache, informer } = fakeCache();
    const { handler, seen } = recordingHandler();
    const notB: Predicate<ConfigMap> = newPredicateFuncs((o) => o.metadata?.name !== "b");
    const noUpdates: Predicate<ConfigMap> = { update: () => false };
    const source = kindSource(cache, ConfigMap, handler, { predicates: [notB, noUpdates] });
    await source.start(new AbortController().signal, queue);
    const [a, b] = [cm("a"), cm("b")];
    informer().onAdd!(a, false);
    informer().onAdd!(b, false);
    informer().onUpdate!(a, a);
    informer().onDelete!(b);
    informer().onDelete!(a);
    assert.deepEqual(
      seen.map(([kind, e]) => `${kind} ${"object" in e ? e.object.metadata?.name : ""}`),
      [
        "create a",
        "delete a",
      ],
    );
  });

  it("skips the kinds of event a handler has no hook for", async () => {
    const { cache, informer } = fakeCache();
    const created: string[] = [];
    const source = kindSource<ConfigMap>(cache, ConfigMap, {
      create: (e) => created.push(e.object.metadata?.name ?? ""),
    });
    await source.start(new AbortController().signal, queue);
    informer().onUpdate!(cm("a"), cm("a"));
    informer().onDelete!(cm("a"));
    informer().onAdd!(cm("a"), false);
    assert.deepEqual(created, ["a"]);
  });

  it("removes its handler from the informer when the controller stops, once", async () => {
    const { cache, state } = fakeCache();
    const stop = new AbortController();
    await kindSource(cache, ConfigMap, recordingHandler().handler).start(stop.signal, queue);
    assert.equal(state.removed, 0);
    stop.abort();
    stop.abort();
    assert.equal(state.removed, 1);
  });

  it("removes its handler when the controller stopped before the informer was ready", async () => {
    // A controller's watch() after it stopped starts the source with a stopped signal.
    const stopped = fakeCache();
    await kindSource(stopped.cache, ConfigMap, recordingHandler().handler).start(
      AbortSignal.abort(),
      queue,
    );
    assert.equal(stopped.state.handlers.length, 1);
    assert.equal(stopped.state.removed, 1, "no handler is left on the shared informer");

    // The controller stops while the cache makes the informer (discovery, a slow start).
    let ready!: () => void;
    const slow = fakeCache(new Promise<void>((resolve) => ready = resolve));
    const stop = new AbortController();
    const starting = kindSource(slow.cache, ConfigMap, recordingHandler().handler).start(
      stop.signal,
      queue,
    );
    stop.abort();
    ready();
    await starting;
    assert.equal(slow.state.handlers.length, 1);
    assert.equal(slow.state.removed, 1);
  });

  it("is synced when its handler has heard the initial list", async () => {
    const { cache, state } = fakeCache();
    const source = kindSource(cache, ConfigMap, recordingHandler().handler);
    const stop = new AbortController();
    await source.start(stop.signal, queue);
    let synced = false;
    const waiting = source.waitForSync(stop.signal).then(() => synced = true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(synced, false, "not before the handler has synced");
    state.synced = true;
    await within(5_000, "waitForSync once synced", waiting);
    assert.equal(synced, true);
    await within(5_000, "waitForSync when synced", source.waitForSync(AbortSignal.abort())).then(
      () => {},
      () => assert.fail("synced already: an aborted signal does not matter"),
    );
  });

  it("stops waiting for sync with the signal's reason, started or not", async () => {
    const { cache } = fakeCache();
    const source = kindSource(cache, ConfigMap, recordingHandler().handler);
    const reason = new Error("controller stopped");
    await assert.rejects(
      within(
        5_000,
        "waitForSync, aborted before start",
        source.waitForSync(AbortSignal.abort(reason)),
      ),
      (err) => err === reason,
    );
    await source.start(new AbortController().signal, queue);
    const stop = new AbortController();
    const waiting = source.waitForSync(stop.signal);
    stop.abort(reason);
    await assert.rejects(within(5_000, "waitForSync, aborted", waiting), (err) => err === reason);
  });
});

describe("channelSource", T, () => {
  /** An iterable the test pushes values into, which can be told to fail or end. */
  function channel<V>({ closable = true } = {}) {
    const pending: V[] = [];
    let wake: (() => void) | undefined;
    let failure: Error | undefined;
    let ended = false;
    let returned = 0;
    let failedReads = 0;
    const iterable: AsyncIterable<V> = {
      [Symbol.asyncIterator]: () => {
        const iterator: AsyncIterator<V> = {
          async next(): Promise<IteratorResult<V>> {
            while (pending.length === 0 && !failure && !ended) {
              await new Promise<void>((resolve) => wake = resolve);
            }
            if (pending.length > 0) return { done: false, value: pending.shift()! };
            if (failure) {
              failedReads++;
              throw failure;
            }
            return { done: true, value: undefined };
          },
        };
        if (closable) {
          iterator.return = () => {
            returned++;
            ended = true;
            wake?.();
            return Promise.resolve({ done: true, value: undefined });
          };
        }
        return iterator;
      },
    };
    return {
      iterable,
      push(value: V) {
        pending.push(value);
        wake?.();
      },
      fail(err: Error) {
        failure = err;
        wake?.();
      },
      end() {
        ended = true;
        wake?.();
      },
      returned: () => returned,
      failedReads: () => failedReads,
    };
  }

  it("delivers objects and GenericEvents; an object with an `object` field is an object", async () => {
    const ch = channel<DeepReadonly<ConfigMap> | GenericEvent<ConfigMap>>();
    const { handler, seen, during, queues } = recordingHandler();
    const source = channelSource<ConfigMap>(ch.iterable, handler);
    assert.equal(source.description, "channel source");
    const stop = new AbortController();
    await source.start(stop.signal, queue);
    await source.waitForSync(stop.signal);
    const plain = cm("plain");
    const wrapped = cm("wrapped");
    // A custom resource may well have a top-level field called `object`.
    const tricky = deepFreeze({ ...cm("tricky"), object: { nested: true } }) as DeepReadonly<
      ConfigMap
    >;
    ch.push(plain);
    ch.push({ object: wrapped });
    ch.push(tricky);
    await eventually("three events", () => seen.length === 3);
    assert.deepEqual(seen, [
      ["generic", { object: plain }],
      ["generic", { object: wrapped }],
      ["generic", { object: tricky }],
    ]);
    assert.deepEqual(during, [plain, wrapped, tricky]);
    assert.ok(queues.every((q) => q === queue));
    stop.abort();
  });

  it("applies the predicates' generic hook", async () => {
    const ch = channel<DeepReadonly<ConfigMap>>();
    const { handler, seen } = recordingHandler();
    const source = channelSource<ConfigMap>(ch.iterable, handler, {
      predicates: [{ generic: (e) => e.object.metadata?.name !== "drop", create: () => false }],
    });
    const stop = new AbortController();
    await source.start(stop.signal, queue);
    ch.push(cm("drop"));
    ch.push(cm("keep"));
    await eventually("the kept event", () => seen.length === 1);
    assert.equal((seen[0][1] as GenericEvent<ConfigMap>).object.metadata?.name, "keep");
    stop.abort();
  });

  it("stops reading and closes the iterator when the controller stops", async () => {
    const ch = channel<DeepReadonly<ConfigMap>>();
    const { handler, seen } = recordingHandler();
    const stop = new AbortController();
    await channelSource<ConfigMap>(ch.iterable, handler).start(stop.signal, queue);
    ch.push(cm("before"));
    await eventually("the first event", () => seen.length === 1);
    stop.abort();
    assert.equal(ch.returned(), 1, "the iterator is closed at once");
    ch.push(cm("after"));
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(seen.length, 1, "nothing is delivered after the stop");
  });

  it("skips events of a handler without a generic hook, and ends with its iterable", async () => {
    const logs = await captureLogs();
    try {
      const ch = channel<DeepReadonly<ConfigMap>>();
      const stop = new AbortController();
      await channelSource<ConfigMap>(ch.iterable, {}).start(stop.signal, queue);
      ch.push(cm("a"));
      ch.end();
      await new Promise((resolve) => setTimeout(resolve, 30));
      stop.abort();
      assert.deepEqual(logs.records.filter((r) => r.level === "error"), []);
    } finally {
      await logs.stop();
    }
  });

  it("logs a failing channel as an error, but not one that fails because it was stopped", async () => {
    const logs = await captureLogs();
    try {
      const ch = channel<DeepReadonly<ConfigMap>>();
      await channelSource<ConfigMap>(ch.iterable, recordingHandler().handler).start(
        new AbortController().signal,
        queue,
      );
      ch.fail(new Error("feed broke"));
      await eventually(
        "the failure is logged",
        () => logs.records.some((r) => r.level === "error"),
      );
      const [record] = logs.records.filter((r) => r.level === "error");
      assert.deepEqual(record.category, ["rudder", "controller", "source"]);
      assert.equal((record.properties.error as Error).message, "feed broke");

      // An iterator without `return`: the read in progress outlives the stop, then fails.
      const quiet = channel<DeepReadonly<ConfigMap>>({ closable: false });
      const stop = new AbortController();
      await channelSource<ConfigMap>(quiet.iterable, recordingHandler().handler).start(
        stop.signal,
        queue,
      );
      stop.abort();
      quiet.fail(new Error("closed under it"));
      await eventually("the read has failed", () => quiet.failedReads() === 1);
      await new Promise((resolve) => setTimeout(resolve, 10));
      assert.equal(logs.records.filter((r) => r.level === "error").length, 1);
    } finally {
      await logs.stop();
    }
  });

  it("neither reads nor leaves open a channel started with a stopped signal", async () => {
    // A controller's watch() after it stopped starts the source with a stopped signal.
    const ch = channel<DeepReadonly<ConfigMap>>();
    ch.push(cm("x"));
    const { handler, seen } = recordingHandler();
    await channelSource<ConfigMap>(ch.iterable, handler).start(AbortSignal.abort(), queue);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(seen.length, 0);
    assert.equal(ch.returned(), 1, "the iterator is closed, as a stop would close it");
  });
});
