// `rudder manifests` for a sharded operator (rudder.json `sharding`, controllers built with
// .sharded()): replicas with their pod's name and namespace, a PodDisruptionBudget, a Role for
// the shard Leases, patch on the sharded and owned kinds, and with webhooks the ring's mutating
// webhooks; and nothing of it for an operator that does not shard.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import {
  discoverControllers,
  type DiscoveredController,
  type Discovery,
} from "../../cli/discover.ts";
import { generateManifests, type ManifestSettings } from "../../cli/manifests.ts";
import { loadProject } from "../../cli/project.ts";
import { SHARD_LEASE_RULES, shardingPlan } from "../../cli/sharding_manifests.ts";
import { z } from "../../lib/api/zod.ts";
import { defineResource } from "../../lib/api/resource.ts";
import { ConfigMap, Secret } from "../../lib/api/builtins.ts";
import { newControllerManagedBy } from "../../lib/controller/builder.ts";
import { enqueueRequestForObject } from "../../lib/handler/handler.ts";
import { assertNamespacedLeaseRole, watch } from "../support/manifests.ts";

const T = { timeout: 10_000 };

const settings: ManifestSettings = {
  name: "shard-operator",
  namespace: "shard-system",
  image: "registry.example.com/shard-operator:1.0.0",
  metricsBindAddress: ":8443",
  healthProbeBindAddress: ":8081",
  rbac: [],
  sharding: { ring: "shardlings", replicas: 3 },
};

const sharded: DiscoveredController = {
  name: "shardling",
  sharded: true,
  watched: [
    watch("example.com", "Shardling", "shardlings", "for"),
    watch("", "ConfigMap", "configmaps", "owns"),
    watch("", "Secret", "secrets", "watches"),
  ],
};
const plain: DiscoveredController = {
  name: "other",
  watched: [watch("example.com", "Other", "others", "for")],
};
const discovery: Discovery = { crds: [], controllers: [sharded, plain], webhooks: false };

function objects(files: Map<string, string>) {
  return (path: string) => {
    const content = files.get(path);
    assert.ok(content, `${path} is generated`);
    return parse(content);
  };
}

describe("rudder manifests for a sharded operator", () => {
  const files = generateManifests(settings, discovery);
  const object = objects(files);

  it(
    "adds the shard Role, its binding and a PodDisruptionBudget, listed in the kustomization",
    T,
    () => {
      const paths = [...files.keys()];
      for (
        const path of [
          "rbac/shard_role.yaml",
          "rbac/shard_role_binding.yaml",
          "manager/pod_disruption_budget.yaml",
        ]
      ) {
        assert.ok(paths.includes(path), path);
        assert.ok(object("kustomization.yaml").resources.includes(path), path);
      }
      assert.equal(paths.some((path) => path.startsWith("webhook/")), false);
    },
  );

  it("runs the replicas of rudder.json, each told its pod's name and namespace", T, () => {
    const deployment = object("manager/deployment.yaml");
    assert.equal(deployment.spec.replicas, 3);
    const [container] = deployment.spec.template.spec.containers;
    const env = Object.fromEntries(
      container.env.map((e: { name: string; valueFrom?: unknown }) => [e.name, e.valueFrom]),
    );
    assert.deepEqual(env.POD_NAME, { fieldRef: { fieldPath: "metadata.name" } });
    assert.deepEqual(env.POD_NAMESPACE, { fieldRef: { fieldPath: "metadata.namespace" } });
    // Still elected for what is not sharded (the sharder, controllers without .sharded()).
    assert.ok("LEADER_ELECTION_NAMESPACE" in env);
    const [spread] = deployment.spec.template.spec.topologySpreadConstraints;
    assert.equal(spread.topologyKey, "kubernetes.io/hostname");
    assert.deepEqual(spread.labelSelector.matchLabels, deployment.spec.selector.matchLabels);
  });

  it("lets at most one replica be disrupted at a time", T, () => {
    const budget = object("manager/pod_disruption_budget.yaml");
    assert.equal(budget.apiVersion, "policy/v1");
    assert.equal(budget.kind, "PodDisruptionBudget");
    assert.equal(budget.metadata.namespace, "shard-system");
    assert.equal(budget.spec.maxUnavailable, 1);
    assert.deepEqual(
      budget.spec.selector.matchLabels,
      object("manager/deployment.yaml").spec.selector.matchLabels,
    );
  });

  it("grants the shard Lease verbs in the operator's namespace only", T, () => {
    const role = object("rbac/shard_role.yaml");
    assert.equal(role.kind, "Role");
    assert.equal(role.metadata.namespace, "shard-system");
    assert.deepEqual(role.rules, [{
      apiGroups: ["coordination.k8s.io"],
      resources: ["leases"],
      verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
    }]);
    assert.deepEqual(role.rules, SHARD_LEASE_RULES);
    assertNamespacedLeaseRole(
      object("rbac/shard_role_binding.yaml"),
      files,
      "shard-operator",
      "shard-system",
      "shard-role",
    );
  });

  it("grants get, list, watch and patch on the sharded kind and the kinds it owns", T, () => {
    const rules = object("rbac/role.yaml").rules as {
      apiGroups: string[];
      resources: string[];
      verbs: string[];
    }[];
    const verbsOf = (group: string, resource: string) =>
      rules.filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
        .flatMap((r) => r.verbs);
    for (const [group, resource] of [["example.com", "shardlings"], ["", "configmaps"]]) {
      for (const verb of ["get", "list", "watch", "patch"]) {
        assert.ok(verbsOf(group, resource).includes(verb), `${verb} ${resource}`);
      }
    }
    // A kind the sharded controller only watches is not labelled, so it is not patched.
    assert.ok(!verbsOf("", "secrets").includes("patch"));
  });

  it("without rudder.json's sharding, writes what it wrote before", T, () => {
    const { sharding: _, ...unsharded } = settings;
    const before = generateManifests(unsharded, {
      ...discovery,
      controllers: [{ ...sharded, sharded: undefined }, plain],
    });
    assert.equal(parse(before.get("manager/deployment.yaml")!).spec.replicas, 1);
    for (const path of before.keys()) {
      if (path.startsWith("grafana/")) continue; // named after the operator, "shard-operator"
      assert.doesNotMatch(path, /shard|disruption/);
    }
    const [container] = parse(before.get("manager/deployment.yaml")!).spec.template.spec
      .containers;
    assert.ok(!container.env.some((e: { name: string }) => e.name === "POD_NAME"));
  });

  it("defaults to 3 replicas", T, () => {
    const plan = shardingPlan({ ring: "shardlings" }, discovery);
    assert.equal(plan?.replicas, 3);
    assert.deepEqual(plan?.sharded.map((k) => k.plural), ["shardlings"]);
    assert.deepEqual(plan?.owned.map((k) => k.plural), ["configmaps"]);
  });

  it(
    "refuses a ring without a sharded controller, and a sharded controller without a ring",
    T,
    () => {
      assert.throws(
        () => generateManifests(settings, { ...discovery, controllers: [plain] }),
        /declares the shard ring "shardlings", but no controller .* is sharded/,
      );
      const { sharding: _, ...unsharded } = settings;
      assert.throws(
        () => generateManifests(unsharded, discovery),
        /the controllers shardling are sharded .* rudder\.json declares no ring/,
      );
    },
  );

  it("gives the same bytes for the same input", T, () => {
    const again = generateManifests(settings, {
      ...discovery,
      controllers: [{ ...sharded, watched: [...sharded.watched].reverse() }, plain],
    });
    assert.deepEqual([...again], [...files]);
  });
});

describe("rudder manifests for a sharded operator with webhooks", () => {
  const withWebhooks: Discovery = {
    ...discovery,
    webhooks: true,
    admissionWebhooks: [{
      group: "example.com",
      version: "v1",
      kind: "Shardling",
      plural: "shardlings",
      scope: "Namespaced",
      type: "mutating",
      path: "/mutate-example-com-v1-shardling",
      operations: ["CREATE", "UPDATE"],
    }],
  };
  const files = generateManifests(settings, withWebhooks);
  const object = objects(files);

  it(
    "labels sharded and owned objects on CREATE, unlabelled ones only, ignoring failures",
    T,
    () => {
      const configuration = object("webhook/mutating_webhook_configuration.yaml");
      assert.equal(configuration.metadata.name, "shard-operator-mutating-webhook-configuration");
      const hooks = configuration.webhooks as Record<string, unknown>[];
      const shard = hooks.filter((hook) =>
        (hook.clientConfig as { service: { path: string } }).service.path === "/shard-shardlings"
      );
      assert.equal(shard.length, 1);
      const [hook] = shard;
      assert.deepEqual(hook.clientConfig, {
        service: {
          name: "shard-operator-webhook-service",
          namespace: "shard-system",
          path: "/shard-shardlings",
        },
      });
      assert.deepEqual(hook.rules, [
        {
          apiGroups: ["example.com"],
          apiVersions: ["v1"],
          operations: ["CREATE"],
          resources: ["shardlings"],
          scope: "Namespaced",
        },
        {
          apiGroups: [""],
          apiVersions: ["v1"],
          operations: ["CREATE"],
          resources: ["configmaps"],
          scope: "Namespaced",
        },
      ]);
      assert.equal(hook.failurePolicy, "Ignore");
      assert.equal(hook.sideEffects, "None");
      assert.deepEqual(hook.objectSelector, {
        matchExpressions: [{ key: "shard.rudder.dev/shardlings", operator: "DoesNotExist" }],
      });
      // Names are unique in one configuration, and the operator's own webhook is as it was.
      const names = hooks.map((h) => h.name as string);
      assert.equal(new Set(names).size, names.length);
      const own = hooks.find((h) => h.name === "mshardling-v1.example.com")!;
      assert.equal(own.failurePolicy, "Fail");
      assert.equal(own.objectSelector, undefined);
    },
  );

  it("keeps the CA bundle of the ring's webhooks current with the others'", T, () => {
    const [container] = object("manager/deployment.yaml").spec.template.spec.containers;
    const mutating = container.env.find((e: { name: string }) =>
      e.name === "WEBHOOK_MUTATING_CONFIGURATIONS"
    );
    assert.equal(mutating.value, "shard-operator-mutating-webhook-configuration");
  });

  it(
    "writes the webhook Service and the ring's webhooks when only sharding asks for webhooks",
    T,
    () => {
      const only = generateManifests({
        ...settings,
        sharding: { ring: "shardlings", webhook: true },
      }, {
        ...discovery,
        webhooks: false,
      });
      assert.ok(only.has("webhook/service.yaml"));
      const configuration = parse(only.get("webhook/mutating_webhook_configuration.yaml")!);
      assert.deepEqual(configuration.webhooks.map((hook: { name: string }) => hook.name), [
        "shard-shardlings.sharding.rudder.dev",
      ]);
      const [container] = parse(only.get("manager/deployment.yaml")!).spec.template.spec
        .containers;
      assert.ok(container.env.some((e: { name: string }) => e.name === "ENABLE_WEBHOOKS"));
      const off = generateManifests(
        { ...settings, sharding: { ring: "shardlings", webhook: false } },
        withWebhooks,
      );
      const hooks = parse(off.get("webhook/mutating_webhook_configuration.yaml")!).webhooks;
      assert.deepEqual(hooks.map((hook: { name: string }) => hook.name), [
        "mshardling-v1.example.com",
      ]);
    },
  );
});

describe("discovery of a sharded controller", () => {
  const Shardling = defineResource({
    group: "example.com",
    version: "v1",
    kind: "Shardling",
    scope: "Namespaced",
    spec: z.object({ size: z.number().int().default(1) }),
  });

  it("marks controllers built with .sharded(), whether or not a ring is declared", T, async () => {
    for (const ring of [undefined, "shardlings"]) {
      const found = await discoverControllers((mgr) => {
        newControllerManagedBy(mgr).for(Shardling).owns(ConfigMap).sharded().complete(() => {});
        newControllerManagedBy(mgr).named("plain").watches(Secret, enqueueRequestForObject())
          .complete(() => {});
      }, { ring });
      assert.deepEqual(found.map((c) => [c.name, c.sharded ?? false]), [
        ["shardling", true],
        ["plain", false],
      ]);
      assert.deepEqual(found[0].watched.map((w) => [w.kind, w.role]), [
        ["Shardling", "for"],
        ["ConfigMap", "owns"],
      ]);
    }
  });
});

describe("rudder.json sharding", () => {
  const project = (json: unknown) => {
    const dir = mkdtempSync(join(tmpdir(), "rudder-sharding-"));
    mkdirSync(join(dir, "api"));
    writeFileSync(join(dir, "main.ts"), "export function setup() {}\n");
    writeFileSync(join(dir, "rudder.json"), JSON.stringify(json));
    return dir;
  };

  it("reads the ring and replicas", T, () => {
    const dir = project({ sharding: { ring: "shardlings", replicas: 4 } });
    try {
      assert.deepEqual(loadProject(dir).sharding, { ring: "shardlings", replicas: 4 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a ring that is not a short DNS label, and replicas below 1", T, () => {
    for (
      const [sharding, message] of [
        [{ ring: "Shard_Ring" }, /sharding\.ring: must be a DNS label of at most 40/],
        [{ ring: "a".repeat(41) }, /sharding\.ring: must be a DNS label of at most 40/],
        [{ ring: "ok", replicas: 0 }, /sharding\.replicas/],
        [{ ring: "ok", replica: 2 }, /sharding/],
      ] as const
    ) {
      const dir = project({ sharding });
      try {
        assert.throws(() => loadProject(dir), message);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});
