// The generated Grafana dashboard against a live operator: a Manager with leader election, a
// controller and a validating webhook that the real API server calls serves its metrics over
// HTTPS (scraped with a ServiceAccount token as a Prometheus would); after it has reconciled and
// admitted, every metric name the dashboard's expressions select, as Prometheus's parser reads
// them, is in the scrape (histograms with their _bucket, _sum and _count series). The shard
// ring's names are checked against the sharding contract in tests/unit/dashboards.test.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  ClusterRole,
  ClusterRoleBinding,
  ConfigMap,
  Namespace,
  ServiceAccount,
} from "../../lib/api/builtins.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { newControllerManagedBy } from "../../lib/controller/builder.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { ApiError } from "../../lib/kube/errors.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Manager } from "../../lib/manager/manager.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { admissionHandler, allowed, denied } from "../../lib/webhook/admission.ts";
import { webhookConfigurations } from "../../lib/webhook/configurations.ts";
import { dashboardExpressions, operatorDashboard } from "../../cli/dashboards.ts";
import { METRICS_READER_RULES } from "../../cli/manifests.ts";
import { eventually } from "../support/eventually.ts";
import { checkPromql } from "../support/promql.ts";
import { fetchTrusting, presentedCertificates } from "../support/tls.ts";

const env = new Environment({ webhookInstallOptions: {} });
const NS = "dashboards-it";
/** Milliseconds for starting (or stopping) the control plane on a loaded machine. */
const HOOK = { timeout: 300_000 };
const T = { timeout: 180_000 };
let config: KubeConfig;
let client: Client;
let token = "";

before(async () => {
  config = await env.start();
  client = newClient(config);
  await client.create<Namespace>({ apiVersion: "v1", kind: "Namespace", metadata: { name: NS } });
  await client.create<ServiceAccount>({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { namespace: NS, name: "prometheus" },
  });
  await client.create<ClusterRole>({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: "dashboards-metrics-reader" },
    rules: [...METRICS_READER_RULES],
  });
  await client.create<ClusterRoleBinding>({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: "dashboards-metrics-reader" },
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: "dashboards-metrics-reader",
    },
    subjects: [{ kind: "ServiceAccount", name: "prometheus", namespace: NS }],
  });
  const admin = new RestClient(config);
  try {
    const request = await admin.request<{ status: { token: string } }>({
      method: "POST",
      path: `/api/v1/namespaces/${NS}/serviceaccounts/prometheus/token`,
      body: {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { expirationSeconds: 3600 },
      },
    });
    token = request.status.token;
  } finally {
    admin.close();
  }
}, HOOK);

after(async () => {
  await env.stop();
}, HOOK);

/** The series names of a scrape in the text format. */
function seriesNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    names.add(line.match(/^[a-zA-Z_:][a-zA-Z0-9_:]*/)![0]);
  }
  return names;
}

describe("the generated dashboard", () => {
  it(
    "uses only metrics a reconciling, admitting, leading operator serves",
    T,
    async () => {
      const dashboard = operatorDashboard({ name: "it", namespace: NS, webhooks: true });
      const checks = checkPromql(dashboardExpressions(dashboard));
      assert.deepEqual(checks.filter((c) => c.error), [], "every expression parses");
      const wanted = [...new Set(checks.flatMap((c) => c.metrics))].sort();
      assert.ok(wanted.includes("controller_runtime_webhook_latency_seconds_bucket"));
      assert.ok(wanted.includes("rudder_informer_healthy"));

      const serving = env.webhookInstallOptions;
      const registry = new Registry();
      const mgr = new Manager({
        config,
        metricsBindAddress: "127.0.0.1:0",
        healthProbeBindAddress: "0",
        metricsRegistry: registry,
        leaderElection: true,
        leaderElectionID: "dashboards-it",
        leaderElectionNamespace: NS,
        webhookServer: {
          host: serving.localServingHost,
          port: serving.localServingPort,
          certDir: serving.localServingCertDir,
          metricsRegistry: registry,
        },
      });
      const reconciled = new Set<string>();
      let failedOnce = false;
      newControllerManagedBy(mgr).for(ConfigMap).named("configmaps")
        .withEventFilter({ create: (e) => e.object.metadata?.namespace === NS })
        .complete((request) => {
          // One error, so the error series move too.
          if (request.name === "dashboard-probe" && !failedOnce) {
            failedOnce = true;
            throw new Error("the first reconcile of the probe fails on purpose");
          }
          reconciled.add(request.name);
          return {};
        });
      const webhooks = mgr.getWebhookServer();
      webhooks.register(
        "/validate-configmaps",
        admissionHandler<ConfigMap>((request) =>
          request.object?.data?.forbidden !== undefined ? denied("no forbidden key") : allowed()
        ),
        { type: "validating", resource: ConfigMap, operations: ["CREATE", "UPDATE"] },
      );
      const stop = new AbortController();
      const running = mgr.start(stop.signal);
      try {
        await webhooks.started();
        const { validating } = webhookConfigurations(webhooks.webhooks(), {
          name: "dashboards-it",
          clientConfig: (path) => ({ service: { namespace: "system", name: "webhook", path } }),
        });
        for (const hook of validating!.webhooks!) {
          hook.namespaceSelector = { matchLabels: { "kubernetes.io/metadata.name": NS } };
        }
        await env.installWebhooks({ validatingWebhooks: [validating!] });
        await mgr.elected();
        // The API server picks the configuration up asynchronously: until then writes pass
        // without calling it, so write until a forbidden key is refused.
        await eventually(
          "the webhook is called",
          async () => {
            try {
              await client.create<ConfigMap>({
                apiVersion: "v1",
                kind: "ConfigMap",
                metadata: { namespace: NS, generateName: "forbidden-" },
                data: { forbidden: "yes" },
              }, { dryRun: true });
              return false;
            } catch (err) {
              return err instanceof ApiError && err.message.includes("no forbidden key");
            }
          },
          60_000,
          200,
        );
        await client.create<ConfigMap>({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { namespace: NS, name: "dashboard-probe" },
          data: { a: "1" },
        });
        await eventually(
          "the probe is reconciled after its error",
          () => reconciled.has("dashboard-probe"),
          60_000,
          50,
        );

        const url = `${mgr.metricsURL}/metrics`;
        const chain = await presentedCertificates(url);
        const ca = chain[chain.length - 1];
        let missing: string[] = wanted;
        let status = 0;
        // RBAC reaches the authorizer through informers, and informer metrics need a scrape
        // after the cache synced: scrape until everything is there.
        await eventually(
          "every dashboard metric is served",
          async () => {
            const scrape = await fetchTrusting(ca, url, {
              headers: { Authorization: `Bearer ${token}` },
            });
            status = scrape.status;
            if (status !== 200) return false;
            const served = seriesNames(scrape.text);
            missing = wanted.filter((name) => !served.has(name));
            return missing.length === 0;
          },
          60_000,
          250,
        ).catch(() => {});
        assert.equal(status, 200, "the scrape is authorised");
        assert.deepEqual(missing, [], "dashboard metrics the operator does not serve");
      } finally {
        stop.abort();
        await running;
      }
    },
  );
});
