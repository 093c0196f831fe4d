// The Grafana dashboard `rudder manifests` writes: every expression of every variant (webhooks or
// not, sharded or not) parses with Prometheus's own parser (tools/promql) and selects only
// metrics the library registers (or, for the shard ring, the sharding contract's); webhook and
// sharding panels appear only when asked for; the ConfigMap carries the sidecar's label and the
// kustomization lists it; the guide explains every panel.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import {
  dashboardExpressions,
  type DashboardOptions,
  operatorDashboard,
} from "../../cli/dashboards.ts";
import type { Discovery } from "../../cli/discover.ts";
import { generateManifests, type ManifestSettings } from "../../cli/manifests.ts";
import type { RequestInfo } from "../../lib/kube/rest.ts";
import { controllerMetrics } from "../../lib/metrics/controller.ts";
import { informerMetrics } from "../../lib/metrics/informer.ts";
import { leaderElectionMetrics } from "../../lib/metrics/leader_election.ts";
import { registerProcessMetrics } from "../../lib/metrics/process.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import { restClientMetrics } from "../../lib/metrics/rest_client.ts";
import { webhookMetrics } from "../../lib/metrics/webhook.ts";
import { checkPromql } from "../support/promql.ts";

/** The shard ring's metrics (the sharding contract), with a histogram's three series. */
const SHARDING_METRICS = [
  "rudder_shard_objects",
  "rudder_shard_ring_members",
  "rudder_shard_moves_total",
  "rudder_shard_drains_total",
  "rudder_shard_fallback_assignments_total",
  "rudder_shard_drain_duration_seconds_bucket",
  "rudder_shard_drain_duration_seconds_sum",
  "rudder_shard_drain_duration_seconds_count",
  "rudder_shard_member",
];

const VARIANTS: DashboardOptions[] = [false, true].flatMap((webhooks) =>
  [false, true].map((sharded) => ({ name: "widget-operator", namespace: "w", webhooks, sharded }))
);

type Panel = {
  id: number;
  type: string;
  title: string;
  description?: string;
  datasource?: { type: string; uid: string };
  targets?: { expr: string; datasource: { uid: string } }[];
  fieldConfig?: {
    defaults: { thresholds: { steps: { color: string; value: number | null }[] } };
  };
};

function panelsOf(dashboard: Record<string, unknown>): Panel[] {
  return dashboard.panels as Panel[];
}

/** The series names the library's metric families expose: a histogram's three, a scalar's one. */
async function libraryMetricNames(): Promise<Set<string>> {
  const registry = new Registry();
  // A family shows in a scrape once it has a series: give each one.
  const controller = controllerMetrics(registry);
  controller.workQueue("web");
  controller.reconcileTime("web", 0.1);
  controller.maxConcurrentReconciles("web", 1);
  const request: RequestInfo = {
    method: "GET",
    host: "h",
    path: "/",
    statusCode: 200,
    durationMs: 1,
    attempt: 0,
  };
  restClientMetrics(registry)(request);
  webhookMetrics(registry).requestStarted("/validate")(200);
  leaderElectionMetrics(registry).leaderStatus("lease", true);
  registerProcessMetrics(registry);
  informerMetrics(
    () => [{ description: "ConfigMap", state: "Watching", synced: true, lists: 1, watches: 1 }],
    registry,
  );
  const names = new Set<string>();
  for (const [, name, type] of (await registry.metrics()).matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === "histogram") {
      for (const suffix of ["_bucket", "_sum", "_count"]) names.add(name + suffix);
    } else names.add(name);
  }
  return names;
}

/** The metric names each variant's expressions select, parsed by Prometheus's parser. */
function parsedNames(options: DashboardOptions): Set<string> {
  const checks = checkPromql(dashboardExpressions(operatorDashboard(options)));
  return new Set(checks.flatMap((check) => check.metrics));
}

describe("the PromQL checker", () => {
  it("reports parse errors and the metric names an expression selects", () => {
    const [broken, good] = checkPromql([
      "sum(rate(controller_runtime_reconcile_total[5m])",
      'a_total{job="x"} / on (instance) group_left b + count(c_seconds_bucket{le="1"})',
    ]);
    assert.match(broken.error ?? "", /parse error/);
    assert.equal(good.error, undefined);
    assert.deepEqual(good.metrics, ["a_total", "b", "c_seconds_bucket"]);
  });
});

describe("the operator's Grafana dashboard", () => {
  for (const options of VARIANTS) {
    const variant = `webhooks ${options.webhooks ? "on" : "off"}, sharding ${
      options.sharded ? "on" : "off"
    }`;
    it(`parses with Prometheus's parser and selects only served metrics (${variant})`, async () => {
      const dashboard = operatorDashboard(options);
      const checks = checkPromql(dashboardExpressions(dashboard));
      const failures = checks.filter((check) => check.error !== undefined);
      assert.deepEqual(failures, [], "every expression parses");
      for (const check of checks) {
        assert.ok(check.metrics.length > 0, `${check.expr} selects a metric`);
      }
      const known = await libraryMetricNames();
      const used = new Set(checks.flatMap((check) => check.metrics));
      const unknown = [...used].filter((name) =>
        !known.has(name) && !(options.sharded && SHARDING_METRICS.includes(name))
      );
      assert.deepEqual(unknown, [], "metrics the operator does not serve");
    });
  }

  it("has webhook panels only with webhooks and sharding panels only when sharded", () => {
    const webhook = (names: Set<string>) =>
      [...names].filter((name) => name.startsWith("controller_runtime_webhook_"));
    const shard = (names: Set<string>) =>
      [...names].filter((name) => name.startsWith("rudder_shard_"));
    const plain = parsedNames(VARIANTS[0]);
    assert.deepEqual(webhook(plain), []);
    assert.deepEqual(shard(plain), []);
    const both = parsedNames(VARIANTS[3]);
    assert.deepEqual(webhook(both).sort(), [
      "controller_runtime_webhook_latency_seconds_bucket",
      "controller_runtime_webhook_latency_seconds_count",
      "controller_runtime_webhook_latency_seconds_sum",
      "controller_runtime_webhook_requests_in_flight",
      "controller_runtime_webhook_requests_total",
    ]);
    assert.deepEqual(shard(both).sort(), [...SHARDING_METRICS].sort());
  });

  it("filters every query by $namespace and $job and reads from the $datasource Prometheus", () => {
    const dashboard = operatorDashboard(VARIANTS[3]);
    const variables = (dashboard.templating as { list: { name: string; type: string }[] }).list;
    assert.deepEqual(variables.map((v) => [v.name, v.type]), [
      ["datasource", "datasource"],
      ["namespace", "query"],
      ["job", "query"],
    ]);
    const panels = panelsOf(dashboard);
    assert.equal(new Set(panels.map((p) => p.id)).size, panels.length, "panel ids are unique");
    for (const panel of panels.filter((p) => p.type !== "row")) {
      assert.equal(panel.datasource?.uid, "${datasource}", panel.title);
      assert.ok(panel.description, `${panel.title} says what it shows`);
      for (const target of panel.targets ?? []) {
        assert.equal(target.datasource.uid, "${datasource}", panel.title);
        // Every selector of the expression, not just one, carries both matchers.
        const selectors = target.expr.match(/\w+\{[^}]*\}/g) ?? [];
        assert.ok(selectors.length > 0, target.expr);
        for (const selector of selectors) {
          assert.ok(selector.includes('namespace="$namespace", job="$job"'), selector);
        }
      }
    }
  });

  it("turns a panel red exactly when its description says when", () => {
    for (const panel of panelsOf(operatorDashboard(VARIANTS[3]))) {
      if (panel.type === "row") continue;
      const steps = panel.fieldConfig!.defaults.thresholds.steps;
      const red = steps.some((step) => step.color === "red");
      assert.equal(red, !/No red/.test(panel.description!), `${panel.title}: ${panel.description}`);
      assert.equal(/\bRed\b/.test(panel.description!), red, panel.title);
      const values = steps.slice(1).map((step) => step.value!);
      assert.deepEqual(values, [...values].sort((a, b) => a - b), `${panel.title}: ascending`);
    }
    const leaders = panelsOf(operatorDashboard(VARIANTS[0])).find((p) => p.title === "Leaders")!;
    assert.deepEqual(leaders.fieldConfig!.defaults.thresholds.steps, [
      { color: "red", value: null },
      { color: "green", value: 1 },
      { color: "red", value: 2 },
    ]);
  });

  it("has the panels the guide explains, each under a heading of its title", () => {
    const guide = readFileSync(
      fileURLToPath(new URL("../../docs/guides/tracing-and-dashboards.md", import.meta.url)),
      "utf8",
    );
    const start = guide.search(/^## Grafana dashboards$/m);
    assert.ok(start >= 0, "the guide has a Grafana dashboards section");
    const dashboards = guide.slice(start);
    const headings = new Set([...dashboards.matchAll(/^#### (.+)$/gm)].map((m) => m[1].trim()));
    const titles = panelsOf(operatorDashboard(VARIANTS[3]))
      .filter((p) => p.type !== "row")
      .map((p) => p.title);
    assert.deepEqual(titles.filter((title) => !headings.has(title)), [], "panels not explained");
    assert.deepEqual([...headings].filter((h) => !titles.includes(h)), [], "no such panel");
  });
});

describe("rudder manifests' dashboard", () => {
  const settings: ManifestSettings = {
    name: "widget-operator",
    namespace: "widget-system",
    image: "registry.example.com/widget-operator:1.2.3",
    metricsBindAddress: ":8443",
    healthProbeBindAddress: ":8081",
    rbac: [],
  };
  const discovery: Discovery = { crds: [], controllers: [], webhooks: false };

  it("is a ConfigMap with the Grafana sidecar's label in the kustomization, and the same JSON beside it", () => {
    const files = generateManifests(settings, discovery);
    const configMap = parse(files.get("grafana/dashboards_configmap.yaml")!);
    assert.equal(configMap.kind, "ConfigMap");
    assert.equal(configMap.metadata.name, "widget-operator-grafana-dashboards");
    assert.equal(configMap.metadata.namespace, "widget-system");
    assert.equal(configMap.metadata.labels.grafana_dashboard, "1");
    assert.equal(configMap.metadata.labels["app.kubernetes.io/managed-by"], "rudder");
    const json = files.get("grafana/widget-operator.json")!;
    assert.deepEqual(configMap.data, { "widget-operator.json": json });
    assert.deepEqual(JSON.parse(json), operatorDashboard({ ...settings, webhooks: false }));
    const kustomization = parse(files.get("kustomization.yaml")!);
    assert.ok(kustomization.resources.includes("grafana/dashboards_configmap.yaml"));
    assert.ok(!kustomization.resources.includes("grafana/widget-operator.json"));
    // kubectl apply keeps the object in an annotation limited to 256 KiB.
    assert.ok(json.length < 200_000, `${json.length} bytes`);
  });

  it("has webhook panels when the operator serves webhooks, sharding panels when it is sharded", () => {
    const titles = (files: Map<string, string>) =>
      panelsOf(JSON.parse(files.get("grafana/widget-operator.json")!)).map((p) => p.title);
    const plain = titles(generateManifests(settings, discovery));
    assert.ok(!plain.includes("Webhook latency") && !plain.includes("Shard membership"));
    const hooked = titles(generateManifests(settings, { ...discovery, webhooks: true }));
    assert.ok(hooked.includes("Webhook latency") && !hooked.includes("Shard membership"));
    const sharded = titles(generateManifests(
      { ...settings, sharding: { ring: "widgets", replicas: 2 } },
      {
        ...discovery,
        controllers: [{
          name: "widget",
          sharded: true,
          watched: [{
            group: "example.com",
            version: "v1",
            kind: "Widget",
            plural: "widgets",
            scope: "Namespaced",
            role: "for",
          }],
        }],
      },
    ));
    assert.ok(sharded.includes("Shard membership"));
  });

  it("is left out when the metrics server is off", () => {
    const files = generateManifests({ ...settings, metricsBindAddress: "0" }, discovery);
    assert.deepEqual([...files.keys()].filter((path) => path.startsWith("grafana/")), []);
  });
});
