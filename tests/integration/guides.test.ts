// The guides' code (docs/guides/, examples/guides/) against a real API server, on Deno and Bun:
// each guide's claim is watched happening.
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Manager } from "../../lib/manager/manager.ts";
import { ConfigMap, Secret } from "../../mod.ts";
import { CustomResourceDefinition } from "../../lib/api/builtins.ts";
import { installCRDs } from "../../lib/testing/envtest.ts";
import { Backup, BackupV1alpha1 } from "../../examples/guides/crd-versions/api.ts";
import { createScopedManager } from "../../examples/guides/cache-scoping/manager.ts";
import { createReplica } from "../../examples/guides/leader-election/replica.ts";
import { setupCountingController } from "../../examples/guides/metrics/controller.ts";
import { setupRequeueController } from "../../examples/guides/requeues/controller.ts";
import { useControlPlane } from "../support/control_plane.ts";
import { eventually } from "../support/eventually.ts";

// Registered before the control plane, so the managers stop before it does.
after(async () => {
  for (const { stop } of running) stop.abort();
  await Promise.allSettled(running.map(({ done }) => done));
}, { timeout: 60_000 });

const plane = useControlPlane({ crds: [BackupV1alpha1] }, ["team-a", "team-b", "team-c"]);
const running: { stop: AbortController; done: Promise<void> }[] = [];

/** Starts `mgr` until the test file ends (or `stop` aborts). */
function run(mgr: Manager, stop = new AbortController()) {
  // A replica may lose its Lease when the file's control plane stops: not this test's concern.
  const done = mgr.start(stop.signal).catch(() => {});
  running.push({ stop, done });
  return { stop, done };
}

const configMap = (
  namespace: string,
  name: string,
  labels: Record<string, string>,
  data: Record<string, string> = {},
): ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { namespace, name, labels },
  data,
});

describe("requeues, rate limits and terminal errors", () => {
  it("polls on requeueAfter, backs off on errors, and never retries a TerminalError", {
    timeout: 60_000,
  }, async () => {
    const calls = new Map<string, number>();
    const mgr = plainManager();
    setupRequeueController(mgr, calls);
    run(mgr);
    const label = { "guides.rudder.dev/requeue": "true" };
    for (const mode of ["poll", "invalid", "flaky", "done"]) {
      await plane.client.create(configMap("default", `requeue-${mode}`, label, { mode }));
    }
    await eventually(
      "polling and retries repeat",
      () => (calls.get("requeue-poll") ?? 0) >= 3 && (calls.get("requeue-flaky") ?? 0) >= 3,
      30_000,
    );
    assert.equal(calls.get("requeue-invalid"), 1);
    assert.equal(calls.get("requeue-done"), 1);
  });
});

/** A manager without leader election, with its servers on free ports. */
function plainManager(metricsBindAddress = "0"): Manager {
  return new Manager({
    config: plane.config,
    metricsBindAddress,
    // The scrapes below are plain fetches; a default manager serves metrics over HTTPS to
    // scrapers the API server authorises (tests/integration/metrics.test.ts).
    metricsServing: "insecure-http",
    healthProbeBindAddress: "0",
  });
}

describe("leader election and several replicas", () => {
  it("runs leader runnables on one replica at a time and hands over on a graceful stop", {
    timeout: 60_000,
  }, async () => {
    const leading: string[] = [];
    const first = createReplica(plane.config, () => leading.push("first"));
    const second = createReplica(plane.config, () => leading.push("second"));
    const a = run(first);
    await eventually("the first replica leads", () => leading.length === 1, 30_000);
    run(second);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.deepEqual(leading, ["first"], "the second waits while the first holds the Lease");
    a.stop.abort();
    await a.done;
    await eventually("the second replica leads", () => leading.length === 2, 30_000);
    assert.deepEqual(leading, ["first", "second"]);
  });
});

describe("cache scoping", () => {
  it("caches only the chosen namespaces, labels and fields", { timeout: 60_000 }, async () => {
    const managed = { "app.kubernetes.io/managed-by": "guide-operator" };
    await plane.client.create(configMap("team-a", "managed", managed, { big: "x".repeat(1000) }));
    await plane.client.create(configMap("team-a", "unmanaged", {}));
    await plane.client.create(configMap("team-c", "managed", managed));
    await plane.client.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { namespace: "team-b", name: "token" },
      stringData: { token: "s3cret" },
    } as Secret);
    const mgr = createScopedManager(plane.config);
    run(mgr);
    const client = mgr.getClient();
    await eventually(
      "the ConfigMap is cached",
      async () =>
        (await client.list(ConfigMap, { namespace: "team-a" }).catch(() => ({ items: [] }))).items
          .length === 1,
      30_000,
    );
    const cached = await client.list(ConfigMap, { namespace: "team-a" });
    assert.deepEqual(cached.items.map((c) => c.metadata?.name), ["managed"]);
    assert.equal(cached.items[0].data, undefined, "the transform dropped data");
    assert.equal(cached.items[0].metadata?.managedFields, undefined);
    const all = await client.list(ConfigMap);
    assert.ok(
      all.items.every((c) => c.metadata?.namespace !== "team-c"),
      "team-c is not cached",
    );
    await eventually("the Secret's metadata is cached", async () => {
      const secret = await client.get(Secret, { namespace: "team-b", name: "token" })
        .catch(() => undefined);
      return secret !== undefined && (secret as Secret).data === undefined;
    }, 30_000);
  });
});

describe("logging and metrics", () => {
  it("serves the controller's own counter next to controller-runtime's", {
    timeout: 60_000,
  }, async () => {
    const mgr = plainManager("127.0.0.1:0");
    setupCountingController(mgr);
    run(mgr);
    await plane.client.create(
      configMap("default", "counted", { "guides.rudder.dev/count": "true" }),
    );
    let text = "";
    await eventually("the counter is scraped", async () => {
      if (!mgr.metricsURL) return false;
      const response = await fetch(`${mgr.metricsURL}/metrics`).catch(() => undefined);
      text = (await response?.text()) ?? "";
      return text.includes('guide_configmaps_seen_total{namespace="default"} 1');
    }, 30_000);
    assert.match(
      text,
      /controller_runtime_reconcile_total\{controller="metrics-guide",result="success"\} 1/,
    );
  });
});

describe("upgrading a CRD version", () => {
  it(
    "serves objects stored as v1alpha1 as v1 once the CRD has both",
    { timeout: 60_000 },
    async () => {
      const key = { namespace: "default", name: "nightly" };
      await plane.client.create({
        apiVersion: "guides.rudder.dev/v1alpha1",
        kind: "Backup",
        metadata: key,
        spec: { schedule: "0 3 * * *" },
      });
      await installCRDs(plane.config, [Backup]);
      const crd = await plane.client.get(CustomResourceDefinition, {
        name: "backups.guides.rudder.dev",
      });
      assert.deepEqual(crd.spec.versions.map((v) => [v.name, v.served, v.storage]), [
        ["v1", true, true],
        ["v1alpha1", true, false],
      ]);
      const backup = await plane.client.get(Backup, key);
      assert.equal(backup.apiVersion, "guides.rudder.dev/v1");
      assert.equal(backup.spec.retain, 7);
      // Migrate: writing the object stores it as v1.
      await plane.client.update({ ...backup, spec: { ...backup.spec, suspend: true } });
      const old = await plane.client.get(BackupV1alpha1, key);
      assert.equal(old.apiVersion, "guides.rudder.dev/v1alpha1");
    },
  );
});
