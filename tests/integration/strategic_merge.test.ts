// Strategic merge patch against a real kube-apiserver: patches computed by
// createStrategicMergePatch, sent as application/strategic-merge-patch+json, give the intended
// object, and applyStrategicMergePatch (the fake client's merge) predicts the server's result,
// also when the live object changed in between.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { DaemonSet, Deployment } from "../../lib/api/generated/apps_v1.ts";
import type { Container, PodSpec, Service } from "../../lib/api/generated/core_v1.ts";
import {
  applyStrategicMergePatch,
  createStrategicMergePatch,
  schemaForKind,
} from "../../lib/client/strategic_merge.ts";
import { useControlPlane } from "../support/control_plane.ts";

type Json = Record<string, unknown>;

const SMP = "application/strategic-merge-patch+json";
const NAMESPACE = "default";
const DEPLOYMENT = schemaForKind("apps/v1", "Deployment")!;
const DAEMON_SET = schemaForKind("apps/v1", "DaemonSet")!;
const SERVICE = schemaForKind("v1", "Service")!;

const plane = useControlPlane();

/** A container with every field the server would default, so that adding one is exact. */
function container(name: string, extra: Partial<Container> = {}): Container {
  return {
    name,
    image: `registry.example.com/${name}:1`,
    imagePullPolicy: "IfNotPresent",
    resources: {},
    terminationMessagePath: "/dev/termination-log",
    terminationMessagePolicy: "File",
    ...extra,
  };
}

function podSpec(): PodSpec {
  return {
    containers: [
      container("app", {
        env: [{ name: "MODE", value: "fast" }, { name: "LEVEL", value: "1" }, {
          name: "OLD",
          value: "x",
        }],
        ports: [{ containerPort: 8080, name: "http", protocol: "TCP" }],
        volumeMounts: [{ name: "data", mountPath: "/data" }, {
          name: "cache",
          mountPath: "/cache",
        }],
      }),
      container("sidecar", { args: ["--verbose", "--port=9000"] }),
      container("logger"),
    ],
    volumes: [{ name: "data", emptyDir: {} }, { name: "cache", emptyDir: { medium: "Memory" } }],
    tolerations: [
      { key: "dedicated", operator: "Equal", value: "web", effect: "NoSchedule" },
      { key: "spot", operator: "Exists" },
    ],
  };
}

function deploymentPath(name: string): string {
  return `/apis/apps/v1/namespaces/${NAMESPACE}/deployments/${name}`;
}

/** Creates a Deployment with three containers, labels and finalizers; returns it as stored. */
function createDeployment(name: string): Promise<Deployment> {
  return plane.rest.request<Deployment>({
    method: "POST",
    path: `/apis/apps/v1/namespaces/${NAMESPACE}/deployments`,
    body: {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: {
        name,
        labels: { app: name, tier: "web", team: "blue" },
        finalizers: ["example.com/first", "example.com/second", "example.com/third"],
      },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: name } },
        strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        template: { metadata: { labels: { app: name, version: "1" } }, spec: podSpec() },
      },
    },
  });
}

/** The object without the fields the server changes on every write. */
function comparable(object: unknown): Json {
  const copy = structuredClone(object) as { metadata: Json & { annotations?: Json } };
  delete copy.metadata.resourceVersion;
  delete copy.metadata.managedFields;
  delete copy.metadata.generation;
  // The DaemonSet strategy copies the generation here.
  delete copy.metadata.annotations?.["deprecated.daemonset.template.generation"];
  return copy;
}

async function sendPatch<T>(path: string, patch: unknown): Promise<T> {
  return await plane.rest.request<T>({ method: "PATCH", path, body: patch, contentType: SMP });
}

/**
 * Edits a copy of `live`, sends the computed patch, and checks that the server's result is the
 * edited object and is what applyStrategicMergePatch predicts. Returns the server's result.
 */
async function editAndCheck<T>(
  path: string,
  schema: string,
  live: T,
  edit: (object: T) => void,
): Promise<T> {
  const modified = structuredClone(live);
  edit(modified);
  const patch = createStrategicMergePatch(live, modified, schema);
  assert.notDeepEqual(patch, {}, "the edit changes something");
  const predicted = applyStrategicMergePatch(live, patch, schema);
  const result = await sendPatch<T>(path, patch);
  assert.deepEqual(
    comparable(result),
    comparable(modified),
    `server result of ${JSON.stringify(patch)}`,
  );
  assert.deepEqual(
    comparable(result),
    comparable(predicted),
    `prediction of ${JSON.stringify(patch)}`,
  );
  return result;
}

/** The pod template's spec of a Deployment or DaemonSet. */
function template(object: Deployment | DaemonSet): PodSpec {
  return object.spec!.template.spec!;
}

function names(list: { name: string }[] | undefined): string[] {
  return (list ?? []).map((item) => item.name);
}

describe("strategic merge patches computed by createStrategicMergePatch", () => {
  it("remove a container", async () => {
    const live = await createDeployment("remove-container");
    const result = await editAndCheck(deploymentPath("remove-container"), DEPLOYMENT, live, (d) => {
      template(d).containers = template(d).containers.filter((c) => c.name !== "sidecar");
    });
    assert.deepEqual(names(template(result).containers), ["app", "logger"]);
  });

  it("reorder containers", async () => {
    const live = await createDeployment("reorder");
    const result = await editAndCheck(deploymentPath("reorder"), DEPLOYMENT, live, (d) => {
      template(d).containers.reverse();
    });
    assert.deepEqual(names(template(result).containers), ["logger", "sidecar", "app"]);
  });

  it("change, add and remove env vars by name", async () => {
    const live = await createDeployment("env");
    const env = [{ name: "MODE", value: "slow" }, { name: "LEVEL", value: "1" }, {
      name: "NEW",
      value: "y",
    }];
    const result = await editAndCheck(deploymentPath("env"), DEPLOYMENT, live, (d) => {
      template(d).containers[0].env = env;
    });
    assert.deepEqual(template(result).containers[0].env, env);
  });

  it("drop a finalizer and remove labels", async () => {
    const live = await createDeployment("finalizer");
    const result = await editAndCheck(deploymentPath("finalizer"), DEPLOYMENT, live, (d) => {
      d.metadata!.finalizers = ["example.com/first", "example.com/third"];
      delete d.metadata!.labels!.team;
      delete d.spec!.template.metadata!.labels!.version;
    });
    assert.deepEqual(result.metadata!.finalizers, ["example.com/first", "example.com/third"]);
    assert.deepEqual(result.metadata!.labels, { app: "finalizer", tier: "web" });
    assert.deepEqual(result.spec!.template.metadata!.labels, { app: "finalizer" });
  });

  it("add a container and change ports", async () => {
    const live = await createDeployment("ports");
    const result = await editAndCheck(deploymentPath("ports"), DEPLOYMENT, live, (d) => {
      const containers = template(d).containers;
      containers[0].ports = [
        { containerPort: 8443, name: "https", protocol: "TCP" },
        { containerPort: 8080, name: "web", protocol: "TCP" },
      ];
      containers.splice(
        1,
        0,
        container("metrics", { ports: [{ containerPort: 9090, protocol: "TCP" }] }),
      );
    });
    assert.deepEqual(names(template(result).containers), ["app", "metrics", "sidecar", "logger"]);
  });

  it("switch the rollout strategy, clearing rollingUpdate with $retainKeys", async () => {
    const live = await createDeployment("strategy");
    const result = await editAndCheck(deploymentPath("strategy"), DEPLOYMENT, live, (d) => {
      d.spec!.strategy = { type: "Recreate" };
    });
    assert.deepEqual(result.spec!.strategy, { type: "Recreate" });
  });

  it("switch a volume's source, clearing the old one with $retainKeys", async () => {
    const live = await createDeployment("volume");
    const result = await editAndCheck(deploymentPath("volume"), DEPLOYMENT, live, (d) => {
      template(d).volumes = [
        { name: "data", configMap: { name: "settings", defaultMode: 420 } },
        { name: "cache", emptyDir: { medium: "Memory" } },
      ];
    });
    assert.deepEqual(template(result).volumes![0], {
      name: "data",
      configMap: { name: "settings", defaultMode: 420 },
    });
  });

  it("replace tolerations, which have no merge key", async () => {
    const live = await createDeployment("tolerations");
    const result = await editAndCheck(deploymentPath("tolerations"), DEPLOYMENT, live, (d) => {
      template(d).tolerations = [{ key: "spot", operator: "Exists" }];
    });
    assert.deepEqual(template(result).tolerations, [{ key: "spot", operator: "Exists" }]);
  });

  it("chain several edits of a DaemonSet's pod template", async () => {
    const path = `/apis/apps/v1/namespaces/${NAMESPACE}/daemonsets/agent`;
    const daemonSet: DaemonSet = {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: "agent", labels: { app: "agent" } },
      spec: {
        selector: { matchLabels: { app: "agent" } },
        template: {
          metadata: { labels: { app: "agent" }, annotations: { a: "1", b: "2" } },
          spec: { ...podSpec(), initContainers: [container("init-a"), container("init-b")] },
        },
      },
    };
    let live = await plane.rest.request<DaemonSet>({
      method: "POST",
      path: `/apis/apps/v1/namespaces/${NAMESPACE}/daemonsets`,
      body: daemonSet,
    });
    const edits: ((d: DaemonSet) => void)[] = [
      (d) => {
        template(d).initContainers!.reverse();
      },
      (d) => {
        const [app] = template(d).containers;
        app.image = "registry.example.com/app:2";
        app.env = app.env!.filter((e) => e.name !== "LEVEL");
        template(d).containers.push(container("extra", { env: [{ name: "A", value: "1" }] }));
      },
      (d) => {
        const annotations = d.spec!.template.metadata!.annotations!;
        delete annotations.a;
        annotations.c = "3";
        template(d).containers = template(d).containers.filter((c) => c.name !== "app");
      },
      (d) => {
        template(d).volumes!.pop();
        template(d).containers[0].args = ["--quiet"];
      },
    ];
    for (const edit of edits) live = await editAndCheck(path, DAEMON_SET, live, edit);
    assert.deepEqual(names(template(live).initContainers), ["init-b", "init-a"]);
    assert.deepEqual(names(template(live).containers), ["sidecar", "logger", "extra"]);
  });

  it("merge service ports by port", async () => {
    const path = `/api/v1/namespaces/${NAMESPACE}/services/web`;
    const service: Service = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "web" },
      spec: {
        selector: { app: "web" },
        ports: [
          { name: "http", port: 80, targetPort: 8080, protocol: "TCP" },
          { name: "https", port: 443, targetPort: 8443, protocol: "TCP" },
        ],
      },
    };
    const live = await plane.rest.request<Service>({
      method: "POST",
      path: `/api/v1/namespaces/${NAMESPACE}/services`,
      body: service,
    });
    const result = await editAndCheck(path, SERVICE, live, (s) => {
      s.spec!.ports = [
        { name: "https", port: 443, targetPort: 9443, protocol: "TCP" },
        { name: "metrics", port: 9090, targetPort: 9090, protocol: "TCP" },
      ];
    });
    assert.deepEqual(result.spec!.ports!.map((port) => port.port), [443, 9090]);
  });
});

describe("applyStrategicMergePatch predicts the server", () => {
  it("when the live object changed after the patch was computed", async () => {
    const live = await createDeployment("concurrent");
    const modified = structuredClone(live);
    template(modified).containers[0].image = "registry.example.com/app:2";
    template(modified).containers = template(modified).containers
      .filter((c) => c.name !== "logger");
    modified.metadata!.finalizers = ["example.com/first", "example.com/third"];
    delete modified.metadata!.labels!.tier;
    const patch = createStrategicMergePatch(live, modified, DEPLOYMENT);
    // Someone else adds a container, a label and a finalizer first.
    const changed = await sendPatch<Deployment>(deploymentPath("concurrent"), {
      metadata: { labels: { owner: "other" }, finalizers: ["example.com/other"] },
      spec: { template: { spec: { containers: [container("intruder")] } } },
    });
    const result = await sendPatch<Deployment>(deploymentPath("concurrent"), patch);
    assert.deepEqual(
      comparable(result),
      comparable(applyStrategicMergePatch(changed, patch, DEPLOYMENT)),
    );
    assert.deepEqual(names(template(result).containers), ["intruder", "app", "sidecar"]);
    assert.deepEqual(result.metadata!.labels, { app: "concurrent", team: "blue", owner: "other" });
    assert.deepEqual(result.metadata!.finalizers, [
      "example.com/other",
      "example.com/first",
      "example.com/third",
    ]);
  });

  it("for hand-written patches: ordering, replace, deletions and retainKeys", async () => {
    let live = await createDeployment("directives");
    const templateSpec = (spec: Json) => ({ spec: { template: { spec } } });
    const patches: Json[] = [
      // Items the order does not list stay where the server's order puts them.
      templateSpec({ "$setElementOrder/containers": [{ name: "logger" }, { name: "app" }] }),
      // New items without an order.
      templateSpec({
        containers: [{ name: "app", image: "registry.example.com/app:3" }, container("new")],
      }),
      { metadata: { finalizers: ["example.com/zero", "example.com/second"] } },
      {
        metadata: {
          "$deleteFromPrimitiveList/finalizers": ["example.com/first", "example.com/unknown"],
        },
      },
      // Replace a list, and an object.
      templateSpec({ containers: [{ $patch: "replace" }, container("only")] }),
      { metadata: { labels: { $patch: "replace", app: "directives", fresh: "yes" } } },
      // retainKeys by hand.
      { spec: { strategy: { $retainKeys: ["type"], type: "Recreate" } } },
      templateSpec({
        volumes: [{
          name: "cache",
          hostPath: { path: "/tmp", type: "" },
          $retainKeys: ["hostPath", "name"],
        }],
      }),
    ];
    for (const patch of patches) {
      const predicted = applyStrategicMergePatch(live, patch, DEPLOYMENT);
      live = await sendPatch<Deployment>(deploymentPath("directives"), patch);
      assert.deepEqual(comparable(live), comparable(predicted), JSON.stringify(patch));
    }
    assert.deepEqual(names(template(live).containers), ["only"]);
    assert.deepEqual(live.metadata!.finalizers, [
      "example.com/zero",
      "example.com/second",
      "example.com/third",
    ]);
    assert.deepEqual(live.metadata!.labels, { app: "directives", fresh: "yes" });
    assert.deepEqual(live.spec!.strategy, { type: "Recreate" });
  });
});
