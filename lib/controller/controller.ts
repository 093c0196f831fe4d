/**
 * The controller: sources fill a rate-limited work queue, and `maxConcurrentReconciles`
 * workers call the reconciler, with controller-runtime's semantics for results and errors:
 *
 * - a thrown error (anything thrown, any rejected promise) ⇒ rate-limited requeue;
 * - a {@linkcode TerminalError} ⇒ no requeue, logged and counted;
 * - `{ requeueAfter: ms }` ⇒ forget the failures, queue again after `ms`;
 * - `{ requeue: true }` ⇒ rate-limited requeue;
 * - anything else ⇒ forget the failures, done.
 *
 * (In Go a reconcile may return a result together with an error, and the result is then
 * ignored with a warning; here a throw carries no result, so there is nothing to ignore.)
 *
 * A key is never reconciled twice at once: the work queue hands it out again only after the
 * reconcile before has finished. Workers start once every source has synced.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import {
  isTerminalError,
  type ReconcileFunc,
  type Reconciler,
  type Request,
  requestKey,
  type Result,
} from "../reconcile/reconcile.ts";
import type { Logger } from "../util/logging.ts";
import type { Runnable } from "../util/runnable.ts";
import type { RateLimiter } from "../workqueue/rate_limiter.ts";
import type { Source } from "../source/source.ts";
import { type Clock } from "../util/clock.ts";
import { WorkQueue, type WorkQueueMetrics } from "../workqueue/workqueue.ts";

/** Hooks for controller-runtime's controller metrics; every one optional. */
export interface ControllerMetrics {
  /** `controller_runtime_reconcile_total{result}`: success, error, requeue or requeue_after. */
  reconcileTotal?(
    controller: string,
    result: "success" | "error" | "requeue" | "requeue_after",
  ): void;
  /** `controller_runtime_reconcile_errors_total`. */
  reconcileErrors?(controller: string): void;
  /** `controller_runtime_terminal_reconcile_errors_total`. */
  terminalReconcileErrors?(controller: string): void;
  /**
   * `controller_runtime_reconcile_panics_total`: reconciles that threw something that is not
   * an Error (the nearest JavaScript has to a Go panic: a bug, not a reported failure).
   */
  reconcilePanics?(controller: string): void;
  /** `controller_runtime_reconcile_timeouts_total`: reconciles whose `reconciliationTimeout` fired. */
  reconcileTimeouts?(controller: string): void;
  /** `controller_runtime_reconcile_time_seconds`. */
  reconcileTime?(controller: string, seconds: number): void;
  /** `controller_runtime_active_workers`. */
  activeWorkers?(controller: string, count: number): void;
  /** `controller_runtime_max_concurrent_reconciles`. */
  maxConcurrentReconciles?(controller: string, count: number): void;
  /** The work queue's hooks (`workqueue_*`), per controller. */
  workQueue?(controller: string): WorkQueueMetrics;
  /**
   * Gives the metrics the controller's queue, for the gauges read at scrape time
   * (`workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`).
   */
  registerQueue?(controller: string, queue: ScrapedQueue): void;
}

/** What scrape-time work-queue gauges read from a queue. */
export interface ScrapedQueue {
  /** Seconds of work in progress, summed over the items being processed. */
  unfinishedWorkSeconds(): number;
  /** Seconds the longest-running item has been processed. */
  longestRunningProcessorSeconds(): number;
}

/** Options of a controller, as in controller-runtime's `controller.Options`. */
export interface ControllerOptions {
  /** Workers reconciling at once; default 1. */
  maxConcurrentReconciles?: number;
  /** Delays of rate-limited requeues; default exponential 5 ms → 1000 s with a 10 qps bucket. */
  rateLimiter?: RateLimiter<Request>;
  /** Milliseconds after which a reconcile's signal aborts; default none. */
  reconciliationTimeout?: number;
  /** Milliseconds to wait for the sources to sync before failing; default 2 min. */
  cacheSyncTimeout?: number;
  /** Run only on the elected leader; default true. */
  needLeaderElection?: boolean;
  /** Makes the logger of each reconcile (or of the controller, without a request). */
  logConstructor?: (request?: Request) => Logger;
  /** Metric hooks. */
  metrics?: ControllerMetrics;
  /** Properties every reconcile's log records carry (the builder sets the kind's group and kind). */
  logProperties?: Record<string, unknown>;
  /** Clock of the work queue and its rate limiters (tests). */
  clock?: Clock;
  /**
   * Decides, as each request leaves the queue, whether it is reconciled here (sharding: only
   * the objects of this replica's shard that are not moving away); told when each admitted
   * reconcile ends. Default: every request is.
   */
  admission?: ReconcileAdmission;
}

/**
 * The gate a sharded controller's requests pass as they leave the queue. A request it refuses
 * is dropped (forgotten, not requeued); `finished` follows every admitted request.
 */
export interface ReconcileAdmission {
  /** Whether to reconcile `request` here, now. */
  admit(request: Request): boolean | Promise<boolean>;
  /** The admitted reconcile of `request` ended (whatever its result). */
  finished(request: Request): void;
}

const DEFAULT_CACHE_SYNC_TIMEOUT_MS = 2 * 60 * 1000;

/**
 * A kind a controller watches, and how, as its builder was told: `for` (reconciled), `owns`
 * (created and owned), `watches` or `metadata` (a metadata-only watch). What permissions each
 * needs is the business of whoever deploys the controller (`rudder manifests`), not of the
 * controller.
 */
export interface WatchedKind {
  /** The kind. */
  type: ResourceType<KubeObject>;
  /** How the controller watches it. */
  relation: "for" | "owns" | "watches" | "metadata";
}

/**
 * A controller. Usually built with `newControllerManagedBy(mgr)`; usable on its own with
 * {@linkcode Controller.watch} and {@linkcode Controller.start}.
 *
 * @example
 * ```ts
 * import { ConfigMap } from "@rudder/operator";
 * import { type Cache } from "@rudder/operator/cache";
 * import { Controller } from "@rudder/operator/controller";
 * import { enqueueRequestForObject } from "@rudder/operator/handler";
 * import { kindSource } from "@rudder/operator/source";
 *
 * declare const cache: Cache;
 * const controller = new Controller("configmaps", (request, ctx) => {
 *   ctx.log.info("reconciling {name}", { name: request.name });
 * });
 * controller.watch(kindSource(cache, ConfigMap, enqueueRequestForObject()));
 * // await controller.start(signal);
 * ```
 */
export class Controller implements Runnable {
  /** The controller's name, unique in its manager. */
  readonly name: string;
  /** The work queue of requests. */
  readonly queue: WorkQueue<Request>;
  /** The kinds the builder declared (`for`, `owns`, `watches`), for RBAC generation. */
  readonly watched: WatchedKind[] = [];
  readonly #reconciler: ReconcileFunc;
  readonly #options: ControllerOptions;
  readonly #sources: Source[] = [];
  readonly #log: Logger;
  #started: { signal: AbortSignal } | undefined;
  #active = 0;

  /** Creates a controller around a reconciler (an object with `reconcile`, or a function). */
  constructor(
    name: string,
    reconciler: Reconciler | ReconcileFunc,
    options: ControllerOptions = {},
  ) {
    if (!name) throw new Error("a controller needs a name");
    this.name = name;
    this.#reconciler = typeof reconciler === "function"
      ? reconciler
      : (request, ctx) => reconciler.reconcile(request, ctx);
    this.#options = options;
    this.queue = new WorkQueue<Request>({
      name,
      keyOf: requestKey,
      rateLimiter: options.rateLimiter,
      clock: options.clock,
      metrics: options.metrics?.workQueue?.(name),
    });
    this.#log = options.logConstructor?.() ?? getLogger(["rudder", "controller", name]);
    options.metrics?.registerQueue?.(name, this.queue);
  }

  /** Whether the controller is sharded: its requests pass a shard's admission. */
  get sharded(): boolean {
    return this.#options.admission !== undefined;
  }

  /** Whether the controller runs only on the elected leader. */
  needLeaderElection(): boolean {
    return this.#options.needLeaderElection ?? true;
  }

  /** Adds a source. After `start`, the source starts at once (without waiting for its sync). */
  watch(source: Source): void {
    this.#sources.push(source);
    if (this.#started) {
      source.start(this.#started.signal, this.queue).catch((err) =>
        this.#log.error("Starting {source} failed: {error}", {
          source: source.description,
          error: err,
        })
      );
    }
  }

  /**
   * Starts the sources, waits for them to sync (at most `cacheSyncTimeout`), then runs the
   * workers until `signal` aborts; resolves when in-flight reconciles have finished. Rejects
   * when the sources do not sync in time, naming them.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new Error(`controller ${this.name} was already started`);
    this.#started = { signal };
    const workers = Math.max(1, this.#options.maxConcurrentReconciles ?? 1);
    this.#options.metrics?.maxConcurrentReconciles?.(this.name, workers);
    signal.addEventListener("abort", () => this.queue.shutDown(), { once: true });
    for (const source of this.#sources) await source.start(signal, this.queue);
    await this.#waitForSync(signal);
    if (signal.aborted) return;
    this.#log.info("Starting {workers} workers for controller {controller}", {
      workers,
      controller: this.name,
    });
    await Promise.all(Array.from({ length: workers }, () => this.#worker(signal)));
    this.#log.info("Controller {controller} stopped", { controller: this.name });
  }

  async #waitForSync(signal: AbortSignal): Promise<void> {
    const timeout = this.#options.cacheSyncTimeout ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS;
    const deadline = AbortSignal.timeout(timeout);
    const stop = AbortSignal.any([signal, deadline]);
    const synced = new Set<Source>();
    await Promise.all(this.#sources.map(async (source) => {
      try {
        await source.waitForSync(stop);
        synced.add(source);
      } catch {
        // Reported below, naming every source that did not sync.
      }
    }));
    if (signal.aborted) return;
    const missing = this.#sources.filter((source) => !synced.has(source));
    if (missing.length > 0) {
      throw new Error(
        `controller ${this.name}: timed out after ${timeout} ms waiting for caches to sync: ` +
          missing.map((source) => source.description).join(", "),
      );
    }
  }

  async #worker(signal: AbortSignal): Promise<void> {
    for (;;) {
      const next = await this.queue.get();
      if (next.shutdown) return;
      const request = next.item;
      if (!(await this.#admitted(request, next.priority))) continue;
      this.#options.metrics?.activeWorkers?.(this.name, ++this.#active);
      try {
        await this.#reconcileOne(request, next.priority, signal);
      } finally {
        this.#options.metrics?.activeWorkers?.(this.name, --this.#active);
        this.#options.admission?.finished(request);
        this.queue.done(request);
      }
    }
  }

  /**
   * Whether the admission (if any) lets `request` be reconciled. A refused request leaves the
   * queue; one the admission failed to decide on is retried later.
   */
  async #admitted(request: Request, priority: number): Promise<boolean> {
    const admission = this.#options.admission;
    if (!admission) return true;
    try {
      if (await admission.admit(request)) return true;
      this.queue.forget(request);
    } catch (err) {
      this.#log.error("Admission of {namespace}/{name} failed: {error}", {
        namespace: request.namespace ?? "",
        name: request.name,
        error: err,
      });
      this.queue.addRateLimited(request, { priority });
    }
    this.queue.done(request);
    return false;
  }

  /** Reconciles once; a requeue keeps the priority the request came out with. */
  async #reconcileOne(request: Request, priority: number, stopping: AbortSignal): Promise<void> {
    const reconcileID = crypto.randomUUID();
    const log = (this.#options.logConstructor?.(request) ?? this.#log).with({
      ...this.#options.logProperties,
      controller: this.name,
      namespace: request.namespace,
      name: request.name,
      reconcileID,
    });
    const timeout = this.#options.reconciliationTimeout;
    const deadline = timeout ? AbortSignal.timeout(timeout) : undefined;
    const signal = deadline ? AbortSignal.any([stopping, deadline]) : stopping;
    const metrics = this.#options.metrics;
    const started = performance.now();
    let result: Result | void;
    try {
      result = await this.#reconciler(request, { signal, log, reconcileID });
    } catch (err) {
      metrics?.reconcileErrors?.(this.name);
      metrics?.reconcileTotal?.(this.name, "error");
      if (!(err instanceof Error)) metrics?.reconcilePanics?.(this.name);
      if (isTerminalError(err)) {
        metrics?.terminalReconcileErrors?.(this.name);
        this.queue.forget(request);
        log.error("Reconciler error (terminal, not retried): {error}", { error: err });
      } else {
        this.queue.addRateLimited(request, { priority });
        log.error("Reconciler error: {error}", { error: err });
      }
      return;
    } finally {
      metrics?.reconcileTime?.(this.name, (performance.now() - started) / 1000);
      if (deadline?.aborted) metrics?.reconcileTimeouts?.(this.name);
    }
    const after = result?.requeueAfter ?? 0;
    if (after > 0) {
      this.queue.forget(request);
      this.queue.addAfter(request, after, { priority });
      metrics?.reconcileTotal?.(this.name, "requeue_after");
    } else if (result?.requeue) {
      this.queue.addRateLimited(request, { priority });
      metrics?.reconcileTotal?.(this.name, "requeue");
    } else {
      this.queue.forget(request);
      metrics?.reconcileTotal?.(this.name, "success");
    }
  }
}
