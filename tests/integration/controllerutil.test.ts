// controllerutil against the real API server: createOrUpdate and createOrPatch on Deployments and
// on a custom resource with a status subresource (each result, and no write when unchanged),
// owner references the server accepts, finalizers that hold a deleted object, and conditions.
// No controller-manager runs here, so garbage collection itself is not exercised.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Deployment, Namespace } from "../../lib/api/builtins.ts";
import type { Condition } from "../../lib/api/generated/meta_v1.ts";
import { type KubeObject, resourceType } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import type { RequestInfo } from "../../lib/kube/rest.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { isStatusConditionTrue, setStatusCondition } from "../../lib/conditions/conditions.ts";
import {
  addFinalizer,
  createOrPatch,
  createOrUpdate,
  removeFinalizer,
  setControllerReference,
  setOwnerReference,
} from "../../lib/controllerutil/controllerutil.ts";

const env = new Environment({
  crds: [{
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "widgets.example.com" },
    spec: {
      group: "example.com",
      scope: "Namespaced",
      names: { plural: "widgets", singular: "widget", kind: "Widget", listKind: "WidgetList" },
      versions: [{
        name: "v1",
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: "object",
            properties: {
              spec: { type: "object", properties: { size: { type: "integer" } } },
              status: {
                type: "object",
                properties: {
                  phase: { type: "string" },
                  conditions: {
                    type: "array",
                    items: {
                      type: "object",
                      required: ["type", "status", "reason", "message", "lastTransitionTime"],
                      properties: {
                        type: { type: "string" },
                        status: { type: "string", enum: ["True", "False", "Unknown"] },
                        reason: { type: "string" },
                        message: { type: "string" },
                        observedGeneration: { type: "integer" },
                        lastTransitionTime: { type: "string", format: "date-time" },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      }],
    },
  }],
});
const namespace = "controllerutil-it";
const requests: RequestInfo[] = [];
let client: Client;

interface Widget extends KubeObject {
  spec?: { size?: number };
  status?: { phase?: string; conditions?: Condition[] };
}
const Widget = resourceType<Widget>({
  group: "example.com",
  version: "v1",
  kind: "Widget",
  scope: "Namespaced",
  subresources: ["status"],
});

/** The writes (not reads) made while `work` runs, as `METHOD path`. */
async function writesDuring(work: () => Promise<unknown>): Promise<string[]> {
  const start = requests.length;
  await work();
  return requests.slice(start).filter((r) => r.method !== "GET")
    .map((r) => `${r.method} ${r.path}`);
}

function deployment(name: string): Deployment {
  return { apiVersion: "apps/v1", kind: "Deployment", metadata: { namespace, name } };
}

/** Sets what a Deployment needs on first creation, and the replicas. */
function desiredDeployment(replicas: number) {
  return (d: Deployment) => {
    const name = d.metadata!.name!;
    d.spec ??= {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "web", image: "nginx:1.27" }] },
      },
    };
    d.spec.replicas = replicas;
  };
}

before(async () => {
  const config = await env.start();
  client = newClient(config, { onRequest: (info) => requests.push(info) });
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
});

after(async () => {
  await env.stop();
});

describe("createOrUpdate against the API server", () => {
  it("creates a Deployment, leaves it alone when nothing changes, and updates it", async () => {
    const created = await createOrUpdate(client, deployment("web"), desiredDeployment(1));
    assert.equal(created.result, "created");
    assert.ok(created.object.metadata?.uid);

    // The server defaulted many fields; a mutate that sets only its own fields changes nothing.
    let unchanged: Awaited<ReturnType<typeof createOrUpdate<Deployment>>> | undefined;
    const writes = await writesDuring(async () => {
      unchanged = await createOrUpdate(client, deployment("web"), desiredDeployment(1));
    });
    assert.equal(unchanged?.result, "unchanged");
    assert.deepEqual(writes, []);
    assert.equal(
      unchanged?.object.metadata?.resourceVersion,
      created.object.metadata?.resourceVersion,
    );

    const updated = await createOrUpdate(client, deployment("web"), desiredDeployment(3));
    assert.equal(updated.result, "updated");
    const stored = await client.get(Deployment, { namespace, name: "web" });
    assert.equal(stored.spec?.replicas, 3);
    assert.equal(stored.metadata?.resourceVersion, updated.object.metadata?.resourceVersion);
  });
});

describe("createOrPatch against the API server", () => {
  it("gives every result on a Deployment, with the status written through its subresource", async () => {
    const name = "patched";
    const created = await createOrPatch(client, deployment(name), desiredDeployment(1));
    assert.equal(created.result, "created");

    const writesUnchanged = await writesDuring(async () => {
      const { result } = await createOrPatch(client, deployment(name), desiredDeployment(1));
      assert.equal(result, "unchanged");
    });
    assert.deepEqual(writesUnchanged, []);

    const path = `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`;
    const writesUpdated = await writesDuring(async () => {
      const { result, object } = await createOrPatch(client, deployment(name), (d: Deployment) => {
        d.metadata!.labels = { tier: "web" };
      });
      assert.equal(result, "updated");
      assert.deepEqual(object.metadata?.labels, { tier: "web" });
    });
    assert.deepEqual(writesUpdated, [`PATCH ${path}`]);

    const writesBoth = await writesDuring(async () => {
      const { result, object } = await createOrPatch(client, deployment(name), (d: Deployment) => {
        d.spec!.replicas = 2;
        d.status = { ...d.status, replicas: 2, readyReplicas: 1 };
      });
      assert.equal(result, "updatedStatus");
      assert.equal(object.spec?.replicas, 2);
      assert.equal(object.status?.readyReplicas, 1);
    });
    assert.deepEqual(writesBoth, [`PATCH ${path}`, `PATCH ${path}/status`]);

    const writesStatus = await writesDuring(async () => {
      const { result, object } = await createOrPatch(client, deployment(name), (d: Deployment) => {
        d.status = { ...d.status, readyReplicas: 2 };
      });
      assert.equal(result, "updatedStatusOnly");
      assert.equal(object.status?.readyReplicas, 2);
    });
    assert.deepEqual(writesStatus, [`PATCH ${path}/status`]);

    const stored = await client.get(Deployment, { namespace, name });
    assert.equal(stored.spec?.replicas, 2);
    assert.equal(stored.status?.replicas, 2);
    assert.equal(stored.status?.readyReplicas, 2);
  });

  it("sets conditions on a custom resource's status, moving lastTransitionTime only on a status change", async () => {
    const widget: Widget = {
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { namespace, name: "w1" },
    };
    let time = Date.parse("2025-01-02T03:04:05Z");
    const clock = () => new Date(time);
    const setReady = (status: "True" | "False", reason: string) => (w: Widget) => {
      w.spec = { size: 1 };
      w.status ??= {};
      w.status.conditions ??= [];
      setStatusCondition(w.status.conditions, { type: "Ready", status, reason }, { clock });
    };

    assert.equal(
      (await createOrPatch(client, widget, setReady("False", "Starting"))).result,
      "created",
    );
    // A create drops the status of a kind with a status subresource: the first status write is a patch.
    const first = await createOrPatch(client, widget, setReady("False", "Starting"));
    assert.equal(first.result, "updatedStatusOnly");
    assert.equal(first.object.status?.conditions?.[0].lastTransitionTime, "2025-01-02T03:04:05Z");

    time += 60_000;
    const reason = await createOrPatch(client, widget, setReady("False", "Pulling"));
    assert.equal(reason.result, "updatedStatusOnly");
    assert.equal(reason.object.status?.conditions?.[0].lastTransitionTime, "2025-01-02T03:04:05Z");

    time += 60_000;
    const ready = await createOrPatch(client, widget, setReady("True", "Running"));
    assert.equal(ready.result, "updatedStatusOnly");
    assert.equal(ready.object.status?.conditions?.[0].lastTransitionTime, "2025-01-02T03:06:05Z");
    assert.ok(isStatusConditionTrue(ready.object.status?.conditions, "Ready"));

    const again = await createOrPatch(client, widget, setReady("True", "Running"));
    assert.equal(again.result, "unchanged");
    const stored = await client.get(Widget, { namespace, name: "w1" });
    assert.deepEqual(stored.status?.conditions, ready.object.status?.conditions);
  });
});

describe("owner references and finalizers against the API server", () => {
  it("the server accepts controller and owner references set by the helpers", async () => {
    const owner = await client.get(Deployment, { namespace, name: "web" });
    const ns = await client.get(Namespace, { name: namespace });
    const { object } = await createOrUpdate(
      client,
      { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace, name: "owned" } } as ConfigMap,
      (cm: ConfigMap) => {
        setControllerReference(owner, cm);
        setOwnerReference(ns, cm); // a cluster-scoped owner of a namespaced object
        cm.data = { a: "1" };
      },
    );
    const stored = await client.get(ConfigMap, { namespace, name: "owned" });
    assert.deepEqual(stored.metadata?.ownerReferences, [
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        name: "web",
        uid: owner.metadata!.uid!,
        controller: true,
        blockOwnerDeletion: true,
      },
      { apiVersion: "v1", kind: "Namespace", name: namespace, uid: ns.metadata!.uid! },
    ]);
    assert.deepEqual(object.metadata?.ownerReferences, stored.metadata?.ownerReferences);

    const again = await createOrUpdate(client, stored, (cm: ConfigMap) => {
      setControllerReference(owner, cm);
      setOwnerReference(ns, cm);
    });
    assert.equal(again.result, "unchanged", "setting the same references again changes nothing");
  });

  it("a finalizer holds a deleted object until it is removed", async () => {
    const finalizer = "example.com/cleanup";
    const key = { namespace, name: "finalized" };
    await createOrUpdate(
      client,
      { apiVersion: "v1", kind: "ConfigMap", metadata: key } as ConfigMap,
      (cm: ConfigMap) => void addFinalizer(cm, finalizer),
    );
    await client.delete({ apiVersion: "v1", kind: "ConfigMap", metadata: key });
    const terminating = await client.get(ConfigMap, key);
    assert.ok(terminating.metadata?.deletionTimestamp);
    assert.deepEqual(terminating.metadata?.finalizers, [finalizer]);

    const { result } = await createOrUpdate(
      client,
      terminating,
      (cm: ConfigMap) => void removeFinalizer(cm, finalizer),
    );
    assert.equal(result, "updated");
    await assert.rejects(client.get(ConfigMap, key), isNotFound);
  });
});
