// `rudder manifests`: RBAC derived from what controllers watch (least privilege, no wildcard),
// the hardened Deployment, the webhook Service only with webhooks, and output that is the same
// bytes for the same input. Discovery runs a project's setup(mgr) without starting anything.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import {
  crdsOf,
  discoverControllers,
  type DiscoveredController,
  discoverModules,
  type Discovery,
} from "../../cli/discover.ts";
import { deriveRules, generateManifests, type ManifestSettings } from "../../cli/manifests.ts";
import { memoryMiB } from "../../cli/sizing.ts";
import { cliEntrypoint } from "../../cli/project.ts";
import { z } from "../../lib/api/zod.ts";
import { defineResource } from "../../lib/api/resource.ts";
import { ConfigMap, Deployment, Secret } from "../../lib/api/builtins.ts";
import { newControllerManagedBy } from "../../lib/controller/builder.ts";
import { enqueueRequestForObject } from "../../lib/handler/handler.ts";
import { type MainRun, runMain } from "../support/cli_main.ts";
import { assertNamespacedLeaseRole, watch } from "../support/manifests.ts";

const Widget = defineResource({
  group: "example.com",
  version: "v1",
  kind: "Widget",
  scope: "Namespaced",
  spec: z.object({ size: z.number().int().default(1) }),
  status: z.object({ ready: z.boolean().optional() }),
});
const Gadget = defineResource({
  group: "tools.example.com",
  version: "v1beta1",
  kind: "Gadget",
  scope: "Cluster",
  spec: z.object({ color: z.string() }),
});

const settings: ManifestSettings = {
  name: "widget-operator",
  namespace: "widget-system",
  image: "registry.example.com/widget-operator:1.2.3",
  metricsBindAddress: ":8443",
  healthProbeBindAddress: ":8081",
  rbac: [],
};

const controllers: DiscoveredController[] = [{
  name: "widget",
  watched: [
    watch("example.com", "Widget", "widgets", "for"),
    watch("apps", "Deployment", "deployments", "owns"),
    watch("", "ConfigMap", "configmaps", "watches"),
    watch("", "Secret", "secrets", "metadata"),
  ],
}];

const discovery: Discovery = {
  crds: [Widget.crd(), Gadget.crd()] as Discovery["crds"],
  controllers,
  webhooks: false,
};

const READ = ["get", "list", "watch"];
const ALL = ["create", "delete", "get", "list", "patch", "update", "watch"];

describe("deriveRules", () => {
  it("grants reads for watched kinds, writes for for/owns, status and finalizers for for", () => {
    assert.deepEqual(deriveRules(controllers, []), [
      { apiGroups: [""], resources: ["configmaps", "secrets"], verbs: READ },
      { apiGroups: ["apps"], resources: ["deployments"], verbs: ALL },
      { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
      { apiGroups: ["example.com"], resources: ["widgets"], verbs: ALL },
      { apiGroups: ["example.com"], resources: ["widgets/finalizers"], verbs: ["update"] },
      { apiGroups: ["example.com"], resources: ["widgets/status"], verbs: ["patch", "update"] },
    ]);
  });

  it("grants events even without controllers, and nothing on leases", () => {
    assert.deepEqual(deriveRules([], []), [
      { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
    ]);
  });

  it("merges extra rules into the derived ones and keeps named or non-resource rules apart", () => {
    const rules = deriveRules(controllers, [
      { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
      { apiGroups: [""], resources: ["configmaps"], resourceNames: ["b", "a"], verbs: ["get"] },
      { nonResourceURLs: ["/metrics"], verbs: ["get"] },
      { nonResourceURLs: ["/metrics"], verbs: ["get"] },
    ]);
    assert.deepEqual(rules.slice(0, 2), [
      { apiGroups: [""], resources: ["configmaps"], verbs: READ },
      { apiGroups: [""], resources: ["secrets"], verbs: ["create", "get", "list", "watch"] },
    ]);
    assert.deepEqual(rules.slice(-2), [
      { apiGroups: [""], resources: ["configmaps"], resourceNames: ["a", "b"], verbs: ["get"] },
      { nonResourceURLs: ["/metrics"], verbs: ["get"] },
    ]);
  });

  it("refuses an extra rule with a wildcard, naming the field", () => {
    assert.throws(
      () => deriveRules([], [{ apiGroups: [""], resources: ["pods"], verbs: ["*"] }]),
      /rbac rule 1 of rudder\.json grants a wildcard in verbs/,
    );
    assert.throws(
      () => deriveRules([], [{ apiGroups: ["*"], resources: ["pods"], verbs: ["get"] }]),
      /wildcard in apiGroups/,
    );
  });

  it("does not depend on the order of controllers and watches", () => {
    const shuffled: DiscoveredController[] = [
      { name: "other", watched: [watch("", "ConfigMap", "configmaps", "owns")] },
      { ...controllers[0], watched: [...controllers[0].watched].reverse() },
    ];
    const forward = deriveRules([controllers[0], shuffled[0]], []);
    assert.deepEqual(deriveRules(shuffled, []), forward);
  });
});

describe("generateManifests", () => {
  const files = generateManifests(settings, discovery);
  const object = (path: string) => {
    const content = files.get(path);
    assert.ok(content, `${path} is generated`);
    return parse(content);
  };

  it("writes CRDs, RBAC, the Deployment, its Namespace, the metrics Service, the Grafana dashboard and a kustomization over them", () => {
    assert.deepEqual([...files.keys()], [
      "manager/namespace.yaml",
      "crd/example.com_widgets.yaml",
      "crd/tools.example.com_gadgets.yaml",
      "rbac/service_account.yaml",
      "rbac/role.yaml",
      "rbac/role_binding.yaml",
      "rbac/leader_election_role.yaml",
      "rbac/leader_election_role_binding.yaml",
      "rbac/metrics_auth_role.yaml",
      "rbac/metrics_auth_role_binding.yaml",
      "rbac/metrics_reader_role.yaml",
      "manager/deployment.yaml",
      "manager/metrics_service.yaml",
      "grafana/dashboards_configmap.yaml",
      "kustomization.yaml",
      "grafana/widget-operator.json",
    ]);
    const kustomization = object("kustomization.yaml");
    assert.equal(kustomization.namespace, "widget-system");
    // The dashboard's JSON file is for importing by hand, not a resource.
    assert.deepEqual(kustomization.resources, [...files.keys()].slice(0, -2));
    assert.deepEqual(object("crd/example.com_widgets.yaml"), Widget.crd());
  });

  it("binds the ClusterRole to the operator's ServiceAccount", () => {
    const account = object("rbac/service_account.yaml");
    assert.deepEqual(account.metadata.name, "widget-operator-controller-manager");
    assert.equal(account.metadata.namespace, "widget-system");
    const binding = object("rbac/role_binding.yaml");
    assert.deepEqual(binding.roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: "widget-operator-manager-role",
    });
    assert.deepEqual(binding.subjects, [{
      kind: "ServiceAccount",
      name: "widget-operator-controller-manager",
      namespace: "widget-system",
    }]);
    assert.equal(object("rbac/role.yaml").metadata.name, "widget-operator-manager-role");
  });

  it("confines leader election to a Role in the operator's namespace, with the Lease verbs it uses", () => {
    const role = object("rbac/leader_election_role.yaml");
    assert.equal(role.kind, "Role");
    assert.equal(role.metadata.namespace, "widget-system");
    assert.deepEqual(role.rules, [
      {
        apiGroups: ["coordination.k8s.io"],
        resources: ["leases"],
        verbs: ["create", "get", "update"],
      },
    ]);
    assertNamespacedLeaseRole(
      object("rbac/leader_election_role_binding.yaml"),
      files,
      "widget-operator",
      "widget-system",
      "leader-election-role",
    );
  });

  it("lets the manager review scrapers' tokens and access, and gives scrapers a metrics-reader role", () => {
    const auth = object("rbac/metrics_auth_role.yaml");
    assert.equal(auth.kind, "ClusterRole");
    assert.deepEqual(auth.rules, [
      { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
      {
        apiGroups: ["authorization.k8s.io"],
        resources: ["subjectaccessreviews"],
        verbs: ["create"],
      },
    ]);
    const binding = object("rbac/metrics_auth_role_binding.yaml");
    assert.equal(binding.kind, "ClusterRoleBinding");
    assert.equal(binding.roleRef.name, "widget-operator-metrics-auth-role");
    assert.equal(binding.subjects[0].name, "widget-operator-controller-manager");
    const reader = object("rbac/metrics_reader_role.yaml");
    assert.equal(reader.kind, "ClusterRole");
    assert.equal(reader.metadata.name, "widget-operator-metrics-reader");
    assert.deepEqual(reader.rules, [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
    const service = object("manager/metrics_service.yaml");
    assert.equal(service.metadata.namespace, "widget-system");
    assert.deepEqual(service.spec.ports, [
      { name: "https", port: 8443, protocol: "TCP", targetPort: "metrics" },
    ]);
    assert.deepEqual(service.spec.selector, {
      "app.kubernetes.io/name": "widget-operator",
      "app.kubernetes.io/component": "controller-manager",
    });
  });

  it("leaves the metrics RBAC and Service out when the metrics server is off", () => {
    const off = generateManifests({ ...settings, metricsBindAddress: "0" }, discovery);
    assert.deepEqual([...off.keys()].filter((path) => path.includes("metrics")), []);
  });

  it("makes the operator's namespace enforce the restricted Pod Security Standard", () => {
    const namespace = object("manager/namespace.yaml");
    assert.equal(namespace.metadata.name, "widget-system");
    for (const mode of ["enforce", "audit", "warn"]) {
      assert.equal(namespace.metadata.labels[`pod-security.kubernetes.io/${mode}`], "restricted");
    }
  });

  it("grants no wildcard anywhere", () => {
    for (const [path, content] of files) {
      if (path.startsWith("crd/")) continue;
      assert.doesNotMatch(content, /\*/, path);
    }
    const rules = object("rbac/role.yaml").rules as Record<string, string[]>[];
    for (const rule of rules) {
      for (const values of Object.values(rule)) assert.ok(!values.includes("*"));
    }
  });

  it("hardens the Deployment: non-root, read-only root, no capabilities, RuntimeDefault", () => {
    const deployment = object("manager/deployment.yaml");
    const pod = deployment.spec.template.spec;
    assert.equal(pod.serviceAccountName, "widget-operator-controller-manager");
    assert.deepEqual(pod.securityContext, {
      runAsNonRoot: true,
      runAsUser: 65532,
      runAsGroup: 65532,
      seccompProfile: { type: "RuntimeDefault" },
    });
    const [container] = pod.containers;
    assert.equal(container.image, "registry.example.com/widget-operator:1.2.3");
    assert.deepEqual(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ["ALL"] },
    });
    // cli/sizing.ts: Deno's idle operator with 1,000 cached objects, +20 %.
    assert.deepEqual(container.resources.requests, { cpu: "10m", memory: "96Mi" });
    // … and a relist of 10,000, +50 %.
    assert.deepEqual(container.resources.limits, { cpu: "500m", memory: "192Mi" });
  });

  it("probes /healthz and /readyz on the health port and exposes the metrics port", () => {
    const [container] = object("manager/deployment.yaml").spec.template.spec.containers;
    assert.deepEqual(container.ports, [
      { name: "metrics", containerPort: 8443, protocol: "TCP" },
      { name: "health", containerPort: 8081, protocol: "TCP" },
    ]);
    assert.deepEqual(container.livenessProbe.httpGet, { path: "/healthz", port: "health" });
    assert.deepEqual(container.readinessProbe.httpGet, { path: "/readyz", port: "health" });
  });

  it("gives the operator its namespace for leader election and its bind addresses", () => {
    const [container] = object("manager/deployment.yaml").spec.template.spec.containers;
    assert.deepEqual(container.env, [
      {
        name: "LEADER_ELECTION_NAMESPACE",
        valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
      },
      { name: "METRICS_BIND_ADDRESS", value: ":8443" },
      { name: "HEALTH_PROBE_BIND_ADDRESS", value: ":8081" },
    ]);
  });

  it("leaves probes out when the health server is off", () => {
    const off = generateManifests({ ...settings, healthProbeBindAddress: "0" }, discovery);
    const [container] = parse(off.get("manager/deployment.yaml")!).spec.template.spec.containers;
    assert.equal(container.livenessProbe, undefined);
    assert.deepEqual(container.ports.map((p: { name: string }) => p.name), ["metrics"]);
  });

  it("adds a webhook Service only when the operator serves webhooks", () => {
    assert.equal([...files.keys()].some((path) => path.startsWith("webhook/")), false);
    const withWebhooks = generateManifests(settings, { ...discovery, webhooks: true });
    const service = parse(withWebhooks.get("webhook/service.yaml")!);
    assert.equal(service.kind, "Service");
    assert.equal(service.metadata.namespace, "widget-system");
    assert.deepEqual(service.spec.ports, [
      { name: "webhook", port: 443, protocol: "TCP", targetPort: "webhook" },
    ]);
    const kustomization = parse(withWebhooks.get("kustomization.yaml")!);
    assert.ok(kustomization.resources.includes("webhook/service.yaml"));
  });

  it("gives the same bytes for the same input, whatever the order it was found in", () => {
    const again = generateManifests(settings, {
      crds: [...discovery.crds].reverse(),
      controllers: [{ ...controllers[0], watched: [...controllers[0].watched].reverse() }],
      webhooks: false,
    });
    assert.deepEqual([...again], [...files]);
    // No anchors or aliases: objects used twice (the labels) are written out twice.
    for (const content of files.values()) assert.doesNotMatch(content, /(:|-) [&*][a-z]+\d+\b/);
  });

  it("starts every file with a do-not-edit header (JSON, which has no comments, in its description)", () => {
    for (const [path, content] of files) {
      if (path.endsWith(".json")) {
        assert.match(JSON.parse(content).description, /^Generated by `rudder manifests`/);
        continue;
      }
      assert.match(content, /^# Generated by `rudder manifests`; changes here are overwritten\.\n/);
    }
  });
});

describe("discovery", () => {
  it("records what the controllers registered by setup(mgr) watch, starting nothing", async () => {
    const found = await discoverControllers((mgr) => {
      newControllerManagedBy(mgr).for(Widget).owns(Deployment)
        .watches(ConfigMap, enqueueRequestForObject())
        .complete(() => ({}));
      newControllerManagedBy(mgr).named("secrets").watchesMetadata(
        Secret,
        enqueueRequestForObject(),
      ).complete(() => ({}));
    });
    assert.deepEqual(found, [
      {
        name: "widget",
        watched: [
          { ...watch("example.com", "Widget", "widgets", "for"), version: "v1" },
          {
            group: "apps",
            version: "v1",
            kind: "Deployment",
            plural: "deployments",
            scope: "Namespaced",
            role: "owns",
          },
          watch("", "ConfigMap", "configmaps", "watches"),
        ],
      },
      { name: "secrets", watched: [watch("", "Secret", "secrets", "metadata")] },
    ]);
  });

  it("takes an async setup", async () => {
    const found = await discoverControllers(async (mgr) => {
      await Promise.resolve();
      newControllerManagedBy(mgr).for(Gadget).complete(() => ({}));
    });
    assert.deepEqual(found.map((c) => c.watched[0].scope), ["Cluster"]);
  });

  it("finds the CRDs among a module's exports: everything with a crd() method", () => {
    const crds = crdsOf({ Widget, Gadget, ConfigMap, answer: 42, nothing: null });
    assert.deepEqual(crds.map(({ symbol, crd }) => [symbol, crd.metadata?.name]), [
      ["Widget", "widgets.example.com"],
      ["Gadget", "gadgets.tools.example.com"],
    ]);
  });

  it("names both symbols and the fix when two exports define one kind differently", async () => {
    const settings = { main: "main.ts", setup: "setup" } as Parameters<typeof discoverModules>[0];
    const Other = { crd: () => ({ ...Widget.crd(), spec: { different: true } }) };
    const main = { setup: () => {} };
    await assert.rejects(
      discoverModules(settings, { "api/widget.ts": { Widget }, "api/old.ts": { Other } }, main),
      /Other in api\/old.ts and Widget in api\/widget.ts both define the CRD widgets.example.com, differently: define each kind once/,
    );
    // The same definition exported twice is one CRD.
    const found = await discoverModules(
      settings,
      { "api/widget.ts": { Widget }, "api/index.ts": { Widget, Again: Widget } },
      main,
    );
    assert.deepEqual(found.crds.map((crd) => crd.metadata?.name), ["widgets.example.com"]);
  });
});

describe("rudder manifests on a project", () => {
  const checkout = fileURLToPath(new URL("../../", import.meta.url));
  let scratch: string;
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), "rudder-manifests-test-"));
  });
  after(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  function project(name: string, main: string): string {
    const dir = join(scratch, name);
    mkdirSync(join(dir, "api"), { recursive: true });
    writeFileSync(
      join(dir, "api", "gizmo.ts"),
      `import { z } from "${checkout}lib/api/zod.ts";
import { defineResource } from "${checkout}mod.ts";
export const Gizmo = defineResource({
  group: "toys.example.com", version: "v1", kind: "Gizmo", scope: "Cluster",
  spec: z.object({ size: z.number() }),
});
export const notAResource = { crd: "no" };
`,
    );
    writeFileSync(join(dir, "main.ts"), main);
    return dir;
  }

  function rudder(cwd: string, ...args: string[]): Promise<MainRun> {
    return runMain(args, cwd, { PATH: process.env.PATH, HOME: process.env.HOME });
  }

  it("loads the code in a child process, without starting it, and writes the manifests", async () => {
    const dir = project(
      "gizmo-operator",
      `import { ConfigMap, newControllerManagedBy, type Manager } from "${checkout}mod.ts";
import { Gizmo } from "./api/gizmo.ts";
export function setup(mgr: Manager): void {
  newControllerManagedBy(mgr).for(Gizmo).owns(ConfigMap).complete(() => ({}));
}
console.log("main.ts may print; the manifests do not care");
`,
    );
    const { code, out, err } = await rudder(dir, "manifests", "--out", "deploy");
    assert.equal(code, 0, err);
    assert.match(out, /^deploy\/crd\/toys\.example\.com_gizmos\.yaml$/m);
    assert.match(err, /1 CRD\(s\), controllers: gizmo; deploy with: kubectl apply -k deploy/);
    const role = parse(readFileSync(join(dir, "deploy", "rbac", "role.yaml"), "utf8"));
    assert.deepEqual(role.rules[0], { apiGroups: [""], resources: ["configmaps"], verbs: ALL });
    assert.equal(
      parse(readFileSync(join(dir, "deploy", "manager", "deployment.yaml"), "utf8")).metadata.name,
      "gizmo-operator-controller-manager",
    );
  });

  it("sizes the manager's memory for the image's runtime, and refuses one it does not know", async () => {
    const dir = project(
      "sized-operator",
      `import type { Manager } from "${checkout}mod.ts";
export function setup(_mgr: Manager): void {}
`,
    );
    const bad = await rudder(dir, "manifests", "--runtime", "python");
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--runtime must be one of deno, bun, node \(got "python"\)/);
    const { code, err } = await rudder(dir, "manifests", "--runtime", "node");
    assert.equal(code, 0, err);
    const deployment = parse(
      readFileSync(join(dir, "config", "manager", "deployment.yaml"), "utf8"),
    );
    assert.deepEqual(deployment.spec.template.spec.containers[0].resources.limits, {
      cpu: "500m",
      memory: `${memoryMiB(["node"]).limit}Mi`,
    });
  });

  it("fails naming the missing setup export", async () => {
    const dir = project("no-setup", "export const answer = 42;\n");
    const { code, err } = await rudder(dir, "manifests");
    assert.equal(code, 1);
    assert.match(err, /main\.ts does not export a function "setup"/);
    assert.match(err, /its exports: answer/);
  });

  it("fails with the project's own error when its code does not load", async () => {
    const dir = project("broken", 'throw new Error("broken on purpose");\n');
    const { code, err } = await rudder(dir, "manifests");
    assert.equal(code, 1);
    assert.match(err, /loading the project's code failed/);
    assert.match(err, /broken on purpose/);
  });

  it("runs the CLI itself for that, by path from a checkout", () => {
    assert.equal(cliEntrypoint(), join(checkout, "cli", "main.ts"));
  });

  it("keeps its internal command out of the help and checks its arguments", async () => {
    assert.doesNotMatch((await rudder(scratch, "--help")).out, /__discover/);
    assert.equal((await rudder(scratch, "__discover")).code, 2);
  });
});
