// Watches the server holds open without a word because they resume from a resourceVersion it
// has not reached (an etcd restore, a bad bookmark): the watcher must relist and converge, and a
// quiet but healthy watch must not. Against the fake watch server with short idle deadlines;
// against the real API server in tests/integration/watch_stale.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { eventually } from "../support/eventually.ts";
import { useInformerHarness } from "../support/informer_harness.ts";

const T = { timeout: 30_000 };
const FUTURE_RV = "999999";

/** A bookmark that moves the resume point past anything the fake server will reach. */
const badBookmark = JSON.stringify({
  type: "BOOKMARK",
  object: { kind: "ConfigMap", apiVersion: "v1", metadata: { resourceVersion: FUTURE_RV } },
});

function isWatch(request: { url: URL }): boolean {
  return request.url.searchParams.get("watch") === "true";
}

/** The lists of one item the watcher makes to learn how far the server is. */
function checks(requests: { url: URL }[]): number {
  return requests.filter((r) => !isWatch(r) && r.url.searchParams.get("limit") === "1").length;
}

function names(store: { list(): readonly { metadata?: { name?: string } }[] }): string[] {
  return store.list().map((o) => o.metadata!.name!).sort();
}

describe("watches held silently at an unreachable resourceVersion", T, () => {
  const h = useInformerHarness(T);

  it("relists after a few silent watches and converges to what the server holds", T, async () => {
    h.server.holdFutureWatches = true;
    h.server.put("a", { v: "1" });
    h.server.injectLines = [badBookmark];
    h.server.afterInject = "end";
    const informer = h.start({ idleTimeout: 150 });
    await informer.waitForSync();
    await eventually(
      "the watch resumes from the bad bookmark",
      () =>
        h.server.requests.some((r) =>
          isWatch(r) && r.url.searchParams.get("resourceVersion") === FUTURE_RV
        ),
    );
    // Changes the held watches never hear of.
    h.server.put("b", { v: "1" });
    h.server.remove("a");

    await eventually(
      "the store holds what the server holds",
      () => names(informer.store).join() === "b",
    );
    const health = informer.health();
    assert.equal(health.lists, 2, "one relist");
    assert.notEqual(health.resourceVersion, FUTURE_RV);
    assert.equal(checks(h.server.requests), 1, "one check of the server's resourceVersion");
    const warning = h.records.find((r) => /will never reach/.test(String(r.message.join(""))));
    assert.ok(warning, "the relist is logged with its reason");
    assert.equal(warning.level, "warning");
    assert.equal(warning.properties.rv, FUTURE_RV);
    const heldWatches = h.server.requests.filter((r) =>
      isWatch(r) && r.url.searchParams.get("resourceVersion") === FUTURE_RV
    ).length;
    assert.equal(heldWatches, 3, "relisted after three silent watches");

    // And watches from the listed resourceVersion again.
    h.server.put("c", { v: "1" });
    await eventually("the new watch delivers", () =>
      names(informer.store).join() === "b,c");
  });

  it("does not relist a quiet watch that gets bookmarks", T, async () => {
    h.server.put("a", { v: "1" });
    const informer = h.start({ idleTimeout: 200 });
    await informer.waitForSync();
    const bookmarks = setInterval(() => h.server.sendBookmarks(), 50);
    try {
      // Five idle deadlines' worth of a quiet cluster.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      clearInterval(bookmarks);
    }
    const health = informer.health();
    assert.equal(health.lists, 1);
    assert.equal(health.watches, 1, "the one watch stayed open");
    assert.equal(health.lastError, undefined);
    assert.equal(checks(h.server.requests), 0, "no check needed");
  });

  it("checks, but does not relist, a quiet server without bookmarks", T, async () => {
    h.server.put("a", { v: "1" });
    const informer = h.start({ idleTimeout: 100 });
    await informer.waitForSync();
    await eventually("the silent watches are checked", () => checks(h.server.requests) >= 2);
    assert.equal(informer.health().lists, 1, "the server is at the watch's resourceVersion");
    h.server.put("b", { v: "1" });
    await eventually("the watch still delivers", () => names(informer.store).join() === "a,b");
    assert.equal(informer.health().lists, 1);
  });
});
