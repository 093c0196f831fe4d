// Controllers against the real API server: the reconciler of DESIGN.md §1, owned objects,
// retries with backoff, terminal errors, and concurrency limits.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap } from "../../lib/api/builtins.ts";
import { type KubeObject, resourceType } from "../../lib/api/resource.ts";
import { type Cache, newCache } from "../../lib/cache/cache.ts";
import { type CachedClient, newCachedClient } from "../../lib/cache/cached_client.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { type ControllerHost, newControllerManagedBy } from "../../lib/controller/builder.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import {
  type ReconcileContext,
  type Reconciler,
  type Result,
  TerminalError,
} from "../../lib/reconcile/reconcile.ts";
import { type Runnable } from "../../lib/util/runnable.ts";
import type { Request } from "../../lib/reconcile/reconcile.ts";
import { itemExponentialFailure } from "../../lib/workqueue/rate_limiter.ts";
import { ignoreNotFound } from "../../lib/kube/errors.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { eventually } from "../support/eventually.ts";

/** The custom resource of DESIGN.md §1, written out by hand until defineResource exists. */
interface ExampleObject extends KubeObject {
  apiVersion: "example.com/v1alpha1";
  kind: "Example";
  spec: { replicas?: number };
  status?: { phase?: string };
}

const Example = resourceType<ExampleObject>({
  group: "example.com",
  version: "v1alpha1",
  kind: "Example",
  scope: "Namespaced",
  subresources: ["status"],
});

const exampleCRD = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "examples.example.com" },
  spec: {
    group: "example.com",
    scope: "Namespaced",
    names: { plural: "examples", singular: "example", kind: "Example", listKind: "ExampleList" },
    versions: [{
      name: "v1alpha1",
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: {
        openAPIV3Schema: {
          type: "object",
          properties: {
            spec: { type: "object", properties: { replicas: { type: "integer", default: 1 } } },
            status: { type: "object", properties: { phase: { type: "string" } } },
          },
        },
      },
    }],
  },
};

/** A host for controllers until the Manager exists: a cache, a client and runnables. */
class TestHost implements ControllerHost {
  readonly cache: Cache;
  readonly client: CachedClient;
  readonly #runnables: Runnable[] = [];
  readonly #stop = new AbortController();
  #running: Promise<unknown>[] = [];
  failures: unknown[] = [];

  constructor(config: KubeConfig) {
    this.cache = newCache(config, { informer: { backoff: { initial: 50, max: 500 } } });
    this.client = newCachedClient(this.cache, newClient(config));
  }

  getCache(): Cache {
    return this.cache;
  }

  getClient(): CachedClient {
    return this.client;
  }

  add(runnable: Runnable): void {
    this.#runnables.push(runnable);
  }

  start(): void {
    this.#running = [
      this.cache.start(this.#stop.signal),
      ...this.#runnables.map((r) =>
        r.start(this.#stop.signal).catch((err) => this.failures.push(err))
      ),
    ];
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    await Promise.all(this.#running);
  }
}

/** DESIGN.md §1's reconciler, as a user would write it. */
class ExampleReconciler implements Reconciler {
  statusUpdates = new Map<string, number>();
  reconciles = new Map<string, number>();

  private readonly host: TestHost;

  constructor(host: TestHost) {
    this.host = host;
  }

  async reconcile(req: Request, _ctx: ReconcileContext): Promise<Result> {
    this.reconciles.set(req.name, (this.reconciles.get(req.name) ?? 0) + 1);
    const client = this.host.getClient();
    const instance = await client.get(Example, req).catch(ignoreNotFound);
    if (!instance) return {}; // deleted: nothing to do
    if (instance.status?.phase !== "Running") {
      await client.status().update({ ...instance, status: { phase: "Running" } });
      this.statusUpdates.set(req.name, (this.statusUpdates.get(req.name) ?? 0) + 1);
    }
    return { requeueAfter: 5 * 60_000 }; // milliseconds
  }
}

const env = new Environment({ crds: [exampleCRD] });
let config: KubeConfig;
let client: Client;

before(async () => {
  config = await env.start();
  client = newClient(config);
  for (const name of ["examples", "owners", "retries", "workers"]) {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }
});

after(async () => {
  await env.stop();
});

describe("controllers", () => {
  it("drive new Example objects to Running exactly once each, and requeue them after the interval", async () => {
    const host = new TestHost(config);
    const clock = new FakeClock(Date.now());
    const reconciler = new ExampleReconciler(host);
    newControllerManagedBy(host).for(Example)
      .withOptions({ maxConcurrentReconciles: 2, clock })
      .complete(reconciler);
    host.start();
    try {
      const names = ["a", "b", "c"];
      for (const name of names) {
        await client.create({
          apiVersion: "example.com/v1alpha1",
          kind: "Example",
          metadata: { name, namespace: "examples" },
          spec: {},
        });
      }
      await eventually("every Example is Running", async () => {
        const list = await client.list(Example, { namespace: "examples" });
        return list.items.length === 3 && list.items.every((e) => e.status?.phase === "Running");
      });
      // The status update's own event comes back and is reconciled once more, finding Running.
      await eventually(
        "the status events are reconciled",
        () => names.every((n) => (reconciler.reconciles.get(n) ?? 0) >= 2),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(
        names.map((n) => reconciler.statusUpdates.get(n)),
        [1, 1, 1],
        "one status update each",
      );
      const settled = names.map((n) => reconciler.reconciles.get(n)!);
      assert.ok(settled.every((count) => count <= 3), `no reconcile loop: ${settled.join(", ")}`);
      // Nothing more until the requeue interval passes on the controller's clock.
      clock.advance(5 * 60_000 - 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual(names.map((n) => reconciler.reconciles.get(n)), settled);
      clock.advance(1);
      await eventually(
        "each Example is reconciled again after 5 minutes",
        () => names.every((n, i) => reconciler.reconciles.get(n)! > settled[i]),
      );
      assert.deepEqual(names.map((n) => reconciler.statusUpdates.get(n)), [1, 1, 1]);
      assert.deepEqual(host.failures, []);
    } finally {
      await host.stop();
    }
  });

  it("re-enqueues the owner when an owned ConfigMap is deleted, and the owner recreates it", async () => {
    const host = new TestHost(config);
    const created: string[] = [];
    newControllerManagedBy(host).named("owner").for(Example).owns(ConfigMap).complete(
      async (req) => {
        const owner = await host.getClient().get(Example, req).catch(ignoreNotFound);
        if (!owner) return {};
        const name = `${req.name}-config`;
        const existing = await host.getClient().get(ConfigMap, { namespace: req.namespace, name })
          .catch(ignoreNotFound);
        if (!existing) {
          const cm = await host.getClient().create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: {
              name,
              namespace: req.namespace,
              ownerReferences: [{
                apiVersion: owner.apiVersion,
                kind: owner.kind,
                name: owner.metadata!.name!,
                uid: owner.metadata!.uid!,
                controller: true,
                blockOwnerDeletion: true,
              }],
            },
            data: { owner: req.name },
          });
          // Examples of the other tests are reconciled too; count this test's owner only.
          if (req.namespace === "owners") created.push(cm.metadata!.uid!);
        }
        return {};
      },
    );
    host.start();
    try {
      await client.create({
        apiVersion: "example.com/v1alpha1",
        kind: "Example",
        metadata: { name: "parent", namespace: "owners" },
        spec: {},
      });
      await eventually("the owned ConfigMap exists", () => created.length === 1);
      await client.delete({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "parent-config", namespace: "owners" },
      });
      await eventually("the owner recreated it", () => created.length === 2);
      const again = await client.get(ConfigMap, { namespace: "owners", name: "parent-config" });
      assert.equal(again.metadata?.uid, created[1]);
      assert.notEqual(created[0], created[1]);
    } finally {
      await host.stop();
    }
  });

  it("retries a failing reconcile with growing delays until it succeeds, and never retries a TerminalError", async () => {
    const host = new TestHost(config);
    const clock = new FakeClock(Date.now());
    const attempts = new Map<string, number>();
    newControllerManagedBy(host).named("retries").for(ConfigMap, {
      predicates: [{
        create: (e) => e.object.metadata?.namespace === "retries",
        update: () => false,
      }],
    }).withOptions({ clock, rateLimiter: itemExponentialFailure(5, 1_000_000) }).complete((req) => {
      const count = (attempts.get(req.name) ?? 0) + 1;
      attempts.set(req.name, count);
      if (req.name === "terminal") throw new TerminalError("this spec can never work");
      if (count <= 3) throw new Error(`failure ${count}`);
      return {};
    });
    host.start();
    try {
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "flaky", namespace: "retries" },
      });
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "terminal", namespace: "retries" },
      });
      await eventually(
        "the first attempts ran",
        () => attempts.get("flaky") === 1 && attempts.get("terminal") === 1,
      );
      // Backoff 5, 10, 20 ms on the controller's clock: each retry comes exactly when due.
      for (const [delay, attempt] of [[5, 2], [10, 3], [20, 4]]) {
        clock.advance(delay - 1);
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.equal(attempts.get("flaky"), attempt - 1, `not before ${delay} ms`);
        clock.advance(1);
        await eventually(
          `attempt ${attempt} after ${delay} ms`,
          () => attempts.get("flaky") === attempt,
        );
      }
      clock.advance(10 * 60_000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(attempts.get("flaky"), 4, "success ends the retries");
      assert.equal(attempts.get("terminal"), 1, "a TerminalError is not retried");
    } finally {
      await host.stop();
    }
  });

  it("runs up to maxConcurrentReconciles at once, and never the same key twice at once", async () => {
    const host = new TestHost(config);
    let active = 0;
    let maxActive = 0;
    const activeKeys = new Set<string>();
    let overlaps = 0;
    const done = new Set<string>();
    newControllerManagedBy(host).named("workers").for(ConfigMap, {
      predicates: [{
        create: (e) => e.object.metadata?.namespace === "workers",
        update: (e) => e.objectNew.metadata?.namespace === "workers",
      }],
    }).withOptions({ maxConcurrentReconciles: 10 }).complete(async (req) => {
      if (activeKeys.has(req.name)) overlaps++;
      activeKeys.add(req.name);
      maxActive = Math.max(maxActive, ++active);
      await new Promise((resolve) => setTimeout(resolve, 40));
      active--;
      activeKeys.delete(req.name);
      done.add(req.name);
      return {};
    });
    host.start();
    try {
      const names = Array.from({ length: 100 }, (_, i) => `cm-${i}`);
      await Promise.all(
        names.map((name) =>
          client.create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name, namespace: "workers" },
          })
        ),
      );
      // Touch half of them while they are being reconciled: re-adds while processing.
      await Promise.all(
        names.slice(0, 50).map(async (name) => {
          const cm = await client.get(ConfigMap, { namespace: "workers", name });
          await client.update({ ...cm, data: { touched: "yes" } });
        }),
      );
      await eventually("all 100 are reconciled", () => done.size === 100, 60_000);
      await eventually("the workers are idle", () => active === 0);
      assert.equal(maxActive, 10, "the concurrency limit is reached and never passed");
      assert.equal(overlaps, 0, "no key is reconciled twice at once");
    } finally {
      await host.stop();
    }
  });
});
