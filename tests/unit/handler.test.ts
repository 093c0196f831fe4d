// Event handlers, predicates and the channel source: which requests reach the queue, and
// with which priority.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Deployment, Namespace } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import { deepFreeze, type DeepReadonly } from "../../lib/api/readonly.ts";
import { LOW_PRIORITY } from "../../lib/workqueue/workqueue.ts";
import { type Request, type RequestQueue } from "../../lib/reconcile/reconcile.ts";
import {
  enqueueRequestForObject,
  enqueueRequestForOwner,
  enqueueRequestsFromMapFunc,
} from "../../lib/handler/handler.ts";
import {
  and,
  annotationChangedPredicate,
  generationChangedPredicate,
  labelChangedPredicate,
  labelSelectorPredicate,
  newPredicateFuncs,
  not,
  or,
  resourceVersionChangedPredicate,
} from "../../lib/predicate/predicate.ts";
import { channelSource } from "../../lib/source/source.ts";
import { eventually } from "../support/eventually.ts";

interface Queued {
  request: Request;
  priority?: number;
}

function recordingQueue(): RequestQueue & { queued: Queued[] } {
  const queued: Queued[] = [];
  return {
    queued,
    add: (request, options) => queued.push({ request, priority: options?.priority }),
    addAfter: (request, _delay, options) => queued.push({ request, priority: options?.priority }),
    addRateLimited: (request, options) => queued.push({ request, priority: options?.priority }),
  };
}

function cm(
  name: string,
  meta: Record<string, unknown> = {},
  namespace = "ns",
): DeepReadonly<KubeObject> {
  return deepFreeze({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace, resourceVersion: "1", ...meta },
  } as KubeObject);
}

describe("enqueueRequestForObject", () => {
  it("enqueues the object, with low priority for initial lists and resyncs", () => {
    const q = recordingQueue();
    const handler = enqueueRequestForObject();
    handler.create!({ object: cm("a"), isInInitialList: true }, q);
    handler.create!({ object: cm("b"), isInInitialList: false }, q);
    const same = cm("c");
    handler.update!({ objectOld: same, objectNew: same }, q);
    handler.update!({ objectOld: cm("d"), objectNew: cm("d", { resourceVersion: "2" }) }, q);
    handler.delete!({ object: cm("e"), deleteStateUnknown: false }, q);
    handler.generic!({ object: cm("f") }, q);
    assert.deepEqual(q.queued, [
      { request: { namespace: "ns", name: "a" }, priority: LOW_PRIORITY },
      { request: { namespace: "ns", name: "b" }, priority: undefined },
      { request: { namespace: "ns", name: "c" }, priority: LOW_PRIORITY },
      { request: { namespace: "ns", name: "d" }, priority: undefined },
      { request: { namespace: "ns", name: "e" }, priority: undefined },
      { request: { namespace: "ns", name: "f" }, priority: undefined },
    ]);
  });

  it("uses an empty namespace for cluster-scoped objects", () => {
    const q = recordingQueue();
    enqueueRequestForObject().create!({
      object: deepFreeze({ apiVersion: "v1", kind: "Namespace", metadata: { name: "team" } }),
      isInInitialList: false,
    }, q);
    assert.deepEqual(q.queued[0].request, { namespace: "", name: "team" });
  });
});

describe("enqueueRequestForOwner", () => {
  const owners = [
    { apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: "1", controller: true },
    { apiVersion: "apps/v1beta1", kind: "Deployment", name: "old-api", uid: "2" },
    { apiVersion: "v1", kind: "ConfigMap", name: "not-a-deployment", uid: "3" },
    { apiVersion: "other.io/v1", kind: "Deployment", name: "other-group", uid: "4" },
  ];

  it("enqueues owners of the kind by group and kind, any version; only the controller when asked", () => {
    const all = recordingQueue();
    enqueueRequestForOwner(Deployment).create!({
      object: cm("x", { ownerReferences: owners }),
      isInInitialList: false,
    }, all);
    assert.deepEqual(all.queued.map((q) => q.request.name), ["web", "old-api"]);
    assert.ok(all.queued.every((q) => q.request.namespace === "ns"));
    const controller = recordingQueue();
    enqueueRequestForOwner(Deployment, { onlyController: true }).delete!({
      object: cm("x", { ownerReferences: owners }),
      deleteStateUnknown: false,
    }, controller);
    assert.deepEqual(controller.queued.map((q) => q.request.name), ["web"]);
  });

  it("enqueues the owners of both versions of an update, once each", () => {
    const q = recordingQueue();
    enqueueRequestForOwner(Deployment).update!({
      objectOld: cm("x", { ownerReferences: [owners[0]] }),
      objectNew: cm("x", {
        resourceVersion: "2",
        ownerReferences: [owners[0], { ...owners[1], name: "new-owner" }],
      }),
    }, q);
    assert.deepEqual(q.queued.map((e) => e.request.name).sort(), ["new-owner", "web"]);
  });

  it("gives cluster-scoped owners an empty namespace", () => {
    const q = recordingQueue();
    enqueueRequestForOwner(Namespace).create!({
      object: cm("x", {
        ownerReferences: [{ apiVersion: "v1", kind: "Namespace", name: "team", uid: "9" }],
      }),
      isInInitialList: false,
    }, q);
    assert.deepEqual(q.queued[0].request, { namespace: "", name: "team" });
  });
});

describe("enqueueRequestsFromMapFunc", () => {
  it("enqueues what a sync or async function returns, and drops events whose function fails", async () => {
    const q = recordingQueue();
    enqueueRequestsFromMapFunc((obj) => [{ namespace: "x", name: `for-${obj.metadata?.name}` }])
      .create!({ object: cm("a"), isInInitialList: false }, q);
    enqueueRequestsFromMapFunc(async (obj) => {
      await Promise.resolve();
      return [{ namespace: "x", name: `async-${obj.metadata?.name}` }];
    }).generic!({ object: cm("b") }, q);
    enqueueRequestsFromMapFunc(() => {
      throw new Error("boom");
    }).create!({ object: cm("c"), isInInitialList: false }, q);
    enqueueRequestsFromMapFunc(() => Promise.reject(new Error("async boom")))
      .create!({ object: cm("d"), isInInitialList: false }, q);
    await eventually("the async result is queued", () => q.queued.length === 2);
    assert.deepEqual(q.queued.map((e) => e.request.name), ["for-a", "async-b"]);
  });
});

describe("predicates", () => {
  const update = (oldMeta: Record<string, unknown>, newMeta: Record<string, unknown>) => ({
    objectOld: cm("a", oldMeta),
    objectNew: cm("a", newMeta),
  });

  it("pass updates only when their field changed, and everything else", () => {
    assert.equal(
      generationChangedPredicate.update!(update({ generation: 1 }, { generation: 2 })),
      true,
    );
    assert.equal(
      generationChangedPredicate.update!(update({ generation: 1 }, { generation: 1 })),
      false,
    );
    assert.equal(generationChangedPredicate.create, undefined, "creates pass");
    assert.equal(
      labelChangedPredicate.update!(update({ labels: { a: "1" } }, { labels: { a: "2" } })),
      true,
    );
    assert.equal(labelChangedPredicate.update!(update({}, { labels: {} })), false);
    assert.equal(
      annotationChangedPredicate.update!(
        update({ annotations: { a: "1" } }, { annotations: { a: "1" } }),
      ),
      false,
    );
    assert.equal(resourceVersionChangedPredicate.update!(update({}, {})), false);
    assert.equal(
      resourceVersionChangedPredicate.update!(update({}, { resourceVersion: "2" })),
      true,
    );
  });

  it("select by labels on every kind of event, and compose with and, or, not", () => {
    const web = labelSelectorPredicate("tier=web");
    const webObj = cm("w", { labels: { tier: "web" } });
    const dbObj = cm("d", { labels: { tier: "db" } });
    assert.equal(web.create!({ object: webObj, isInInitialList: false }), true);
    assert.equal(web.delete!({ object: dbObj, deleteStateUnknown: false }), false);
    assert.equal(
      web.update!({ objectOld: webObj, objectNew: dbObj }),
      false,
      "the new object decides",
    );
    const named = newPredicateFuncs((o) => o.metadata?.name === "w");
    assert.equal(and(web, named).generic!({ object: webObj }), true);
    assert.equal(and(web, not(named)).generic!({ object: webObj }), false);
    assert.equal(or(not(web), named).generic!({ object: dbObj }), true);
    assert.equal(or().generic!({ object: dbObj }), false, "an empty or passes nothing");
    assert.equal(and().generic!({ object: dbObj }), true, "an empty and passes everything");
  });
});

describe("channelSource", () => {
  it("delivers objects and GenericEvents from an async iterable through predicates", async () => {
    async function* events() {
      yield cm("one") as DeepReadonly<ConfigMap>;
      yield { object: cm("two") as DeepReadonly<ConfigMap> };
      yield cm("skipped") as DeepReadonly<ConfigMap>;
    }
    const q = recordingQueue();
    const source = channelSource<ConfigMap>(events(), enqueueRequestForObject(), {
      predicates: [newPredicateFuncs((o) => o.metadata?.name !== "skipped")],
    });
    const stop = new AbortController();
    await source.start(stop.signal, q);
    await source.waitForSync(stop.signal);
    await eventually("both events are queued", () => q.queued.length === 2);
    assert.deepEqual(q.queued.map((e) => e.request.name), ["one", "two"]);
    stop.abort();
  });
});

// Type-level: handlers and predicates accept the kinds' frozen objects without casts.
const _typed = enqueueRequestForOwner<ConfigMap>(Deployment);
void _typed;
