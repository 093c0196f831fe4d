// Webhook certificates without cert-manager, against the real API server: the Manager's
// CertificateRotator creates the CA and serving certificate in a Secret, the webhook server
// serves it, the CA is injected into the webhook configuration and the CRD's conversion, and a
// renewal by another replica reaches this one's server while requests flow.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { parse } from "yaml";
import { z } from "zod";
import {
  ConfigMap,
  CustomResourceDefinition,
  Secret,
  ValidatingWebhookConfiguration,
} from "../../lib/api/builtins.ts";
import { defineResource } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { Manager } from "../../lib/manager/manager.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { admissionHandler, allowed, denied } from "../../lib/webhook/admission.ts";
import { newWebhookManagedBy } from "../../lib/webhook/builder.ts";
import { CertificateRotator } from "../../lib/webhook/rotation.ts";
import { eventually } from "../support/eventually.ts";

const HOOK = { timeout: 180_000 };
const T = { timeout: 120_000 };
const NS = "rotation-system";
const SECRET = "gizmo-webhook-server-cert";

const GizmoV2 = defineResource({
  group: "rotation.example.com",
  version: "v2",
  kind: "Gizmo",
  scope: "Namespaced",
  spec: z.object({ count: z.int() }),
});

const Gizmo = defineResource({
  group: "rotation.example.com",
  version: "v1",
  kind: "Gizmo",
  scope: "Namespaced",
  spec: z.object({ size: z.int() }),
  versions: [GizmoV2],
});

const env = new Environment();
let client: Client;
let mgr: Manager;
let port: number;
let certDir: string;
const stop = new AbortController();
let running: Promise<void>;

async function freePort(): Promise<number> {
  return await new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as { port: number };
      server.close(() => resolve(address.port));
    });
  });
}

const rotation = {
  namespace: NS,
  secretName: SECRET,
  dnsNames: ["localhost"],
  ips: ["127.0.0.1"],
  validatingWebhookConfigurations: ["gizmo-validating"],
  crds: ["gizmos.rotation.example.com"],
  checkInterval: 200,
};

before(async () => {
  const config = await env.start();
  client = newClient(config);
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
  port = await freePort();
  certDir = mkdtempSync(join(tmpdir(), "rudder-rotation-"));
  mgr = new Manager({
    config,
    metricsBindAddress: "0",
    metricsRegistry: new Registry(),
    webhookServer: { host: "127.0.0.1", port, certDir, certPollInterval: 100 },
    webhookCertificates: rotation,
  });
  newWebhookManagedBy(mgr, Gizmo).withConversion(GizmoV2, {
    convertTo: (v2) => ({ spec: { size: v2.spec.count } }),
    convertFrom: (v1) => ({ spec: { count: v1.spec.size } }),
  }).complete();
  mgr.getWebhookServer().register(
    "/validate-configmaps",
    admissionHandler<ConfigMap>((request) =>
      request.object?.data?.forbidden !== undefined ? denied("no forbidden keys") : allowed()
    ),
  );
  // As `rudder manifests --cert-mode rudder` writes them: no caBundle yet.
  const crd = Gizmo.crd();
  crd.spec.conversion!.webhook!.clientConfig = { url: `https://127.0.0.1:${port}/convert` };
  await env.installCRDs([crd]);
  await client.create({
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: "gizmo-validating" },
    webhooks: [{
      name: "vconfigmap.rotation.example.com",
      admissionReviewVersions: ["v1"],
      clientConfig: { url: `https://127.0.0.1:${port}/validate-configmaps` },
      failurePolicy: "Fail",
      sideEffects: "None",
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": NS } },
      rules: [{
        apiGroups: [""],
        apiVersions: ["v1"],
        operations: ["CREATE"],
        resources: ["configmaps"],
      }],
    }],
  });
  running = mgr.start(stop.signal);
  await mgr.getWebhookServer().started();
}, HOOK);

after(async () => {
  stop.abort();
  await running;
  await env.stop();
  rmSync(certDir, { recursive: true, force: true });
}, HOOK);

async function denyForbidden(name: string): Promise<boolean> {
  try {
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: NS },
      data: { forbidden: "x" },
    }, { dryRun: true });
    return false;
  } catch (err) {
    return err instanceof ApiError && /no forbidden keys/.test(err.message);
  }
}

async function servedSerial(ca: string): Promise<string> {
  const socket = tls.connect({ host: "127.0.0.1", port, ca, servername: "localhost" });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", () => resolve());
      socket.once("error", reject);
    });
    return socket.getPeerCertificate().serialNumber;
  } finally {
    socket.destroy();
  }
}

describe("webhook certificates kept by the operator", () => {
  it("creates the Secret and injects its CA, so the API server calls the webhook", T, async () => {
    const secret = await client.get(Secret, { namespace: NS, name: SECRET });
    assert.equal(secret.type, "kubernetes.io/tls");
    assert.deepEqual(Object.keys(secret.data ?? {}).sort(), [
      "ca.crt",
      "ca.key",
      "tls.crt",
      "tls.key",
    ]);
    const caBundle = secret.data!["ca.crt"];
    await eventually(
      "the CA is injected",
      async () => {
        const config = await client.get(ValidatingWebhookConfiguration, {
          name: "gizmo-validating",
        });
        const crd = await client.get(CustomResourceDefinition, {
          name: "gizmos.rotation.example.com",
        });
        return config.webhooks?.[0].clientConfig.caBundle === caBundle &&
          crd.spec.conversion?.webhook?.clientConfig?.caBundle === caBundle;
      },
      30_000,
      100,
    );
    await eventually("the webhook denies", () => denyForbidden("probe"), 60_000, 200);
    await client.create({
      apiVersion: "rotation.example.com/v1",
      kind: "Gizmo",
      metadata: { name: "g", namespace: NS },
      spec: { size: 3 },
    });
    const asV2 = await client.get(GizmoV2, { namespace: NS, name: "g" });
    assert.deepEqual(asV2.spec, { count: 3 });
  });

  it("serves a certificate renewed by another replica, failing no request", T, async () => {
    const ca = Buffer.from(
      (await client.get(Secret, { namespace: NS, name: SECRET })).data!["ca.crt"],
      "base64",
    ).toString();
    const before = await servedSerial(ca);
    let flowing = true;
    const failures: string[] = [];
    let rounds = 0;
    const load = (async () => {
      while (flowing) {
        try {
          if (!(await denyForbidden(`load-${rounds}`))) failures.push("not denied");
          await client.get(GizmoV2, { namespace: NS, name: "g" });
          rounds++;
        } catch (err) {
          failures.push(String(err));
        }
      }
    })();
    const leader = new CertificateRotator({
      ...rotation,
      client,
      certDir: mkdtempSync(join(tmpdir(), "rudder-other-")),
    });
    await leader.rotate();
    await eventually(
      "the new certificate is served",
      async () => (await servedSerial(ca)) !== before,
      30_000,
      100,
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    flowing = false;
    await load;
    assert.deepEqual(failures, []);
    assert.ok(rounds > 2, `only ${rounds} rounds`);
    const after = Buffer.from(
      (await client.get(Secret, { namespace: NS, name: SECRET })).data!["ca.crt"],
      "base64",
    ).toString();
    assert.equal(after, ca, "a renewal keeps the CA");
  });
});

describe("rudder manifests for an operator with webhooks", () => {
  it("apply cleanly to the API server", T, async () => {
    const { discoverSetup } = await import("../../cli/discover.ts");
    const { generateManifests } = await import("../../cli/manifests.ts");
    const { setup } = await import("../../examples/example-operator/main.ts");
    const { Example } = await import("../../examples/example-operator/api/example.ts");
    const registered = await discoverSetup((m) => setup(m, { webhooks: true }));
    const files = generateManifests({
      name: "example-operator",
      namespace: "example-operator-system",
      image: "example-operator:0.1.0",
      metricsBindAddress: ":8080",
      healthProbeBindAddress: ":8081",
      rbac: [],
    }, { crds: [Example.crd()] as never, ...registered });
    const kinds: string[] = [];
    for (const [path, text] of files) {
      // The dashboard's JSON file is for importing into Grafana by hand, not an object.
      if (path === "kustomization.yaml" || !path.endsWith(".yaml")) continue;
      const object = parse(text);
      await client.create(object);
      kinds.push(object.kind);
    }
    assert.deepEqual(kinds.sort(), [
      "ClusterRole", // the manager's
      "ClusterRole", // metrics: token and access reviews
      "ClusterRole", // metrics: the reader role for scrapers
      "ClusterRoleBinding",
      "ClusterRoleBinding",
      "ConfigMap", // the Grafana dashboard, for Grafana's sidecar
      "CustomResourceDefinition",
      "Deployment",
      "MutatingWebhookConfiguration",
      "Namespace",
      "Role", // leader election, in the operator's namespace
      "Role", // the webhook certificate's Secret
      "RoleBinding",
      "RoleBinding",
      "Service", // the metrics Service
      "Service", // the webhook Service
      "ServiceAccount",
      "ValidatingWebhookConfiguration",
    ]);
  });
});
