// Metrics: the registry's text format (parsed back by a small parser of our own), the families
// and labels of controller-runtime driven through the controller, work-queue, REST-client and
// leader-election hooks, process metrics from real and made-up procfs, and the /metrics app with
// its TokenReview/SubjectAccessReview guard over a stand-in API server.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { Controller } from "../../lib/controller/controller.ts";
import { TerminalError } from "../../lib/reconcile/reconcile.ts";
import { WorkQueue } from "../../lib/workqueue/workqueue.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import type { Transport } from "../../lib/kube/transport.ts";
import { formatNumber } from "../../lib/metrics/exposition.ts";
import { DecisionCache } from "../../lib/metrics/filters.ts";
import { controllerMetrics, RECONCILE_TIME_BUCKETS } from "../../lib/metrics/controller.ts";
import { TEXT_CONTENT_TYPE } from "../../lib/metrics/exposition.ts";
import { leaderElectionMetrics } from "../../lib/metrics/leader_election.ts";
import {
  Counter,
  exponentialBuckets,
  Gauge,
  Histogram,
  linearBuckets,
} from "../../lib/metrics/metric.ts";
import { registerProcessMetrics } from "../../lib/metrics/process.ts";
import { Registry, registry as globalRegistry } from "../../lib/metrics/registry.ts";
import { restClientMetrics } from "../../lib/metrics/rest_client.ts";
import { metricsApp } from "../../lib/metrics/server.ts";
import { Manager, type MetricsServing } from "../../lib/manager/manager.ts";
import { eventually } from "../support/eventually.ts";
import { captureLogs } from "../support/logs.ts";
import { fetchTrusting, presentedCertificates } from "../support/tls.ts";
import { parseCertificatePem } from "../../lib/util/certs.ts";

// ---------------------------------------------------------------------------------------------
// A parser of the text format 0.0.4, strict enough to reject what Prometheus would.

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Family {
  name: string;
  help: string;
  type: string;
  samples: Sample[];
}

function unescape(text: string, allowQuote: boolean): string {
  return text.replace(/\\(.)/g, (_, c: string) => {
    if (c === "\\") return "\\";
    if (c === "n") return "\n";
    if (c === '"' && allowQuote) return '"';
    throw new Error(`bad escape \\${c}`);
  });
}

function parseValue(text: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^-?\d+(\.\d+)?(e[+-]\d+)?$/.test(text)) throw new Error(`bad value ${text}`);
  return Number(text);
}

/** Parses a scrape; throws on anything out of place, naming the line. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  if (text === "") return families;
  assert.ok(text.endsWith("\n"), "the text ends with a line feed");
  let current: Family | undefined;
  const seen = new Set<string>();
  for (const line of text.slice(0, -1).split("\n")) {
    try {
      const help = line.match(/^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/);
      if (help) {
        if (families.has(help[1])) throw new Error(`family ${help[1]} appears twice`);
        current = { name: help[1], help: unescape(help[2], false), type: "", samples: [] };
        families.set(current.name, current);
        continue;
      }
      const type = line.match(/^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$/);
      if (type) {
        if (current?.name !== type[1] || current.type || current.samples.length) {
          throw new Error("TYPE out of place");
        }
        current.type = type[2];
        continue;
      }
      const sample = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/);
      if (!sample || !current?.type) throw new Error("not a sample of a typed family");
      const labels: Record<string, string> = {};
      let rest = sample[2] ?? "";
      while (rest) {
        const pair = rest.match(/^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/);
        if (!pair) throw new Error(`bad labels at ${rest}`);
        if (pair[1] in labels) throw new Error(`label ${pair[1]} twice`);
        labels[pair[1]] = unescape(pair[2], true);
        rest = rest.slice(pair[0].length);
      }
      const suffixes = current.type === "histogram" ? ["_bucket", "_sum", "_count"] : [""];
      const suffix = suffixes.find((s) => sample[1] === current!.name + s);
      if (suffix === undefined) throw new Error(`${sample[1]} outside family ${current.name}`);
      if ((suffix === "_bucket") !== ("le" in labels)) throw new Error("le only on buckets");
      const id = `${sample[1]}${JSON.stringify(labels)}`;
      if (seen.has(id)) throw new Error(`series ${id} twice`);
      seen.add(id);
      current.samples.push({ name: sample[1], labels, value: parseValue(sample[3]) });
    } catch (err) {
      throw new Error(`line ${JSON.stringify(line)}: ${(err as Error).message}`);
    }
  }
  return families;
}

async function scrape(registry: Registry): Promise<Map<string, Family>> {
  return parseExposition(await registry.metrics());
}

/** The value of the sample `name{labels}` (labels given in full). */
function valueOf(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name === name && JSON.stringify(sorted(s.labels)) === JSON.stringify(sorted(labels))) {
        return s.value;
      }
    }
  }
  return undefined;
}

function sorted(labels: Record<string, string>): [string, string][] {
  return Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1));
}

/** The label names the samples of a family carry (besides a bucket's `le`). */
function labelNamesOf(family: Family): string[] {
  const names = new Set<string>();
  for (const s of family.samples) {
    for (const name of Object.keys(s.labels)) if (name !== "le") names.add(name);
  }
  return [...names].sort();
}

// ---------------------------------------------------------------------------------------------

describe("the parser used by these tests", () => {
  it("rejects text Prometheus would reject", () => {
    for (
      const bad of [
        "x 1\n", // a sample before HELP/TYPE
        '# HELP x h\n# TYPE x counter\nx{a="1"} one\n',
        '# HELP x h\n# TYPE x counter\nx{a="\\t"} 1\n',
        "# HELP x h\n# TYPE x counter\ny 1\n",
        "# HELP x h\n# TYPE x histogram\nx_bucket 1\n",
        "# HELP x h\n# TYPE x gauge\nx 1\nx 2\n",
        "# HELP x h\n# TYPE x gauge\nx 1",
      ]
    ) {
      assert.throws(() => parseExposition(bad), Error, bad);
    }
  });
});

describe("text exposition format", () => {
  it("writes HELP, TYPE and samples as Go's client does: families and labels sorted, le last", async () => {
    const registry = new Registry();
    const requests = registry.register(
      new Counter({ name: "b_requests_total", help: "Requests.", labelNames: ["verb", "code"] }),
    );
    const temperature = registry.register(new Gauge({ name: "a_temperature", help: "Heat." }));
    const sizes = registry.register(
      new Histogram({
        name: "c_size_bytes",
        help: "Sizes.",
        labelNames: ["kind"],
        buckets: [1, 1000],
      }),
    );
    requests.inc({ verb: "delete", code: "404" });
    requests.inc({ verb: "get", code: 200 }, 3);
    temperature.set(-1.5);
    sizes.observe({ kind: "x" }, 1);
    sizes.observe({ kind: "x" }, 1e7);
    assert.equal(
      await registry.metrics(),
      [
        "# HELP a_temperature Heat.",
        "# TYPE a_temperature gauge",
        "a_temperature -1.5",
        "# HELP b_requests_total Requests.",
        "# TYPE b_requests_total counter",
        'b_requests_total{code="200",verb="get"} 3',
        'b_requests_total{code="404",verb="delete"} 1',
        "# HELP c_size_bytes Sizes.",
        "# TYPE c_size_bytes histogram",
        'c_size_bytes_bucket{kind="x",le="1"} 1',
        'c_size_bytes_bucket{kind="x",le="1000"} 1',
        'c_size_bytes_bucket{kind="x",le="+Inf"} 2',
        'c_size_bytes_sum{kind="x"} 1.0000001e+07',
        'c_size_bytes_count{kind="x"} 2',
        "",
      ].join("\n"),
    );
    assert.equal(registry.contentType, "text/plain; version=0.0.4; charset=utf-8");
    assert.equal(registry.contentType, TEXT_CONTENT_TYPE);
  });

  it("escapes label values and help so that they read back unchanged", async () => {
    const registry = new Registry();
    const tricky = 'back\\slash "quoted"\nnew line';
    const counter = registry.register(
      new Counter({ name: "tricky_total", help: "Help with \\ and\nline.", labelNames: ["v"] }),
    );
    counter.inc({ v: tricky });
    const text = await registry.metrics();
    assert.match(text, /^# HELP tricky_total Help with \\\\ and\\nline\.$/m);
    assert.match(text, /^tricky_total\{v="back\\\\slash \\"quoted\\"\\nnew line"\} 1$/m);
    const family = parseExposition(text).get("tricky_total")!;
    assert.equal(family.help, "Help with \\ and\nline.");
    assert.equal(family.samples[0].labels.v, tricky);
  });

  it("writes numbers in Go's shortest %g form, with +Inf, -Inf and NaN", () => {
    const cases: [number, string][] = [
      [0, "0"],
      [1, "1"],
      [-2.5, "-2.5"],
      [0.0001, "0.0001"],
      [0.00001, "1e-05"],
      [1e-8, "1e-08"],
      [123456, "123456"],
      [1234567, "1.234567e+06"],
      [1e21, "1e+21"],
      [0.1 + 0.2, "0.30000000000000004"],
      [Infinity, "+Inf"],
      [-Infinity, "-Inf"],
      [NaN, "NaN"],
    ];
    for (const [value, text] of cases) assert.equal(formatNumber(value), text, String(value));
  });

  it("counts an observation equal to a bound into that bucket, cumulates, and keeps sum and count", async () => {
    const registry = new Registry();
    const h = registry.register(
      new Histogram({ name: "h_seconds", help: "h", buckets: [0.1, 0.5, 1] }),
    );
    for (const v of [0.1, 0.05, 0.5, 0.7, 3]) h.observe(v);
    const families = await scrape(registry);
    assert.equal(valueOf(families, "h_seconds_bucket", { le: "0.1" }), 2);
    assert.equal(valueOf(families, "h_seconds_bucket", { le: "0.5" }), 3);
    assert.equal(valueOf(families, "h_seconds_bucket", { le: "1" }), 4);
    assert.equal(valueOf(families, "h_seconds_bucket", { le: "+Inf" }), 5);
    assert.equal(valueOf(families, "h_seconds_count"), 5);
    assert.ok(Math.abs(valueOf(families, "h_seconds_sum")! - 4.35) < 1e-9);
    assert.deepEqual(h.get()?.buckets.map((b) => b.count), [2, 3, 4, 5]);
  });

  it("shows a labelled series from its first use at 0, and leaves out families without series", async () => {
    const registry = new Registry();
    const c = registry.register(new Counter({ name: "c_total", help: "c", labelNames: ["a"] }));
    registry.register(new Gauge({ name: "g", help: "g", labelNames: ["a"] }));
    registry.register(new Counter({ name: "plain_total", help: "p" }));
    c.labels({ a: "x" });
    const families = await scrape(registry);
    assert.deepEqual([...families.keys()], ["c_total", "plain_total"]);
    assert.equal(valueOf(families, "c_total", { a: "x" }), 0);
    assert.equal(valueOf(families, "plain_total"), 0);
    assert.equal(c.remove({ a: "x" }), true);
    assert.deepEqual([...(await scrape(registry)).keys()], ["plain_total"]);
  });

  it("counts through labels() handles per label set, as calls with the labels would", async () => {
    const registry = new Registry();
    const c = registry.register(
      new Counter({ name: "h_total", help: "h", labelNames: ["a", "b"] }),
    );
    const g = registry.register(new Gauge({ name: "h_gauge", help: "h", labelNames: ["a"] }));
    const h = registry.register(
      new Histogram({ name: "h_seconds", help: "h", labelNames: ["a"], buckets: [1] }),
    );
    const xy = c.labels({ a: "x", b: "y" });
    const xz = c.labels({ a: "x", b: "z" });
    const xyAgain = c.labels({ b: "y", a: "x" });
    xy.inc();
    xy.inc(2);
    xz.inc();
    xyAgain.inc();
    c.inc({ a: "x", b: "y" });
    const gx = g.labels({ a: "x" });
    gx.set(5);
    gx.inc(2);
    gx.dec();
    g.labels({ a: "y" }).inc();
    const hx = h.labels({ a: "x" });
    hx.observe(0.5);
    hx.observe(3);
    h.labels({ a: "y" }).observe(2);
    const families = await scrape(registry);
    assert.equal(valueOf(families, "h_total", { a: "x", b: "y" }), 5);
    assert.equal(valueOf(families, "h_total", { a: "x", b: "z" }), 1);
    assert.equal(valueOf(families, "h_gauge", { a: "x" }), 6);
    assert.equal(valueOf(families, "h_gauge", { a: "y" }), 1);
    assert.equal(valueOf(families, "h_seconds_bucket", { a: "x", le: "1" }), 1);
    assert.equal(valueOf(families, "h_seconds_count", { a: "x" }), 2);
    assert.equal(valueOf(families, "h_seconds_sum", { a: "x" }), 3.5);
    assert.equal(valueOf(families, "h_seconds_count", { a: "y" }), 1);
    assert.throws(() => xy.inc(-1), /cannot be increased by -1/);
    assert.throws(() => c.labels({ a: "x" } as never), /has labels \{a,b\}, got \{a\}/);
  });

  it("brings a handle's series back from 0 after remove() or reset(), and only its own", async () => {
    const registry = new Registry();
    const c = registry.register(new Counter({ name: "r_total", help: "r", labelNames: ["a"] }));
    const g = registry.register(new Gauge({ name: "r_gauge", help: "r", labelNames: ["a"] }));
    const h = registry.register(
      new Histogram({ name: "r_seconds", help: "r", labelNames: ["a"], buckets: [1] }),
    );
    const cx = c.labels({ a: "x" });
    const cy = c.labels({ a: "y" });
    const gx = g.labels({ a: "x" });
    const hx = h.labels({ a: "x" });
    cx.inc(3);
    cy.inc(4);
    gx.set(7);
    hx.observe(2);
    assert.equal(c.remove({ a: "x" }), true);
    assert.equal(c.get({ a: "x" }), undefined, "removed, and not made again until used");
    assert.equal(c.get({ a: "y" }), 4, "the other series stays");
    cx.inc();
    cy.inc();
    assert.equal(c.get({ a: "x" }), 1);
    assert.equal(c.get({ a: "y" }), 5);
    c.reset();
    g.reset();
    h.reset();
    assert.deepEqual([...(await scrape(registry)).keys()], []);
    cy.inc();
    gx.inc();
    hx.observe(0.5);
    const families = await scrape(registry);
    assert.equal(valueOf(families, "r_total", { a: "y" }), 1);
    assert.equal(valueOf(families, "r_total", { a: "x" }), undefined);
    assert.equal(valueOf(families, "r_gauge", { a: "x" }), 1);
    assert.equal(valueOf(families, "r_seconds_count", { a: "x" }), 1);
    assert.equal(valueOf(families, "r_seconds_sum", { a: "x" }), 0.5);
    // Unregistered: the metric goes from the scrape while its handles still count into it.
    assert.equal(registry.unregister("r_total"), true);
    cy.inc();
    assert.equal(valueOf(await scrape(registry), "r_total", { a: "y" }), undefined);
    assert.equal(c.get({ a: "y" }), 2);
  });

  it("runs collectors at scrape time and fails the scrape, naming the metric, when one fails", async () => {
    const registry = new Registry();
    let reads = 0;
    registry.register(
      new Gauge({ name: "queue_length", help: "q", collect: (g) => g.set(++reads * 10) }),
    );
    assert.equal(valueOf(await scrape(registry), "queue_length"), 10);
    assert.equal(valueOf(await scrape(registry), "queue_length"), 20);
    registry.register(
      new Gauge({
        name: "broken",
        help: "b",
        collect: () => Promise.reject(new Error("no data")),
      }),
    );
    await assert.rejects(registry.metrics(), /collecting broken: no data/);
  });

  it("refuses bad names, label sets that do not match, decreasing counters and unsorted buckets", () => {
    assert.throws(() => new Counter({ name: "1bad", help: "" }), /invalid metric name/);
    assert.throws(() => new Gauge({ name: "g", help: "", labelNames: ["__x"] }), /invalid label/);
    assert.throws(
      () => new Histogram({ name: "h", help: "", labelNames: ["le"] }),
      /invalid label/,
    );
    assert.throws(() => new Gauge({ name: "g", help: "", labelNames: ["a", "a"] }), /duplicate/);
    assert.throws(() => new Histogram({ name: "h", help: "", buckets: [1, 1] }), /increase/);
    const c = new Counter({ name: "c_total", help: "", labelNames: ["a", "b"] });
    assert.throws(() => c.inc({ a: "1" } as never), /has labels \{a,b\}, got \{a\}/);
    assert.throws(() => c.inc({ a: "1", b: "2", z: "3" } as never), /got \{a,b,z\}/);
    assert.throws(() => c.inc({ a: "1", b: "2" }, -1), /cannot be increased by -1/);
    const registry = new Registry();
    const first = registry.register(new Gauge({ name: "dup", help: "" }));
    assert.equal(registry.register(first), first);
    assert.throws(() => registry.register(new Gauge({ name: "dup", help: "" })), /already/);
    assert.equal(registry.unregister("dup"), true);
    assert.equal(registry.get("dup"), undefined);
  });

  it("makes buckets the way client_golang does", () => {
    assert.deepEqual(linearBuckets(1, 2, 3), [1, 3, 5]);
    const exp = exponentialBuckets(10e-9, 10, 12);
    assert.deepEqual(
      exp.map(formatNumber),
      [
        "1e-08",
        "1e-07",
        "1e-06",
        "9.999999999999999e-06",
        "9.999999999999999e-05",
        "0.001",
        "0.01",
        "0.1",
        "1",
        "10",
        "100",
        "1000",
      ],
    );
    assert.throws(() => exponentialBuckets(0, 2, 3));
  });
});

// ---------------------------------------------------------------------------------------------

/** controller-runtime v0.24's families: type, label names (sorted) and help. */
const CONTROLLER_RUNTIME_FAMILIES: Record<string, [string, string[], string]> = {
  controller_runtime_reconcile_total: [
    "counter",
    ["controller", "result"],
    "Total number of reconciliations per controller",
  ],
  controller_runtime_reconcile_errors_total: [
    "counter",
    ["controller"],
    "Total number of reconciliation errors per controller",
  ],
  controller_runtime_terminal_reconcile_errors_total: [
    "counter",
    ["controller"],
    "Total number of terminal reconciliation errors per controller",
  ],
  controller_runtime_reconcile_panics_total: [
    "counter",
    ["controller"],
    "Total number of reconciliation panics per controller",
  ],
  controller_runtime_reconcile_timeouts_total: [
    "counter",
    ["controller"],
    "Total number of reconciliation timeouts per controller",
  ],
  controller_runtime_reconcile_time_seconds: [
    "histogram",
    ["controller"],
    "Length of time per reconciliation per controller",
  ],
  controller_runtime_max_concurrent_reconciles: [
    "gauge",
    ["controller"],
    "Maximum number of concurrent reconciles per controller",
  ],
  controller_runtime_active_workers: [
    "gauge",
    ["controller"],
    "Number of currently used workers per controller",
  ],
  workqueue_depth: [
    "gauge",
    ["controller", "name", "priority"],
    "Current depth of workqueue by workqueue and priority",
  ],
  workqueue_adds_total: [
    "counter",
    ["controller", "name"],
    "Total number of adds handled by workqueue",
  ],
  workqueue_queue_duration_seconds: [
    "histogram",
    ["controller", "name"],
    "How long in seconds an item stays in workqueue before being requested",
  ],
  workqueue_work_duration_seconds: [
    "histogram",
    ["controller", "name"],
    "How long in seconds processing an item from workqueue takes.",
  ],
  workqueue_unfinished_work_seconds: [
    "gauge",
    ["controller", "name"],
    "How many seconds of work has been done that is in progress and hasn't been observed by " +
    "work_duration. Large values indicate stuck threads. One can deduce the number of stuck " +
    "threads by observing the rate at which this increases.",
  ],
  workqueue_longest_running_processor_seconds: [
    "gauge",
    ["controller", "name"],
    "How many seconds has the longest running processor for workqueue been running.",
  ],
  workqueue_retries_total: [
    "counter",
    ["controller", "name"],
    "Total number of items added to the workqueue with a non-zero delay (rate-limited " +
    "requeues, explicit RequeueAfter or AddAfter calls)",
  ],
  rest_client_requests_total: [
    "counter",
    ["code", "host", "method"],
    "Number of HTTP requests, partitioned by status code, method, and host.",
  ],
  leader_election_master_status: [
    "gauge",
    ["name"],
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, " +
    "1 indicates master. 'name' is the string used to identify the lease. Please make sure to " +
    "group by name.",
  ],
};

const req = (name: string) => ({ namespace: "ns", name });

describe("controller-runtime's families", () => {
  it("are all there with controller-runtime's types, labels and help once the hooks are driven", async () => {
    const registry = new Registry();
    const metrics = controllerMetrics(registry);
    const queue = metrics.workQueue("web");
    metrics.registerQueue("web", {
      unfinishedWorkSeconds: () => 1.5,
      longestRunningProcessorSeconds: () => 0.75,
    });
    metrics.maxConcurrentReconciles("web", 3);
    metrics.reconcileTime("web", 0.2);
    queue.latency?.(0.001);
    queue.workDuration?.(0.002);
    restClientMetrics(registry)({
      method: "GET",
      host: "10.96.0.1:443",
      path: "/api",
      statusCode: 200,
      durationMs: 3,
      attempt: 0,
    });
    leaderElectionMetrics(registry).leaderStatus("example-leader", true);
    const families = await scrape(registry);
    for (const [name, [type, labels, help]] of Object.entries(CONTROLLER_RUNTIME_FAMILIES)) {
      const family = families.get(name);
      assert.ok(family, `${name} is scraped`);
      assert.equal(family.type, type, `${name}'s type`);
      assert.deepEqual(labelNamesOf(family), labels, `${name}'s labels`);
      assert.equal(family.help, help, `${name}'s help`);
    }
    assert.equal(
      valueOf(families, "workqueue_unfinished_work_seconds", {
        name: "web",
        controller: "web",
      }),
      1.5,
    );
    assert.equal(
      valueOf(families, "workqueue_longest_running_processor_seconds", {
        name: "web",
        controller: "web",
      }),
      0.75,
    );
    assert.equal(
      valueOf(families, "controller_runtime_max_concurrent_reconciles", {
        controller: "web",
      }),
      3,
    );
  });

  it("start every counter of a controller at 0, every reconcile result among them", async () => {
    const registry = new Registry();
    controllerMetrics(registry).maxConcurrentReconciles("idle", 1);
    const families = await scrape(registry);
    for (const result of ["success", "error", "requeue", "requeue_after"]) {
      assert.equal(
        valueOf(families, "controller_runtime_reconcile_total", { controller: "idle", result }),
        0,
        result,
      );
    }
    for (
      const name of [
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_panics_total",
        "controller_runtime_reconcile_timeouts_total",
        "controller_runtime_active_workers",
      ]
    ) {
      assert.equal(valueOf(families, name, { controller: "idle" }), 0, name);
    }
  });

  it("count per controller and result, leave reconcile time and max workers out until reported, and start again after a reset", async () => {
    const registry = new Registry();
    const metrics = controllerMetrics(registry);
    metrics.reconcileTotal("a", "success");
    metrics.reconcileTotal("a", "success");
    metrics.reconcileTotal("a", "error");
    metrics.reconcileTotal("b", "requeue");
    metrics.reconcileErrors("a");
    metrics.activeWorkers("a", 3);
    let families = await scrape(registry);
    const total = (controller: string, result: string) =>
      valueOf(families, "controller_runtime_reconcile_total", { controller, result });
    assert.equal(total("a", "success"), 2);
    assert.equal(total("a", "error"), 1);
    assert.equal(total("b", "requeue"), 1);
    assert.equal(total("b", "success"), 0);
    assert.equal(
      valueOf(families, "controller_runtime_reconcile_errors_total", { controller: "a" }),
      1,
    );
    assert.equal(
      valueOf(families, "controller_runtime_reconcile_errors_total", { controller: "b" }),
      0,
    );
    assert.equal(valueOf(families, "controller_runtime_active_workers", { controller: "a" }), 3);
    assert.equal(families.has("controller_runtime_reconcile_time_seconds"), false);
    assert.equal(families.has("controller_runtime_max_concurrent_reconciles"), false);
    metrics.reconcileTime("a", 0.2);
    metrics.maxConcurrentReconciles("a", 4);
    families = await scrape(registry);
    assert.equal(
      valueOf(families, "controller_runtime_reconcile_time_seconds_count", { controller: "a" }),
      1,
    );
    assert.equal(
      valueOf(families, "controller_runtime_reconcile_time_seconds_count", { controller: "b" }),
      undefined,
    );
    assert.equal(
      valueOf(families, "controller_runtime_max_concurrent_reconciles", { controller: "a" }),
      4,
    );
    (registry.get("controller_runtime_reconcile_total") as Counter<string>).reset();
    metrics.reconcileTotal("a", "success");
    families = await scrape(registry);
    assert.equal(total("a", "success"), 1);
    assert.equal(total("a", "error"), undefined);
  });

  it("use controller-runtime's reconcile-time buckets and client-go's work-queue buckets", async () => {
    const registry = new Registry();
    const metrics = controllerMetrics(registry);
    metrics.reconcileTime("web", 0.3);
    metrics.workQueue("web");
    const families = await scrape(registry);
    const bounds = (name: string) =>
      families.get(name)!.samples.filter((s) => s.name === `${name}_bucket`).map((s) =>
        s.labels.le
      );
    assert.deepEqual(bounds("controller_runtime_reconcile_time_seconds"), [
      ..."0.005 0.01 0.025 0.05 0.1 0.15 0.2 0.25 0.3 0.35 0.4 0.45 0.5 0.6 0.7 0.8 0.9 1".split(
        " ",
      ),
      ..."1.25 1.5 1.75 2 2.5 3 3.5 4 4.5 5 6 7 8 9 10 15 20 25 30 40 50 60 +Inf".split(" "),
    ]);
    assert.equal(RECONCILE_TIME_BUCKETS.length, 40);
    const queueBounds = [
      ..."1e-08 1e-07 1e-06 9.999999999999999e-06 9.999999999999999e-05".split(" "),
      ..."0.001 0.01 0.1 1 10 100 1000 +Inf".split(" "),
    ];
    assert.deepEqual(bounds("workqueue_queue_duration_seconds"), queueBounds);
    assert.deepEqual(bounds("workqueue_work_duration_seconds"), queueBounds);
    // 0.3 s lands in le="0.3" (inclusive) and every bucket above.
    assert.equal(
      valueOf(families, "controller_runtime_reconcile_time_seconds_bucket", {
        controller: "web",
        le: "0.25",
      }),
      0,
    );
    assert.equal(
      valueOf(families, "controller_runtime_reconcile_time_seconds_bucket", {
        controller: "web",
        le: "0.3",
      }),
      1,
    );
  });

  it("move with a real controller's reconciles: results, errors, panics, terminal errors, queue", async () => {
    const registry = new Registry();
    const clock = new FakeClock(0);
    const done = new Set<string>();
    const controller = new Controller("movers", (request) => {
      done.add(request.name);
      switch (request.name) {
        case "fail":
          throw new Error("transient");
        case "terminal":
          throw new TerminalError("never works");
        case "panic":
          throw "not an Error";
        case "later":
          return { requeueAfter: 60_000 };
        case "again":
          return { requeue: true };
      }
      return {};
    }, { metrics: controllerMetrics(registry), clock, maxConcurrentReconciles: 2 });
    const stop = new AbortController();
    const running = controller.start(stop.signal);
    const names = ["ok", "fail", "terminal", "panic", "later", "again"];
    for (const name of names) controller.queue.add(req(name));
    await eventually("every request was reconciled", () => done.size === names.length);
    await eventually("the workers are idle", async () => {
      const families = await scrape(registry);
      return valueOf(families, "controller_runtime_active_workers", { controller: "movers" }) ===
          0 &&
        valueOf(families, "workqueue_work_duration_seconds_count", {
            controller: "movers",
            name: "movers",
          }) === names.length;
    });
    const families = await scrape(registry);
    const c = { controller: "movers" };
    const q = { controller: "movers", name: "movers" };
    const total = (result: string) =>
      valueOf(families, "controller_runtime_reconcile_total", { ...c, result });
    assert.equal(total("success"), 1);
    assert.equal(total("error"), 3);
    assert.equal(total("requeue"), 1);
    assert.equal(total("requeue_after"), 1);
    assert.equal(valueOf(families, "controller_runtime_reconcile_errors_total", c), 3);
    assert.equal(valueOf(families, "controller_runtime_terminal_reconcile_errors_total", c), 1);
    assert.equal(valueOf(families, "controller_runtime_reconcile_panics_total", c), 1);
    assert.equal(valueOf(families, "controller_runtime_reconcile_timeouts_total", c), 0);
    assert.equal(valueOf(families, "controller_runtime_reconcile_time_seconds_count", c), 6);
    assert.equal(valueOf(families, "controller_runtime_max_concurrent_reconciles", c), 2);
    assert.equal(valueOf(families, "workqueue_adds_total", q), 6);
    // fail, panic and again are rate-limited, later is delayed; the fake clock holds them all.
    assert.equal(valueOf(families, "workqueue_retries_total", q), 4);
    assert.equal(valueOf(families, "workqueue_depth", { ...q, priority: "" }), 0);
    assert.equal(valueOf(families, "workqueue_queue_duration_seconds_count", q), 6);
    assert.equal(valueOf(families, "workqueue_unfinished_work_seconds", q), 0);
    stop.abort();
    await running;
  });

  it("track a work queue's depth, adds and retries as it is used", async () => {
    const registry = new Registry();
    const clock = new FakeClock(0);
    const queue = new WorkQueue<string>({
      name: "plain",
      clock,
      metrics: controllerMetrics(registry).workQueue("plain"),
    });
    const q = { controller: "plain", name: "plain" };
    const depth = async () =>
      valueOf(await scrape(registry), "workqueue_depth", { ...q, priority: "" });
    queue.add("a");
    queue.add("b");
    queue.add("a");
    assert.equal(await depth(), 2);
    const next = await queue.get();
    assert.equal(await depth(), 1);
    queue.addAfter("c", 1000);
    clock.advance(1000);
    assert.equal(await depth(), 2);
    if (!next.shutdown) queue.done(next.item);
    const families = await scrape(registry);
    assert.equal(valueOf(families, "workqueue_adds_total", q), 3);
    assert.equal(valueOf(families, "workqueue_retries_total", q), 1);
    assert.equal(valueOf(families, "workqueue_work_duration_seconds_count", q), 1);
    queue.shutDown();
  });

  it("are made once per registry and refuse a registry whose names are taken", () => {
    const registry = new Registry();
    assert.equal(controllerMetrics(registry), controllerMetrics(registry));
    assert.equal(restClientMetrics(registry), restClientMetrics(registry));
    assert.equal(leaderElectionMetrics(registry), leaderElectionMetrics(registry));
    assert.notEqual(controllerMetrics(new Registry()), controllerMetrics(registry));
    const taken = new Registry();
    taken.register(new Gauge({ name: "workqueue_depth", help: "someone else's" }));
    assert.throws(() => controllerMetrics(taken), /workqueue_depth/);
  });

  it("go on the global registry by default", () => {
    controllerMetrics().maxConcurrentReconciles("global-default", 1);
    assert.equal(
      (globalRegistry.get("controller_runtime_max_concurrent_reconciles") as Gauge<"controller">)
        .get({ controller: "global-default" }),
      1,
    );
  });
});

describe("rest_client_requests_total", () => {
  it("counts attempts by status code as a string, method and host, and <error> without answer", async () => {
    const registry = new Registry();
    const onRequest = restClientMetrics(registry);
    const info = { method: "GET", host: "api:6443", path: "/api", durationMs: 1, attempt: 0 };
    onRequest({ ...info, statusCode: 200 });
    onRequest({ ...info, statusCode: 200, attempt: 1 });
    onRequest({ ...info, method: "POST", statusCode: 201 });
    onRequest({ ...info });
    const families = await scrape(registry);
    const count = (code: string, method: string) =>
      valueOf(families, "rest_client_requests_total", { code, method, host: "api:6443" });
    assert.equal(count("200", "GET"), 2);
    assert.equal(count("201", "POST"), 1);
    assert.equal(count("<error>", "GET"), 1);
  });

  it("counts per label set after a reset of the counter, from 0", async () => {
    const registry = new Registry();
    const onRequest = restClientMetrics(registry);
    const info = { method: "GET", host: "api:6443", path: "/api", durationMs: 1, attempt: 0 };
    onRequest({ ...info, statusCode: 200 });
    onRequest({ ...info, statusCode: 404 });
    onRequest({ ...info, host: "other:6443", statusCode: 200 });
    const counter = registry.get("rest_client_requests_total") as Counter<string>;
    counter.reset();
    onRequest({ ...info, statusCode: 200 });
    onRequest({ ...info, statusCode: 200 });
    const families = await scrape(registry);
    const count = (code: string, host: string) =>
      valueOf(families, "rest_client_requests_total", { code, method: "GET", host });
    assert.equal(count("200", "api:6443"), 2);
    assert.equal(count("404", "api:6443"), undefined);
    assert.equal(count("200", "other:6443"), undefined);
  });

  it("moves with the requests of a RestClient", async () => {
    const registry = new Registry();
    let status = 200;
    const transport: Transport = {
      config,
      fetch: () => Promise.resolve(Response.json({}, { status })),
      close() {},
    };
    const rest = new RestClient(config, { transport, onRequest: restClientMetrics(registry) });
    await rest.request({ path: "/api" });
    status = 404;
    await assert.rejects(rest.request({ path: "/api/v1/namespaces/x" }));
    const families = await scrape(registry);
    const host = "api.test:6443";
    assert.equal(
      valueOf(families, "rest_client_requests_total", {
        code: "200",
        method: "GET",
        host,
      }),
      1,
    );
    assert.equal(
      valueOf(families, "rest_client_requests_total", {
        code: "404",
        method: "GET",
        host,
      }),
      1,
    );
  });
});

describe("leader_election_master_status", () => {
  it("is 1 while leading and 0 after", async () => {
    const registry = new Registry();
    const metrics = leaderElectionMetrics(registry);
    metrics.leaderStatus("lease-a", true);
    assert.equal(
      valueOf(await scrape(registry), "leader_election_master_status", {
        name: "lease-a",
      }),
      1,
    );
    metrics.leaderStatus("lease-a", false);
    assert.equal(
      valueOf(await scrape(registry), "leader_election_master_status", {
        name: "lease-a",
      }),
      0,
    );
  });
});

// ---------------------------------------------------------------------------------------------

describe("process metrics", () => {
  const linux = process.platform === "linux";

  it(
    "read this process's /proc with client_golang's names and sane values",
    { skip: !linux },
    async () => {
      const registry = new Registry();
      registerProcessMetrics(registry);
      registerProcessMetrics(registry); // a second call changes nothing
      const before = await scrape(registry);
      const expected: Record<string, string> = {
        process_cpu_seconds_total: "counter",
        process_resident_memory_bytes: "gauge",
        process_start_time_seconds: "gauge",
        process_virtual_memory_bytes: "gauge",
        process_virtual_memory_max_bytes: "gauge",
        process_open_fds: "gauge",
        process_max_fds: "gauge",
        process_network_receive_bytes_total: "counter",
        process_network_transmit_bytes_total: "counter",
      };
      assert.deepEqual(
        Object.fromEntries([...before.values()].map((f) => [f.name, f.type])),
        expected,
      );
      const value = (name: string) => valueOf(before, name)!;
      const rss = value("process_resident_memory_bytes");
      assert.ok(rss > 1 << 20 && rss < 2 ** 36, `resident ${rss}`);
      assert.ok(value("process_virtual_memory_bytes") >= rss);
      const now = Date.now() / 1000;
      const start = value("process_start_time_seconds");
      assert.ok(start <= now && start > now - 24 * 3600, `start ${start}`);
      assert.ok(value("process_open_fds") >= 3);
      assert.ok(value("process_open_fds") <= value("process_max_fds"));
      // Burn some CPU time (bounded by CPU time, not by the clock), then the counter has moved.
      const cpuBefore = value("process_cpu_seconds_total");
      const used = process.cpuUsage();
      let spin = 0;
      for (let i = 0; i < 1e9; i++) {
        spin += Math.sqrt(i);
        if (i % 1e5 === 0) {
          const now = process.cpuUsage(used);
          if (now.user + now.system > 50_000) break;
        }
      }
      assert.ok(spin > 0);
      const cpuAfter = valueOf(await scrape(registry), "process_cpu_seconds_total")!;
      assert.ok(cpuAfter > cpuBefore, `cpu ${cpuBefore} → ${cpuAfter}`);
    },
  );

  it("parse procfs files as Go's procfs does", async () => {
    const root = mkdtempSync(join(tmpdir(), "rudder-procfs-"));
    try {
      mkdirSync(join(root, "self", "fd"), { recursive: true });
      mkdirSync(join(root, "self", "net"));
      for (const fd of ["0", "1", "2"]) writeFileSync(join(root, "self", "fd", fd), "");
      writeFileSync(
        join(root, "self", "stat"),
        "4242 (my (odd) proc) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 20 0 12 0 " +
          "123400 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
      );
      writeFileSync(
        join(root, "self", "status"),
        "Name:\tx\nVmSize:\t102400 kB\nVmRSS:\t   10240 kB\n",
      );
      writeFileSync(
        join(root, "self", "limits"),
        [
          "Limit                     Soft Limit           Hard Limit           Units     ",
          "Max cpu time              unlimited            unlimited            seconds   ",
          "Max open files            1024                 1048576              files     ",
          "Max address space         unlimited            unlimited            bytes     ",
          "",
        ].join("\n"),
      );
      writeFileSync(
        join(root, "self", "net", "dev"),
        [
          "Inter-|   Receive                                                |  Transmit",
          " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed",
          "    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0",
          "  eth0:    2500      20    0    0    0     0          0         0      700       5    0    0    0     0       0          0",
          "",
        ].join("\n"),
      );
      writeFileSync(join(root, "stat"), "cpu  1 2 3 4\nbtime 1700000000\nprocesses 9\n");
      const registry = new Registry();
      registerProcessMetrics(registry, { procfs: root });
      const text = await registry.metrics();
      {
        const families = parseExposition(text);
        assert.equal(valueOf(families, "process_cpu_seconds_total"), 4);
        assert.equal(valueOf(families, "process_start_time_seconds"), 1_700_001_234);
        assert.equal(valueOf(families, "process_virtual_memory_bytes"), 104_857_600);
        assert.equal(valueOf(families, "process_resident_memory_bytes"), 10_485_760);
        assert.equal(valueOf(families, "process_open_fds"), 3);
        assert.equal(valueOf(families, "process_max_fds"), 1024);
        assert.equal(valueOf(families, "process_virtual_memory_max_bytes"), 2 ** 64 - 1);
        assert.match(text, /^process_virtual_memory_max_bytes 1\.8446744073709552e\+19$/m);
        assert.equal(valueOf(families, "process_network_receive_bytes_total"), 3500);
        assert.equal(valueOf(families, "process_network_transmit_bytes_total"), 1700);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("fall back to the runtime's figures without procfs and leave the rest out", async () => {
    const root = mkdtempSync(join(tmpdir(), "rudder-noprocfs-"));
    try {
      const registry = new Registry();
      registerProcessMetrics(registry, { procfs: root });
      const families = await scrape(registry);
      assert.deepEqual([...families.keys()], [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
      ]);
      assert.ok(valueOf(families, "process_resident_memory_bytes")! > 0);
      assert.ok(valueOf(families, "process_cpu_seconds_total")! > 0);
      const start = valueOf(families, "process_start_time_seconds")!;
      assert.ok(start <= Date.now() / 1000 && start > Date.now() / 1000 - 24 * 3600);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("leave a name another collector already registered to it", async () => {
    const registry = new Registry();
    registry.register(new Gauge({ name: "process_open_fds", help: "mine" }));
    registerProcessMetrics(registry);
    const families = await scrape(registry);
    assert.equal(families.get("process_open_fds")?.help, "mine");
    assert.ok(families.has("process_cpu_seconds_total"));
  });
});

// ---------------------------------------------------------------------------------------------

const config: KubeConfig = {
  server: "https://api.test:6443",
  namespace: "default",
  auth: { credentials: () => Promise.resolve({}) },
  source: "unit test",
};

interface Review {
  path: string;
  body: Record<string, unknown>;
}

/** What a SubjectAccessReview asks about a non-resource URL. */
interface AccessSpec {
  user: string;
  groups?: string[];
  nonResourceAttributes: { path: string; verb: string };
}

/**
 * A stand-in API server that reviews tokens and access: `users` maps tokens to users, `allowed`
 * lists the users that may; reviews whose path ends with `state.failing` answer 500, and every
 * review waits for `state.gate` when one is set.
 */
function reviewer(
  users: Record<string, { username: string; groups?: string[] }>,
  allowed: string[] | ((spec: AccessSpec) => boolean),
) {
  const reviews: Review[] = [];
  const state = {
    failing: undefined as string | undefined,
    gate: undefined as Promise<void> | undefined,
  };
  const transport: Transport = {
    config,
    async fetch(path, init = {}) {
      const body = JSON.parse(String(init.body));
      reviews.push({ path, body });
      await state.gate;
      if (state.failing !== undefined && path.endsWith(state.failing)) {
        return Response.json({ kind: "Status", code: 500 }, { status: 500 });
      }
      if (path.endsWith("/tokenreviews")) {
        const user = users[body.spec.token];
        return Response.json(
          { ...body, status: user ? { authenticated: true, user } : { authenticated: false } },
          { status: 201 },
        );
      }
      const spec = body.spec as AccessSpec;
      const allow = typeof allowed === "function" ? allowed(spec) : allowed.includes(spec.user);
      return Response.json(
        { ...body, status: { allowed: allow } },
        { status: 201 },
      );
    },
    close() {},
  };
  return { rest: new RestClient(config, { transport }), reviews, state };
}

function get(
  app: { fetch(r: Request): Promise<Response> },
  path: string,
  token?: string,
  method = "GET",
) {
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  return app.fetch(new Request(`http://localhost${path}`, { method, headers }));
}

describe("metricsApp", () => {
  it("serves the registry on GET /metrics in the text format and nothing elsewhere", async () => {
    const registry = new Registry();
    registry.register(new Counter({ name: "served_total", help: "s" })).inc();
    const app = metricsApp(registry);
    const response = await get(app, "/metrics");
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), TEXT_CONTENT_TYPE);
    assert.equal(valueOf(parseExposition(await response.text()), "served_total"), 1);
    assert.equal((await get(app, "/other")).status, 404);
    const custom = metricsApp(registry, { path: "/custom" });
    assert.equal((await get(custom, "/custom")).status, 200);
  });

  it("answers 500 naming the error when a collector fails", async () => {
    const registry = new Registry();
    registry.register(
      new Gauge({
        name: "bad",
        help: "b",
        collect: () => {
          throw new Error("boom");
        },
      }),
    );
    const response = await get(metricsApp(registry), "/metrics");
    assert.equal(response.status, 500);
    assert.match(
      await response.text(),
      /An error has occurred while serving metrics:\n\ncollecting bad: boom/,
    );
  });

  it("with secure: 401 without a bearer token or with one the API server rejects", async () => {
    const { rest, reviews } = reviewer({ good: { username: "alice" } }, ["alice"]);
    const app = metricsApp(new Registry(), { secure: { rest } });
    const noToken = await get(app, "/metrics");
    assert.equal(noToken.status, 401);
    assert.equal(await noToken.text(), "Unauthorized\n");
    const basic = await app.fetch(
      new Request("http://localhost/metrics", { headers: { Authorization: "Basic Z29vZA==" } }),
    );
    assert.equal(basic.status, 401);
    assert.equal(reviews.length, 0, "nothing to review without a bearer token");
    assert.equal((await get(app, "/metrics", "garbage")).status, 401);
    assert.equal(reviews.length, 1);
    assert.equal(reviews[0].path, "/apis/authentication.k8s.io/v1/tokenreviews");
    assert.deepEqual(reviews[0].body.spec, { token: "garbage" });
  });

  it("with secure: 403 for a user the API server does not authorise, 200 for one it does", async () => {
    const { rest, reviews } = reviewer({
      good: { username: "alice", groups: ["scrapers"] },
      other: { username: "bob" },
    }, ["alice"]);
    const app = metricsApp(new Registry(), { secure: { rest } });
    const denied = await get(app, "/metrics", "other");
    assert.equal(denied.status, 403);
    assert.equal(await denied.text(), "Authorization denied for user bob\n");
    const allowed = await get(app, "/metrics", "good");
    assert.equal(allowed.status, 200);
    const access = reviews.filter((r) => r.path.endsWith("/subjectaccessreviews"));
    assert.deepEqual(access.map((r) => r.body.spec), [
      { user: "bob", nonResourceAttributes: { path: "/metrics", verb: "get" } },
      {
        user: "alice",
        groups: ["scrapers"],
        nonResourceAttributes: { path: "/metrics", verb: "get" },
      },
    ]);
  });

  it("with secure: remembers answers for cacheTTL, asks once for concurrent scrapes, and never remembers failures", async () => {
    const { rest, reviews, state } = reviewer({ good: { username: "alice" } }, ["alice"]);
    const app = metricsApp(new Registry(), { secure: { rest, cacheTTL: 300_000 } });
    let release!: () => void;
    state.gate = new Promise((resolve) => release = resolve);
    const concurrent = [get(app, "/metrics", "good"), get(app, "/metrics", "good")];
    await eventually("the first review was asked", () => reviews.length === 1);
    release();
    state.gate = undefined;
    assert.deepEqual((await Promise.all(concurrent)).map((r) => r.status), [200, 200]);
    assert.equal(reviews.length, 2, "one TokenReview and one SubjectAccessReview");
    assert.equal((await get(app, "/metrics", "good")).status, 200);
    assert.equal(reviews.length, 2, "answered from the cache");

    const { rest: broken, reviews: asked, state: brokenState } = reviewer(
      { good: { username: "alice" } },
      ["alice"],
    );
    brokenState.failing = "/tokenreviews";
    const fragile = metricsApp(new Registry(), { secure: { rest: broken, cacheTTL: 300_000 } });
    const failed = await get(fragile, "/metrics", "good");
    assert.equal(failed.status, 500);
    assert.equal(await failed.text(), "Authentication failed\n");
    brokenState.failing = undefined;
    assert.equal((await get(fragile, "/metrics", "good")).status, 200);
    assert.equal(asked.length, 3, "the failed TokenReview was asked again");
  });

  it("with secure: remembers a decision for its user, verb and path only, and for cacheTTL only", async () => {
    const clock = new FakeClock();
    const users: Record<string, { username: string; groups?: string[] }> = {
      scraper: { username: "alice", groups: ["scrapers"] },
      groupless: { username: "alice" },
      other: { username: "bob", groups: ["scrapers"] },
    };
    // The cluster's RBAC: bob may not; alice may get /metrics, as a scraper only.
    let rbacAllows = true;
    const { rest, reviews } = reviewer(
      users,
      (spec) =>
        rbacAllows && spec.user === "alice" && (spec.groups ?? []).includes("scrapers") &&
        spec.nonResourceAttributes.verb === "get" && spec.nonResourceAttributes.path === "/metrics",
    );
    const app = metricsApp(new Registry(), { secure: { rest, cacheTTL: 10_000, clock } });
    const accessReviews = () => reviews.filter((r) => r.path.endsWith("/subjectaccessreviews"));
    const tokenReviews = () => reviews.filter((r) => r.path.endsWith("/tokenreviews"));

    assert.equal((await get(app, "/metrics", "scraper")).status, 200);
    // Each of these differs from the allowed request in one part of the decision's key.
    assert.equal((await get(app, "/debug", "scraper")).status, 403, "another path");
    assert.equal((await get(app, "/metrics", "scraper", "POST")).status, 403, "another verb");
    assert.equal((await get(app, "/metrics", "other")).status, 403, "another user");
    assert.equal((await get(app, "/metrics", "groupless")).status, 403, "other groups");
    assert.equal(accessReviews().length, 5, "each was asked about");
    assert.equal((await get(app, "/metrics", "scraper")).status, 200);
    assert.equal(accessReviews().length, 5, "the allowed request was answered from the cache");

    // The role goes: the remembered decision holds for cacheTTL, not a millisecond longer.
    rbacAllows = false;
    clock.advance(9_999);
    assert.equal((await get(app, "/metrics", "scraper")).status, 200);
    assert.equal(accessReviews().length, 5);
    clock.advance(1);
    assert.equal((await get(app, "/metrics", "scraper")).status, 403);
    assert.equal(accessReviews().length, 6, "asked again once the decision expired");

    // A token that goes: its review too is remembered for cacheTTL, from when it was asked.
    users.another = { username: "carol" };
    const asked = tokenReviews().length;
    assert.equal((await get(app, "/metrics", "another")).status, 403);
    assert.equal(tokenReviews().length, asked + 1);
    delete users.another;
    clock.advance(9_999);
    assert.equal((await get(app, "/metrics", "another")).status, 403, "still carol");
    assert.equal(tokenReviews().length, asked + 1);
    clock.advance(1);
    assert.equal((await get(app, "/metrics", "another")).status, 401);
    assert.equal(tokenReviews().length, asked + 2);
  });

  it("with secure: 500 naming the user when the access review fails", async () => {
    const { rest, state } = reviewer({ good: { username: "alice" } }, ["alice"]);
    state.failing = "/subjectaccessreviews";
    const response = await get(
      metricsApp(new Registry(), { secure: { rest } }),
      "/metrics",
      "good",
    );
    assert.equal(response.status, 500);
    assert.equal(await response.text(), "Authorization for user alice failed\n");
  });
});

describe("DecisionCache", () => {
  it("forgets answers after the TTL, drops the oldest beyond its size, and keeps nothing with TTL 0", async () => {
    let now = 0;
    const cache = new DecisionCache<number>(1000, 2, () => now);
    let computed = 0;
    const compute = () => Promise.resolve(++computed);
    assert.equal(await cache.get("a", compute), 1);
    assert.equal(await cache.get("a", compute), 1);
    now = 999;
    assert.equal(await cache.get("a", compute), 1);
    now = 1000;
    assert.equal(await cache.get("a", compute), 2);
    await cache.get("b", compute);
    await cache.get("c", compute);
    assert.equal(cache.size, 2);
    assert.equal(await cache.get("a", compute), 5, "a was the oldest and was dropped");
    const none = new DecisionCache<number>(0);
    await none.get("a", compute);
    assert.equal(none.size, 0);
    await assert.rejects(cache.get("x", () => Promise.reject(new Error("down"))), /down/);
    assert.equal(await cache.get("x", compute), 7, "a failure is not remembered");
  });
});

describe("the manager's metrics server", () => {
  const nowhere: KubeConfig = { ...config, server: "https://127.0.0.1:1" };

  it("refuses metrics options that ask for TLS and plain HTTP at once, or twice for TLS", () => {
    const tls = { cert: "cert", key: "key" };
    assert.throws(
      () => new Manager({ config, metricsServing: "insecure-http", metricsTLS: tls }),
      /metricsTLS is set but metricsServing is "insecure-http"/,
    );
    assert.throws(
      () => new Manager({ config, metricsServing: "insecure-http", metricsCertDir: "/certs" }),
      /metricsCertDir is set but metricsServing is "insecure-http"/,
    );
    assert.throws(
      () => new Manager({ config, metricsTLS: tls, metricsCertDir: "/certs" }),
      /metricsTLS and metricsCertDir are both set/,
    );
    assert.throws(
      () => new Manager({ config, metricsServing: "http" as MetricsServing }),
      /metricsServing must be "secure" or "insecure-http", not "http"/,
    );
  });

  it(
    "by default serves HTTPS with a self-signed v3 certificate and refuses a scrape without a token",
    { timeout: 60_000 },
    async () => {
      const logs = await captureLogs();
      const stop = new AbortController();
      const mgr = new Manager({
        config: nowhere,
        metricsBindAddress: "127.0.0.1:0",
        metricsRegistry: new Registry(),
      });
      const running = mgr.start(stop.signal);
      try {
        await mgr.elected();
        const url = mgr.metricsURL!;
        assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/);
        const chain = await presentedCertificates(url);
        assert.equal(chain.length, 2, "the serving certificate and its CA");
        // A v3 certificate: only those carry extensions (here SubjectAltName).
        const served = parseCertificatePem(chain[0]);
        assert.ok(served.ips.includes("127.0.0.1"), served.ips.join());
        assert.ok(served.dnsNames.includes("localhost"), served.dnsNames.join());
        const ca = chain[1];
        const anonymous = await fetchTrusting(ca, `${url}/metrics`);
        assert.equal(anonymous.status, 401);
        assert.equal(anonymous.text, "Unauthorized\n");
        // The API server cannot be asked: 500, and the token appears in no log record.
        const secret = "planted-secret-token-0123456789";
        const unreviewed = await fetchTrusting(ca, `${url}/metrics`, {
          headers: { Authorization: `Bearer ${secret}` },
        });
        assert.equal(unreviewed.status, 500);
        assert.equal(unreviewed.text, "Authentication failed\n");
        const logged = JSON.stringify(logs.records.map((r) => [r.message, r.properties]));
        assert.match(logged, /self-signed certificate/);
        assert.ok(!logged.includes(secret), "no token in the log");
      } finally {
        stop.abort();
        await running;
        await logs.stop();
      }
    },
  );

  it(
    "serves plain HTTP to anyone only with metricsServing: insecure-http",
    { timeout: 60_000 },
    async () => {
      const stop = new AbortController();
      const registry = new Registry();
      registry.register(new Counter({ name: "plain_total", help: "p" })).inc();
      const mgr = new Manager({
        config: nowhere,
        metricsBindAddress: "127.0.0.1:0",
        metricsServing: "insecure-http",
        metricsRegistry: registry,
      });
      const running = mgr.start(stop.signal);
      try {
        await mgr.elected();
        assert.match(mgr.metricsURL!, /^http:\/\//);
        const response = await fetch(`${mgr.metricsURL}/metrics`);
        assert.equal(response.status, 200);
        assert.match(await response.text(), /^plain_total 1$/m);
      } finally {
        stop.abort();
        await running;
      }
    },
  );

  it(
    "fails to start naming the file when metricsCertDir has no certificate",
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "rudder-no-certs-"));
      try {
        const mgr = new Manager({
          config: nowhere,
          metricsBindAddress: "127.0.0.1:0",
          metricsCertDir: dir,
          metricsRegistry: new Registry(),
        });
        await assert.rejects(
          mgr.start(new AbortController().signal),
          new RegExp(`cannot read the TLS certificate ${dir}/tls\\.crt \\(ENOENT\\)`),
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
