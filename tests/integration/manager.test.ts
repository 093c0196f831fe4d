// The Manager against the real API server: two replicas with leader election, graceful stops,
// failing runnables, lost leadership and health probes.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Lease } from "../../lib/api/builtins.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { newControllerManagedBy } from "../../lib/controller/builder.ts";
import type { Request } from "../../lib/reconcile/reconcile.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { LeaderElectionLostError } from "../../lib/leaderelection/leader_election.ts";
import { Manager, type ManagerOptions } from "../../lib/manager/manager.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { eventually } from "../support/eventually.ts";

const LEASE = { leaseDuration: 3000, renewDeadline: 2000, retryPeriod: 500 };

const env = new Environment();
let config: KubeConfig;
let client: Client;

before(async () => {
  config = await env.start();
  client = newClient(config);
  for (const name of ["le-a", "le-b", "graceful", "probes"]) {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }
});

after(async () => {
  await env.stop();
});

/** A reconcile window: which replica reconciled what, from when to when (ms). */
interface Window {
  replica: string;
  request: Request;
  start: number;
  end: number;
}

/** A manager whose controller records reconcile windows of ConfigMaps in `namespace`. */
function replica(
  name: string,
  namespace: string,
  windows: Window[],
  options: Partial<ManagerOptions> = {},
) {
  const mgr = new Manager({
    config,
    metricsBindAddress: "0",
    leaderElection: true,
    leaderElectionID: `leader-${namespace}`,
    leaderElectionNamespace: "default",
    metricsRegistry: new Registry(),
    ...LEASE,
    ...options,
  });
  newControllerManagedBy(mgr).named(`cms-${name}`).for(ConfigMap, {
    predicates: [{
      create: (e) => e.object.metadata?.namespace === namespace,
      update: (e) => e.objectNew.metadata?.namespace === namespace,
    }],
  }).withOptions({ maxConcurrentReconciles: 2 }).complete(async (request) => {
    const start = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 30));
    windows.push({ replica: name, request, start, end: performance.now() });
    return {};
  });
  const stop = new AbortController();
  const running = mgr.start(stop.signal);
  running.catch(() => {});
  return { mgr, stop, running };
}

async function leaseHolder(namespace: string): Promise<string | undefined> {
  const lease = await client.get(Lease, { namespace: "default", name: `leader-${namespace}` });
  return lease.spec?.holderIdentity || undefined;
}

/** Writes ConfigMaps in `namespace` until stopped, so there is always something to reconcile. */
function churn(namespace: string) {
  let stopped = false;
  const done = (async () => {
    for (let i = 0; !stopped; i++) {
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: `cm-${i}`, namespace },
      })
        .catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return async () => {
    stopped = true;
    await done;
  };
}

function assertNoOverlap(windows: Window[]) {
  const a = windows.filter((w) => w.replica === "a");
  const b = windows.filter((w) => w.replica === "b");
  for (const x of a) {
    for (const y of b) {
      assert.ok(x.end <= y.start || y.end <= x.start, "reconciles of the two replicas overlap");
    }
  }
}

describe("leader election between two managers", () => {
  for (const release of [false, true]) {
    it(`hands over ${release ? "within about a retry period when the leader releases" : "within the lease bounds when the leader dies"}, never reconciling on both at once`, async () => {
      const namespace = release ? "le-b" : "le-a";
      const windows: Window[] = [];
      const a = replica("a", namespace, windows, { leaderElectionReleaseOnCancel: release });
      await a.mgr.elected();
      const b = replica("b", namespace, windows, { leaderElectionReleaseOnCancel: release });
      const stopChurn = churn(namespace);
      try {
        await eventually("a reconciles", () => windows.some((w) => w.replica === "a"));
        assert.equal(await leaseHolder(namespace), a.mgr.identity);
        let bLeads = false;
        b.mgr.elected().then(() => (bLeads = true), () => {});
        await new Promise((resolve) => setTimeout(resolve, 1000));
        assert.equal(bLeads, false, "exactly one leads");
        assert.ok(!windows.some((w) => w.replica === "b"), "the follower does not reconcile");

        const stopped = performance.now();
        a.stop.abort();
        await a.running;
        await b.mgr.elected();
        const handover = performance.now() - stopped;
        if (release) {
          assert.ok(handover < 2 * LEASE.retryPeriod + 1500, `handover took ${handover} ms`);
        } else {
          assert.ok(
            handover < LEASE.leaseDuration + 3 * LEASE.retryPeriod + 1500,
            `handover took ${handover} ms`,
          );
        }
        assert.equal(await leaseHolder(namespace), b.mgr.identity);
        await eventually("b reconciles", () => windows.some((w) => w.replica === "b"));
        assertNoOverlap(windows);
      } finally {
        await stopChurn();
        a.stop.abort();
        b.stop.abort();
        await Promise.allSettled([a.running, b.running]);
      }
    });
  }

  it("rejects start() with LeaderElectionLostError when another replica takes the lease", async () => {
    const windows: Window[] = [];
    const a = replica("a", "le-a", windows, { leaderElectionID: "leader-stolen" });
    await a.mgr.elected();
    const lease = await client.get(Lease, { namespace: "default", name: "leader-stolen" });
    await client.update({ ...lease, spec: { ...lease.spec, holderIdentity: "someone-else" } });
    await assert.rejects(a.running, (err) => err instanceof LeaderElectionLostError);
  });
});

describe("manager lifecycle", () => {
  it("waits for in-flight reconciles on a graceful stop", async () => {
    let finished = 0;
    let startedReconcile!: () => void;
    const started = new Promise<void>((resolve) => (startedReconcile = resolve));
    const mgr = new Manager({ config, metricsBindAddress: "0", metricsRegistry: new Registry() });
    newControllerManagedBy(mgr).named("slow").for(ConfigMap, {
      predicates: [{ create: (e) => e.object.metadata?.namespace === "graceful" }],
    }).complete(async () => {
      startedReconcile();
      await new Promise((resolve) => setTimeout(resolve, 500));
      finished++;
      return {};
    });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "slow", namespace: "graceful" },
    });
    await started;
    stop.abort();
    await running;
    assert.equal(finished, 1, "the in-flight reconcile finished before start() resolved");
  });

  it("rejects start() when a runnable fails, and a second start()", async () => {
    const mgr = new Manager({ config, metricsBindAddress: "0", metricsRegistry: new Registry() });
    mgr.add({
      start: () => Promise.reject(new Error("runnable broke")),
      needLeaderElection: () => false,
    });
    await assert.rejects(mgr.start(new AbortController().signal), /runnable broke/);
    await assert.rejects(mgr.start(new AbortController().signal), /already started/);
  });

  it("rejects start() when the stop outlasts gracefulShutdownTimeout", async () => {
    const mgr = new Manager({
      config,
      metricsBindAddress: "0",
      gracefulShutdownTimeout: 100,
      metricsRegistry: new Registry(),
    });
    mgr.add({ start: () => new Promise(() => {}), needLeaderElection: () => false });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    await mgr.elected();
    stop.abort();
    await assert.rejects(running, /within the grace period of 100 ms/);
  });

  it("needs a namespace for leader election outside a cluster", async () => {
    const mgr = new Manager({
      config,
      metricsBindAddress: "0",
      leaderElection: true,
      leaderElectionID: "x",
      metricsRegistry: new Registry(),
    });
    await assert.rejects(mgr.start(new AbortController().signal), /leaderElectionNamespace/);
  });

  it("answers /readyz with 500 naming the failing check but not why, and 200 once it passes", async () => {
    const mgr = new Manager({
      config,
      metricsBindAddress: "0",
      healthProbeBindAddress: "127.0.0.1:0",
      metricsRegistry: new Registry(),
    });
    let ready = false;
    mgr.addReadyzCheck("warm-up", () => {
      if (!ready) throw new Error("still warming up");
    });
    mgr.addHealthzCheck("ping", () => {});
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      await mgr.elected();
      const notReady = await fetch(`${mgr.healthProbeURL}/readyz`);
      assert.equal(notReady.status, 500);
      assert.match(await notReady.text(), /\[-\]warm-up failed: reason withheld/);
      assert.equal((await fetch(`${mgr.healthProbeURL}/healthz`)).status, 200);
      ready = true;
      assert.equal((await fetch(`${mgr.healthProbeURL}/readyz`)).status, 200);
    } finally {
      stop.abort();
      await running;
    }
  });
});
