// The informer's list strategies (paged lists by default, streaming lists on request) and its
// recovery paths against a small fake server that misbehaves on demand: broken lines, silent
// connections, expired resourceVersions, servers without streaming lists, and handlers that
// throw or dawdle. Reliability against the real API server is tested in
// tests/integration/informer.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap } from "../../lib/api/builtins.ts";
import { newCache } from "../../lib/cache/cache.ts";
import { Informer } from "../../lib/cache/informer.ts";
import type { DeepReadonly } from "../../lib/api/readonly.ts";
import { FakeWatchServer, NAMESPACE } from "../support/fake_watch_server.ts";
import { eventually } from "../support/eventually.ts";
import { useInformerHarness } from "../support/informer_harness.ts";

/** Every test and hook states its timeout: Bun's default of 5 s is too short on a busy machine. */
const T = { timeout: 30_000 };

type CM = ConfigMap;

/** Name → data.v, in name order (so two of them compare as JSON whatever the list order). */
function contents(informer: Informer<CM>): Record<string, string | undefined> {
  return Object.fromEntries(
    informer.store.list().map((cm) => [cm.metadata!.name!, cm.data?.v] as const)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

function serverContents(server: FakeWatchServer): Record<string, string | undefined> {
  return Object.fromEntries(
    [...server.objects.values()].map((o) => [o.metadata.name, o.data?.v] as const)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
}

function isWatch(request: { url: URL }): boolean {
  return request.url.searchParams.get("watch") === "true";
}

describe("Informer", T, () => {
  const h = useInformerHarness(T);

  it(
    "lists with one paged list of 5,000 by default, then watches from its resourceVersion",
    T,
    async () => {
      h.server.put("a", { v: "1" });
      h.server.put("b", { v: "1" });
      const listedAt = String(h.server.resourceVersion);
      const informer = h.start();
      await informer.waitForSync();
      assert.deepEqual(contents(informer), { a: "1", b: "1" });
      h.server.put("c", { v: "1" });
      await eventually("the watch delivers", () => informer.store.size === 3);
      const lists = h.server.requests.filter((r) => !isWatch(r));
      assert.equal(lists.length, 1);
      assert.equal(lists[0].url.searchParams.get("limit"), "5000");
      assert.equal(lists[0].url.searchParams.get("continue"), null);
      assert.ok(
        h.server.requests.every((r) => !r.url.searchParams.has("sendInitialEvents")),
        "no streaming list is asked for",
      );
      const watches = h.server.requests.filter(isWatch);
      assert.equal(watches.length, 1);
      assert.equal(watches[0].url.searchParams.get("resourceVersion"), listedAt);
      assert.equal(watches[0].url.searchParams.get("resourceVersionMatch"), null);
      assert.equal(watches[0].url.searchParams.get("allowWatchBookmarks"), "true");
      const timeout = Number(watches[0].url.searchParams.get("timeoutSeconds"));
      assert.ok(timeout >= 240 && timeout <= 290, `timeoutSeconds ${timeout} in [240, 290]`);
      // List items have no apiVersion and kind; the informer fills them in.
      const stored = informer.store.get(`${NAMESPACE}/a`)!;
      assert.equal(stored.apiVersion, "v1");
      assert.equal(stored.kind, "ConfigMap");
      assert.ok(Object.isFrozen(stored) && Object.isFrozen(stored.data));
    },
  );

  it("honours pageSize and follows continue tokens across pages", T, async () => {
    for (let i = 0; i < 7; i++) h.server.put(`o${i}`, { v: "1" });
    const informer = h.start({ pageSize: 3 });
    await informer.waitForSync();
    assert.deepEqual(
      informer.store.keys().sort(),
      [0, 1, 2, 3, 4, 5, 6].map((i) => `${NAMESPACE}/o${i}`),
    );
    const lists = h.server.requests.filter((r) => !isWatch(r));
    assert.deepEqual(lists.map((r) => r.url.searchParams.get("continue") ?? ""), ["", "3", "6"]);
    assert.ok(lists.every((r) => r.url.searchParams.get("limit") === "3"));
    assert.ok(h.server.requests.every((r) => !r.url.searchParams.has("sendInitialEvents")));
    assert.equal(informer.health().lists, 1, "three pages make one list");
    h.server.put("late", { v: "1" });
    await eventually("the watch after the pages delivers", () => informer.store.size === 8);
  });

  it("lists with a streaming list when asked, then applies watch events in order", T, async () => {
    h.server.put("a", { v: "1" });
    h.server.put("b", { v: "1" });
    const informer = h.start({ streamingList: true });
    await informer.waitForSync();
    assert.deepEqual(contents(informer), { a: "1", b: "1" });
    h.server.put("a", { v: "2" });
    h.server.remove("b");
    h.server.put("c", { v: "1" });
    await eventually(
      "the watch events are applied",
      () => JSON.stringify(contents(informer)) === JSON.stringify({ a: "2", c: "1" }),
    );
    const watches = h.server.requests.filter((r) => r.url.searchParams.get("watch") === "true");
    assert.equal(watches.length, 1, "the streaming list's connection goes on as the watch");
    assert.equal(watches[0].url.searchParams.get("sendInitialEvents"), "true");
    assert.equal(watches[0].url.searchParams.get("resourceVersionMatch"), "NotOlderThan");
    assert.equal(watches[0].url.searchParams.get("allowWatchBookmarks"), "true");
    const timeout = Number(watches[0].url.searchParams.get("timeoutSeconds"));
    assert.ok(timeout >= 240 && timeout <= 290, `timeoutSeconds ${timeout} in [240, 290]`);
    const stored = informer.store.get(`${NAMESPACE}/a`)!;
    assert.equal(stored.kind, "ConfigMap");
    assert.ok(Object.isFrozen(stored) && Object.isFrozen(stored.data));
  });

  const cacheCases = [
    { how: "in pages of 5,000 by default", informer: undefined, limits: ["5000"], streamed: 0 },
    {
      how: "with a streaming list when asked",
      informer: { streamingList: true },
      limits: [],
      streamed: 1,
    },
    { how: "in pages of its pageSize", informer: { pageSize: 2 }, limits: ["2", "2"], streamed: 0 },
  ];
  for (const { how, informer, limits, streamed } of cacheCases) {
    it(`a cache's informers list ${how}`, T, async () => {
      for (let i = 0; i < 3; i++) h.server.put(`o${i}`, { v: "1" });
      const cache = newCache(h.server.config(), {
        rest: h.rest,
        defaultNamespaces: { [NAMESPACE]: {} },
        informer,
      });
      const running = cache.start(h.stop.signal);
      try {
        assert.equal((await cache.list(ConfigMap)).items.length, 3);
      } finally {
        h.stop.abort();
        await running;
      }
      const streams = h.server.requests.filter((r) =>
        r.url.searchParams.get("sendInitialEvents") === "true"
      );
      assert.equal(streams.length, streamed);
      const lists = h.server.requests.filter((r) => !isWatch(r));
      assert.deepEqual(lists.map((r) => r.url.searchParams.get("limit")), limits);
    });
  }

  it(
    "falls back to paged lists when the server refuses the streaming list asked for, and remembers",
    T,
    async () => {
      h.server.refuseStreamingList = true;
      for (let i = 0; i < 7; i++) h.server.put(`o${i}`, { v: "1" });
      const informer = h.start({ streamingList: true, pageSize: 3 });
      await informer.waitForSync();
      assert.equal(informer.store.size, 7);
      const lists = h.server.requests.filter((r) => r.url.searchParams.get("watch") !== "true");
      assert.deepEqual(lists.map((r) => r.url.searchParams.get("continue") ?? ""), ["", "3", "6"]);
      assert.ok(lists.every((r) => r.url.searchParams.get("limit") === "3"));
      // List items have no apiVersion and kind; the informer fills them in.
      assert.equal(informer.store.get(`${NAMESPACE}/o0`)!.apiVersion, "v1");
      h.server.put("late", { v: "1" });
      await eventually("the watch after the paged list delivers", () => informer.store.size === 8);
      h.server.closeWatches();
      h.server.put("later", { v: "1" });
      await eventually("the next watch resumes", () => informer.store.size === 9);
      const streamingTries = h.server.requests.filter((r) =>
        r.url.searchParams.get("sendInitialEvents")
      );
      assert.equal(streamingTries.length, 1, "streaming lists are not tried again");
    },
  );

  it(
    "restarts the watch after a malformed line, from the last good resourceVersion, losing nothing",
    T,
    async () => {
      h.server.put("a", { v: "1" });
      h.server.injectLines = ['{"type":"MODIFIED","object":{"metadata"', "not json at all"];
      const informer = h.start();
      await informer.waitForSync();
      await eventually(
        "the decode error is logged",
        () =>
          h.records.some((r) =>
            /watch stream line \d+: invalid JSON/.test(String(r.properties.error))
          ),
      );
      h.server.put("b", { v: "1" });
      h.server.put("a", { v: "2" });
      await eventually(
        "the store converges",
        () => JSON.stringify(contents(informer)) === JSON.stringify(serverContents(h.server)),
      );
      assert.equal(informer.health().lists, 1, "a broken line restarts the watch, not the list");
      assert.ok(informer.health().watches >= 2);
    },
  );

  it(
    "takes a silent connection for dead after the idle deadline and watches again",
    T,
    async () => {
      h.server.put("a", { v: "1" });
      const informer = h.start({ idleTimeout: 200 });
      await informer.waitForSync();
      h.server.closeWatches();
      h.server.stallNextWatch = true;
      h.server.put("b", { v: "1" });
      await eventually(
        "the stalled watch is replaced and catches up",
        () => informer.store.size === 2,
      );
      assert.ok(
        h.records.some((r) => /no event for/.test(String(r.properties.error))),
        "the idle deadline is logged",
      );
    },
  );

  for (const streamingList of [false, true]) {
    const how = streamingList ? "a streaming list" : "a paged list";
    it(
      `relists on 410 Gone with ${how}, swapping the store and telling handlers what changed`,
      T,
      async () => {
        h.server.put("keep", { v: "1" });
        h.server.put("change", { v: "1" });
        h.server.put("vanish", { v: "1" });
        const informer = h.start({ streamingList });
        const seen: string[] = [];
        informer.addEventHandler({
          onAdd: (cm, initial) =>
            seen.push(`add ${cm.metadata?.name}${initial ? " (initial)" : ""}`),
          onUpdate: (old, cm) =>
            seen.push(`update ${cm.metadata?.name} ${old.data?.v}→${cm.data?.v}`),
          onDelete: (cm) => seen.push(`delete ${cm.metadata?.name}`),
        });
        await informer.waitForSync();
        const keepBefore = informer.store.get(`${NAMESPACE}/keep`);
        // While disconnected: changes the watch never sees, then history is compacted.
        h.server.putSilently("change", { v: "2" });
        h.server.removeSilently("vanish");
        h.server.putSilently("new", { v: "1" });
        h.server.compactedBelow = h.server.resourceVersion;
        h.server.closeWatches();
        await eventually(
          "the relist brings the store in line",
          () => JSON.stringify(contents(informer)) === JSON.stringify(serverContents(h.server)),
        );
        await eventually("handlers heard the difference", () => seen.length >= 6);
        assert.deepEqual(seen.slice(3).sort(), [
          "add new (initial)",
          "delete vanish",
          "update change 1→2",
        ]);
        assert.equal(
          informer.store.get(`${NAMESPACE}/keep`),
          keepBefore,
          "an unchanged object keeps its identity",
        );
        assert.equal(informer.health().lists, 2);
        const relisted = h.server.requests.filter((r) =>
          r.url.searchParams.get("sendInitialEvents") === "true"
        ).length;
        assert.equal(relisted, streamingList ? 2 : 0, `both lists are ${how}s`);
        if (!streamingList) {
          const limits = h.server.requests.filter((r) =>
            r.url.searchParams.get("watch") !== "true" && r.url.searchParams.get("limit") !== "1"
          ).map((r) => r.url.searchParams.get("limit"));
          assert.deepEqual(limits, ["5000", "500"], "the relist takes smaller pages");
        }
      },
    );
  }

  it("backs off after server errors, honours Retry-After on 429, and recovers", T, async () => {
    h.server.put("a", { v: "1" });
    h.server.failNext = [{ code: 500 }, { code: 429, retryAfter: 0 }, { code: 503 }];
    const informer = h.start();
    await informer.waitForSync();
    assert.equal(informer.store.size, 1);
    assert.equal(h.server.failNext.length, 0);
    assert.equal(informer.health().state, "Watching");
    assert.equal(informer.health().lastError, undefined);
  });

  it("keeps reading while a handler is slow, and survives a handler that throws", T, async () => {
    const informer = h.start();
    let slowCalls = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    informer.addEventHandler({
      onAdd: () => {
        slowCalls++;
        // Blocks this handler's queue only (busy-waiting would block everything, so a
        // never-resolved promise stands for "slow": the handler returns, its work is pending).
        void gate;
      },
    });
    const thrown: string[] = [];
    informer.addEventHandler({
      onAdd: (cm) => {
        thrown.push(cm.metadata!.name!);
        throw new Error("handler bug");
      },
    });
    await informer.waitForSync();
    for (let i = 0; i < 50; i++) h.server.put(`o${i}`, { v: "1" });
    await eventually("the store has everything", () => informer.store.size === 50);
    await eventually(
      "every handler heard every add",
      () => slowCalls === 50 && thrown.length === 50,
    );
    assert.ok(
      h.records.some((r) =>
        r.level === "error" && /Event handler/.test(String(r.message.join("")))
      ),
    );
    release();
  });

  it("gives a handler added late the existing objects first, and reports its sync", T, async () => {
    h.server.put("a", { v: "1" });
    h.server.put("b", { v: "1" });
    const informer = h.start();
    await informer.waitForSync();
    const adds: [string, boolean][] = [];
    const registration = informer.addEventHandler({
      onAdd: (cm, initial) => adds.push([cm.metadata!.name!, initial]),
    });
    await eventually("the late handler synced", () => registration.hasSynced());
    assert.deepEqual(adds.sort(), [["a", true], ["b", true]]);
    registration.remove();
    h.server.put("c", { v: "1" });
    await eventually("the store has c", () => informer.store.size === 3);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(adds.length, 2, "a removed handler hears nothing more");
  });

  it("re-delivers every object as an update on each resync", T, async () => {
    h.server.put("a", { v: "1" });
    const informer = h.start({ resyncPeriod: 50 });
    const updates: DeepReadonly<CM>[][] = [];
    informer.addEventHandler({ onUpdate: (old, cm) => updates.push([old, cm]) });
    await informer.waitForSync();
    await eventually("a resync happened", () => updates.length >= 1);
    assert.equal(updates[0][0], updates[0][1], "a resync's old and new are the same object");
  });

  it("asks for metadata only with the PartialObjectMetadata Accept header", T, async () => {
    h.server.put("a", { v: "1" });
    const informer = h.start({ metadataOnly: true });
    await informer.waitForSync();
    const list = h.server.requests.find((r) => !isWatch(r))!;
    assert.match(list.accept ?? "", /as=PartialObjectMetadataList;g=meta.k8s.io;v=v1/);
    await eventually("the watch starts", () => h.server.requests.some(isWatch));
    const watch = h.server.requests.find(isWatch)!;
    assert.match(watch.accept ?? "", /as=PartialObjectMetadata;g=meta.k8s.io;v=v1/);
    assert.equal(informer.store.get(`${NAMESPACE}/a`)!.kind, "ConfigMap");
  });

  it("refuses to run twice and stops when its signal aborts", T, async () => {
    const informer = h.start();
    await informer.waitForSync();
    await assert.rejects(informer.run(h.stop.signal), /already running/);
    h.stop.abort();
    await h.running;
    assert.equal(informer.health().state, "Stopped");
  });
});
