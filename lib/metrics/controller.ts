/**
 * controller-runtime's controller and work-queue metric families, fed by the hooks of
 * {@linkcode ControllerMetrics}. Names, help texts, labels and buckets are controller-runtime
 * v0.24's (`pkg/internal/controller/metrics/metrics.go` and its work-queue metrics provider),
 * so dashboards and alerts written for Go operators work unchanged.
 *
 * @module
 */

import type { ControllerMetrics, ScrapedQueue } from "../controller/controller.ts";
import type { WorkQueueMetrics } from "../workqueue/workqueue.ts";
import { Counter, exponentialBuckets, Gauge, Histogram } from "./metric.ts";
import { family, type Registry, registry as defaultRegistry, safely } from "./registry.ts";

/**
 * controller-runtime's buckets of `controller_runtime_reconcile_time_seconds`, 5 ms to 60 s.
 *
 * @example Time your own steps on the same scale
 * ```ts
 * import { RECONCILE_TIME_BUCKETS } from "./controller.ts";
 * import { Histogram, registry } from "@rudder/operator/metrics";
 *
 * registry.register(new Histogram({
 *   name: "example_sync_seconds",
 *   help: "How long a sync step takes.",
 *   buckets: RECONCILE_TIME_BUCKETS,
 * }));
 * ```
 */
export const RECONCILE_TIME_BUCKETS: readonly number[] = Object.freeze([
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.15,
  0.2,
  0.25,
  0.3,
  0.35,
  0.4,
  0.45,
  0.5,
  0.6,
  0.7,
  0.8,
  0.9,
  1.0,
  1.25,
  1.5,
  1.75,
  2.0,
  2.5,
  3.0,
  3.5,
  4.0,
  4.5,
  5,
  6,
  7,
  8,
  9,
  10,
  15,
  20,
  25,
  30,
  40,
  50,
  60,
]);

/**
 * Buckets of `workqueue_queue_duration_seconds` and `workqueue_work_duration_seconds`:
 * `prometheus.ExponentialBuckets(10e-9, 10, 12)`, 10 ns to 1000 s.
 *
 * @example
 * ```ts
 * import { WORKQUEUE_DURATION_BUCKETS } from "./controller.ts";
 *
 * console.log(WORKQUEUE_DURATION_BUCKETS.length); // 12
 * ```
 */
export const WORKQUEUE_DURATION_BUCKETS: readonly number[] = Object.freeze(
  exponentialBuckets(10e-9, 10, 12),
);

/**
 * The results `controller_runtime_reconcile_total` counts, each started at 0 per controller.
 *
 * @example
 * ```ts
 * import { controllerMetrics, RECONCILE_RESULTS } from "./controller.ts";
 *
 * const metrics = controllerMetrics();
 * for (const result of RECONCILE_RESULTS) metrics.reconcileTotal("imported", result);
 * ```
 */
export const RECONCILE_RESULTS = ["error", "requeue_after", "requeue", "success"] as const;

type ControllerLabel = "controller";
type QueueLabel = "name" | "controller";

/** Every family, made once per registry. */
interface Families {
  reconcileTotal: Counter<"controller" | "result">;
  reconcileErrors: Counter<ControllerLabel>;
  terminalReconcileErrors: Counter<ControllerLabel>;
  reconcilePanics: Counter<ControllerLabel>;
  reconcileTimeouts: Counter<ControllerLabel>;
  reconcileTime: Histogram<ControllerLabel>;
  maxConcurrentReconciles: Gauge<ControllerLabel>;
  activeWorkers: Gauge<ControllerLabel>;
  depth: Gauge<QueueLabel | "priority">;
  adds: Counter<QueueLabel>;
  queueDuration: Histogram<QueueLabel>;
  workDuration: Histogram<QueueLabel>;
  unfinishedWork: Gauge<QueueLabel>;
  longestRunningProcessor: Gauge<QueueLabel>;
  retries: Counter<QueueLabel>;
}

/**
 * The hooks {@linkcode controllerMetrics} returns: every hook of {@linkcode ControllerMetrics},
 * plus `reconcileTimeouts` for controller-runtime's `controller_runtime_reconcile_timeouts_total`.
 *
 * @example
 * ```ts
 * import { controllerMetrics, type ControllerRuntimeMetrics } from "./controller.ts";
 * import { Registry } from "@rudder/operator/metrics";
 *
 * const metrics: ControllerRuntimeMetrics = controllerMetrics(new Registry());
 * metrics.reconcileTotal("web", "success");
 * ```
 */
export interface ControllerRuntimeMetrics extends Required<ControllerMetrics> {
  /**
   * `controller_runtime_reconcile_timeouts_total`: a reconcile was cut off by the controller's
   * `reconciliationTimeout` (not by the reconciler's own deadlines).
   */
  reconcileTimeouts(controller: string): void;
}

const hooks = new WeakMap<Registry, { families: Families; metrics: ControllerRuntimeMetrics }>();

function makeFamilies(registry: Registry, queues: Map<string, ScrapedQueue>): Families {
  const controller = ["controller"] as const;
  const queue = ["name", "controller"] as const;
  const counter = <T extends string>(name: string, help: string, labelNames: readonly T[]) =>
    family(registry, name, () => new Counter<T>({ name, help, labelNames }));
  const gauge = <T extends string>(name: string, help: string, labelNames: readonly T[]) =>
    family(registry, name, () => new Gauge<T>({ name, help, labelNames }));
  const histogram = <T extends string>(
    name: string,
    help: string,
    labelNames: readonly T[],
    buckets: readonly number[],
  ) =>
    family(
      registry,
      name,
      () => new Histogram<T>({ name, help, labelNames, buckets }),
    );
  /** A gauge read from the registered queues at scrape time. */
  const queueGauge = (name: string, help: string, read: (q: ScrapedQueue) => number) =>
    family(registry, name, () =>
      new Gauge<QueueLabel>({
        name,
        help,
        labelNames: queue,
        collect(gauge) {
          for (const [controller, scraped] of queues) {
            safely(name, () => gauge.set({ name: controller, controller }, read(scraped)))();
          }
        },
      }));

  return {
    reconcileTotal: counter(
      "controller_runtime_reconcile_total",
      "Total number of reconciliations per controller",
      ["controller", "result"],
    ),
    reconcileErrors: counter(
      "controller_runtime_reconcile_errors_total",
      "Total number of reconciliation errors per controller",
      controller,
    ),
    terminalReconcileErrors: counter(
      "controller_runtime_terminal_reconcile_errors_total",
      "Total number of terminal reconciliation errors per controller",
      controller,
    ),
    reconcilePanics: counter(
      "controller_runtime_reconcile_panics_total",
      "Total number of reconciliation panics per controller",
      controller,
    ),
    reconcileTimeouts: counter(
      "controller_runtime_reconcile_timeouts_total",
      "Total number of reconciliation timeouts per controller",
      controller,
    ),
    reconcileTime: histogram(
      "controller_runtime_reconcile_time_seconds",
      "Length of time per reconciliation per controller",
      controller,
      RECONCILE_TIME_BUCKETS,
    ),
    maxConcurrentReconciles: gauge(
      "controller_runtime_max_concurrent_reconciles",
      "Maximum number of concurrent reconciles per controller",
      controller,
    ),
    activeWorkers: gauge(
      "controller_runtime_active_workers",
      "Number of currently used workers per controller",
      controller,
    ),
    depth: gauge(
      "workqueue_depth",
      "Current depth of workqueue by workqueue and priority",
      ["name", "controller", "priority"],
    ),
    adds: counter("workqueue_adds_total", "Total number of adds handled by workqueue", queue),
    queueDuration: histogram(
      "workqueue_queue_duration_seconds",
      "How long in seconds an item stays in workqueue before being requested",
      queue,
      WORKQUEUE_DURATION_BUCKETS,
    ),
    workDuration: histogram(
      "workqueue_work_duration_seconds",
      "How long in seconds processing an item from workqueue takes.",
      queue,
      WORKQUEUE_DURATION_BUCKETS,
    ),
    unfinishedWork: queueGauge(
      "workqueue_unfinished_work_seconds",
      "How many seconds of work has been done that is in progress and hasn't been observed by " +
        "work_duration. Large values indicate stuck threads. One can deduce the number of stuck " +
        "threads by observing the rate at which this increases.",
      (q) => q.unfinishedWorkSeconds(),
    ),
    longestRunningProcessor: queueGauge(
      "workqueue_longest_running_processor_seconds",
      "How many seconds has the longest running processor for workqueue been running.",
      (q) => q.longestRunningProcessorSeconds(),
    ),
    retries: counter(
      "workqueue_retries_total",
      "Total number of items added to the workqueue with a non-zero delay (rate-limited " +
        "requeues, explicit RequeueAfter or AddAfter calls)",
      queue,
    ),
  };
}

/** One controller's series of the controller-runtime families, as handles. */
interface ControllerSeries {
  reconcileTotal(result: string): void;
  reconcileErrors: { inc(): void };
  terminalReconcileErrors: { inc(): void };
  reconcilePanics: { inc(): void };
  reconcileTimeouts: { inc(): void };
  reconcileTime: { observe(seconds: number): void };
  activeWorkers: { set(value: number): void };
  maxConcurrentReconciles: { set(value: number): void };
}

type CountedSeries =
  | "reconcileErrors"
  | "terminalReconcileErrors"
  | "reconcilePanics"
  | "reconcileTimeouts";

/**
 * Hooks that feed controller-runtime's controller and work-queue metric families on `registry`
 * (default: the global {@linkcode registry}); pass them as a controller's `metrics` option. The
 * families are registered on the first call; later calls with the same registry return the same
 * hooks. Like controller-runtime, each controller's counters start at 0 (every `result` of
 * `controller_runtime_reconcile_total` among them) when the controller first reports, and its
 * work queue's series when the queue is made. `workqueue_depth` carries `priority=""`: the queue
 * reports its whole depth, as controller-runtime's queue without priorities does.
 *
 * @example
 * ```ts
 * import { controllerMetrics } from "./controller.ts";
 * import { Controller } from "@rudder/operator/controller";
 * import { Registry } from "@rudder/operator/metrics";
 *
 * const registry = new Registry();
 * const controller = new Controller("web", () => {}, { metrics: controllerMetrics(registry) });
 * console.log(registry.get("controller_runtime_reconcile_total")?.expose());
 * // controller_runtime_reconcile_total{controller="web",result="error"} 0 … and the others
 * ```
 */
export function controllerMetrics(registry: Registry = defaultRegistry): ControllerRuntimeMetrics {
  const known = hooks.get(registry);
  if (
    known && registry.get("controller_runtime_reconcile_total") === known.families.reconcileTotal
  ) {
    return known.metrics;
  }
  const queues = new Map<string, ScrapedQueue>();
  const f = makeFamilies(registry, queues);
  const perController = new Map<string, ControllerSeries>();
  /**
   * The controller's series, as handles (a reconcile costs a map lookup, not a label check and
   * key per metric); the first call is controller-runtime's `initMetrics`: every per-controller
   * counter at 0.
   */
  const of = (controller: string): ControllerSeries => {
    let series = perController.get(controller);
    if (series) return series;
    const byResult = new Map<string, { inc(): void }>(
      RECONCILE_RESULTS.map((result) => [result, f.reconcileTotal.labels({ controller, result })]),
    );
    // These two show once reported, as in controller-runtime (not part of initMetrics).
    let time: { observe(seconds: number): void } | undefined;
    let maxConcurrent: { set(value: number): void } | undefined;
    series = {
      reconcileTotal: (result) =>
        (byResult.get(result) ?? f.reconcileTotal.labels({ controller, result })).inc(),
      reconcileErrors: f.reconcileErrors.labels({ controller }),
      terminalReconcileErrors: f.terminalReconcileErrors.labels({ controller }),
      reconcilePanics: f.reconcilePanics.labels({ controller }),
      reconcileTimeouts: f.reconcileTimeouts.labels({ controller }),
      reconcileTime: {
        observe: (seconds) => (time ??= f.reconcileTime.labels({ controller })).observe(seconds),
      },
      activeWorkers: f.activeWorkers.labels({ controller }),
      maxConcurrentReconciles: {
        set: (value) =>
          (maxConcurrent ??= f.maxConcurrentReconciles.labels({ controller })).set(value),
      },
    };
    series.activeWorkers.set(0);
    perController.set(controller, series);
    return series;
  };
  const start = (controller: string) => void of(controller);
  /** A hook that counts in the controller's series `which`. */
  const count = (name: string, which: CountedSeries) =>
    safely(name, (controller: string) => of(controller)[which].inc());
  const metrics: ControllerRuntimeMetrics = {
    reconcileTotal: safely(
      "controller_runtime_reconcile_total",
      (controller, result) => of(controller).reconcileTotal(result),
    ),
    reconcileErrors: count("controller_runtime_reconcile_errors_total", "reconcileErrors"),
    terminalReconcileErrors: count(
      "controller_runtime_terminal_reconcile_errors_total",
      "terminalReconcileErrors",
    ),
    reconcilePanics: count("controller_runtime_reconcile_panics_total", "reconcilePanics"),
    reconcileTimeouts: count("controller_runtime_reconcile_timeouts_total", "reconcileTimeouts"),
    reconcileTime: safely(
      "controller_runtime_reconcile_time_seconds",
      (controller, seconds) => of(controller).reconcileTime.observe(seconds),
    ),
    activeWorkers: safely(
      "controller_runtime_active_workers",
      (controller, count) => of(controller).activeWorkers.set(count),
    ),
    maxConcurrentReconciles: safely(
      "controller_runtime_max_concurrent_reconciles",
      (controller, count) => of(controller).maxConcurrentReconciles.set(count),
    ),
    workQueue(controller: string): WorkQueueMetrics {
      start(controller);
      // client-go names the queue; controller-runtime names it after the controller and adds
      // the `controller` label with the same value. Like client-go, every series of the queue
      // exists (at 0) from the queue's making on.
      const labels = { name: controller, controller };
      const depth = f.depth.labels({ ...labels, priority: "" });
      const adds = f.adds.labels(labels);
      const queueDuration = f.queueDuration.labels(labels);
      const workDuration = f.workDuration.labels(labels);
      const retries = f.retries.labels(labels);
      f.unfinishedWork.labels(labels);
      f.longestRunningProcessor.labels(labels);
      return {
        adds: safely("workqueue_adds_total", () => adds.inc()),
        depth: safely("workqueue_depth", (n: number) => depth.set(n)),
        latency: safely(
          "workqueue_queue_duration_seconds",
          (seconds: number) => queueDuration.observe(seconds),
        ),
        workDuration: safely(
          "workqueue_work_duration_seconds",
          (seconds: number) => workDuration.observe(seconds),
        ),
        retries: safely("workqueue_retries_total", () => retries.inc()),
      };
    },
    registerQueue(controller: string, queue: ScrapedQueue): void {
      start(controller);
      queues.set(controller, queue);
    },
  };
  hooks.set(registry, { families: f, metrics });
  return metrics;
}
