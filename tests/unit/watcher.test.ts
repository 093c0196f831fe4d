// The informer's pieces on their own (the watcher without a store, the reflector without a
// watcher), and the informer healing from watches that can never succeed: refused
// resourceVersions, silent connections, and readiness while it cannot.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap } from "../../lib/api/builtins.ts";
import { Informer } from "../../lib/cache/informer.ts";
import type { StoreChange } from "../../lib/cache/dispatcher.ts";
import { Reflector } from "../../lib/cache/reflector.ts";
import { objectKey, Store } from "../../lib/cache/store.ts";
import {
  compareResourceVersions,
  continueTokenAhead,
  isOlderResourceVersion,
  isResourceVersionTooLarge,
  watcher,
  type WatcherEvent,
} from "../../lib/cache/watcher.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import type { RestClient, RestRequest } from "../../lib/kube/rest.ts";
import { informersReady } from "../../lib/healthz/healthz.ts";
import { NAMESPACE } from "../support/fake_watch_server.ts";
import { eventually } from "../support/eventually.ts";
import { useInformerHarness } from "../support/informer_harness.ts";

type CM = ConfigMap;
const T = { timeout: 30_000 };

function cm(name: string, rv: string, v = "1"): CM {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: NAMESPACE, resourceVersion: rv },
    data: { v },
  };
}

function summary(event: WatcherEvent<CM>): string {
  switch (event.type) {
    case "Init":
      return "Init";
    case "InitDone":
      return "InitDone";
    default:
      return `${event.type} ${event.object.metadata?.name} ${event.object.data?.v}`;
  }
}

describe("resourceVersion helpers", T, () => {
  it("order decimal resourceVersions by value and refuse to order anything else", T, () => {
    assert.equal(compareResourceVersions("9", "10"), -1);
    assert.equal(compareResourceVersions("10", "9"), 1);
    assert.equal(compareResourceVersions("12", "12"), 0);
    assert.equal(compareResourceVersions("123", "124"), -1);
    assert.equal(compareResourceVersions("abc", "1"), undefined);
    assert.equal(compareResourceVersions("01", "1"), undefined);
    assert.equal(compareResourceVersions(undefined, "1"), undefined);
    assert.equal(compareResourceVersions("1", ""), undefined);
    assert.ok(isOlderResourceVersion("99", "100"));
    assert.ok(!isOlderResourceVersion("100", "100"));
    assert.ok(!isOlderResourceVersion("x", "100"));
  });

  it("recognise the API server's too-large-resourceVersion answer", T, () => {
    const withCause = new ApiError({
      code: 504,
      reason: "Timeout",
      details: { causes: [{ reason: "ResourceVersionTooLarge" }] },
    });
    assert.ok(isResourceVersionTooLarge(withCause));
    assert.ok(
      isResourceVersionTooLarge(
        new ApiError({ code: 504, reason: "Timeout", message: "Too large resource version: 9" }),
      ),
    );
    assert.ok(!isResourceVersionTooLarge(new ApiError({ code: 504, reason: "Timeout" })));
    assert.ok(!isResourceVersionTooLarge(new ApiError({ code: 400, message: "bad" })));
    assert.ok(!isResourceVersionTooLarge(new Error("Too large resource version")));
    const oddCauses = {
      code: 504,
      details: { causes: "nope" },
    } as unknown as ConstructorParameters<
      typeof ApiError
    >[0];
    assert.ok(!isResourceVersionTooLarge(new ApiError(oddCauses)));
  });
});

describe("continueTokenAhead", T, () => {
  const head = '{"kind":"ConfigMapList","apiVersion":"v1","metadata":';
  it("reads the token from the head of the API server's answer without the items", T, () => {
    const items = ',"items":[' + '{"metadata":{"name":"x"}},'.repeat(1000) + "{}]}";
    assert.equal(
      continueTokenAhead(
        `${head}{"resourceVersion":"12","continue":"eyJ2IjoibT0=","remainingItemCount":7}${items}`,
      ),
      "eyJ2IjoibT0=",
    );
    assert.equal(
      continueTokenAhead(
        '{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",' +
          '"metadata":{"continue":"abc"},"items":[]}',
      ),
      "abc",
    );
    // An escaped token is read as JSON reads it.
    assert.equal(continueTokenAhead(`${head}{"continue":"a\\u003cb"},"items":[]}`), "a<b");
  });

  it("finds none on a last page, on another layout and on anything that is not a list", T, () => {
    assert.equal(continueTokenAhead(`${head}{"resourceVersion":"12"},"items":[]}`), undefined);
    assert.equal(continueTokenAhead(`${head}{"continue":""},"items":[]}`), undefined);
    assert.equal(
      continueTokenAhead('{"metadata":{"continue":"abc"},"kind":"ConfigMapList","items":[]}'),
      undefined,
    );
    assert.equal(continueTokenAhead(`${head}{"continue":"abc","x":{}},"items":[]}`), undefined);
    assert.equal(continueTokenAhead(`${head}{"continue":abc},"items":[]}`), undefined);
    assert.equal(continueTokenAhead(`${head}{"continue":7},"items":[]}`), undefined);
    assert.equal(continueTokenAhead(""), undefined);
    assert.equal(continueTokenAhead("not json"), undefined);
  });
});

describe("paged lists read ahead", T, () => {
  it("asks for the next page from the head of this one, before parsing it", T, async () => {
    const asked: { token: unknown; signal: AbortSignal | undefined }[] = [];
    const stop = new AbortController();
    const head = '{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"continue":"2"},"items":[';
    const rest = {
      requestText(request: RestRequest): Promise<string> {
        asked.push({ token: request.query?.continue, signal: request.signal });
        // The first page's head is whole; its items are cut short, so parsing it fails.
        if (asked.length === 1) return Promise.resolve(`${head}{"metadata":{"na`);
        return new Promise((_, reject) =>
          request.signal?.addEventListener("abort", () => reject(request.signal?.reason))
        );
      },
    } as unknown as RestClient;
    const events = watcher(rest, ConfigMap, {
      namespace: NAMESPACE,
      signal: stop.signal,
      pageSize: 2,
      backoff: { initial: 60_000, max: 60_000 },
    })[Symbol.asyncIterator]();
    assert.equal(summary((await events.next()).value as WatcherEvent<CM>), "Init");
    // The broken page fails the list; the watcher then backs off, holding this next().
    const pending = events.next();
    await eventually(
      "the page asked for ahead is dropped",
      () => asked[1]?.signal?.aborted === true,
    );
    assert.deepEqual(asked.map((a) => a.token), [undefined, "2"]);
    assert.ok(!stop.signal.aborted);
    stop.abort();
    assert.equal((await pending).done, true, "no item of the broken page is handed out");
  });
});

describe("Reflector", T, () => {
  it("swaps a list in at once and hands each change to the dispatcher", T, () => {
    const store = new Store<CM>();
    const changes: string[] = [];
    const reflect = new Reflector(store, {
      dispatcher: {
        dispatch: (c: StoreChange<CM>) => {
          // The store has the change by the time the dispatcher hears of it.
          if (c.type === "add" || c.type === "update") {
            assert.equal(store.get(objectKey(c.obj)), c.obj);
          }
          if (c.type === "delete") assert.equal(store.get(objectKey(c.obj)), undefined);
          changes.push(
            c.type === "listed"
              ? `listed ${c.resourceVersion}`
              : c.type === "add"
              ? `add ${c.obj.metadata?.name}${c.initial ? " initial" : ""}`
              : `${c.type} ${c.obj.metadata?.name}`,
          );
        },
      },
    });
    reflect.apply({ type: "Init" });
    reflect.apply({ type: "InitApply", object: cm("a", "1") });
    assert.equal(store.size, 0, "nothing is visible before InitDone");
    assert.equal(reflect.hasSynced(), false);
    reflect.apply({ type: "InitApply", object: cm("b", "2") });
    reflect.apply({ type: "InitDone", resourceVersion: "2" });
    assert.equal(reflect.hasSynced(), true, "synced once the first list is in");
    assert.deepEqual(store.keys().sort(), ["ns/a", "ns/b"]);
    reflect.apply({ type: "Apply", object: cm("a", "3", "2"), resourceVersion: "3" });
    reflect.apply({ type: "Delete", object: cm("b", "4"), resourceVersion: "4" });
    assert.deepEqual(changes, [
      "add a initial",
      "add b initial",
      "listed 2",
      "update a",
      "delete b",
    ]);
    assert.equal(store.get("ns/a")?.data?.v, "2");
  });

  it(
    "waits for the first list: resolves once it is in, rejects when aborted first",
    T,
    async () => {
      const reflect = new Reflector(new Store<CM>());
      const stop = new AbortController();
      const aborted = reflect.waitForSync(stop.signal);
      const synced = reflect.waitForSync();
      let resolved = false;
      void synced.then(() => (resolved = true));
      reflect.apply({ type: "Init" });
      reflect.apply({ type: "InitApply", object: cm("a", "1") });
      stop.abort(new Error("stopped"));
      await assert.rejects(aborted, /stopped/);
      assert.equal(resolved, false, "a list that is not done does not count");
      reflect.apply({ type: "InitDone", resourceVersion: "1" });
      await synced;
      await reflect.waitForSync();
    },
  );

  it("transforms each listed object as it comes, before the list is swapped in", T, () => {
    const seen: string[] = [];
    const store = new Store<CM>({
      transform: (obj) => {
        seen.push(obj.metadata?.name ?? "");
        return obj;
      },
    });
    const reflect = new Reflector(store);
    reflect.apply({ type: "Init" });
    reflect.apply({ type: "InitApply", object: cm("a", "1") });
    assert.deepEqual(seen, ["a"]);
    assert.equal(store.size, 0);
    reflect.apply({ type: "InitApply", object: cm("b", "2") });
    assert.deepEqual(seen, ["a", "b"]);
    reflect.apply({ type: "InitDone", resourceVersion: "2" });
    assert.deepEqual(seen, ["a", "b"], "nothing is transformed twice");
    assert.deepEqual(store.keys().sort(), ["ns/a", "ns/b"]);
  });

  it("drops a half-received list when a new Init starts it again", T, () => {
    const store = new Store<CM>();
    const reflect = new Reflector(store);
    reflect.apply({ type: "Init" });
    reflect.apply({ type: "InitApply", object: cm("stale", "1") });
    reflect.apply({ type: "Init" });
    reflect.apply({ type: "InitApply", object: cm("fresh", "2") });
    reflect.apply({ type: "InitDone" });
    assert.deepEqual(store.keys(), ["ns/fresh"]);
  });

  it("ignores an Apply or Delete older than the stored object", T, () => {
    const store = new Store<CM>();
    const reflect = new Reflector(store);
    reflect.apply({ type: "Apply", object: cm("a", "10", "new") });
    reflect.apply({ type: "Apply", object: cm("a", "9", "old") });
    reflect.apply({ type: "Delete", object: cm("a", "8") });
    assert.equal(store.get("ns/a")?.data?.v, "new");
    reflect.apply({ type: "Delete", object: cm("a", "11") });
    assert.equal(store.size, 0);
  });
});

describe("watcher and healing informers", T, () => {
  const h = useInformerHarness(T);

  function converged(informer: Informer<CM>): boolean {
    const ours = informer.store.list().map((o) =>
      `${o.metadata?.name}@${o.metadata?.resourceVersion}`
    );
    const theirs = [...h.server.objects.values()].map((o) =>
      `${o.metadata.name}@${o.metadata.resourceVersion}`
    );
    return JSON.stringify(ours.sort()) === JSON.stringify(theirs.sort());
  }

  function watchesFrom(rv: string): number {
    return h.server.requests.filter((r) =>
      r.url.searchParams.get("watch") === "true" && r.url.searchParams.get("resourceVersion") === rv
    ).length;
  }

  function bookmark(rv: string): string {
    return JSON.stringify({
      type: "BOOKMARK",
      object: { kind: "ConfigMap", apiVersion: "v1", metadata: { resourceVersion: rv } },
    });
  }

  function continues(): string[] {
    return h.server.requests.filter((r) => r.url.searchParams.get("watch") !== "true")
      .map((r) => r.url.searchParams.get("continue") ?? "");
  }

  function fill(count: number): void {
    for (let i = 0; i < count; i++) h.server.put(`o${i}`, { v: "1" });
  }

  /** A watcher of the namespace that lists in pages of 2. */
  function paged(backoff?: { initial: number; max: number }) {
    return watcher(h.rest, ConfigMap, {
      namespace: NAMESPACE,
      signal: h.stop.signal,
      pageSize: 2,
      ...(backoff ? { backoff } : {}),
    });
  }

  /** The summaries of the events `next()` gives, up to and with the first InitDone. */
  async function untilInitDone(events: AsyncIterator<WatcherEvent<CM>>): Promise<string[]> {
    const seen: string[] = [];
    for (;;) {
      const event = (await events.next()).value as WatcherEvent<CM>;
      seen.push(summary(event));
      if (event.type === "InitDone") return seen;
    }
  }

  it("asks for the next page before it hands out this page's items", T, async () => {
    fill(5);
    const events = paged()[Symbol.asyncIterator]();
    assert.equal(summary((await events.next()).value as WatcherEvent<CM>), "Init");
    assert.equal(summary((await events.next()).value as WatcherEvent<CM>), "InitApply o0 1");
    // The consumer holds the first item; the second page is asked for all the same.
    await eventually("the second page is asked for", () => continues().includes("2"));
    assert.deepEqual(await untilInitDone(events), [
      "InitApply o1 1",
      "InitApply o2 1",
      "InitApply o3 1",
      "InitApply o4 1",
      "InitDone",
    ]);
    assert.deepEqual(continues(), ["", "2", "4"]);
    await events.return?.(undefined);
  });

  it("lists every page when it cannot read a page's head ahead", T, async () => {
    fill(5);
    h.server.listMetadataFirst = true;
    assert.deepEqual(await untilInitDone(paged()[Symbol.asyncIterator]()), [
      "Init",
      ...[0, 1, 2, 3, 4].map((i) => `InitApply o${i} 1`),
      "InitDone",
    ]);
    assert.deepEqual(continues(), ["", "2", "4"]);
  });

  it("drops the page it asked for ahead when the consumer leaves mid-list", T, async () => {
    fill(5);
    h.server.continueDelayMs = 10_000;
    const events = paged()[Symbol.asyncIterator]();
    await events.next();
    await events.next();
    await eventually("the second page is asked for", () => continues().includes("2"));
    await events.return?.(undefined);
    await eventually(
      "the request for the second page is abandoned",
      () => h.server.abandonedContinues.includes("2"),
    );
  });

  it("starts the list again when a continue token expired", T, async () => {
    fill(5);
    h.server.expireNextContinue = true;
    const informer = h.start({ pageSize: 2 });
    await informer.waitForSync();
    assert.equal(informer.store.size, 5);
    assert.deepEqual(continues(), ["", "2", "", "2", "4"]);
  });

  it("names a page that is not JSON, and lists again", T, async () => {
    fill(3);
    h.server.truncateNextList = true;
    const events = paged({ initial: 10, max: 50 })[Symbol.asyncIterator]();
    // The broken first page ends that list; the next one starts with a new Init.
    assert.deepEqual(await untilInitDone(events), [
      "Init",
      "Init",
      "InitApply o0 1",
      "InitApply o1 1",
      "InitApply o2 1",
      "InitDone",
    ]);
    // The broken page's head asked for the second page ahead, which may or may not have reached
    // the server before it was dropped.
    assert.deepEqual(continues().slice(-2), ["", "2"]);
    assert.equal(continues().filter((token) => token === "").length, 2);
    assert.ok(
      h.records.some((r) =>
        String(r.properties.error ?? r.properties.reason).includes(
          "a list page of ConfigMap in ns is not JSON",
        )
      ),
      "the broken page is named in the log",
    );
  });

  for (const streamingList of [false, true]) {
    const how = streamingList ? "a streaming list" : "a paged list (the default)";
    it(
      `yields Init, InitApply, InitDone, then Apply and Delete, with no store: ${how}`,
      T,
      async () => {
        h.server.put("a", { v: "1" });
        h.server.put("b", { v: "1" });
        const seen: string[] = [];
        const events = watcher(h.rest, ConfigMap, {
          namespace: NAMESPACE,
          signal: h.stop.signal,
          backoff: { initial: 10, max: 50 },
          ...(streamingList ? { streamingList } : {}),
        });
        for await (const event of events) {
          seen.push(summary(event));
          if (event.type === "InitDone") {
            assert.equal(events.status().state, "Watching");
            h.server.put("a", { v: "2" });
            h.server.remove("b");
          }
          if (event.type === "Delete") break;
        }
        assert.deepEqual(seen, [
          "Init",
          "InitApply a 1",
          "InitApply b 1",
          "InitDone",
          "Apply a 2",
          "Delete b 1",
        ]);
        await eventually(
          "leaving the loop closed the connection",
          () => h.server.openWatches === 0,
        );
        assert.throws(() => events[Symbol.asyncIterator](), /already iterated/);
        const streamed = h.server.requests.filter((r) =>
          r.url.searchParams.get("sendInitialEvents") === "true"
        );
        assert.equal(streamed.length, streamingList ? 1 : 0);
      },
    );

    it(`skips events that are not newer than where it resumes from: ${how}`, T, async () => {
      h.server.put("a", { v: "1" });
      const stale = JSON.stringify({
        type: "MODIFIED",
        object: { ...cm("a", "50", "stale") },
      });
      const duplicate = JSON.stringify({ type: "ADDED", object: h.server.objects.get("a") });
      h.server.injectLines = [stale, duplicate];
      const seen: string[] = [];
      for await (
        const event of watcher(h.rest, ConfigMap, {
          namespace: NAMESPACE,
          signal: h.stop.signal,
          streamingList,
        })
      ) {
        seen.push(summary(event));
        if (event.type === "InitDone") {
          // After the stale lines (a paged list's watch opens after InitDone), so they come first.
          void eventually("the stale lines are sent", () => h.server.injections === 1)
            .then(() => h.server.put("b", { v: "1" }));
        }
        if (event.type === "Apply") break;
      }
      assert.deepEqual(seen, ["Init", "InitApply a 1", "InitDone", "Apply b 1"]);
    });
  }

  for (const inStream of [false, true]) {
    const how = inStream ? "an ERROR event" : "a 400 status";
    it(
      `relists when every watch from a bookmark's resourceVersion is refused with ${how}`,
      T,
      async () => {
        h.server.refuseInStream = inStream;
        h.server.put("a", { v: "1" });
        const informer = h.start();
        await informer.waitForSync();
        h.server.injectLines = [bookmark("not-a-number")];
        h.server.afterInject = "end";
        h.server.closeWatches();
        await eventually(
          "the watch is refused twice, then relisted",
          () => informer.health().lists === 2,
        );
        assert.equal(watchesFrom("not-a-number"), 2, "the refusal is retried once, then relisted");
        h.server.put("b", { v: "1" });
        await eventually("the store converges", () => converged(informer));
        assert.ok(
          h.records.some((r) => /keeps failing/.test(r.message.join(""))),
          "the relist is logged with its reason",
        );
        assert.equal(informer.health().lastError, undefined);
      },
    );

    const how504 = inStream ? "an ERROR event" : "a status";
    it(
      `relists at once on 504 ResourceVersionTooLarge as ${how504} (an etcd restore)`,
      T,
      async () => {
        h.server.refuseInStream = inStream;
        h.server.put("a", { v: "1" });
        const informer = h.start();
        await informer.waitForSync();
        h.server.injectLines = [bookmark("99999999")];
        h.server.afterInject = "end";
        h.server.closeWatches();
        await eventually("the store is relisted", () => informer.health().lists === 2);
        assert.equal(
          watchesFrom("99999999"),
          1,
          "no second try at a resourceVersion from the future",
        );
        h.server.put("b", { v: "1" });
        await eventually("the store converges", () => converged(informer));
      },
    );
  }

  it("restarts a watch that stalls mid-line, past its idle deadline", T, async () => {
    h.server.put("a", { v: "1" });
    const informer = h.start({ idleTimeout: 200 });
    await informer.waitForSync();
    h.server.injectLines = [new TextEncoder().encode('{"type":"MODIFIED","object":{"meta')];
    h.server.afterInject = "stall";
    h.server.closeWatches();
    await eventually("the half line was sent", () => h.server.injections === 1);
    h.server.put("b", { v: "1" });
    await eventually("a new watch catches up", () => converged(informer));
    assert.ok(h.records.some((r) => /no event for/.test(String(r.properties.error))));
  });

  it(
    "fails readiness, naming it, while an informer is stuck in backoff, and recovers",
    T,
    async () => {
      h.server.put("a", { v: "1" });
      const informer = h.start({ unhealthyAfter: 100 });
      await informer.waitForSync();
      const ready = informersReady(() => [informer.health()]);
      ready();
      h.server.refuseAll = { code: 403, reason: "Forbidden" };
      h.server.closeWatches();
      await eventually("the informer is stuck", () => informer.health().stuck === true);
      assert.throws(
        () => ready(),
        /ConfigMap in ns: watch failing \(.*refused \(403 Forbidden\)\) for \d+ s/,
      );
      assert.ok(informer.health().failingSince! <= Date.now());
      h.server.refuseAll = undefined;
      h.server.put("b", { v: "1" });
      await eventually("the store converges", () => converged(informer));
      await eventually("readiness passes again", () => informer.health().stuck === false);
      ready();
    },
  );

  it(
    "backs off, rather than spinning, when every watch ends at once without an event",
    T,
    async () => {
      h.server.put("a", { v: "1" });
      const informer = h.start();
      await informer.waitForSync();
      h.server.endWatchesAtOnce = true;
      h.server.closeWatches();
      await eventually(
        "the empty watch counts as a failure",
        () => /ended at once/.test(informer.health().lastError ?? ""),
      );
      assert.ok(informer.health().failingSince !== undefined);
      h.server.endWatchesAtOnce = false;
      h.server.put("b", { v: "1" });
      await eventually("the store converges", () => converged(informer));
      await eventually("the failure is over", () => informer.health().lastError === undefined);
    },
  );

  it("does not fail readiness for a short backoff", T, async () => {
    h.server.put("a", { v: "1" });
    const informer = h.start({ unhealthyAfter: 60_000 });
    await informer.waitForSync();
    h.server.refuseAll = { code: 500, reason: "InternalError" };
    h.server.closeWatches();
    await eventually("the watch is failing", () => informer.health().failingSince !== undefined);
    assert.equal(informer.health().stuck, false);
    informersReady(() => [informer.health()])();
    h.server.refuseAll = undefined;
  });
});
