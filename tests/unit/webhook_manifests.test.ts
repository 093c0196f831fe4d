// `rudder manifests` for an operator with webhooks: the configurations derived from what
// setup(mgr) registers, the Service, CRD conversion pointed at it, and the certificate modes.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parse } from "yaml";
import { z } from "zod";
import { defineResource } from "../../lib/api/resource.ts";
import type { Manager } from "../../lib/manager/manager.ts";
import { newWebhookManagedBy } from "../../lib/webhook/builder.ts";
import { discoverSetup, type Discovery } from "../../cli/discover.ts";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";
import { generateManifests, type ManifestSettings } from "../../cli/manifests.ts";
import { scaffold } from "../../cli/templates.ts";

const T = { timeout: 30_000 };

const ThingV2 = defineResource({
  group: "manifests.example.com",
  version: "v2",
  kind: "Thing",
  scope: "Namespaced",
  spec: z.object({ count: z.int() }),
});

const Thing = defineResource({
  group: "manifests.example.com",
  version: "v1",
  kind: "Thing",
  scope: "Namespaced",
  spec: z.object({ replicas: z.int() }),
  versions: [ThingV2],
});

function setup(mgr: Manager): void {
  newWebhookManagedBy(mgr, Thing)
    .withDefaulter(() => {})
    .withValidator({ validateCreate: () => {}, validateDelete: () => {} })
    .withConversion(ThingV2, {
      convertTo: (v2) => ({ spec: { replicas: v2.spec.count } }),
      convertFrom: (v1) => ({ spec: { count: v1.spec.replicas } }),
    })
    .complete();
}

const settings: ManifestSettings = {
  name: "thing",
  namespace: "thing-system",
  image: "thing:latest",
  metricsBindAddress: ":8080",
  healthProbeBindAddress: ":8081",
  rbac: [],
};

async function discovery(): Promise<Discovery> {
  const registered = await discoverSetup(setup);
  return { crds: [Thing.crd()] as Discovery["crds"], ...registered };
}

describe("rudder manifests with webhooks", () => {
  it("finds the webhooks setup(mgr) registers", T, async () => {
    const found = await discovery();
    assert.equal(found.webhooks, true);
    assert.deepEqual(found.admissionWebhooks?.map((w) => [w.type, w.path, w.operations]), [
      ["mutating", "/mutate-manifests-example-com-v1-thing", ["CREATE", "UPDATE"]],
      ["validating", "/validate-manifests-example-com-v1-thing", ["CREATE", "UPDATE", "DELETE"]],
    ]);
  });

  it("writes cert-manager objects and CA injection in cert-manager mode", T, async () => {
    const files = generateManifests(settings, await discovery(), { certMode: "cert-manager" });
    const mutating = parse(files.get("webhook/mutating_webhook_configuration.yaml")!);
    assert.equal(mutating.kind, "MutatingWebhookConfiguration");
    assert.deepEqual(mutating.metadata.annotations, {
      "cert-manager.io/inject-ca-from": "thing-system/thing-serving-cert",
    });
    const [hook] = mutating.webhooks;
    assert.deepEqual(hook.clientConfig, {
      service: {
        name: "thing-webhook-service",
        namespace: "thing-system",
        path: "/mutate-manifests-example-com-v1-thing",
      },
    });
    assert.equal(hook.failurePolicy, "Fail");
    assert.equal(hook.sideEffects, "None");
    assert.equal(hook.matchPolicy, "Equivalent");
    assert.deepEqual(hook.admissionReviewVersions, ["v1"]);
    assert.equal(hook.timeoutSeconds, 10);
    assert.deepEqual(hook.rules[0].resources, ["things"]);
    const validating = parse(files.get("webhook/validating_webhook_configuration.yaml")!);
    assert.deepEqual(validating.webhooks[0].rules[0].operations, ["CREATE", "UPDATE", "DELETE"]);
    const crd = parse(files.get("crd/manifests.example.com_things.yaml")!);
    assert.deepEqual(crd.spec.conversion.webhook.clientConfig, {
      service: { name: "thing-webhook-service", namespace: "thing-system", path: "/convert" },
    });
    assert.equal(
      crd.metadata.annotations["cert-manager.io/inject-ca-from"],
      "thing-system/thing-serving-cert",
    );
    const certificate = parse(files.get("certmanager/certificate.yaml")!);
    assert.equal(certificate.spec.secretName, "thing-webhook-server-cert");
    assert.deepEqual(certificate.spec.dnsNames, [
      "thing-webhook-service.thing-system.svc",
      "thing-webhook-service.thing-system.svc.cluster.local",
    ]);
    const deployment = parse(files.get("manager/deployment.yaml")!);
    const pod = deployment.spec.template.spec;
    assert.deepEqual(pod.volumes, [{
      name: "webhook-certs",
      secret: { secretName: "thing-webhook-server-cert", defaultMode: 0o440 },
    }]);
    assert.deepEqual(pod.containers[0].volumeMounts, [{
      name: "webhook-certs",
      mountPath: "/tmp/k8s-webhook-server/serving-certs",
      readOnly: true,
    }]);
    assert.ok(pod.containers[0].ports.some((p: { name: string }) => p.name === "webhook"));
    const kustomization = parse(files.get("kustomization.yaml")!);
    for (const path of ["webhook/service.yaml", "certmanager/issuer.yaml"]) {
      assert.ok(kustomization.resources.includes(path), path);
    }
  });

  it(
    "by default, writes RBAC and environment for the operator's own certificates",
    T,
    async () => {
      const files = generateManifests(settings, await discovery());
      assert.equal(files.has("certmanager/certificate.yaml"), false);
      const mutating = parse(files.get("webhook/mutating_webhook_configuration.yaml")!);
      assert.equal(mutating.metadata.annotations, undefined);
      const role = parse(files.get("rbac/webhook_certificate_role.yaml")!);
      assert.equal(role.kind, "Role");
      assert.deepEqual(role.rules[1].resourceNames, ["thing-webhook-server-cert"]);
      const clusterRole = parse(files.get("rbac/role.yaml")!);
      const names = clusterRole.rules.flatMap((r: { resourceNames?: string[] }) =>
        r.resourceNames ?? []
      );
      assert.deepEqual(names.sort(), [
        "thing-mutating-webhook-configuration",
        "thing-validating-webhook-configuration",
        "things.manifests.example.com",
      ]);
      const pod = parse(files.get("manager/deployment.yaml")!).spec.template.spec;
      assert.ok(pod.volumes[0].emptyDir);
      const env = Object.fromEntries(
        pod.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]),
      );
      assert.equal(env.ENABLE_WEBHOOKS, "true");
      assert.equal(env.WEBHOOK_CERT_SECRET, "thing-webhook-server-cert");
      assert.equal(env.WEBHOOK_SERVICE, "thing-webhook-service");
      assert.equal(env.WEBHOOK_VALIDATING_CONFIGURATIONS, "thing-validating-webhook-configuration");
      assert.equal(env.WEBHOOK_CONVERSION_CRDS, "things.manifests.example.com");
    },
  );
});

describe("rudder init --webhooks", () => {
  const base = { name: "memcached-operator", group: "cache.example.com", version: "v1alpha1" };
  const options = { ...base, kind: "Memcached", local: "/src/rudder", webhooks: true };

  it("adds a defaulting and validating webhook and registers it in setup(mgr)", T, () => {
    const files = scaffold(options, DEPENDENCY_VERSIONS);
    const webhook = files.get("webhooks/memcached_webhook.ts")!;
    assert.match(webhook, /newWebhookManagedBy\(mgr, Memcached\)/);
    assert.match(webhook, /memcached\.spec\.replicas \?\?= 1/);
    assert.match(webhook, /MAX_REPLICAS = 10/);
    assert.match(
      files.get("webhooks/memcached_webhook_test.ts")!,
      /import \{ defaultMemcached, MAX_REPLICAS, validateMemcached \} from "\.\/memcached_webhook\.ts";/,
    );
    const main = files.get("main.ts")!;
    assert.match(main, /if \(options\.webhooks \?\? true\) setupMemcachedWebhook\(mgr\)/);
    assert.match(main, /env\.ENABLE_WEBHOOKS === "true"/);
    assert.equal(
      JSON.parse(files.get("deno.json")!).imports["@rudder/operator/webhook"],
      "/src/rudder/lib/webhook/mod.ts",
    );
    assert.match(files.get("api/memcached.ts")!, /replicas: z\.number\(\)\.int\(\)\.min\(0\)/);
    const permissions = JSON.parse(files.get("rudder.json")!).permissions;
    assert.ok(permissions.env.includes("ENABLE_WEBHOOKS"));
  });

  it("leaves webhooks out without the flag", T, () => {
    const files = scaffold({ ...options, webhooks: false }, DEPENDENCY_VERSIONS);
    assert.equal(files.has("webhooks/memcached_webhook.ts"), false);
    assert.doesNotMatch(files.get("main.ts")!, /Webhook/);
  });
});
