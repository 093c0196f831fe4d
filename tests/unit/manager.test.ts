// The Manager's lifecycle without an API server: runnables routed to their groups by what they
// are, started in order and stopped in reverse, failures and slow stops, the configuration
// loaded at start, and the probe server as one more runnable.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { Manager } from "../../lib/manager/manager.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import type { Runnable } from "../../lib/util/runnable.ts";

const T = { timeout: 30_000 };

/** A configuration no request is made with: nothing here needs the API server. */
const config: KubeConfig = {
  server: "https://127.0.0.1:1",
  namespace: "default",
  source: "test",
  auth: { credentials: () => Promise.resolve({}) },
};

function manager(options: Partial<ConstructorParameters<typeof Manager>[0]> = {}): Manager {
  return new Manager({
    config,
    metricsBindAddress: "0",
    metricsRegistry: new Registry(),
    ...options,
  });
}

/** A runnable that logs its start and stop and returns once its signal aborts. */
function recorder(name: string, log: string[], extra: Partial<Runnable> = {}): Runnable {
  return {
    name,
    start: (signal) =>
      new Promise<void>((resolve) => {
        log.push(`start ${name}`);
        signal.addEventListener("abort", () => {
          log.push(`stop ${name}`);
          setTimeout(resolve, 1);
        }, { once: true });
      }),
    ...extra,
  };
}

describe("Manager lifecycle", () => {
  it(
    "routes runnables by what they are, starts them in order and stops them in reverse",
    T,
    async () => {
      const log: string[] = [];
      const mgr = manager();
      mgr.add(recorder("controller", log)); // needs leader election by default
      mgr.add(recorder("other", log, { needLeaderElection: () => false }));
      let synced!: () => void;
      const cacheSynced = new Promise<void>((resolve) => (synced = resolve));
      const cache = {
        ...recorder("cache", log),
        waitForCacheSync: () => cacheSynced.then(() => true),
      };
      mgr.add(cache);
      const stop = new AbortController();
      const running = mgr.start(stop.signal);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(log, ["start cache"], "nothing after the caches starts before they sync");
      synced();
      await mgr.elected();
      assert.deepEqual(log, ["start cache", "start other", "start controller"]);
      stop.abort();
      await running;
      assert.deepEqual(log.slice(3), ["stop controller", "stop other", "stop cache"]);
    },
  );

  it(
    "rejects start() with the error of a runnable that fails, having stopped the others",
    T,
    async () => {
      const log: string[] = [];
      const mgr = manager();
      mgr.add(recorder("first", log, { needLeaderElection: () => false }));
      mgr.add({
        name: "broken",
        needLeaderElection: () => false,
        start: () => Promise.reject(new Error("runnable broke")),
      });
      mgr.add(recorder("controller", log));
      await assert.rejects(mgr.start(new AbortController().signal), /runnable broke/);
      assert.deepEqual(log, ["start first", "stop first"], "the leader runnables never started");
      await assert.rejects(mgr.elected(), /stopped/);
    },
  );

  it("ends start() promptly when stopped while a cache is still syncing", T, async () => {
    const log: string[] = [];
    const mgr = manager();
    const cache = {
      ...recorder("cache", log),
      waitForCacheSync: () => new Promise<boolean>(() => {}),
    };
    mgr.add(cache);
    mgr.add(recorder("controller", log));
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop.abort();
    await running;
    assert.deepEqual(log, ["start cache", "stop cache"]);
  });

  it("rejects start() naming the runnable that outlasted gracefulShutdownTimeout", T, async () => {
    const mgr = manager({ gracefulShutdownTimeout: 20 });
    mgr.add({
      name: "stubborn",
      needLeaderElection: () => false,
      start: () => new Promise(() => {}),
    });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    await mgr.elected();
    stop.abort();
    await assert.rejects(
      running,
      /within the grace period of 20 ms: still running: others: stubborn/,
    );
  });

  it("serves the health probes as a runnable of the HTTP servers group", T, async () => {
    const mgr = manager({ healthProbeBindAddress: "127.0.0.1:0" });
    let urlWhenOthersStart: string | undefined;
    mgr.add({
      needLeaderElection: () => false,
      start: (signal) => {
        urlWhenOthersStart = mgr.healthProbeURL;
        return new Promise((resolve) => signal.addEventListener("abort", () => resolve()));
      },
    });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    await mgr.elected();
    assert.ok(urlWhenOthersStart?.startsWith("http://127.0.0.1:"), "listening before the others");
    const response = await fetch(`${urlWhenOthersStart}/healthz`);
    assert.equal(response.status, 200);
    await response.body?.cancel();
    stop.abort();
    await running;
    await assert.rejects(fetch(`${urlWhenOthersStart}/healthz`), "stopped with the manager");
  });

  it("loads its configuration at start when none was given, credentials included", T, async () => {
    const dir = mkdtempSync(join(tmpdir(), "rudder-manager-"));
    const kubeconfig = join(dir, "config");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "current-context: test",
        "contexts: [{name: test, context: {cluster: test, user: test, namespace: team-a}}]",
        "clusters: [{name: test, cluster: {server: 'https://127.0.0.1:1'}}]",
        "users: [{name: test, user: {token: secret-token}}]",
      ].join("\n"),
    );
    const previous = process.env.KUBECONFIG;
    process.env.KUBECONFIG = kubeconfig;
    try {
      const mgr = new Manager({ metricsBindAddress: "0", metricsRegistry: new Registry() });
      const seen = mgr.getConfig();
      assert.equal(seen.server, "", "not loaded before start");
      // The clients made at construction ask for credentials before anything loaded them.
      const early = await seen.auth.credentials();
      assert.equal(early.headers?.Authorization, "Bearer secret-token");
      const stop = new AbortController();
      const running = mgr.start(stop.signal);
      await mgr.elected();
      assert.equal(mgr.getConfig(), seen, "the same object, filled in");
      assert.equal(seen.server, "https://127.0.0.1:1");
      assert.equal(seen.namespace, "team-a");
      assert.equal(await seen.auth.invalidate?.(), false);
      stop.abort();
      await running;
    } finally {
      if (previous === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = previous;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
