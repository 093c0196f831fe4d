// Strategic merge patch: patches computed from two versions of built-in objects, applied the way
// kube-apiserver applies them, and the round trip apply(original, diff(original, modified)) ==
// modified on hand-written and on seeded random objects.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { KIND_SCHEMAS, PATCH_METADATA } from "../../lib/api/generated/patch_metadata.ts";
import {
  applyStrategicMergePatch,
  createStrategicMergePatch,
  schemaForKind,
  StrategicMergePatchError,
} from "../../lib/client/strategic_merge.ts";

const POD = "io.k8s.api.core.v1.Pod";
const DEPLOYMENT = "io.k8s.api.apps.v1.Deployment";
const SERVICE = "io.k8s.api.core.v1.Service";
const PDB = "io.k8s.api.policy.v1.PodDisruptionBudget";

type Json = Record<string, unknown>;

/** Computes the patch, checks it turns `original` into `modified`, and returns it. */
function roundTrip(original: unknown, modified: unknown, schema: string): Json {
  const patch = createStrategicMergePatch(original, modified, schema);
  assert.deepEqual(applyStrategicMergePatch(original, patch, schema), modified);
  return patch;
}

function pod(spec: Json, metadata: Json = { name: "web" }): Json {
  return { apiVersion: "v1", kind: "Pod", metadata, spec };
}

function deployment(spec: Json, metadata: Json = { name: "web" }): Json {
  return { apiVersion: "apps/v1", kind: "Deployment", metadata, spec };
}

const app = { name: "app", image: "nginx:1" };
const sidecar = { name: "sidecar", image: "envoy:1" };
const logger = { name: "logger", image: "fluent:1" };

describe("the generated patch metadata", () => {
  it("knows the merge strategies and keys of pod and object fields", () => {
    assert.deepEqual(PATCH_METADATA["io.k8s.api.core.v1.PodSpec"].containers, {
      ref: "io.k8s.api.core.v1.Container",
      list: true,
      strategy: "merge",
      mergeKey: "name",
    });
    assert.equal(PATCH_METADATA["io.k8s.api.core.v1.PodSpec"].volumes.strategy, "merge,retainKeys");
    assert.equal(PATCH_METADATA["io.k8s.api.core.v1.Container"].ports.mergeKey, "containerPort");
    assert.deepEqual(PATCH_METADATA["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].finalizers, {
      list: true,
      strategy: "merge",
    });
    assert.equal(
      PATCH_METADATA["io.k8s.api.apps.v1.DeploymentSpec"].strategy.strategy,
      "retainKeys",
    );
    assert.equal(
      PATCH_METADATA["io.k8s.api.policy.v1.PodDisruptionBudgetSpec"].selector.strategy,
      "replace",
    );
    // Tolerations have no patch strategy: they are replaced as a whole.
    assert.equal(PATCH_METADATA["io.k8s.api.core.v1.PodSpec"].tolerations, undefined);
  });

  it("maps apiVersion/kind to schemas", () => {
    assert.equal(schemaForKind("apps/v1", "Deployment"), DEPLOYMENT);
    assert.equal(schemaForKind("v1", "Pod"), POD);
    assert.equal(schemaForKind("v1", "PodList"), "io.k8s.api.core.v1.PodList");
    assert.equal(
      schemaForKind("rbac.authorization.k8s.io/v1", "ClusterRole"),
      "io.k8s.api.rbac.v1.ClusterRole",
    );
    assert.equal(
      schemaForKind("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
      "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    );
    assert.equal(schemaForKind("example.com/v1", "Widget"), undefined);
    assert.equal(schemaForKind("v1", "constructor"), undefined);
    assert.equal(
      KIND_SCHEMAS["autoscaling/v2/HorizontalPodAutoscaler"],
      "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    );
  });
});

describe("createStrategicMergePatch", () => {
  it("returns {} when nothing changed", () => {
    const object = deployment({
      replicas: 2,
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } },
      template: { spec: { containers: [app, sidecar], tolerations: [{ key: "a" }] } },
    }, { name: "web", labels: { app: "web" }, finalizers: ["x", "y"] });
    assert.deepEqual(createStrategicMergePatch(object, structuredClone(object), DEPLOYMENT), {});
    assert.deepEqual(createStrategicMergePatch({}, {}, "unknown.Schema"), {});
  });

  it("adds a container by name, keeping the order", () => {
    const patch = roundTrip(pod({ containers: [app] }), pod({ containers: [app, sidecar] }), POD);
    assert.deepEqual(patch, {
      spec: {
        containers: [sidecar],
        "$setElementOrder/containers": [{ name: "app" }, { name: "sidecar" }],
      },
    });
  });

  it("removes a container with a delete directive", () => {
    const patch = roundTrip(
      pod({ containers: [app, sidecar, logger] }),
      pod({ containers: [app, logger] }),
      POD,
    );
    assert.deepEqual(patch, {
      spec: {
        containers: [{ name: "sidecar", $patch: "delete" }],
        "$setElementOrder/containers": [{ name: "app" }, { name: "logger" }],
      },
    });
  });

  it("reorders containers with $setElementOrder only", () => {
    const patch = roundTrip(
      pod({ containers: [app, sidecar] }),
      pod({ containers: [sidecar, app] }),
      POD,
    );
    assert.deepEqual(patch, {
      spec: { "$setElementOrder/containers": [{ name: "sidecar" }, { name: "app" }] },
    });
  });

  it("changes a container's image by name, sending only the change", () => {
    const patch = roundTrip(
      pod({ containers: [app, sidecar] }),
      pod({ containers: [app, { ...sidecar, image: "envoy:2" }] }),
      POD,
    );
    assert.deepEqual(patch, {
      spec: {
        containers: [{ name: "sidecar", image: "envoy:2" }],
        "$setElementOrder/containers": [{ name: "app" }, { name: "sidecar" }],
      },
    });
  });

  it("merges env vars by name: changed, added and removed", () => {
    const before = {
      ...app,
      env: [{ name: "A", value: "1" }, { name: "B", value: "2" }, { name: "C", value: "3" }],
    };
    const after = {
      ...app,
      env: [{ name: "A", value: "1" }, { name: "C", value: "30" }, { name: "D", value: "4" }],
    };
    const patch = roundTrip(pod({ containers: [before] }), pod({ containers: [after] }), POD);
    assert.deepEqual(patch, {
      spec: {
        containers: [{
          name: "app",
          env: [{ name: "C", value: "30" }, { name: "D", value: "4" }, {
            name: "B",
            $patch: "delete",
          }],
          "$setElementOrder/env": [{ name: "A" }, { name: "C" }, { name: "D" }],
        }],
        "$setElementOrder/containers": [{ name: "app" }],
      },
    });
  });

  it("merges container ports by containerPort", () => {
    const before = {
      ...app,
      ports: [{ containerPort: 80, name: "http" }, { containerPort: 443, name: "https" }],
    };
    const after = {
      ...app,
      ports: [{ containerPort: 8080, name: "http" }, { containerPort: 443, name: "tls" }],
    };
    const patch = roundTrip(pod({ containers: [before] }), pod({ containers: [after] }), POD);
    const container = (patch.spec as { containers: Json[] }).containers[0];
    assert.deepEqual(container.ports, [
      { containerPort: 8080, name: "http" },
      { containerPort: 443, name: "tls" },
      { containerPort: 80, $patch: "delete" },
    ]);
    assert.deepEqual(container["$setElementOrder/ports"], [{ containerPort: 8080 }, {
      containerPort: 443,
    }]);
  });

  it("merges service ports by port", () => {
    const service = (ports: Json[]) => ({ apiVersion: "v1", kind: "Service", spec: { ports } });
    const patch = roundTrip(
      service([{ port: 80, targetPort: 8080 }, { port: 443, targetPort: 8443 }]),
      service([{ port: 80, targetPort: 9090 }]),
      SERVICE,
    );
    assert.deepEqual(patch, {
      spec: {
        ports: [{ port: 80, targetPort: 9090 }, { port: 443, $patch: "delete" }],
        "$setElementOrder/ports": [{ port: 80 }],
      },
    });
  });

  it("keeps only the new source of a volume with $retainKeys", () => {
    const patch = roundTrip(
      pod({
        containers: [app],
        volumes: [{ name: "data", emptyDir: {} }, { name: "cache", emptyDir: {} }],
      }),
      pod({
        containers: [app],
        volumes: [{ name: "data", configMap: { name: "settings" } }, {
          name: "cache",
          emptyDir: {},
        }],
      }),
      POD,
    );
    assert.deepEqual(patch, {
      spec: {
        volumes: [{
          name: "data",
          configMap: { name: "settings" },
          emptyDir: null,
          $retainKeys: ["configMap", "name"],
        }],
        "$setElementOrder/volumes": [{ name: "data" }, { name: "cache" }],
      },
    });
  });

  it("retains keys of a Deployment's strategy", () => {
    const patch = roundTrip(
      deployment({
        strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: "25%", maxUnavailable: 1 } },
      }),
      deployment({ strategy: { type: "Recreate" } }),
      DEPLOYMENT,
    );
    assert.deepEqual(patch, {
      spec: { strategy: { type: "Recreate", rollingUpdate: null, $retainKeys: ["type"] } },
    });
    // A change inside rollingUpdate lists both keys.
    const patch2 = roundTrip(
      deployment({ strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1 } } }),
      deployment({ strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 2 } } }),
      DEPLOYMENT,
    );
    assert.deepEqual(patch2, {
      spec: {
        strategy: { rollingUpdate: { maxSurge: 2 }, $retainKeys: ["rollingUpdate", "type"] },
      },
    });
  });

  it("adds and removes finalizers as a set", () => {
    const patch = roundTrip(
      pod({}, { name: "web", finalizers: ["a.example.com/x", "b.example.com/y"] }),
      pod({}, { name: "web", finalizers: ["b.example.com/y", "c.example.com/z"] }),
      POD,
    );
    assert.deepEqual(patch, {
      metadata: {
        finalizers: ["c.example.com/z"],
        "$deleteFromPrimitiveList/finalizers": ["a.example.com/x"],
        "$setElementOrder/finalizers": ["b.example.com/y", "c.example.com/z"],
      },
    });
    // The first finalizer of an object that had none is just the list.
    assert.deepEqual(roundTrip(pod({}), pod({}, { name: "web", finalizers: ["a"] }), POD), {
      metadata: { finalizers: ["a"] },
    });
    // Dropping all of them.
    assert.deepEqual(roundTrip(pod({}, { name: "web", finalizers: ["a"] }), pod({}), POD), {
      metadata: { finalizers: null },
    });
  });

  it("replaces tolerations, which have no merge key, as a whole", () => {
    const patch = roundTrip(
      pod({
        containers: [app],
        tolerations: [{ key: "a", operator: "Exists" }, { key: "b", operator: "Exists" }],
      }),
      pod({ containers: [app], tolerations: [{ key: "a", operator: "Exists" }] }),
      POD,
    );
    assert.deepEqual(patch, { spec: { tolerations: [{ key: "a", operator: "Exists" }] } });
  });

  it("replaces lists of scalars without strategy, like args", () => {
    const patch = roundTrip(
      pod({ containers: [{ ...app, args: ["-a", "-b"] }] }),
      pod({ containers: [{ ...app, args: ["-b", "-a"] }] }),
      POD,
    );
    assert.deepEqual(patch, {
      spec: {
        containers: [{ name: "app", args: ["-b", "-a"] }],
        "$setElementOrder/containers": [{ name: "app" }],
      },
    });
  });

  it("removes labels with null and diffs nested maps key by key", () => {
    const patch = roundTrip(
      deployment(
        {
          template: {
            metadata: { labels: { app: "web", tier: "front" }, annotations: { a: "1" } },
          },
        },
        {
          name: "web",
          labels: { app: "web", old: "yes" },
          annotations: { keep: "1", change: "1" },
        },
      ),
      deployment(
        { template: { metadata: { labels: { app: "web" }, annotations: { a: "1", b: "2" } } } },
        { name: "web", labels: { app: "web" }, annotations: { keep: "1", change: "2" } },
      ),
      DEPLOYMENT,
    );
    assert.deepEqual(patch, {
      metadata: { labels: { old: null }, annotations: { change: "2" } },
      spec: { template: { metadata: { labels: { tier: null }, annotations: { b: "2" } } } },
    });
  });

  it("replaces a field with strategy replace only when it changed", () => {
    const pdb = (matchLabels: Json) => ({
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      spec: { selector: { matchLabels } },
    });
    assert.deepEqual(createStrategicMergePatch(pdb({ a: "1" }), pdb({ a: "1" }), PDB), {});
    assert.deepEqual(roundTrip(pdb({ a: "1", b: "2" }), pdb({ a: "1" }), PDB), {
      spec: { selector: { matchLabels: { a: "1" } } },
    });
  });

  it("treats unknown schemas and fields like JSON merge patch", () => {
    const widget = (spec: Json) => ({ apiVersion: "example.com/v1", kind: "Widget", spec });
    const patch = roundTrip(
      widget({ size: 1, items: [{ name: "a" }, { name: "b" }], nested: { a: 1, b: 2 } }),
      widget({ size: 2, items: [{ name: "a" }], nested: { a: 1 } }),
      "com.example.v1.Widget",
    );
    assert.deepEqual(patch, { spec: { size: 2, items: [{ name: "a" }], nested: { b: null } } });
  });

  it("replaces a value whose type changed", () => {
    assert.deepEqual(roundTrip(pod({ x: [1] }), pod({ x: { a: 1 } }), POD), {
      spec: { x: { a: 1 } },
    });
    assert.deepEqual(roundTrip(pod({ x: "1" }), pod({ x: 1 }), POD), { spec: { x: 1 } });
  });

  it("ignores undefined fields, as JSON does", () => {
    assert.deepEqual(
      createStrategicMergePatch(pod({ a: 1, b: undefined }), pod({ a: 1 }), POD),
      {},
    );
  });

  it("rejects inputs that are not objects, and merged lists without merge keys", () => {
    assert.throws(() => createStrategicMergePatch([], {}, POD), TypeError);
    assert.throws(() => createStrategicMergePatch({}, "x", POD), TypeError);
    assert.throws(
      () =>
        createStrategicMergePatch(
          pod({ containers: [{ image: "a" }] }),
          pod({ containers: [{ image: "b" }] }),
          POD,
        ),
      StrategicMergePatchError,
    );
    assert.throws(
      () =>
        createStrategicMergePatch(
          pod({}, { finalizers: ["a"] }),
          pod({}, { finalizers: ["a", 1] }),
          POD,
        ),
      StrategicMergePatchError,
    );
  });
});

describe("applyStrategicMergePatch", () => {
  it("leaves its arguments unchanged", () => {
    const original = pod({ containers: [app, sidecar] });
    const patch = {
      spec: {
        containers: [{ name: "app", $patch: "delete" }],
        "$setElementOrder/containers": [{ name: "sidecar" }],
      },
    };
    const originalCopy = structuredClone(original);
    const patchCopy = structuredClone(patch);
    applyStrategicMergePatch(original, patch, POD);
    assert.deepEqual(original, originalCopy);
    assert.deepEqual(patch, patchCopy);
  });

  it("keeps what others added meanwhile: containers, labels and finalizers", () => {
    const original = pod({ containers: [app, sidecar] }, {
      name: "web",
      labels: { a: "1" },
      finalizers: ["f1", "f2"],
    });
    const modified = pod({ containers: [{ ...app, image: "nginx:2" }] }, {
      name: "web",
      labels: { a: "2" },
      finalizers: ["f1"],
    });
    const patch = createStrategicMergePatch(original, modified, POD);
    // Meanwhile, someone else added a container, a label and a finalizer.
    const live = pod(
      { containers: [app, logger, sidecar] },
      { name: "web", labels: { a: "1", other: "x" }, finalizers: ["f1", "f2", "f3"] },
    );
    assert.deepEqual(
      applyStrategicMergePatch(live, patch, POD),
      pod(
        { containers: [{ ...app, image: "nginx:2" }, logger] },
        { name: "web", labels: { a: "2", other: "x" }, finalizers: ["f1", "f3"] },
      ),
    );
  });

  it("orders listed items by $setElementOrder and places unlisted ones like the server", () => {
    // Cases checked against kube-apiserver (tests/integration/strategic_merge.test.ts).
    const live = pod({ containers: [{ name: "a" }, { name: "x" }, { name: "b" }, { name: "c" }] });
    const patch = {
      spec: { "$setElementOrder/containers": [{ name: "c" }, { name: "b" }, { name: "a" }] },
    };
    assert.deepEqual(
      applyStrategicMergePatch(live, patch, POD),
      pod({ containers: [{ name: "x" }, { name: "c" }, { name: "b" }, { name: "a" }] }),
    );
  });

  it("merges list items without an order like the server", () => {
    const live = pod({ containers: [{ name: "x" }, { name: "c" }, { name: "b" }, { name: "a" }] });
    assert.deepEqual(
      applyStrategicMergePatch(live, {
        spec: { containers: [{ name: "b", image: "y" }, { name: "n" }] },
      }, POD),
      pod({
        containers: [{ name: "x" }, { name: "c" }, { name: "b", image: "y" }, { name: "n" }, {
          name: "a",
        }],
      }),
    );
    assert.deepEqual(
      applyStrategicMergePatch(pod({}, { finalizers: ["b", "a"] }), {
        metadata: { finalizers: ["c", "a"] },
      }, POD),
      pod({}, { finalizers: ["c", "b", "a"] }),
    );
  });

  it("replaces a whole list with $patch: replace", () => {
    assert.deepEqual(
      applyStrategicMergePatch(
        pod({ containers: [app, sidecar] }),
        { spec: { containers: [{ $patch: "replace" }, { name: "only", image: "x" }] } },
        POD,
      ),
      pod({ containers: [{ name: "only", image: "x" }] }),
    );
  });

  it("replaces or empties an object with $patch", () => {
    const live = pod({}, { name: "web", labels: { a: "1", b: "2" } });
    assert.deepEqual(
      applyStrategicMergePatch(live, { metadata: { labels: { $patch: "replace", c: "3" } } }, POD),
      pod({}, { name: "web", labels: { c: "3" } }),
    );
    assert.deepEqual(
      applyStrategicMergePatch(live, { metadata: { labels: { $patch: "delete" } } }, POD),
      pod({}, { name: "web", labels: {} }),
    );
  });

  it("rejects $patch: merge and unknown directives, as the server does", () => {
    const live = pod({ containers: [app] }, { name: "web", labels: { a: "1" } });
    for (
      const patch of [
        { metadata: { labels: { $patch: "merge", c: "3" } } },
        { spec: { containers: [{ name: "app", $patch: "merge" }] } },
        { spec: { containers: [{ name: "app", $patch: "explode" }] } },
        { spec: { containers: [{ $patch: "delete" }] } },
        { metadata: { labels: { b: "2" }, $retainKeys: ["labels"], name: "x" } },
        {
          spec: { "$setElementOrder/containers": [{ name: "app" }], containers: [{ name: "new" }] },
        },
      ]
    ) {
      assert.throws(
        () => applyStrategicMergePatch(live, patch, POD),
        StrategicMergePatchError,
        JSON.stringify(patch),
      );
    }
  });

  it("drops nulls and directives inside values it adds", () => {
    assert.deepEqual(
      applyStrategicMergePatch(
        pod({}),
        {
          metadata: { labels: { a: "1", b: null } },
          spec: { containers: [{ name: "x", env: null, $retainKeys: ["name"] }] },
        },
        POD,
      ),
      pod({ containers: [{ name: "x" }] }, { name: "web", labels: { a: "1" } }),
    );
  });

  it("ignores a deletion list for a missing list and null for a missing field", () => {
    assert.deepEqual(
      applyStrategicMergePatch(pod({}), {
        metadata: { "$deleteFromPrimitiveList/finalizers": ["a"], labels: null },
      }, POD),
      pod({}),
    );
  });

  it("starts from an empty object when there is no original", () => {
    assert.deepEqual(applyStrategicMergePatch(undefined, { a: { b: 1, c: null } }, POD), {
      a: { b: 1 },
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Seeded random round trips

/** Seeded PRNG (mulberry32): the same seed gives the same objects on every run. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class Random {
  readonly #next: () => number;
  constructor(seed: number) {
    this.#next = mulberry32(seed);
  }
  int(max: number): number {
    return Math.floor(this.#next() * max);
  }
  chance(probability: number): boolean {
    return this.#next() < probability;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
  /** A random subset of `items` in random order. */
  subset<T>(items: readonly T[]): T[] {
    const chosen = items.filter(() => this.chance(0.5));
    for (let i = chosen.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [chosen[i], chosen[j]] = [chosen[j], chosen[i]];
    }
    return chosen;
  }
}

function randomMap(random: Random, keys: readonly string[]): Record<string, string> {
  return Object.fromEntries(random.subset(keys).map((key) => [key, random.pick(["1", "2", "x"])]));
}

function randomContainer(random: Random, name: string): Json {
  const container: Json = { name, image: random.pick(["nginx:1", "nginx:2", "envoy:1"]) };
  if (random.chance(0.7)) {
    container.env = random.subset(["A", "B", "C", "D", "E"]).map((envName) =>
      random.chance(0.8) ? { name: envName, value: random.pick(["1", "2", "3"]) } : {
        name: envName,
        valueFrom: { fieldRef: { fieldPath: random.pick(["metadata.name", "spec.nodeName"]) } },
      }
    );
  }
  if (random.chance(0.5)) {
    container.ports = random.subset([80, 443, 8080, 9090]).map((port) => ({
      containerPort: port,
      protocol: random.pick(["TCP", "UDP"]),
      ...(random.chance(0.5) ? { name: `p${port}` } : {}),
    }));
  }
  if (random.chance(0.5)) {
    container.volumeMounts = random.subset(["/data", "/cache", "/etc/config"]).map((mountPath) => ({
      mountPath,
      name: random.pick(["data", "cache", "config"]),
      ...(random.chance(0.3) ? { readOnly: true } : {}),
    }));
  }
  if (random.chance(0.4)) container.args = random.subset(["--a", "--b", "--c"]);
  if (random.chance(0.4)) {
    container.resources = {
      limits: randomMap(random, ["cpu", "memory"]),
      requests: randomMap(random, ["cpu"]),
    };
  }
  return container;
}

function randomVolume(random: Random, name: string): Json {
  switch (random.int(4)) {
    case 0:
      return { name, emptyDir: random.chance(0.5) ? {} : { medium: "Memory" } };
    case 1:
      return {
        name,
        configMap: {
          name: random.pick(["settings", "other"]),
          ...(random.chance(0.5) ? { optional: true } : {}),
        },
      };
    case 2:
      return { name, secret: { secretName: random.pick(["tls", "creds"]) } };
    default:
      return { name, hostPath: { path: random.pick(["/var", "/tmp"]) } };
  }
}

function randomPodSpec(random: Random): Json {
  const spec: Json = {
    containers: random.subset(["app", "sidecar", "logger", "proxy"]).map((name) =>
      randomContainer(random, name)
    ),
  };
  if (random.chance(0.5)) {
    spec.initContainers = random.subset(["init", "migrate"]).map((name) =>
      randomContainer(random, name)
    );
  }
  if (random.chance(0.6)) {
    spec.volumes = random.subset(["data", "cache", "config"]).map((name) =>
      randomVolume(random, name)
    );
  }
  if (random.chance(0.5)) {
    spec.tolerations = random.subset(["a", "b", "c"]).map((key) => ({
      key,
      operator: random.pick(["Exists", "Equal"]),
    }));
  }
  if (random.chance(0.5)) spec.nodeSelector = randomMap(random, ["zone", "disk", "arch"]);
  if (random.chance(0.3)) {
    spec.imagePullSecrets = random.subset(["r1", "r2"]).map((name) => ({ name }));
  }
  if (random.chance(0.5)) spec.restartPolicy = random.pick(["Always", "OnFailure"]);
  return spec;
}

function randomMetadata(random: Random): Json {
  const metadata: Json = { name: "web" };
  if (random.chance(0.7)) metadata.labels = randomMap(random, ["app", "tier", "env", "team"]);
  if (random.chance(0.5)) metadata.annotations = randomMap(random, ["a", "b"]);
  if (random.chance(0.6)) {
    metadata.finalizers = random.subset([
      "example.com/a",
      "example.com/b",
      "example.com/c",
      "example.com/d",
    ]);
  }
  if (random.chance(0.3)) {
    metadata.ownerReferences = random.subset(["u1", "u2", "u3"]).map((uid) => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      name: `owner-${uid}`,
      uid,
      ...(random.chance(0.5) ? { controller: true } : {}),
    }));
  }
  return metadata;
}

function randomPod(random: Random): Json {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: randomMetadata(random),
    spec: randomPodSpec(random),
  };
}

function randomDeployment(random: Random): Json {
  const spec: Json = {
    replicas: random.int(4),
    selector: { matchLabels: randomMap(random, ["app", "tier"]) },
    template: {
      metadata: { labels: randomMap(random, ["app", "tier"]) },
      spec: randomPodSpec(random),
    },
  };
  if (random.chance(0.7)) {
    spec.strategy = random.chance(0.5) ? { type: "Recreate" } : {
      type: "RollingUpdate",
      ...(random.chance(0.7)
        ? { rollingUpdate: randomMap(random, ["maxSurge", "maxUnavailable"]) }
        : {}),
    };
  }
  return { apiVersion: "apps/v1", kind: "Deployment", metadata: randomMetadata(random), spec };
}

/** A copy of `object` with a few random edits: values changed, fields dropped, lists reordered. */
function mutate(random: Random, object: unknown): unknown {
  if (Array.isArray(object)) {
    const items = object.map((item) => random.chance(0.4) ? mutate(random, item) : item);
    if (random.chance(0.2)) items.reverse();
    if (items.length > 0 && random.chance(0.2)) items.splice(random.int(items.length), 1);
    return items;
  }
  if (typeof object === "object" && object !== null) {
    const result: Json = {};
    for (const [key, value] of Object.entries(object)) {
      // Merge keys identify list items: keep them, so that items match up.
      if (["name", "containerPort", "mountPath", "uid", "apiVersion", "kind"].includes(key)) {
        result[key] = value;
      } else if (!random.chance(0.05)) {
        result[key] = random.chance(0.6) ? mutate(random, value) : value;
      }
    }
    return result;
  }
  if (typeof object === "string") return `${object}-changed`;
  if (typeof object === "number") return object + 1;
  if (typeof object === "boolean") return !object;
  return object;
}

describe("round trips on seeded random objects", () => {
  it("applying the patch to the original gives the modified object (pods)", () => {
    const random = new Random(20260101);
    for (let run = 0; run < 300; run++) {
      const original = randomPod(random);
      const modified = random.chance(0.5) ? randomPod(random) : mutate(random, original);
      const patch = createStrategicMergePatch(original, modified, POD);
      assert.deepEqual(
        applyStrategicMergePatch(original, patch, POD),
        modified,
        `run ${run}: ${JSON.stringify(patch)}`,
      );
      assert.deepEqual(createStrategicMergePatch(original, original, POD), {});
    }
  });

  it("applying the patch to the original gives the modified object (deployments)", () => {
    const random = new Random(4242);
    for (let run = 0; run < 300; run++) {
      const original = randomDeployment(random);
      const modified = random.chance(0.5) ? randomDeployment(random) : mutate(random, original);
      const patch = createStrategicMergePatch(original, modified, DEPLOYMENT);
      assert.deepEqual(
        applyStrategicMergePatch(original, patch, DEPLOYMENT),
        modified,
        `run ${run}: ${JSON.stringify(patch)}`,
      );
    }
  });

  it("a patch survives being sent as JSON", () => {
    const random = new Random(7);
    for (let run = 0; run < 50; run++) {
      const original = randomDeployment(random);
      const modified = randomDeployment(random);
      const patch = JSON.parse(
        JSON.stringify(createStrategicMergePatch(original, modified, DEPLOYMENT)),
      );
      assert.deepEqual(applyStrategicMergePatch(original, patch, DEPLOYMENT), modified);
    }
  });
});
