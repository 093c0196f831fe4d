// The Memcached controller, tested two ways: its reconciler against FakeClient (in memory, no
// cluster), and the whole operator against a real local control plane (etcd + kube-apiserver,
// started by Environment; `rudder envtest setup` builds them, or set KUBEBUILDER_ASSETS).
// Every hook and test states its timeout: a control plane can take a minute to start on a busy
// machine. (Bun runs node:test hooks under bun test's own default, 5 s, whatever they ask for;
// bunfig.toml preloads bun_test_setup.ts, which raises it.)
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type Client, Deployment, isNotFound, newClient } from "@rudder/operator";
import type { Logger } from "@rudder/operator/manager";
import { Environment, FakeClient } from "@rudder/operator/testing";
import { Memcached } from "../api/memcached.ts";
import { createManager } from "../main.ts";
import { FINALIZER, MemcachedReconciler, RESYNC_MS } from "./memcached_controller.ts";

const quiet: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  with: () => quiet,
};

async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Milliseconds for starting the control plane: Environment gives up after 2 min itself. */
const START_TIMEOUT = 180_000;
/** Milliseconds for a test on the control plane, or for stopping it. */
const TEST_TIMEOUT = 60_000;

describe("MemcachedReconciler", () => {
  const ctx = { signal: new AbortController().signal, log: quiet, reconcileID: "test" };

  it("owns a Deployment with the replicas asked for, and reports Running", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const key = { namespace: "default", name: "sample" };
    const client = new FakeClient({ types: [Memcached] });
    await client.create({
      apiVersion: "cache.example.com/v1alpha1",
      kind: "Memcached",
      metadata: key,
      spec: { replicas: 2, image: "registry.k8s.io/pause:3.10" },
    });
    const reconciler = new MemcachedReconciler(client);
    await reconciler.reconcile(key, ctx); // adds the finalizer
    const withFinalizer = await client.get(Memcached, key);
    assert.deepEqual(withFinalizer.metadata?.finalizers, [FINALIZER]);
    const result = await reconciler.reconcile(key, ctx);
    assert.deepEqual(result, { requeueAfter: RESYNC_MS });

    const deployment = await client.get(Deployment, key);
    assert.equal(deployment.spec?.replicas, 2);
    assert.equal(deployment.spec?.template.spec?.containers[0].image, "registry.k8s.io/pause:3.10");
    const owner = deployment.metadata?.ownerReferences?.[0];
    assert.equal(owner?.kind, "Memcached");
    const reconciled = await client.get(Memcached, key);
    assert.equal(reconciled.status?.phase, "Running");
    assert.equal(reconciled.status?.conditions?.[0]?.status, "True");
  });

  it("lets a deleted Memcached go once its finalizer ran", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const key = { namespace: "default", name: "doomed" };
    const client = new FakeClient({ types: [Memcached] });
    await client.create({
      apiVersion: "cache.example.com/v1alpha1",
      kind: "Memcached",
      metadata: { ...key, finalizers: [FINALIZER] },
      spec: { replicas: 1, image: "registry.k8s.io/pause:3.10" },
    });
    await client.delete(await client.get(Memcached, key)); // waits for the finalizer
    await new MemcachedReconciler(client).reconcile(key, ctx);
    await assert.rejects(client.get(Memcached, key), isNotFound);
  });
});

describe("the memcached-operator operator on a local control plane", () => {
  const env = new Environment({ crds: [Memcached] });
  const stop = new AbortController();
  let client: Client;
  let running: Promise<void> | undefined;

  before(async () => {
    const config = await env.start();
    client = newClient(config);
    const mgr = createManager({
      config,
      metricsBindAddress: "0",
      healthProbeBindAddress: "0",
      leaderElection: false,
    });
    running = mgr.start(stop.signal);
  }, { timeout: START_TIMEOUT });

  after(async () => {
    stop.abort();
    try {
      await running;
    } finally {
      await env.stop();
    }
  }, { timeout: TEST_TIMEOUT });

  it("reconciles a Memcached and lets it go when it is deleted", {
    timeout: TEST_TIMEOUT,
  }, async () => {
    const key = { namespace: "default", name: "hello" };
    await client.create({
      apiVersion: "cache.example.com/v1alpha1",
      kind: "Memcached",
      metadata: key,
      spec: { replicas: 3, image: "registry.k8s.io/pause:3.10" },
    });
    const phase = async () => {
      const instance = await client.get(Memcached, key);
      return instance.status?.phase;
    };
    await eventually(
      "the Memcached is Running",
      async () => (await phase()) === "Running",
    );
    assert.equal((await client.get(Deployment, key)).spec?.replicas, 3);

    // Deleted, it goes once the operator has run its finalizer.
    await client.delete(await client.get(Memcached, key));
    await eventually(
      "the Memcached is gone",
      () => client.get(Memcached, key).then(() => false, isNotFound),
    );
  });
});
