// EventRecorder against the FakeClient: the Events it writes, repeats folded into series, the
// per-object rate limit, notes cut to the API's limit, and failures that never reach the caller.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { EventsV1Event } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import { deepFreeze } from "../../lib/api/readonly.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";
import { type InterceptorFuncs, newInterceptedClient } from "../../lib/client/interceptor.ts";
import { EventRecorder, type EventRecorderOptions } from "../../lib/events/recorder.ts";
import { captureLogs } from "../support/logs.ts";
import { eventually } from "../support/eventually.ts";

const START = Date.parse("2025-01-02T03:04:05.678Z");
const MINUTE = 60_000;

/** A clock the test moves. */
function testClock() {
  let now = START;
  return { clock: () => new Date(now), advance: (ms: number) => void (now += ms) };
}

function pod(name: string, namespace = "default"): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { namespace, name, uid: `uid-${name}`, resourceVersion: "42" },
  };
}

/** A recorder over a fake that counts creates and patches of Events. */
function setup(
  options: Partial<EventRecorderOptions> = {},
  funcs: InterceptorFuncs = {},
) {
  const calls = { create: 0, patch: 0 };
  const client = newInterceptedClient(new FakeClient(), {
    create: async (inner, obj, opts) => {
      calls.create++;
      return funcs.create ? await funcs.create(inner, obj, opts) : await inner.create(obj, opts);
    },
    patch: async (inner, obj, patch, opts) => {
      calls.patch++;
      return funcs.patch
        ? await funcs.patch(inner, obj, patch, opts)
        : await inner.patch(obj, patch, opts);
    },
  });
  const time = testClock();
  const recorder = new EventRecorder(client, {
    reportingController: "example.com/test-controller",
    reportingInstance: "test-0",
    clock: time.clock,
    ...options,
  });
  const events = async (namespace = "default") =>
    (await client.list(EventsV1Event, { namespace })).items;
  return { client, recorder, calls, time, events };
}

let logs: Awaited<ReturnType<typeof captureLogs>>;
before(async () => {
  logs = await captureLogs();
});
after(async () => {
  await logs.stop();
});

describe("EventRecorder writes events.k8s.io/v1 Events", () => {
  it("with the regarding and related objects, the reporter, the time and the note", async () => {
    const { recorder, events } = setup();
    const related: KubeObject = {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      metadata: { namespace: "default", name: "web-1", uid: "uid-rs" },
    };
    const result = recorder.event(pod("web-abc"), "Warning", "BackOff", "Restart", "crashed", {
      related,
    });
    assert.equal(result, undefined, "event() returns nothing to wait for");
    await recorder.flush();
    const [event, ...others] = await events();
    assert.equal(others.length, 0);
    assert.match(event.metadata!.name!, /^web-abc\.[0-9a-f]{16}$/);
    assert.equal(event.metadata?.namespace, "default");
    assert.equal(event.type, "Warning");
    assert.equal(event.reason, "BackOff");
    assert.equal(event.action, "Restart");
    assert.equal(event.note, "crashed");
    assert.equal(event.reportingController, "example.com/test-controller");
    assert.equal(event.reportingInstance, "test-0");
    assert.equal(event.eventTime, "2025-01-02T03:04:05.678000Z");
    assert.deepEqual(event.regarding, {
      apiVersion: "v1",
      kind: "Pod",
      namespace: "default",
      name: "web-abc",
      uid: "uid-web-abc",
      resourceVersion: "42",
    });
    assert.deepEqual(event.related, {
      apiVersion: "apps/v1",
      kind: "ReplicaSet",
      namespace: "default",
      name: "web-1",
      uid: "uid-rs",
    });
    assert.equal(event.series, undefined, "a single occurrence has no series");
  });

  it("puts Events about cluster-scoped objects in the default namespace, and takes frozen objects", async () => {
    const { recorder, events } = setup();
    const node = deepFreeze({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "node-1", uid: "n1" },
    });
    recorder.event(node, "Normal", "Drained", "Drain");
    await recorder.flush();
    const [event] = await events("default");
    assert.deepEqual(event.regarding, {
      apiVersion: "v1",
      kind: "Node",
      name: "node-1",
      uid: "n1",
    });
    assert.equal(event.note, undefined);
  });

  it("makes a valid name from any regarding name", async () => {
    const { recorder, events } = setup();
    const role = {
      apiVersion: "v1",
      kind: "Thing",
      metadata: { name: `System:Odd.${"x".repeat(300)}` },
    };
    recorder.event(role, "Normal", "Seen", "Look");
    await recorder.flush();
    const [event] = await events();
    const name = event.metadata!.name!;
    assert.ok(name.length <= 253, `${name.length} characters`);
    assert.match(name, /^system-odd\.x+\.[0-9a-f]{16}$/);
  });

  it("cuts the note to 1 KiB of UTF-8 without splitting a character", async () => {
    const { recorder, events } = setup();
    recorder.event(pod("a"), "Normal", "Long", "Write", "x".repeat(2000));
    recorder.event(pod("b"), "Normal", "Long", "Write", "é".repeat(600)); // 1200 bytes
    recorder.event(pod("c"), "Normal", "Short", "Write", "ü".repeat(512)); // exactly 1024
    await recorder.flush();
    const notes = new Map((await events()).map((e) => [e.regarding?.name, e.note!]));
    assert.equal(notes.get("a"), "x".repeat(1024));
    assert.equal(notes.get("b"), "é".repeat(512));
    assert.equal(notes.get("c"), "ü".repeat(512));
  });
});

describe("EventRecorder folds repeats into a series", () => {
  it("creates the Event once and writes the count and last time of the repeats", async () => {
    const { recorder, calls, time, events } = setup();
    recorder.event(pod("web"), "Normal", "Synced", "Sync", "in sync");
    time.advance(1_000);
    recorder.event(pod("web"), "Normal", "Synced", "Sync", "in sync");
    time.advance(1_000);
    recorder.event(pod("web"), "Normal", "Synced", "Sync", "in sync");
    await recorder.flush();
    const list = await events();
    assert.equal(list.length, 1);
    assert.deepEqual(list[0].series, { count: 3, lastObservedTime: "2025-01-02T03:04:07.678000Z" });
    assert.equal(list[0].eventTime, "2025-01-02T03:04:05.678000Z", "eventTime is the first one");
    assert.deepEqual(calls, { create: 1, patch: 1 }, "the repeats are written together");

    recorder.event(pod("web"), "Normal", "Synced", "Sync", "in sync");
    recorder.event(pod("web"), "Normal", "Synced", "Sync", "in sync");
    await recorder.flush();
    assert.equal((await events())[0].series?.count, 5);
    assert.deepEqual(calls, { create: 1, patch: 2 });
    await recorder.flush();
    assert.deepEqual(calls, { create: 1, patch: 2 }, "nothing pending, nothing written");
  });

  it("keeps events apart that differ in note, reason, action, type or object", async () => {
    const { recorder, events } = setup();
    recorder.event(pod("web"), "Normal", "Synced", "Sync", "one");
    recorder.event(pod("web"), "Normal", "Synced", "Sync", "two");
    recorder.event(pod("web"), "Normal", "Other", "Sync", "one");
    recorder.event(pod("web"), "Normal", "Synced", "Other", "one");
    recorder.event(pod("web"), "Warning", "Synced", "Sync", "one");
    recorder.event(pod("api"), "Normal", "Synced", "Sync", "one");
    recorder.event(pod("web"), "Normal", "Synced", "Sync", "one", { related: pod("x") });
    await recorder.flush();
    const list = await events();
    assert.equal(list.length, 7);
    assert.ok(list.every((e) => e.series === undefined));
  });

  it("folds repeats about a newer version of the same object", async () => {
    const { recorder, events } = setup();
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    const newer = { ...pod("web"), metadata: { ...pod("web").metadata, resourceVersion: "43" } };
    recorder.event(newer, "Normal", "Synced", "Sync");
    await recorder.flush();
    const list = await events();
    assert.equal(list.length, 1);
    assert.equal(list[0].series?.count, 2);
  });

  it("starts a new Event after six minutes without a repeat", async () => {
    const { recorder, time, events } = setup();
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    time.advance(6 * MINUTE); // exactly the window: still the same series
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    time.advance(6 * MINUTE + 1);
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    await recorder.flush();
    const list = (await events()).sort((a, b) => a.eventTime.localeCompare(b.eventTime));
    assert.equal(list.length, 2);
    assert.equal(list[0].series?.count, 2);
    assert.equal(list[1].series, undefined);
  });

  it("creates the Event again, with its series, when it is gone", async () => {
    const { client, recorder, events } = setup();
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    await recorder.flush();
    const [first] = await events();
    await client.delete(first); // Events expire after an hour
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    await recorder.flush();
    const [again, ...others] = await events();
    assert.equal(others.length, 0);
    assert.equal(again.metadata?.name, first.metadata?.name);
    assert.equal(again.series?.count, 2);
  });

  it("writes the series in the background without flush", async () => {
    const { recorder, events } = setup({ seriesUpdateInterval: 0 });
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    await eventually(
      "the series is written",
      async () => (await events())[0]?.series?.count === 2,
    );
    await recorder.flush();
  });
});

describe("EventRecorder limits new Events per object", () => {
  it("drops new Events beyond a burst of 25 per object, and counts them", async () => {
    const { recorder, events } = setup();
    for (let i = 0; i < 30; i++) recorder.event(pod("web"), "Normal", `Reason${i}`, "Act");
    recorder.event(pod("api"), "Normal", "Reason0", "Act");
    await recorder.flush();
    const list = await events();
    assert.equal(list.filter((e) => e.regarding?.name === "web").length, 25);
    assert.equal(list.filter((e) => e.regarding?.name === "api").length, 1, "others unaffected");
    assert.equal(recorder.dropped, 5);
    const drops = logs.records.filter((r) =>
      r.level === "debug" && r.category.join(".") === "rudder.events" &&
      String(r.message.join("")).includes("rate limit")
    );
    assert.ok(drops.length >= 5, "each drop is logged at debug");
  });

  it("gives one more token every five minutes", async () => {
    const { recorder, time, events } = setup({ burst: 2 });
    for (let i = 0; i < 3; i++) recorder.event(pod("web"), "Normal", `First${i}`, "Act");
    time.advance(5 * MINUTE);
    for (let i = 0; i < 3; i++) recorder.event(pod("web"), "Normal", `Second${i}`, "Act");
    await recorder.flush();
    const reasons = (await events()).map((e) => e.reason).sort();
    assert.deepEqual(reasons, ["First0", "First1", "Second0"]);
    assert.equal(recorder.dropped, 3);
  });

  it("lets repeats through when the bucket is empty, counting them in the series", async () => {
    const { recorder, events } = setup({ burst: 1 });
    recorder.event(pod("web"), "Normal", "Synced", "Sync");
    recorder.event(pod("web"), "Normal", "Other", "Sync"); // dropped: no token left
    for (let i = 0; i < 10; i++) recorder.event(pod("web"), "Normal", "Synced", "Sync");
    await recorder.flush();
    const list = await events();
    assert.equal(list.length, 1);
    assert.equal(list[0].series?.count, 11);
    assert.equal(recorder.dropped, 1);
  });
});

describe("EventRecorder failures", () => {
  it("never throw into the caller, and are logged once per kind without the note", async () => {
    logs.records.length = 0;
    const { recorder, calls } = setup({}, {
      create: () =>
        Promise.reject(new ApiError({ code: 403, reason: "Forbidden", message: "events denied" })),
    });
    const secret = "password=hunter2";
    assert.doesNotThrow(() => {
      recorder.event(pod("a"), "Normal", "Synced", "Sync", secret);
      recorder.event(pod("b"), "Normal", "Synced", "Sync", secret);
    });
    await recorder.flush();
    assert.equal(calls.create, 2);
    const mine = logs.records.filter((r) => r.category.join(".") === "rudder.events");
    const warnings = mine.filter((r) => r.level === "warning");
    assert.equal(warnings.length, 1, "the first failure of a kind is a warning");
    assert.match(String(warnings[0].properties.error), /events denied/);
    assert.equal(warnings[0].properties.object, "Pod default/a");
    assert.equal(mine.filter((r) => r.level === "debug").length, 1, "repeats go to debug");
    const text = JSON.stringify(mine.map((r) => [r.message, r.properties]));
    assert.ok(!text.includes("hunter2"), "the note is not logged");
  });

  it("log a new kind of failure as a warning again", async () => {
    logs.records.length = 0;
    let failure = new ApiError({ code: 403, reason: "Forbidden", message: "denied" }) as Error;
    const { recorder } = setup({}, { create: () => Promise.reject(failure) });
    recorder.event(pod("a"), "Normal", "Synced", "Sync");
    await recorder.flush();
    failure = new TypeError("connection reset");
    recorder.event(pod("b"), "Normal", "Synced", "Sync");
    await recorder.flush();
    const warnings = logs.records.filter((r) =>
      r.category.join(".") === "rudder.events" && r.level === "warning"
    );
    assert.deepEqual(warnings.map((r) => r.properties.kind), ["403 Forbidden", "TypeError"]);
  });

  it("tolerate a client that throws synchronously, and bad arguments", async () => {
    logs.records.length = 0;
    const client = {
      create: () => {
        throw new Error("boom");
      },
      patch: () => {
        throw new Error("boom");
      },
    };
    const recorder = new EventRecorder(client as unknown as FakeClient, {
      reportingController: "example.com/test",
      reportingInstance: "t",
    });
    assert.doesNotThrow(() => {
      recorder.event(pod("a"), "Normal", "Synced", "Sync");
      recorder.event(pod("a"), "Normal", "Synced", "Sync");
      recorder.event(pod("b"), "Bogus" as "Normal", "Synced", "Sync");
      recorder.event({ apiVersion: "v1", kind: "Pod" }, "Normal", "Synced", "Sync");
      recorder.event(undefined as unknown as KubeObject, "Normal", "Synced", "Sync");
    });
    await recorder.flush();
    const errors = logs.records.filter((r) => r.category.join(".") === "rudder.events")
      .map((r) => String(r.properties.error));
    assert.ok(errors.some((e) => e.includes("boom")));
    assert.ok(errors.some((e) => e.includes("unsupported event type")));
    assert.ok(errors.some((e) => e.includes("no metadata.name")));
  });
});

describe("EventRecorder construction", () => {
  it("needs a reporting controller and instance, which the API server requires", () => {
    const client = new FakeClient();
    assert.throws(
      () => new EventRecorder(client, { reportingController: "", reportingInstance: "x" }),
      TypeError,
    );
    assert.throws(
      () =>
        new EventRecorder(client, { reportingController: "example.com/c", reportingInstance: "" }),
      TypeError,
    );
  });
});
