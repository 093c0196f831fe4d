/**
 * The Grafana dashboard `rudder manifests` writes for an operator: one dashboard over the metrics
 * every Rudder manager serves (controller-runtime's names: reconciles, work queues, REST client,
 * leader election, webhooks, process; and Rudder's informer health), plus the shard ring's when
 * the operator is sharded. It comes as a JSON file to import by hand and as a ConfigMap with the
 * Grafana sidecar's `grafana_dashboard: "1"` label, so a Grafana that watches ConfigMaps (the
 * kube-prometheus-stack chart's does) loads it by itself.
 *
 * Every query selects `namespace="$namespace", job="$job"` (template variables filled from the
 * operator's own series) and reads from the `$datasource` Prometheus. Each panel's description
 * says what it shows and what to do when it turns red; docs/guides/tracing-and-dashboards.md says
 * the same at length. The same input gives the same bytes.
 *
 * @module
 */

import { memoryMiB } from "./sizing.ts";

/** What the dashboard is made for. */
export interface DashboardOptions {
  /** The operator's name: the dashboard's title, uid and file name. */
  name: string;
  /** The namespace the operator runs in; the ConfigMap goes there. */
  namespace: string;
  /** Whether the operator serves webhooks: adds the webhook panels. Default false. */
  webhooks?: boolean;
  /** Whether the operator's replicas split its objects in a shard ring. Default false. */
  sharded?: boolean;
  /**
   * The Deployment's memory limit in MiB, at 90 % of which the memory panel turns red. Default:
   * the generated Deployment's for a Deno or Bun image (`cli/sizing.ts`).
   */
  memoryLimitMiB?: number;
}

/** One query of a panel: a PromQL expression and its legend. */
interface Query {
  expr: string;
  legend: string;
}

/** A panel before layout. */
interface PanelSpec {
  title: string;
  /** What it shows, then what to do when it is red. */
  description: string;
  queries: Query[];
  unit: string;
  /** The value from which the panel is red. */
  red?: number;
  /** The value below which the panel is red. */
  redBelow?: number;
  /** `stat` for a single current value per series; default `timeseries`. */
  kind?: "timeseries" | "stat";
}

/** A titled row of panels. */
interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

/** The label matchers every query carries. */
const SELECT = 'namespace="$namespace", job="$job"';
/** Grafana's rate window: at least four scrape intervals. */
const WINDOW = "$__rate_interval";
/** The datasource every panel and variable reads from. */
const DATASOURCE = { type: "prometheus", uid: "${datasource}" } as const;
/** The percentiles of every latency panel. */
const QUANTILES = [0.5, 0.9, 0.99];
/**
 * The generated Deployment's CPU limit (manifests.ts): the CPU panel turns red at 90 % of it, as
 * the memory panel at 90 % of the memory limit, before the kubelet throttles or kills the operator.
 */
const CPU_LIMIT_CORES = 0.5;

/** `metric{SELECT, extra}`. */
function sel(metric: string, extra = ""): string {
  return `${metric}{${SELECT}${extra ? `, ${extra}` : ""}}`;
}

/** `sum by (by) (rate(metric{…}[window]))`. */
function rate(metric: string, by: string, extra = ""): string {
  return `sum by (${by}) (rate(${sel(metric, extra)}[${WINDOW}]))`;
}

/** p50, p90 and p99 of a histogram per `by`, and its mean from `_sum` and `_count`. */
function latency(histogram: string, by: string, legend: string): Query[] {
  return [
    ...QUANTILES.map((q) => ({
      expr: `histogram_quantile(${q}, sum by (${by}, le) (rate(${
        sel(`${histogram}_bucket`)
      }[${WINDOW}])))`,
      legend: `p${q * 100} ${legend}`,
    })),
    {
      expr: `${rate(`${histogram}_sum`, by)} / ${rate(`${histogram}_count`, by)}`,
      legend: `mean ${legend}`,
    },
  ];
}

function reconcileRow(): RowSpec {
  return {
    title: "Reconciles",
    panels: [
      {
        title: "Reconcile rate",
        description: "Reconciles per second by controller and result (success, error, requeue, " +
          "requeue_after). No red: compare with the event rate you expect.",
        queries: [{
          expr: rate("controller_runtime_reconcile_total", "controller, result"),
          legend: "{{controller}} {{result}}",
        }],
        unit: "ops",
      },
      {
        title: "Reconcile errors",
        description: "Errors returned by reconcilers, terminal errors, panics and timeouts per " +
          "second. Red from 0.001/s: read the operator's logs, which name each failing object.",
        queries: [
          {
            expr: rate("controller_runtime_reconcile_errors_total", "controller"),
            legend: "{{controller}} errors",
          },
          {
            expr: rate("controller_runtime_terminal_reconcile_errors_total", "controller"),
            legend: "{{controller}} terminal",
          },
          {
            expr: rate("controller_runtime_reconcile_panics_total", "controller"),
            legend: "{{controller}} panics",
          },
          {
            expr: rate("controller_runtime_reconcile_timeouts_total", "controller"),
            legend: "{{controller}} timeouts",
          },
        ],
        unit: "ops",
        red: 0.001,
      },
      {
        title: "Reconcile error ratio",
        description: "Share of reconciles that ended in an error. Red above 10 %: read the " +
          "logs of the failing controller (each error is logged with the object's key).",
        queries: [{
          expr: `${rate("controller_runtime_reconcile_total", "controller", 'result="error"')} / ${
            rate("controller_runtime_reconcile_total", "controller")
          }`,
          legend: "{{controller}}",
        }],
        unit: "percentunit",
        red: 0.1,
      },
      {
        title: "Reconcile latency",
        description: "p50, p90 and p99 of the time one reconcile takes, and the mean, by " +
          "controller. Red above 5 s: look for slow API calls (REST client panels) or slow " +
          "external calls in the reconciler.",
        queries: latency(
          "controller_runtime_reconcile_time_seconds",
          "controller",
          "{{controller}}",
        ),
        unit: "s",
        red: 5,
      },
      {
        title: "Workers in use",
        description: "Reconciles running now against maxConcurrentReconciles, by controller. " +
          "No red: when busy workers stay at the maximum while the queue grows, raise " +
          "maxConcurrentReconciles or make reconciles faster.",
        queries: [
          {
            expr: `sum by (controller) (${sel("controller_runtime_active_workers")})`,
            legend: "{{controller}} active",
          },
          {
            expr: `sum by (controller) (${sel("controller_runtime_max_concurrent_reconciles")})`,
            legend: "{{controller}} max",
          },
        ],
        unit: "short",
      },
    ],
  };
}

function workQueueRow(): RowSpec {
  return {
    title: "Work queues",
    panels: [
      {
        title: "Work queue depth",
        description: "Requests waiting for a worker, by queue (one per controller). Red above " +
          "100: the controller falls behind; see Workers in use and Reconcile latency.",
        queries: [{ expr: `sum by (name) (${sel("workqueue_depth")})`, legend: "{{name}}" }],
        unit: "short",
        red: 100,
      },
      {
        title: "Work queue adds",
        description: "Requests added per second, by queue: the events that reach the " +
          "controller after predicates. No red.",
        queries: [{ expr: rate("workqueue_adds_total", "name"), legend: "{{name}}" }],
        unit: "ops",
      },
      {
        title: "Work queue latency",
        description: "How long a request waits in the queue before a worker takes it: p50, " +
          "p90, p99 and mean. Red above 10 s: too few workers for the load, or a rate limiter " +
          "holding requests back.",
        queries: latency("workqueue_queue_duration_seconds", "name", "{{name}}"),
        unit: "s",
        red: 10,
      },
      {
        title: "Work duration",
        description: "How long processing a request takes once a worker has it: p50, p90, p99 " +
          "and mean. Red above 5 s: as for Reconcile latency.",
        queries: latency("workqueue_work_duration_seconds", "name", "{{name}}"),
        unit: "s",
        red: 5,
      },
      {
        title: "Work queue retries",
        description: "Requests re-added with a delay per second (errors with backoff, requeue " +
          "and requeueAfter), by queue. Red above 1/s: a reconcile keeps failing or asking " +
          "again; the error panels and logs say which.",
        queries: [{ expr: rate("workqueue_retries_total", "name"), legend: "{{name}}" }],
        unit: "ops",
        red: 1,
      },
      {
        title: "Unfinished work",
        description: "Seconds of work in progress not yet done, and the longest-running " +
          "reconcile, by queue. Red above 60 s: a reconcile is stuck (a call without a deadline?).",
        queries: [
          {
            expr: `sum by (name) (${sel("workqueue_unfinished_work_seconds")})`,
            legend: "{{name}} unfinished",
          },
          {
            expr: `max by (name) (${sel("workqueue_longest_running_processor_seconds")})`,
            legend: "{{name}} longest",
          },
        ],
        unit: "s",
        red: 60,
      },
    ],
  };
}

function apiRow(): RowSpec {
  return {
    title: "API server and leader election",
    panels: [
      {
        title: "REST client requests by code",
        description: "Requests to the API server per second by HTTP status (<error>: no " +
          "answer). No red; see the error ratio.",
        queries: [{ expr: rate("rest_client_requests_total", "code"), legend: "{{code}}" }],
        unit: "reqps",
      },
      {
        title: "REST client requests by verb",
        description: "Requests to the API server per second by HTTP method. No red: a climbing " +
          "GET or LIST rate means reads bypass the cache (mgr.getAPIReader) or relists.",
        queries: [{ expr: rate("rest_client_requests_total", "method"), legend: "{{method}}" }],
        unit: "reqps",
      },
      {
        title: "REST client error ratio",
        description: "Share of requests answered 5xx or 429, or not answered. Red above 5 %: " +
          "the API server is overloaded or unreachable; check its health and the operator's " +
          "network policy.",
        queries: [{
          expr:
            `sum(rate(${
              sel("rest_client_requests_total", 'code=~"5..|429|<error>"')
            }[${WINDOW}])) / ` +
            `sum(rate(${sel("rest_client_requests_total")}[${WINDOW}]))`,
          legend: "errors",
        }],
        unit: "percentunit",
        red: 0.05,
      },
      {
        title: "Leaders",
        description: "How many replicas hold each leader-election lease now. Red unless " +
          "exactly 1: 0 means no replica reconciles (check the Lease and the pods' logs); more " +
          "than 1 is a split brain (clock skew, or two Deployments with one leaderElectionID).",
        queries: [{
          expr: `sum by (name) (${sel("leader_election_master_status")})`,
          legend: "{{name}}",
        }],
        unit: "short",
        redBelow: 1,
        red: 2,
        kind: "stat",
      },
      {
        title: "Leader by instance",
        description: "1 for the replica that leads, 0 for the ones standing by. No red: a " +
          "leader that changes often points at missed renewals (API latency, CPU throttling).",
        queries: [{
          expr: `max by (instance, name) (${sel("leader_election_master_status")})`,
          legend: "{{instance}} {{name}}",
        }],
        unit: "short",
      },
    ],
  };
}

function webhookRow(): RowSpec {
  return {
    title: "Webhooks",
    panels: [
      {
        title: "Webhook requests by code",
        description: "Admission and conversion requests per second by path and HTTP status. " +
          "No red; a non-200 code means the request did not reach the handler: read the logs.",
        queries: [{
          expr: rate("controller_runtime_webhook_requests_total", "webhook, code"),
          legend: "{{webhook}} {{code}}",
        }],
        unit: "reqps",
      },
      {
        title: "Webhook latency",
        description: "p50, p90, p99 and mean time to answer a webhook request, by path. Red " +
          "above 1 s: the API server waits for this on every write (and gives up at the " +
          "webhook's timeoutSeconds); make the handler faster or cache what it reads.",
        queries: latency("controller_runtime_webhook_latency_seconds", "webhook", "{{webhook}}"),
        unit: "s",
        red: 1,
      },
      {
        title: "Webhook requests in flight",
        description: "Webhook requests being answered now, by path. No red: a number that " +
          "only grows means handlers hang.",
        queries: [{
          expr: `sum by (webhook) (${sel("controller_runtime_webhook_requests_in_flight")})`,
          legend: "{{webhook}}",
        }],
        unit: "short",
      },
    ],
  };
}

function informerRow(): RowSpec {
  return {
    title: "Informers",
    panels: [
      {
        title: "Informer health",
        description: "1 while an informer has listed and its watch works, 0 while it is " +
          "failing, by watch (kind, namespace, selectors). Red at 0: check the operator's RBAC " +
          "(list and watch on the kind) and its logs; readiness fails after 60 s of this.",
        queries: [{
          expr: `min by (name) (${sel("rudder_informer_healthy")})`,
          legend: "{{name}}",
        }],
        unit: "short",
        redBelow: 1,
        kind: "stat",
      },
      {
        title: "Informer relists",
        description: "Lists per watch over the window: after the first, each is a relist " +
          "(resourceVersion expired, watch not resumable). Red above 1: relists are expensive " +
          "for the API server; look for watch errors in the logs.",
        queries: [{
          expr: `sum by (name) (increase(${sel("rudder_informer_lists_total")}[${WINDOW}]))`,
          legend: "{{name}}",
        }],
        unit: "short",
        red: 1,
      },
      {
        title: "Informer watch restarts",
        description: "Watches started per second. A healthy watch restarts every 4 to 5 " +
          "minutes. Red above one every 20 s: something ends watches early (a proxy's idle " +
          "timeout, API server restarts).",
        queries: [{ expr: rate("rudder_informer_watches_total", "name"), legend: "{{name}}" }],
        unit: "ops",
        red: 0.05,
      },
    ],
  };
}

function processRow(memoryLimitMiB: number): RowSpec {
  return {
    title: "Process",
    panels: [
      {
        title: "Memory",
        description:
          `Resident memory by instance. Red at 90 % of the Deployment's ${memoryLimitMiB} MiB ` +
          "limit: the kubelet kills the pod at the limit; raise it, or cache less (cache " +
          "byObject, label selectors, metadata-only watches).",
        queries: [{
          expr: `sum by (instance) (${sel("process_resident_memory_bytes")})`,
          legend: "{{instance}}",
        }],
        unit: "bytes",
        red: 0.9 * memoryLimitMiB * 2 ** 20,
      },
      {
        title: "CPU",
        description: "CPU cores used by instance. Red at 90 % of the Deployment's 500m limit: " +
          "the operator is throttled, which delays lease renewals and reconciles.",
        queries: [{
          expr: `sum by (instance) (rate(${sel("process_cpu_seconds_total")}[${WINDOW}]))`,
          legend: "{{instance}}",
        }],
        unit: "short",
        red: 0.9 * CPU_LIMIT_CORES,
      },
      {
        title: "Open file descriptors",
        description: "Open file descriptors as a share of the limit. Red above 80 %: " +
          "connections or watches leak.",
        queries: [{
          expr: `sum by (instance) (${sel("process_open_fds")}) / sum by (instance) (${
            sel("process_max_fds")
          })`,
          legend: "{{instance}}",
        }],
        unit: "percentunit",
        red: 0.8,
      },
      {
        title: "Restarts",
        description: "Process starts per instance over the last hour. Red on any: read the " +
          "previous container's logs (kubectl logs --previous) and the pod's last state.",
        queries: [{
          expr: `sum by (instance) (changes(${sel("process_start_time_seconds")}[1h]))`,
          legend: "{{instance}}",
        }],
        unit: "short",
        red: 1,
        kind: "stat",
      },
    ],
  };
}

function shardingRow(): RowSpec {
  return {
    title: "Sharding",
    panels: [
      {
        title: "Ring members",
        description: "Replicas in each shard ring. No red: compare with the Deployment's " +
          "replicas; fewer means a replica lost its shard Lease.",
        queries: [{
          expr: `max by (ring) (${sel("rudder_shard_ring_members")})`,
          legend: "{{ring}}",
        }],
        unit: "short",
      },
      {
        title: "Shard membership",
        description: "1 while a replica holds its shard Lease, by ring and shard. Red at 0: " +
          "the shard's objects wait for the ring to move them; check the replica's logs and " +
          "Leases.",
        queries: [{
          expr: `max by (ring, shard) (${sel("rudder_shard_member")})`,
          legend: "{{ring}} {{shard}}",
        }],
        unit: "short",
        redBelow: 1,
        kind: "stat",
      },
      {
        title: "Objects per shard",
        description: "Objects each shard caches, by ring, shard and kind. No red: a shard far " +
          "above the others is a hot owner (owned objects follow their owner).",
        queries: [{
          expr: `sum by (ring, shard, kind) (${sel("rudder_shard_objects")})`,
          legend: "{{ring}} {{shard}} {{kind}}",
        }],
        unit: "short",
      },
      {
        title: "Shard moves and drains",
        description: "Objects moved by the sharder, drains acknowledged by shards, and objects " +
          "the other replicas' fallback assigned while the sharder was gone, per second. Red " +
          "above 10/s: the ring keeps changing (replicas flapping).",
        queries: [
          {
            expr: rate("rudder_shard_moves_total", "ring, kind"),
            legend: "{{ring}} {{kind}} moves",
          },
          {
            expr: rate("rudder_shard_drains_total", "ring, kind"),
            legend: "{{ring}} {{kind}} drains",
          },
          {
            expr: rate("rudder_shard_fallback_assignments_total", "ring, kind, reason"),
            legend: "{{ring}} {{kind}} fallback {{reason}}",
          },
        ],
        unit: "ops",
        red: 10,
      },
      {
        title: "Drain duration",
        description: "p50, p90, p99 and mean time from the drain mark to its acknowledgement. " +
          "Red above 30 s: a shard waits for a slow in-flight reconcile, or is gone.",
        queries: latency("rudder_shard_drain_duration_seconds", "ring", "{{ring}}"),
        unit: "s",
        red: 30,
      },
    ],
  };
}

/** The rows of the dashboard for `options`, in order. */
function rows(options: DashboardOptions): RowSpec[] {
  return [
    reconcileRow(),
    workQueueRow(),
    apiRow(),
    ...(options.webhooks ? [webhookRow()] : []),
    informerRow(),
    ...(options.sharded ? [shardingRow()] : []),
    processRow(options.memoryLimitMiB ?? memoryMiB().limit),
  ];
}

/** A Grafana panel from a spec, at `gridPos`. */
function panel(spec: PanelSpec, id: number, gridPos: Record<string, number>) {
  // Grafana's steps: each colour holds from its value up to the next step's.
  const thresholds = {
    mode: "absolute",
    steps: [
      ...(spec.redBelow === undefined
        ? [{ color: "green", value: null }]
        : [{ color: "red", value: null }, { color: "green", value: spec.redBelow }]),
      ...(spec.red === undefined ? [] : [{ color: "red", value: spec.red }]),
    ],
  };
  const hasRed = spec.red !== undefined || spec.redBelow !== undefined;
  const targets = spec.queries.map((query, i) => ({
    datasource: DATASOURCE,
    expr: query.expr,
    legendFormat: query.legend,
    refId: String.fromCharCode(65 + i),
  }));
  if (spec.kind === "stat") {
    return {
      id,
      type: "stat",
      title: spec.title,
      description: spec.description,
      datasource: DATASOURCE,
      gridPos,
      targets,
      fieldConfig: { defaults: { unit: spec.unit, thresholds, color: { mode: "thresholds" } } },
      options: {
        colorMode: "background",
        graphMode: "none",
        reduceOptions: { calcs: ["lastNotNull"], fields: "", values: false },
        textMode: "value_and_name",
      },
    };
  }
  return {
    id,
    type: "timeseries",
    title: spec.title,
    description: spec.description,
    datasource: DATASOURCE,
    gridPos,
    targets,
    fieldConfig: {
      defaults: {
        unit: spec.unit,
        min: 0,
        thresholds,
        color: { mode: "palette-classic" },
        custom: {
          drawStyle: "line",
          fillOpacity: 10,
          showPoints: "never",
          thresholdsStyle: { mode: hasRed ? "line+area" : "off" },
        },
      },
      overrides: [],
    },
    options: {
      legend: { displayMode: "list", placement: "bottom", showLegend: true },
      tooltip: { mode: "multi", sort: "desc" },
    },
  };
}

/** A query template variable over the label `label` of the operator's reconcile counter. */
function labelVariable(name: string, label: string, query: string) {
  return {
    name,
    label,
    type: "query",
    datasource: DATASOURCE,
    definition: query,
    query,
    refresh: 2,
    includeAll: false,
    multi: false,
    sort: 1,
    current: {},
    options: [],
  };
}

/**
 * The dashboard for `options`, as Grafana's JSON model: template variables `datasource`
 * (Prometheus), `namespace` and `job`; a row per area (reconciles, work queues, API server and
 * leader election, webhooks when there are any, informers, sharding when sharded, process).
 */
export function operatorDashboard(options: DashboardOptions): Record<string, unknown> {
  const panels: Record<string, unknown>[] = [];
  let y = 0;
  let id = 1;
  for (const row of rows(options)) {
    panels.push({
      id: id++,
      type: "row",
      title: row.title,
      collapsed: false,
      gridPos: { h: 1, w: 24, x: 0, y: y++ },
      panels: [],
    });
    // Three panels a line, eight units high.
    row.panels.forEach((spec, i) => {
      const gridPos = { h: 8, w: 8, x: (i % 3) * 8, y: y + Math.floor(i / 3) * 8 };
      panels.push(panel(spec, id++, gridPos));
    });
    y += Math.ceil(row.panels.length / 3) * 8;
  }
  const reconciles = "controller_runtime_reconcile_total";
  return {
    uid: `rudder-${options.name}`.slice(0, 40),
    title: `${options.name} operator`,
    description: "Generated by `rudder manifests`; changes here are overwritten. Panels for " +
      "what the operator serves on /metrics.",
    tags: ["rudder", "kubernetes", "operator"],
    editable: true,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    refresh: "30s",
    time: { from: "now-1h", to: "now" },
    timezone: "browser",
    templating: {
      list: [
        {
          name: "datasource",
          label: "Data source",
          type: "datasource",
          query: "prometheus",
          current: {},
          refresh: 1,
          options: [],
        },
        labelVariable("namespace", "Namespace", `label_values(${reconciles}, namespace)`),
        labelVariable(
          "job",
          "Job",
          `label_values(${reconciles}{namespace="$namespace"}, job)`,
        ),
      ],
    },
    annotations: { list: [] },
    panels,
  };
}

/**
 * Every PromQL expression of `dashboard` as Prometheus receives it: its panels' queries, and the
 * series selectors of its `label_values(…)` variables, with Grafana's variables filled in
 * (`$__rate_interval` as `5m`, others as their names), for a PromQL parser to check.
 */
export function dashboardExpressions(dashboard: Record<string, unknown>): string[] {
  const fill = (expr: string) =>
    expr.replaceAll("$__rate_interval", "5m").replace(/\$(\w+)/g, (_, name: string) => name);
  const exprs: string[] = [];
  for (const panel of dashboard.panels as { targets?: { expr: string }[] }[]) {
    for (const target of panel.targets ?? []) exprs.push(fill(target.expr));
  }
  const variables = (dashboard.templating as { list: { definition?: string }[] }).list;
  for (const variable of variables) {
    const match = variable.definition?.match(/^label_values\((.+),\s*\w+\)$/);
    if (match) exprs.push(fill(match[1]));
  }
  return exprs;
}

/** A file of the manifests: its path under the output directory and its content. */
type File = [path: string, content: string];

/**
 * The dashboard as the manifests carry it: `configMap`, at `grafana/dashboards_configmap.yaml`,
 * holds its JSON labelled for Grafana's sidecar (a resource of the kustomization); `json` is the
 * same JSON at `grafana/<name>.json`, to import by hand (not a resource). `labels` are the
 * labels every generated object carries.
 */
export function dashboardManifests(
  options: DashboardOptions,
  labels: Record<string, string> = {},
): { configMap: [path: string, object: unknown]; json: File } {
  const file = `${options.name}.json`;
  const json = `${JSON.stringify(operatorDashboard(options), null, 2)}\n`;
  return {
    configMap: ["grafana/dashboards_configmap.yaml", {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: `${options.name}-grafana-dashboards`,
        namespace: options.namespace,
        labels: { ...labels, grafana_dashboard: "1" },
      },
      data: { [file]: json },
    }],
    json: [`grafana/${file}`, json],
  };
}
