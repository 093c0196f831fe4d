// The example operator (examples/example-operator) against the real API server: an Example
// gets its Deployment, reaches Running with a Ready condition, follows spec changes, and is
// cleaned up through its finalizer.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Deployment, EventsV1Event } from "../../lib/api/builtins.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import type { Manager } from "../../lib/manager/manager.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { Example } from "../../examples/example-operator/api/example.ts";
import { FINALIZER } from "../../examples/example-operator/controllers/example_controller.ts";
import { createManager } from "../../examples/example-operator/main.ts";
import { eventually } from "../support/eventually.ts";

const env = new Environment({ crds: [Example] });
let config: KubeConfig;
let client: Client;
let mgr: Manager;
const stop = new AbortController();
let running: Promise<void>;

before(async () => {
  config = await env.start();
  client = newClient(config);
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "demo" } });
  mgr = createManager({
    config,
    metricsBindAddress: "127.0.0.1:0",
    metricsServing: "insecure-http", // scraped below without a token
    healthProbeBindAddress: "127.0.0.1:0",
    leaderElectionNamespace: "default",
    leaderElectionReleaseOnCancel: true,
  });
  running = mgr.start(stop.signal);
  await mgr.elected();
});

after(async () => {
  stop.abort();
  await running;
  await env.stop();
});

describe("the example operator", () => {
  it("gives an Example its Deployment and a Running status with a Ready condition", async () => {
    await client.create({
      apiVersion: "example.com/v1alpha1",
      kind: "Example",
      metadata: { name: "web", namespace: "demo" },
      spec: { replicas: 2 },
    });
    await eventually(
      "the Example is Running",
      async () =>
        (await client.get(Example, { namespace: "demo", name: "web" })).status?.phase === "Running",
    );
    const example = await client.get(Example, { namespace: "demo", name: "web" });
    assert.deepEqual(example.metadata?.finalizers, [FINALIZER]);
    const ready = example.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "True");
    assert.equal(ready?.observedGeneration, example.metadata?.generation);
    assert.equal(
      example.spec.image,
      "registry.k8s.io/pause:3.10",
      "the server applied the default",
    );

    const deployment = await client.get(Deployment, { namespace: "demo", name: "web" });
    assert.equal(deployment.spec?.replicas, 2);
    const owner = deployment.metadata?.ownerReferences?.[0];
    assert.equal(owner?.kind, "Example");
    assert.equal(owner?.uid, example.metadata?.uid);
    assert.equal(owner?.controller, true);
  });

  it("follows a change of spec.replicas", async () => {
    const example = await client.get(Example, { namespace: "demo", name: "web" });
    await client.update({ ...example, spec: { ...example.spec, replicas: 5 } });
    await eventually(
      "the Deployment has 5 replicas",
      async () =>
        (await client.get(Deployment, { namespace: "demo", name: "web" })).spec?.replicas === 5,
    );
  });

  it("records events about what it did", async () => {
    await eventually("a Deployed event exists", async () => {
      const events = await client.list(EventsV1Event, { namespace: "demo" });
      return events.items.some((e) => e.reason === "Deployed" && e.regarding?.name === "web");
    });
  });

  it("runs its finalizer when the Example is deleted, and the Example goes away", async () => {
    const example = await client.get(Example, { namespace: "demo", name: "web" });
    await client.delete(example);
    await eventually(
      "the Example is gone",
      async () =>
        await client.get(Example, { namespace: "demo", name: "web" }).then(() => false, isNotFound),
    );
    const events = await client.list(EventsV1Event, { namespace: "demo" });
    assert.ok(
      events.items.some((e) => e.reason === "CleanedUp"),
      "the finalizer's event was recorded",
    );
  });

  it("serves metrics with controller-runtime's families and the reconciles counted", async () => {
    const text = await (await fetch(`${mgr.metricsURL}/metrics`)).text();
    for (
      const family of [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_panics_total",
        "controller_runtime_reconcile_time_seconds",
        "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
        "workqueue_retries_total",
        "rest_client_requests_total",
        "leader_election_master_status",
        "process_resident_memory_bytes",
        "process_cpu_seconds_total",
        "process_start_time_seconds",
      ]
    ) {
      assert.match(text, new RegExp(`^# TYPE ${family} `, "m"), `${family} is served`);
    }
    const success = text.match(
      /^controller_runtime_reconcile_total\{controller="example",result="success"\} (\d+)/m,
    );
    assert.ok(success && Number(success[1]) > 0, "successful reconciles are counted");
    assert.match(
      text,
      /^controller_runtime_max_concurrent_reconciles\{controller="example"\} 10$/m,
    );
    assert.match(text, /^leader_election_master_status\{name="example-leader"\} 1$/m);
  });

  it("answers its health and readiness probes", async () => {
    const healthz = await fetch(`${mgr.healthProbeURL}/healthz`);
    assert.equal(healthz.status, 200);
    const readyz = await fetch(`${mgr.healthProbeURL}/readyz?verbose`);
    assert.equal(readyz.status, 200);
    assert.match(await readyz.text(), /\[\+\]informers ok/);
  });
});
