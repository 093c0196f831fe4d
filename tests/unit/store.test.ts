// The informer's store: frozen zero-copy objects, transforms, indexes, lists and atomic replace.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type IndexFunc,
  NAMESPACE_INDEX,
  objectKey,
  splitKey,
  Store,
  stripManagedFields,
} from "../../lib/cache/store.ts";
import { deepFreeze } from "../../lib/api/readonly.ts";
import { parseFieldSelector, parseLabelSelector } from "../../lib/cache/selector.ts";
import type { ObjectMeta } from "../../lib/api/generated/meta_v1.ts";

interface Pod {
  apiVersion: string;
  kind: string;
  metadata?: ObjectMeta;
  spec?: { nodeName?: string; containers?: { name: string; image: string }[] };
  status?: { phase?: string };
}

let rv = 0;

/** A pod with a fresh resourceVersion unless one is given. */
function pod(
  namespace: string | undefined,
  name: string,
  extra: {
    labels?: Record<string, string>;
    node?: string;
    phase?: string;
    rv?: string;
    managedFields?: boolean;
  } = {},
): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      ...(namespace === undefined ? {} : { namespace }),
      name,
      resourceVersion: extra.rv ?? String(++rv),
      ...(extra.labels ? { labels: extra.labels } : {}),
      ...(extra.managedFields
        ? { managedFields: [{ manager: "kubectl", operation: "Update" }] }
        : {}),
    },
    spec: {
      ...(extra.node ? { nodeName: extra.node } : {}),
      containers: [{ name: "main", image: "nginx" }],
    },
    status: extra.phase ? { phase: extra.phase } : {},
  };
}

const byNode: IndexFunc<Pod> = (p) => p.spec?.nodeName ? [p.spec.nodeName] : [];

/** Indexes by phase; throws on the phase "Bad", for the atomicity tests. */
const byPhaseUnlessBad: IndexFunc<Pod> = (p) => {
  if (p.status?.phase === "Bad") throw new Error("index failed");
  return p.status?.phase ? [p.status.phase] : [];
};

function names(objs: readonly { readonly metadata?: { readonly name?: string } }[]): string[] {
  return objs.map((o) => o.metadata?.name ?? "").sort();
}

describe("deepFreeze", () => {
  it("freezes objects and arrays all the way down, in place", () => {
    const obj = { a: { b: [{ c: 1 }, [2]] }, d: "x", e: null };
    const frozen = deepFreeze(obj);
    assert.equal(frozen, obj);
    assert.ok(Object.isFrozen(obj));
    assert.ok(Object.isFrozen(obj.a));
    assert.ok(Object.isFrozen(obj.a.b));
    assert.ok(Object.isFrozen(obj.a.b[0]));
    assert.ok(Object.isFrozen(obj.a.b[1]));
  });

  it("makes writes throw in strict mode", () => {
    const obj = deepFreeze({ metadata: { labels: { a: "b" } }, list: [1] });
    assert.throws(() => {
      (obj.metadata.labels as Record<string, string>).a = "c";
    }, TypeError);
    assert.throws(() => {
      (obj.list as number[]).push(2);
    }, TypeError);
    assert.throws(() => {
      delete (obj as { metadata?: unknown }).metadata;
    }, TypeError);
    assert.equal(obj.metadata.labels.a, "b");
  });

  it("skips subtrees that are already frozen", () => {
    const inner = { mutable: {} as Record<string, string> };
    Object.freeze(inner); // frozen, but its child is not
    deepFreeze({ inner });
    assert.equal(Object.isFrozen(inner.mutable), false);
  });

  it("accepts primitives", () => {
    assert.equal(deepFreeze(5), 5);
    assert.equal(deepFreeze(null), null);
    assert.equal(deepFreeze("s"), "s");
  });
});

describe("stripManagedFields", () => {
  it("drops metadata.managedFields without changing the input", () => {
    const input = pod("ns", "a", { managedFields: true, labels: { x: "y" } });
    const output = stripManagedFields(input);
    assert.notEqual(output, input);
    assert.equal("managedFields" in output.metadata!, false);
    assert.deepEqual(output.metadata?.labels, { x: "y" });
    assert.equal(output.spec, input.spec); // shallow: the rest is shared
    assert.equal(input.metadata?.managedFields?.length, 1);
  });

  it("returns the input itself when there is nothing to drop", () => {
    const input = pod("ns", "a");
    assert.equal(stripManagedFields(input), input);
    const bare = { apiVersion: "v1", kind: "Pod" };
    assert.equal(stripManagedFields(bare), bare);
  });

  it("works on frozen input", () => {
    const input = deepFreeze(pod("ns", "a", { managedFields: true })) as Pod;
    const output = stripManagedFields(input);
    assert.equal("managedFields" in output.metadata!, false);
  });
});

describe("objectKey and splitKey", () => {
  it("makes namespace/name keys, or name for cluster-scoped objects", () => {
    assert.equal(objectKey({ metadata: { namespace: "ns", name: "a" } }), "ns/a");
    assert.equal(objectKey({ metadata: { name: "node-1" } }), "node-1");
    assert.equal(objectKey({ metadata: { namespace: "", name: "node-1" } }), "node-1");
    assert.throws(() => objectKey({ metadata: { namespace: "ns" } }), /without metadata\.name/);
    assert.throws(() => objectKey({}), /without metadata\.name/);
  });

  it("splits keys back", () => {
    assert.deepEqual(splitKey("ns/a"), { namespace: "ns", name: "a" });
    assert.deepEqual(splitKey("node-1"), { namespace: "", name: "node-1" });
    for (const bad of ["", "a/b/c", "/a", "a/"]) {
      assert.throws(() => splitKey(bad), /invalid store key/, bad);
    }
  });
});

describe("Store: storing and reading", () => {
  it("freezes what it stores and hands out the same instance every time", () => {
    const store = new Store<Pod>();
    const input = pod("ns", "a");
    const { stored, previous } = store.upsert(input);
    assert.equal(previous, undefined);
    assert.equal(stored, input); // nothing to strip: the very object, frozen in place
    assert.ok(Object.isFrozen(stored));
    assert.ok(Object.isFrozen(stored.spec?.containers?.[0]));
    const first = store.get("ns/a");
    assert.equal(first, stored);
    assert.equal(store.get("ns/a"), first);
    assert.equal(store.get({ namespace: "ns", name: "a" }), first);
    assert.equal(store.list()[0], first);
    assert.equal(store.byIndex(NAMESPACE_INDEX, "ns")[0], first);
    assert.throws(() => {
      (first as Pod).metadata!.name = "b";
    }, TypeError);
  });

  it("replaces an object with the same key and returns the previous version", () => {
    const store = new Store<Pod>();
    const v1 = store.upsert(pod("ns", "a", { phase: "Pending" })).stored;
    const { stored: v2, previous } = store.upsert(pod("ns", "a", { phase: "Running" }));
    assert.equal(previous, v1);
    assert.equal(store.get("ns/a"), v2);
    assert.equal(store.size, 1);
  });

  it("keys cluster-scoped objects by name", () => {
    const store = new Store<Pod>();
    store.upsert(pod(undefined, "node-1"));
    assert.deepEqual(store.keys(), ["node-1"]);
    assert.equal(store.get({ name: "node-1" })?.metadata?.name, "node-1");
    assert.equal(store.get({ namespace: "", name: "node-1" })?.metadata?.name, "node-1");
  });

  it("deletes by key, by reference or by object, and returns the stored version", () => {
    const store = new Store<Pod>();
    const a = store.upsert(pod("ns", "a")).stored;
    const b = store.upsert(pod("ns", "b")).stored;
    const c = store.upsert(pod("ns", "c")).stored;
    assert.equal(store.delete("ns/a"), a);
    assert.equal(store.delete({ namespace: "ns", name: "b" }), b);
    assert.equal(store.delete(pod("ns", "c")), c); // another instance with the same key
    assert.equal(store.delete("ns/a"), undefined);
    assert.equal(store.size, 0);
    assert.deepEqual(store.keys(), []);
  });

  it("rejects objects without a name", () => {
    const store = new Store<Pod>();
    assert.throws(
      () => store.upsert({ apiVersion: "v1", kind: "Pod", metadata: { namespace: "ns" } }),
      /without metadata\.name/,
    );
    assert.equal(store.size, 0);
  });

  it("counts, lists keys and clears", () => {
    const store = new Store<Pod>({ indexers: { node: byNode } });
    store.upsert(pod("a", "1", { node: "n1" }));
    store.upsert(pod("b", "2", { node: "n1" }));
    assert.equal(store.size, 2);
    assert.deepEqual(store.keys(), ["a/1", "b/2"]);
    store.clear();
    assert.equal(store.size, 0);
    assert.deepEqual(store.list(), []);
    assert.deepEqual(store.byIndex("node", "n1"), []);
    assert.deepEqual(store.list({ namespace: "a" }), []);
    assert.equal(store.hasIndex("node"), true); // indexes stay registered
    store.upsert(pod("a", "3", { node: "n1" }));
    assert.deepEqual(store.indexKeys("node", "n1"), ["a/3"]);
  });
});

describe("Store: transforms", () => {
  it("strips managedFields by default, without touching the input", () => {
    const store = new Store<Pod>();
    const input = pod("ns", "a", { managedFields: true });
    const { stored } = store.upsert(input);
    assert.notEqual(stored, input);
    assert.equal(stored.metadata?.managedFields, undefined);
    assert.equal(input.metadata?.managedFields?.length, 1);
  });

  it("keeps objects unchanged with transform: false", () => {
    const store = new Store<Pod>({ transform: false });
    const input = pod("ns", "a", { managedFields: true });
    const { stored } = store.upsert(input);
    assert.equal(stored, input);
    assert.equal(stored.metadata?.managedFields?.length, 1);
  });

  it("applies a custom transform instead of the default, before freezing and indexing", () => {
    const store = new Store<Pod>({
      transform: (p) => {
        delete p.spec; // the store owns the object, so in-place changes are fine
        p.metadata = { ...p.metadata, labels: { transformed: "yes" } };
        return p;
      },
    });
    const { stored } = store.upsert(pod("ns", "a", { managedFields: true }));
    assert.equal(stored.spec, undefined);
    assert.equal(stored.metadata?.managedFields?.length, 1); // the default did not run
    assert.ok(Object.isFrozen(stored.metadata?.labels));
    assert.equal(store.list({ labelSelector: "transformed=yes" }).length, 1);
  });

  it("prepares objects like upsert without storing them", () => {
    const store = new Store<Pod>();
    const prepared = store.prepare(pod("ns", "a", { managedFields: true }));
    assert.ok(Object.isFrozen(prepared));
    assert.equal(prepared.metadata?.managedFields, undefined);
    assert.equal(store.size, 0);
  });

  it("leaves the store unchanged when the transform throws", () => {
    let fail = false;
    const store = new Store<Pod>({
      transform: (p) => {
        if (fail) throw new Error("transform failed");
        return p;
      },
    });
    const a = store.upsert(pod("ns", "a")).stored;
    fail = true;
    assert.throws(() => store.upsert(pod("ns", "a")), /transform failed/);
    assert.equal(store.get("ns/a"), a);
  });
});

describe("Store: indexes", () => {
  it("indexes on upsert, moves entries on update and removes them on delete", () => {
    const store = new Store<Pod>({ indexers: { node: byNode } });
    store.upsert(pod("ns", "a", { node: "n1" }));
    store.upsert(pod("ns", "b", { node: "n1" }));
    store.upsert(pod("other", "c", { node: "n2" }));
    assert.deepEqual(store.indexKeys("node", "n1"), ["ns/a", "ns/b"]);
    assert.deepEqual(names(store.byIndex("node", "n2")), ["c"]);

    const moved = store.upsert(pod("ns", "a", { node: "n2" })).stored;
    assert.deepEqual(store.indexKeys("node", "n1"), ["ns/b"]);
    assert.deepEqual(store.indexKeys("node", "n2").sort(), ["ns/a", "other/c"]);
    assert.ok(store.byIndex("node", "n2").includes(moved)); // the new version, not the old

    store.upsert(pod("ns", "b")); // no node any more
    assert.deepEqual(store.indexKeys("node", "n1"), []);
    assert.deepEqual(store.byIndex("node", "n1"), []);

    store.delete("other/c");
    assert.deepEqual(store.indexKeys("node", "n2"), ["ns/a"]);
    store.delete("ns/a");
    assert.deepEqual(store.indexKeys("node", "n2"), []);
  });

  it("keeps the namespace index as a built-in index", () => {
    const store = new Store<Pod>();
    store.upsert(pod("a", "1"));
    store.upsert(pod("b", "2"));
    store.upsert(pod(undefined, "cluster"));
    assert.equal(store.hasIndex(NAMESPACE_INDEX), true);
    assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, "a"), ["a/1"]);
    assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, ""), ["cluster"]);
    store.delete("a/1");
    assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, "a"), []);
  });

  it("indexes an object under several values, once each", () => {
    const store = new Store<Pod>({
      indexers: { containers: (p) => (p.spec?.containers ?? []).map((c) => c.image) },
    });
    const p = pod("ns", "a");
    p.spec!.containers = [
      { name: "a", image: "nginx" },
      { name: "b", image: "busybox" },
      { name: "c", image: "nginx" },
    ];
    store.upsert(p);
    assert.deepEqual(store.indexKeys("containers", "nginx"), ["ns/a"]);
    assert.equal(store.byIndex("containers", "nginx").length, 1);
    assert.deepEqual(store.indexKeys("containers", "busybox"), ["ns/a"]);
  });

  it("adds an index over the objects already stored", () => {
    const store = new Store<Pod>();
    store.upsert(pod("ns", "a", { node: "n1" }));
    store.upsert(pod("ns", "b", { node: "n2" }));
    store.addIndexer("node", byNode);
    assert.deepEqual(store.indexKeys("node", "n1"), ["ns/a"]);
    store.upsert(pod("ns", "c", { node: "n1" }));
    assert.deepEqual(store.indexKeys("node", "n1"), ["ns/a", "ns/c"]);
  });

  it("rejects a duplicate index name, the built-in one included", () => {
    const store = new Store<Pod>({ indexers: { node: byNode } });
    assert.throws(() => store.addIndexer("node", byNode), /already has an index named "node"/);
    assert.throws(
      () => store.addIndexer(NAMESPACE_INDEX, byNode),
      /already has an index named "namespace"/,
    );
  });

  it("does not add an index whose function throws on stored objects", () => {
    const store = new Store<Pod>();
    store.upsert(pod("ns", "a"));
    assert.throws(() =>
      store.addIndexer("bad", () => {
        throw new Error("index failed");
      }), /index failed/);
    assert.equal(store.hasIndex("bad"), false);
    store.addIndexer("bad", () => ["ok"]); // the name is still free
    assert.deepEqual(store.indexKeys("bad", "ok"), ["ns/a"]);
  });

  it("leaves the store unchanged when an index function throws on upsert", () => {
    const store = new Store<Pod>({
      indexers: { phase: byPhaseUnlessBad },
    });
    const a = store.upsert(pod("ns", "a", { phase: "Running" })).stored;
    assert.throws(() => store.upsert(pod("ns", "a", { phase: "Bad" })), /index failed/);
    assert.throws(() => store.upsert(pod("ns", "b", { phase: "Bad" })), /index failed/);
    assert.equal(store.get("ns/a"), a);
    assert.equal(store.get("ns/b"), undefined);
    assert.deepEqual(store.indexKeys("phase", "Running"), ["ns/a"]);
    assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, "ns"), ["ns/a"]);
  });

  it("names an unknown index", () => {
    const store = new Store<Pod>();
    assert.throws(() => store.byIndex("nope", "x"), /no index named "nope"/);
    assert.throws(() => store.indexKeys("nope", "x"), /no index named "nope"/);
  });
});

describe("Store: list", () => {
  function fixture() {
    const store = new Store<Pod>({
      indexers: { "field:spec.nodeName": byNode },
    });
    store.upsert(pod("shop", "web-1", { labels: { app: "web", tier: "front" }, node: "n1" }));
    store.upsert(pod("shop", "web-2", { labels: { app: "web" }, node: "n2" }));
    store.upsert(pod("shop", "db", { labels: { app: "db" }, node: "n1" }));
    store.upsert(pod("blog", "web-1", { labels: { app: "web" }, node: "n1" }));
    store.upsert(pod("blog", "cache", { node: "n2", phase: "Running" }));
    store.upsert(pod(undefined, "cluster-thing", { labels: { app: "web" } }));
    return store;
  }

  it("lists everything, the stored instances themselves", () => {
    const store = fixture();
    const all = store.list();
    assert.equal(all.length, 6);
    assert.equal(all[0], store.get("shop/web-1"));
    assert.deepEqual(store.list({}), all);
    assert.deepEqual(store.list({ namespace: "" }), all); // "" means all namespaces
  });

  it("lists by namespace", () => {
    const store = fixture();
    assert.deepEqual(names(store.list({ namespace: "shop" })), ["db", "web-1", "web-2"]);
    assert.deepEqual(names(store.list({ namespace: "blog" })), ["cache", "web-1"]);
    assert.deepEqual(store.list({ namespace: "none" }), []);
  });

  it("lists by label selector in every form", () => {
    const store = fixture();
    assert.deepEqual(names(store.list({ labelSelector: "app=web" })), [
      "cluster-thing",
      "web-1",
      "web-1",
      "web-2",
    ]);
    assert.deepEqual(
      names(store.list({ namespace: "shop", labelSelector: { matchLabels: { app: "web" } } })),
      ["web-1", "web-2"],
    );
    assert.deepEqual(
      names(store.list({ namespace: "shop", labelSelector: parseLabelSelector("tier") })),
      ["web-1"],
    );
    // != and notin include objects without the label.
    assert.deepEqual(
      names(store.list({ namespace: "blog", labelSelector: "app!=web" })),
      ["cache"],
    );
    assert.deepEqual(names(store.list({ labelSelector: "app notin (web)" })), ["cache", "db"]);
    assert.equal(store.list({ labelSelector: "" }).length, 6);
  });

  it("rejects an invalid label selector", () => {
    assert.throws(() => fixture().list({ labelSelector: "app in (" }), /invalid label selector/);
  });

  it("lists by metadata.name and metadata.namespace without an index", () => {
    const store = fixture();
    assert.deepEqual(
      store.list({ fieldSelector: "metadata.name=web-1" }).map((p) => objectKey(p)).sort(),
      ["blog/web-1", "shop/web-1"],
    );
    assert.deepEqual(
      store.list({ namespace: "shop", fieldSelector: { "metadata.name": "web-1" } }),
      [store.get("shop/web-1")],
    );
    assert.deepEqual(
      store.list({ fieldSelector: "metadata.namespace=blog,metadata.name==web-1" }),
      [store.get("blog/web-1")],
    );
    assert.deepEqual(names(store.list({ fieldSelector: "metadata.namespace=blog" })), [
      "cache",
      "web-1",
    ]);
    assert.deepEqual(names(store.list({ fieldSelector: "metadata.namespace=" })), [
      "cluster-thing",
    ]);
    assert.deepEqual(
      names(store.list({ namespace: "shop", fieldSelector: "metadata.name!=web-1" })),
      ["db", "web-2"],
    );
    assert.deepEqual(
      names(store.list({ fieldSelector: "metadata.namespace!=shop,metadata.name!=cache" })),
      ["cluster-thing", "web-1"],
    );
    // The namespace option and the selector disagree: nothing.
    assert.deepEqual(
      store.list({ namespace: "shop", fieldSelector: "metadata.namespace=blog" }),
      [],
    );
    assert.deepEqual(store.list({ namespace: "shop", fieldSelector: "metadata.name=nope" }), []);
  });

  it("lists by an indexed field, alone and with namespace, labels and name", () => {
    const store = fixture();
    assert.deepEqual(
      store.list({ fieldSelector: "spec.nodeName=n1" }).map((p) => objectKey(p)).sort(),
      ["blog/web-1", "shop/db", "shop/web-1"],
    );
    assert.deepEqual(
      names(store.list({ namespace: "shop", fieldSelector: { "spec.nodeName": "n1" } })),
      ["db", "web-1"],
    );
    assert.deepEqual(
      names(
        store.list({ fieldSelector: parseFieldSelector("spec.nodeName==n1,metadata.name=db") }),
      ),
      ["db"],
    );
    assert.deepEqual(
      names(
        store.list({
          namespace: "shop",
          labelSelector: "app=web",
          fieldSelector: "spec.nodeName=n1",
        }),
      ),
      ["web-1"],
    );
    assert.deepEqual(store.list({ fieldSelector: "spec.nodeName=n9" }), []);
  });

  it("refuses a field selector on a field without an index, naming the field", () => {
    const store = fixture();
    assert.throws(
      () => store.list({ fieldSelector: "status.phase=Running" }),
      (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.match(err.message, /field "status\.phase" is not indexed/);
        assert.match(err.message, /indexField\(type, "status\.phase", extract\)/);
        return true;
      },
    );
    assert.throws(
      () => store.list({ namespace: "shop", fieldSelector: "metadata.name=a,status.phase=x" }),
      /"status\.phase" is not indexed/,
    );
    // Even when the rest of the selector already rules everything out.
    assert.throws(
      () => store.list({ namespace: "shop", fieldSelector: "metadata.namespace=a,status.phase=x" }),
      /"status\.phase" is not indexed/,
    );
  });

  it("refuses != on an indexed field", () => {
    assert.throws(
      () => fixture().list({ fieldSelector: "spec.nodeName!=n1" }),
      /only exact matches \(= or ==\) are supported on the indexed field "spec\.nodeName"/,
    );
  });

  it("follows index changes in field-selector lists", () => {
    const store = fixture();
    store.upsert(pod("shop", "db", { labels: { app: "db" }, node: "n2" }));
    assert.deepEqual(names(store.list({ namespace: "shop", fieldSelector: "spec.nodeName=n1" })), [
      "web-1",
    ]);
    store.delete("shop/web-1");
    assert.deepEqual(store.list({ namespace: "shop", fieldSelector: "spec.nodeName=n1" }), []);
  });

  it("serves many objects by namespace and index", () => {
    const store = new Store<Pod>({ indexers: { "field:spec.nodeName": byNode } });
    for (let i = 0; i < 10_000; i++) {
      store.upsert(
        pod(`ns-${i % 100}`, `p-${i}`, {
          node: `n-${i % 7}`,
          labels: { half: `${Math.floor(i / 100) % 2}` },
        }),
      );
    }
    assert.equal(store.size, 10_000);
    assert.equal(store.list({ namespace: "ns-42" }).length, 100);
    assert.equal(store.list({ namespace: "ns-42", labelSelector: "half=0" }).length, 50);
    const onNode = store.list({ namespace: "ns-3", fieldSelector: "spec.nodeName=n-3" });
    assert.deepEqual(
      onNode.map((p) => p.metadata?.name),
      Array.from({ length: 100 }, (_, k) => 3 + 100 * k).filter((i) => i % 7 === 3).map((i) =>
        `p-${i}`
      ),
    );
    assert.equal(store.byIndex("field:spec.nodeName", "n-0").length, Math.ceil(10_000 / 7));
  });
});

describe("Store: replace", () => {
  it("reports added, updated and deleted objects and swaps the contents", () => {
    const store = new Store<Pod>({ indexers: { node: byNode } });
    const keep = store.upsert(pod("ns", "keep", { rv: "10", node: "n1" })).stored;
    const change = store.upsert(pod("ns", "change", { rv: "11", node: "n1" })).stored;
    const gone = store.upsert(pod("ns", "gone", { rv: "12", node: "n1" })).stored;

    const incomingKeep = pod("ns", "keep", { rv: "10", node: "n1" });
    const incomingChange = pod("ns", "change", { rv: "20", node: "n2" });
    const incomingNew = pod("other", "new", { rv: "21", node: "n2" });
    const diff = store.replace([incomingKeep, incomingChange, incomingNew]);

    assert.deepEqual(diff.added, [incomingNew]);
    assert.equal(diff.added[0], incomingNew);
    assert.equal(diff.updated.length, 1);
    assert.equal(diff.updated[0].previous, change);
    assert.equal(diff.updated[0].current, incomingChange);
    assert.deepEqual(diff.deleted, [gone]);
    assert.equal(diff.deleted[0], gone);

    // Unchanged resourceVersion: the stored object is kept, the new copy is not even frozen.
    assert.equal(store.get("ns/keep"), keep);
    assert.equal(Object.isFrozen(incomingKeep), false);
    assert.ok(Object.isFrozen(incomingChange));
    assert.equal(store.get("ns/gone"), undefined);
    assert.deepEqual(store.keys().sort(), ["ns/change", "ns/keep", "other/new"]);

    // Indexes follow.
    assert.deepEqual(store.indexKeys("node", "n1"), ["ns/keep"]);
    assert.deepEqual(store.indexKeys("node", "n2").sort(), ["ns/change", "other/new"]);
    assert.deepEqual(names(store.list({ namespace: "ns" })), ["change", "keep"]);
    assert.deepEqual(names(store.list({ namespace: "other" })), ["new"]);
    assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, "ns").sort(), ["ns/change", "ns/keep"]);
  });

  it("reports nothing for an identical relist", () => {
    const store = new Store<Pod>();
    const objs = [pod("ns", "a"), pod("ns", "b")];
    store.replace(objs.map((o) => structuredClone(o)));
    const before = store.list();
    const diff = store.replace(objs.map((o) => structuredClone(o)));
    assert.deepEqual(diff, { added: [], updated: [], deleted: [] });
    assert.deepEqual(store.list(), before);
    assert.equal(store.list()[0], before[0]);
  });

  it("takes objects without a resourceVersion as updated", () => {
    const store = new Store<Pod>();
    const noRv = (): Pod => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { namespace: "ns", name: "a" },
    });
    store.replace([noRv()]);
    const diff = store.replace([noRv()]);
    assert.equal(diff.updated.length, 1);
    assert.equal(diff.added.length, 0);
  });

  it("transforms new versions but not kept ones", () => {
    let calls = 0;
    const store = new Store<Pod>({
      transform: (p) => {
        calls++;
        return stripManagedFields(p);
      },
    });
    store.replace([pod("ns", "a", { rv: "1", managedFields: true })]);
    assert.equal(calls, 1);
    const diff = store.replace([
      pod("ns", "a", { rv: "1", managedFields: true }),
      pod("ns", "b", { rv: "2", managedFields: true }),
    ]);
    assert.equal(calls, 2);
    assert.equal(diff.added[0].metadata?.managedFields, undefined);
    assert.equal(store.get("ns/a")?.metadata?.managedFields, undefined);
  });

  it("empties the store when replaced with nothing", () => {
    const store = new Store<Pod>({ indexers: { node: byNode } });
    store.upsert(pod("ns", "a", { node: "n1" }));
    const diff = store.replace([]);
    assert.equal(diff.deleted.length, 1);
    assert.equal(store.size, 0);
    assert.deepEqual(store.indexKeys("node", "n1"), []);
    assert.deepEqual(store.list({ namespace: "ns" }), []);
  });

  it("is atomic: a failing transform or index function leaves the store as it was", () => {
    const store = new Store<Pod>({
      transform: (p) => {
        if (p.metadata?.name === "bad-transform") throw new Error("transform failed");
        return p;
      },
      indexers: { phase: byPhaseUnlessBad },
    });
    const a = store.upsert(pod("ns", "a", { phase: "Running" })).stored;
    const b = store.upsert(pod("ns", "b", { phase: "Running" })).stored;
    assert.throws(
      () => store.replace([pod("ns", "new"), pod("ns", "bad-transform")]),
      /transform failed/,
    );
    assert.throws(
      () => store.replace([pod("ns", "c", { phase: "Running" }), pod("ns", "a", { phase: "Bad" })]),
      /index failed/,
    );
    assert.deepEqual(store.keys(), ["ns/a", "ns/b"]);
    assert.equal(store.get("ns/a"), a);
    assert.equal(store.get("ns/b"), b);
    assert.deepEqual(store.indexKeys("phase", "Running"), ["ns/a", "ns/b"]);
    assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, "ns"), ["ns/a", "ns/b"]);
  });
});

describe("Store: replace one object at a time", () => {
  it("transforms and freezes each object when it is added, and shows nothing before commit", () => {
    let calls = 0;
    const store = new Store<Pod>({
      indexers: { node: byNode },
      transform: (p) => {
        calls++;
        return stripManagedFields(p);
      },
    });
    const old = store.upsert(pod("ns", "old", { node: "n1" })).stored;
    calls = 0;
    const replacement = store.beginReplace();
    const incoming = pod("ns", "a", { node: "n2", managedFields: true });
    replacement.add(incoming);
    assert.equal(calls, 1, "the transform ran at add");
    assert.equal(store.size, 1);
    assert.equal(store.get("ns/a"), undefined);
    assert.deepEqual(store.indexKeys("node", "n2"), []);
    assert.equal(store.get("ns/old"), old);

    const diff = replacement.commit();
    assert.equal(calls, 1, "and not again at commit");
    assert.equal(diff.added.length, 1);
    assert.ok(Object.isFrozen(diff.added[0]));
    assert.equal(diff.added[0].metadata?.managedFields, undefined);
    assert.equal(incoming.metadata?.managedFields?.length, 1, "the input is not changed");
    assert.deepEqual(diff.deleted, [old]);
    assert.deepEqual(store.keys(), ["ns/a"]);
    assert.deepEqual(store.indexKeys("node", "n2"), ["ns/a"]);
    assert.deepEqual(store.indexKeys("node", "n1"), []);
  });

  it("keeps the stored version of an unchanged object, and the last of two with one key", () => {
    const store = new Store<Pod>();
    const kept = store.upsert(pod("ns", "kept", { rv: "5" })).stored;
    const replacement = store.beginReplace();
    replacement.add(pod("ns", "kept", { rv: "5" }));
    replacement.add(pod("ns", "twice", { rv: "6", phase: "Pending" }));
    replacement.add(pod("ns", "twice", { rv: "7", phase: "Running" }));
    const diff = replacement.commit();
    assert.equal(store.get("ns/kept"), kept);
    assert.deepEqual(diff.updated, []);
    assert.equal(diff.added.length, 1);
    assert.equal(store.get("ns/twice")?.status?.phase, "Running");
    assert.equal(store.size, 2);
  });

  it("takes changes made to the store between add and commit into account", () => {
    const store = new Store<Pod>({ indexers: { node: byNode } });
    store.upsert(pod("ns", "moved", { rv: "1", node: "n1" }));
    const kept = store.upsert(pod("ns", "kept", { rv: "2", node: "n1" })).stored;
    const replacement = store.beginReplace();
    replacement.add(pod("ns", "moved", { rv: "3", node: "n2" })); // planned against n1
    replacement.add(pod("ns", "kept", { rv: "2", node: "n1" })); // the stored version is kept
    // Meanwhile the store changes under the replacement.
    const between = store.upsert(pod("ns", "moved", { rv: "4", node: "n3" })).stored;
    store.delete("ns/kept");

    const diff = replacement.commit();
    assert.equal(diff.updated.length, 1);
    assert.equal(diff.updated[0].previous, between);
    assert.deepEqual(diff.added, [kept], "gone in between, so added again");
    assert.deepEqual(
      store.indexKeys("node", "n3"),
      [],
      "the version added in between is unindexed",
    );
    assert.deepEqual(store.indexKeys("node", "n2"), ["ns/moved"]);
    assert.deepEqual(store.indexKeys("node", "n1"), ["ns/kept"]);
    assert.deepEqual(store.indexKeys(NAMESPACE_INDEX, "ns").sort(), ["ns/kept", "ns/moved"]);
  });

  it("fails at add, leaving the store as it was, and is used up by its commit", () => {
    const store = new Store<Pod>({
      indexers: { phase: byPhaseUnlessBad },
    });
    const a = store.upsert(pod("ns", "a", { phase: "Running" })).stored;
    const failing = store.beginReplace();
    failing.add(pod("ns", "b", { phase: "Running" }));
    assert.throws(() => failing.add(pod("ns", "a", { phase: "Bad" })), /index failed/);
    assert.deepEqual(store.keys(), ["ns/a"]);
    assert.equal(store.get("ns/a"), a);
    assert.deepEqual(store.indexKeys("phase", "Running"), ["ns/a"]);

    const replacement = store.beginReplace();
    replacement.commit();
    assert.equal(store.size, 0);
    assert.throws(() => replacement.add(pod("ns", "c")), /committed already/);
    assert.throws(() => replacement.commit(), /committed already/);
    assert.equal(store.size, 0);
  });
});
