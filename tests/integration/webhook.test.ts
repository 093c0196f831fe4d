// Webhooks called by the real API server: a Manager serves a defaulter, a validator, a raw
// ConfigMap policy and a v1 ⇄ v2 conversion on the port envtest picked, with the certificate
// envtest made; the configurations and the CRD's conversion point at it.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import tls from "node:tls";
import { z } from "zod";
import { ConfigMap } from "../../lib/api/builtins.ts";
import { defineResource } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { Manager } from "../../lib/manager/manager.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import {
  AdmissionDeniedError,
  admissionHandler,
  allowed,
  denied,
} from "../../lib/webhook/admission.ts";
import { newWebhookManagedBy } from "../../lib/webhook/builder.ts";
import { webhookConfigurations } from "../../lib/webhook/configurations.ts";
import { eventually } from "../support/eventually.ts";
import { captureLogs } from "../support/logs.ts";

const HOOK = { timeout: 180_000 };
const T = { timeout: 120_000 };
const NS = "webhooks";

const WidgetV2 = defineResource({
  group: "webhook.example.com",
  version: "v2",
  kind: "Widget",
  scope: "Namespaced",
  spec: z.object({
    scale: z.object({ count: z.int().optional() }).optional(),
    tier: z.string().optional(),
    note: z.string().optional(),
  }),
});

const Widget = defineResource({
  group: "webhook.example.com",
  version: "v1",
  kind: "Widget",
  scope: "Namespaced",
  spec: z.object({
    replicas: z.int().optional(),
    class: z.string().optional(),
    note: z.string().optional(),
  }).refine((spec) => spec.note !== "forbidden", {
    message: "a note must not say forbidden",
    path: ["note"],
  }),
  versions: [WidgetV2],
});

type WidgetObject = ReturnType<typeof Widget.parse>;

const MAX_REPLICAS = 10;

function checkReplicas(widget: WidgetObject): string[] {
  const replicas = widget.spec.replicas ?? 0;
  if (replicas > MAX_REPLICAS) {
    throw new AdmissionDeniedError(
      `spec.replicas must be at most ${MAX_REPLICAS}, not ${replicas}`,
      {
        code: 422,
        reason: "Invalid",
      },
    );
  }
  if (widget.spec.note === "explode") throw new TypeError("the validator has a bug");
  return replicas > 5 ? [`${replicas} replicas is a lot`] : [];
}

const env = new Environment({ webhookInstallOptions: {} });
let config: KubeConfig;
let client: Client;
let mgr: Manager;
const registry = new Registry();
const stop = new AbortController();
let running: Promise<void>;

function widget(name: string, spec: WidgetObject["spec"], labels?: Record<string, string>) {
  return {
    apiVersion: "webhook.example.com/v1" as const,
    kind: "Widget" as const,
    metadata: { name, namespace: NS, ...(labels ? { labels } : {}) },
    spec,
  };
}

async function denial(write: Promise<unknown>): Promise<ApiError> {
  try {
    await write;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  assert.fail("the write was admitted");
}

before(async () => {
  config = await env.start();
  client = newClient(config);
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
  const serving = env.webhookInstallOptions;
  mgr = new Manager({
    config,
    metricsBindAddress: "0",
    healthProbeBindAddress: "127.0.0.1:0",
    metricsRegistry: registry,
    webhookServer: {
      host: serving.localServingHost,
      port: serving.localServingPort,
      certDir: serving.localServingCertDir,
      certPollInterval: 100,
      metricsRegistry: registry,
    },
  });
  newWebhookManagedBy(mgr, Widget)
    .withSchemaValidation()
    .withDefaulter((w) => {
      w.spec.replicas ??= 1;
      w.spec.class ??= "standard";
    })
    .withValidator({
      validateCreate: (w) => checkReplicas(w),
      validateUpdate: (old, w) => {
        if (old.spec.class !== w.spec.class) {
          throw new AdmissionDeniedError("spec.class cannot change");
        }
        return checkReplicas(w);
      },
      validateDelete: (w) => {
        if (w.metadata?.labels?.protected === "true") {
          throw new AdmissionDeniedError(`widget ${w.metadata.name} is protected`);
        }
      },
    })
    .withConversion(WidgetV2, {
      convertTo: (v2) => ({
        metadata: v2.metadata,
        spec: {
          ...(v2.spec.scale?.count !== undefined ? { replicas: v2.spec.scale.count } : {}),
          ...(v2.spec.tier !== undefined ? { class: v2.spec.tier } : {}),
          ...(v2.spec.note !== undefined ? { note: v2.spec.note } : {}),
        },
      }),
      convertFrom: (v1) => ({
        metadata: v1.metadata,
        spec: {
          ...(v1.spec.replicas !== undefined ? { scale: { count: v1.spec.replicas } } : {}),
          ...(v1.spec.class !== undefined ? { tier: v1.spec.class } : {}),
          ...(v1.spec.note !== undefined ? { note: v1.spec.note } : {}),
        },
      }),
    })
    .complete();
  const server = mgr.getWebhookServer();
  server.register(
    "/validate-configmaps",
    admissionHandler<ConfigMap>((request) =>
      request.object?.data?.forbidden !== undefined
        ? denied("ConfigMaps must not have a forbidden key")
        : allowed()
    ),
    { type: "validating", resource: ConfigMap, operations: ["CREATE", "UPDATE"] },
  );
  running = mgr.start(stop.signal);
  await server.started();
  await env.installCRDs([Widget]);
  const { mutating, validating } = webhookConfigurations(server.webhooks(), {
    name: "webhook-test",
    clientConfig: (path) => ({ service: { namespace: "system", name: "webhook-service", path } }),
  });
  // The ConfigMap policy only for ConfigMaps of this namespace, to leave the rest alone.
  for (const hook of validating!.webhooks!) {
    if (hook.rules?.[0].resources?.[0] === "configmaps") {
      hook.namespaceSelector = { matchLabels: { "kubernetes.io/metadata.name": NS } };
    }
  }
  await env.installWebhooks({ mutatingWebhooks: [mutating!], validatingWebhooks: [validating!] });
  // The API server picks configurations up asynchronously: wait until a dry run is refused.
  await eventually(
    "the validating webhook is called",
    async () => {
      try {
        await client.create(widget("probe", { replicas: 99 }), { dryRun: true });
        return false;
      } catch (err) {
        return err instanceof ApiError && err.code === 422;
      }
    },
    60_000,
    200,
  );
  await eventually(
    "the mutating webhook is called",
    async () => {
      const created = await client.create(widget("probe", {}), { dryRun: true });
      return created.spec.replicas === 1;
    },
    60_000,
    200,
  );
}, HOOK);

after(async () => {
  stop.abort();
  await running;
  await env.stop();
}, HOOK);

describe("admission webhooks called by the API server", () => {
  it("denies a create the validator refuses, with its message and code", T, async () => {
    const err = await denial(client.create(widget("too-big", { replicas: 50 })));
    assert.equal(err.code, 422);
    assert.match(err.message, /spec\.replicas must be at most 10, not 50/);
    await assert.rejects(client.get(Widget, { namespace: NS, name: "too-big" }), /not found/i);
  });

  it("stores the defaulted fields", T, async () => {
    await client.create(widget("defaulted", { note: "hi" }));
    const stored = await client.get(Widget, { namespace: NS, name: "defaulted" });
    assert.deepEqual(stored.spec, { replicas: 1, class: "standard", note: "hi" });
  });

  it("sends updates through the validator", T, async () => {
    const created = await client.create(widget("updated", { replicas: 2 }));
    const tooMany = await denial(
      client.update({ ...created, spec: { ...created.spec, replicas: 11 } }),
    );
    assert.match(tooMany.message, /at most 10/);
    const reclassed = await denial(
      client.update({ ...created, spec: { ...created.spec, class: "gold" } }),
    );
    assert.equal(reclassed.code, 403);
    assert.match(reclassed.message, /spec\.class cannot change/);
    const updated = await client.update({ ...created, spec: { ...created.spec, replicas: 3 } });
    assert.equal(updated.spec.replicas, 3);
  });

  it("sends deletes through the validator", T, async () => {
    const created = await client.create(widget("guarded", {}, { protected: "true" }));
    const err = await denial(client.delete(created));
    assert.match(err.message, /widget guarded is protected/);
    const current = await client.get(Widget, { namespace: NS, name: "guarded" });
    const unprotected = await client.update({
      ...current,
      metadata: { ...current.metadata, labels: {} },
    });
    await client.delete(unprotected);
    await eventually("the widget is gone", async () => {
      try {
        await client.get(Widget, { namespace: NS, name: "guarded" });
        return false;
      } catch (err) {
        return err instanceof ApiError && err.code === 404;
      }
    });
  });

  it("passes the validator's warnings to the client", T, async () => {
    const logs = await captureLogs();
    try {
      await client.create(widget("warned", { replicas: 7 }));
    } finally {
      await logs.stop();
    }
    const warnings = logs.records.map((r) => r.properties.warning).filter(Boolean);
    assert.ok(warnings.includes("7 replicas is a lot"), JSON.stringify(warnings));
  });

  it(
    "denies, with a 500, when the validator throws unexpectedly, and keeps serving",
    T,
    async () => {
      const err = await denial(client.create(widget("buggy", { note: "explode" })));
      assert.equal(err.code, 500);
      assert.match(err.message, /the validator has a bug/);
      await client.create(widget("after-bug", {}));
    },
  );

  it("enforces the zod refinements a CRD cannot, naming the field", T, async () => {
    const err = await denial(client.create(widget("refined", { note: "forbidden" })));
    assert.equal(err.code, 422);
    assert.match(err.message, /spec\.note: a note must not say forbidden/);
  });

  it("serves a raw handler for a built-in kind", T, async () => {
    const err = await denial(client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "bad", namespace: NS },
      data: { forbidden: "x" },
    }));
    assert.equal(err.code, 403);
    assert.match(err.message, /must not have a forbidden key/);
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "good", namespace: NS },
    });
  });

  it("reports the webhook server in /readyz and counts requests in metrics", T, async () => {
    const ready = await fetch(`${mgr.healthProbeURL}/readyz?verbose`);
    const text = await ready.text();
    assert.equal(ready.status, 200, text);
    assert.match(text, /webhook ok/);
    const metrics = await registry.metrics();
    assert.match(
      metrics,
      /controller_runtime_webhook_requests_total\{code="200",webhook="\/validate-webhook-example-com-v1-widget"\} [1-9]/,
    );
    assert.match(
      metrics,
      /controller_runtime_webhook_requests_total\{code="200",webhook="\/convert"\} [1-9]/,
    );
  });
});

describe("conversion webhook called by the API server", () => {
  it("reads an object written as v1 as v2 and back, losslessly", T, async () => {
    const created = await client.create(
      widget("v1-written", { replicas: 4, class: "gold", note: "n" }),
    );
    const asV2 = await client.get(WidgetV2, { namespace: NS, name: "v1-written" });
    assert.equal(asV2.apiVersion, "webhook.example.com/v2");
    assert.deepEqual(asV2.spec, { scale: { count: 4 }, tier: "gold", note: "n" });
    assert.equal(asV2.metadata?.uid, created.metadata?.uid);
    const asV1 = await client.get(Widget, { namespace: NS, name: "v1-written" });
    assert.deepEqual(asV1.spec, created.spec);
  });

  it("stores an object written as v2, defaulted and validated as v1", T, async () => {
    await client.create({
      apiVersion: "webhook.example.com/v2",
      kind: "Widget",
      metadata: { name: "v2-written", namespace: NS },
      spec: { tier: "silver" },
    });
    const asV1 = await client.get(Widget, { namespace: NS, name: "v2-written" });
    assert.deepEqual(asV1.spec, { replicas: 1, class: "silver" });
    const asV2 = await client.get(WidgetV2, { namespace: NS, name: "v2-written" });
    assert.deepEqual(asV2.spec, { scale: { count: 1 }, tier: "silver" });
    const err = await denial(client.create({
      apiVersion: "webhook.example.com/v2",
      kind: "Widget",
      metadata: { name: "v2-too-big", namespace: NS },
      spec: { scale: { count: 30 } },
    }));
    assert.match(err.message, /at most 10, not 30/);
  });

  it("round-trips v1 → v2 → v1 through an update in v2", T, async () => {
    const original = await client.create(widget("round-trip", { replicas: 2, class: "bronze" }));
    const asV2 = await client.get(WidgetV2, { namespace: NS, name: "round-trip" });
    const written = await client.update({ ...asV2, spec: { ...asV2.spec, note: "via v2" } });
    assert.equal(written.apiVersion, "webhook.example.com/v2");
    const back = await client.get(Widget, { namespace: NS, name: "round-trip" });
    assert.deepEqual(back.spec, { ...original.spec, note: "via v2" });
  });
});

/** The serial number of the certificate a new TLS connection to the webhook server sees. */
async function servedSerial(): Promise<string> {
  const serving = env.webhookInstallOptions;
  const socket = tls.connect({
    host: serving.localServingHost,
    port: serving.localServingPort,
    ca: serving.localServingCAData,
    servername: "localhost",
  });
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

describe("certificate rotation under load", () => {
  it("fails no request while the serving certificate is replaced on disk", T, async () => {
    const before = await servedSerial();
    let flowing = true;
    const failures: string[] = [];
    let admitted = 0;
    const load = Array.from({ length: 2 }, async (_, worker) => {
      for (let i = 0; flowing; i++) {
        try {
          const created = await client.create(widget(`load-${worker}-${i}`, {}), { dryRun: true });
          if (created.spec.replicas !== 1) {
            failures.push(`not defaulted: ${JSON.stringify(created.spec)}`);
          }
          await client.get(WidgetV2, { namespace: NS, name: "v1-written" });
          admitted++;
        } catch (err) {
          failures.push(String(err));
        }
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    await env.renewWebhookCertificate();
    await eventually(
      "new connections see the new certificate",
      async () => {
        return (await servedSerial()) !== before;
      },
      30_000,
      100,
    );
    await new Promise((resolve) => setTimeout(resolve, 1000));
    flowing = false;
    await Promise.all(load);
    assert.deepEqual(failures, []);
    assert.ok(admitted > 3, `only ${admitted} rounds went through`);
  });
});
