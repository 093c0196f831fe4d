/**
 * The work queue between a controller's event handlers and its reconcile workers:
 * controller-runtime's priority queue (`pkg/controller/priorityqueue`) over client-go's
 * workqueue semantics.
 *
 * - An item is queued at most once, however often it is added (identity by `keyOf`).
 * - An item being processed is never handed out again before `done`; added meanwhile, it waits
 *   and is handed out once `done` is called.
 * - Delayed items (`addAfter`, `addRateLimited`) live on one binary heap with a single timer,
 *   armed for the earliest; a second delayed add keeps the earlier due time, and a plain `add`
 *   makes a delayed item ready at once.
 * - Ready items go out highest priority first, first come first served within a priority;
 *   adding a queued item with a higher priority raises it. Waiting `get` callers are served in
 *   the order they called.
 *
 * @module
 */

import { type Clock, realClock, type TimerHandle } from "../util/clock.ts";
import { defaultControllerRateLimiter, defaultKeyOf, type RateLimiter } from "./rate_limiter.ts";

/**
 * Hooks the queue calls as things happen, to feed client-go's `workqueue_*` metric families.
 * Durations are in seconds, as Prometheus wants them. Hooks run synchronously inside queue
 * operations: keep them cheap and do not let them throw.
 *
 * @example
 * ```ts
 * import { WorkQueue, type WorkQueueMetrics } from "@rudder/operator/workqueue";
 *
 * let adds = 0;
 * const metrics: WorkQueueMetrics = { adds: () => adds++, depth: (n) => console.log("depth", n) };
 * const queue = new WorkQueue<string>({ name: "example", metrics });
 * queue.add("a"); // depth 1
 * console.log(adds); // 1
 * ```
 */
export interface WorkQueueMetrics {
  /** An item entered the ready queue (`workqueue_adds_total`). */
  adds?(): void;
  /** The number of ready items changed to `n` (`workqueue_depth`). */
  depth?(n: number): void;
  /** An item was handed out `seconds` after it became ready (`workqueue_queue_duration_seconds`). */
  latency?(seconds: number): void;
  /** An item was done `seconds` after it was handed out (`workqueue_work_duration_seconds`). */
  workDuration?(seconds: number): void;
  /** An item was added with a delay or rate limit (`workqueue_retries_total`). */
  retries?(): void;
}

/**
 * Options of a {@linkcode WorkQueue}; every one has a default.
 *
 * @example
 * ```ts
 * import { itemExponentialFailure, WorkQueue, type WorkQueueOptions } from "@rudder/operator/workqueue";
 *
 * type Request = { namespace: string; name: string };
 * const options: WorkQueueOptions<Request> = {
 *   name: "web",
 *   keyOf: (req) => `${req.namespace}/${req.name}`,
 *   rateLimiter: itemExponentialFailure(10, 60_000),
 * };
 * const queue = new WorkQueue(options);
 * ```
 */
export interface WorkQueueOptions<K> {
  /** A name for metrics and logs (default `""`). */
  name?: string;
  /**
   * The identity of items: two items with the same key are the same item (default
   * {@linkcode defaultKeyOf}, `JSON.stringify` with sorted object keys).
   */
  keyOf?: (item: K) => string;
  /** Used by `addRateLimited`, `forget` and `numRequeues` (default `defaultControllerRateLimiter()`). */
  rateLimiter?: RateLimiter<K>;
  /** Time and timers (default {@linkcode realClock}). */
  clock?: Clock;
  /** Metric hooks (default none). */
  metrics?: WorkQueueMetrics;
}

/**
 * Options of one add.
 *
 * @example
 * ```ts
 * import { LOW_PRIORITY, WorkQueue } from "@rudder/operator/workqueue";
 *
 * const queue = new WorkQueue<string>();
 * queue.add("from-resync", { priority: LOW_PRIORITY });
 * queue.add("changed"); // priority 0: handed out first
 * ```
 */
export interface AddOptions {
  /** Higher goes first (default 0). A queued item keeps the highest priority it was added with. */
  priority?: number;
}

/**
 * The priority of events that replay state rather than report a change: objects from an
 * informer's initial list and resyncs. controller-runtime's `handler.LowPriority` (≥ 0.23).
 *
 * @example
 * ```ts
 * import { LOW_PRIORITY, WorkQueue } from "@rudder/operator/workqueue";
 *
 * const queue = new WorkQueue<string>();
 * queue.add("default/web", { priority: LOW_PRIORITY });
 * ```
 */
export const LOW_PRIORITY: number = -100;

/**
 * What {@linkcode WorkQueue.get} resolves to: an item to process (and the priority it was
 * queued with), or word that the queue is shut down and the caller should stop.
 *
 * @example
 * ```ts
 * import { type GetResult, WorkQueue } from "@rudder/operator/workqueue";
 *
 * const queue = new WorkQueue<string>();
 * queue.add("a");
 * const next: GetResult<string> = await queue.get();
 * if (!next.shutdown) queue.done(next.item);
 * ```
 */
export type GetResult<K> = { item: K; priority: number; shutdown: false } | { shutdown: true };

/** One queued item: ready (`readyAt` undefined) or delayed. */
interface Entry<K> {
  readonly key: string;
  readonly item: K;
  priority: number;
  /** Order of arrival: when it was delayed, then when it became ready. */
  seq: number;
  readyAt: number | undefined;
  /** When it became ready, for the latency metric. */
  readySince: number;
  /** Its place in the heap it is in; -1 while in none. */
  heapIndex: number;
}

interface Waiter<K> {
  resolve(result: GetResult<K>): void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

const SHUT_DOWN: GetResult<never> = Object.freeze({ shutdown: true });

/** A binary min-heap by `before` whose elements know their index, so they can move or leave. */
class IndexedHeap<T extends { heapIndex: number }> {
  readonly #nodes: T[] = [];
  readonly #before: (a: T, b: T) => boolean;

  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  get size(): number {
    return this.#nodes.length;
  }

  peek(): T | undefined {
    return this.#nodes[0];
  }

  push(node: T): void {
    node.heapIndex = this.#nodes.length;
    this.#nodes.push(node);
    this.#up(node.heapIndex);
  }

  pop(): T | undefined {
    const top = this.#nodes[0];
    if (top) this.remove(top);
    return top;
  }

  remove(node: T): void {
    const index = node.heapIndex;
    const last = this.#nodes.pop()!;
    node.heapIndex = -1;
    if (last === node) return;
    this.#nodes[index] = last;
    last.heapIndex = index;
    this.update(last);
  }

  /** Restores order after `node`'s sort key changed either way. */
  update(node: T): void {
    this.#up(node.heapIndex);
    this.#down(node.heapIndex);
  }

  /** Empties the heap and returns what it held. */
  clear(): T[] {
    const nodes = this.#nodes.splice(0);
    for (const node of nodes) node.heapIndex = -1;
    return nodes;
  }

  #up(index: number): void {
    const nodes = this.#nodes;
    const node = nodes[index];
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = nodes[parentIndex];
      if (!this.#before(node, parent)) break;
      nodes[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    nodes[index] = node;
    node.heapIndex = index;
  }

  #down(index: number): void {
    const nodes = this.#nodes;
    const node = nodes[index];
    for (;;) {
      const left = 2 * index + 1;
      if (left >= nodes.length) break;
      const right = left + 1;
      const child = right < nodes.length && this.#before(nodes[right], nodes[left]) ? right : left;
      if (!this.#before(nodes[child], node)) break;
      nodes[index] = nodes[child];
      nodes[index].heapIndex = index;
      index = child;
    }
    nodes[index] = node;
    node.heapIndex = index;
  }
}

// setTimeout's limit; a longer wait is armed in steps (firing early is harmless: nothing is due).
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A rate-limited, delaying, de-duplicating priority queue of work items for a controller's
 * workers (see the module documentation for its rules).
 *
 * Shutting down: {@linkcode WorkQueue.shutDown} stops at once, like controller-runtime's
 * priority queue: queued and delayed items are dropped and every `get` resolves
 * `{ shutdown: true }`. {@linkcode WorkQueue.shutDownWithDrain} follows client-go: new adds are
 * ignored and delayed items dropped, but `get` keeps handing out the items already queued
 * (and items re-added while being processed, once they are done) until none is left; its
 * promise resolves when that is so and nothing is being processed.
 *
 * @example
 * ```ts
 * import { WorkQueue } from "@rudder/operator/workqueue";
 *
 * type Request = { namespace: string; name: string };
 * const queue = new WorkQueue<Request>({ name: "example" });
 * queue.add({ namespace: "default", name: "web" });
 *
 * async function worker(): Promise<void> {
 *   for (;;) {
 *     const next = await queue.get();
 *     if (next.shutdown) return;
 *     try {
 *       console.log("reconcile", next.item);
 *       queue.forget(next.item); // success: reset its backoff
 *     } catch {
 *       queue.addRateLimited(next.item, { priority: next.priority }); // retry with backoff
 *     } finally {
 *       queue.done(next.item);
 *     }
 *   }
 * }
 * const running = worker();
 * await queue.shutDownWithDrain();
 * await running;
 * ```
 */
export class WorkQueue<K> {
  /** The name given in the options, for metrics and logs. */
  readonly name: string;
  readonly #keyOf: (item: K) => string;
  readonly #rateLimiter: RateLimiter<K>;
  readonly #clock: Clock;
  readonly #metrics: WorkQueueMetrics;

  /** Every queued item by key: ready, delayed, or ready but waiting for its key to be done. */
  readonly #entries = new Map<string, Entry<K>>();
  /** Ready items whose key is not being processed. */
  readonly #ready = new IndexedHeap<Entry<K>>((a, b) =>
    a.priority > b.priority || (a.priority === b.priority && a.seq < b.seq)
  );
  /** Delayed items, earliest due first. */
  readonly #delayed = new IndexedHeap<Entry<K>>((a, b) =>
    a.readyAt! < b.readyAt! || (a.readyAt === b.readyAt && a.seq < b.seq)
  );
  /** Keys handed out and not yet done, with when they were handed out. */
  readonly #processing = new Map<string, number>();
  readonly #waiters = new Set<Waiter<K>>();
  /** Ready entries, including those waiting for their key to be done (`workqueue_depth`). */
  #readyCount = 0;
  #seq = 0;

  #timer: TimerHandle | undefined;
  #timerArmed = false;
  #timerDueAt = 0;

  #shuttingDown = false;
  #draining = false;
  #drained: Promise<void> | undefined;
  #resolveDrained: (() => void) | undefined;

  /** Makes an empty queue; see {@linkcode WorkQueueOptions} for the defaults. */
  constructor(options: WorkQueueOptions<K> = {}) {
    this.name = options.name ?? "";
    this.#keyOf = options.keyOf ?? defaultKeyOf;
    // The default limiter keys items as the queue does (a controller's queue: namespace/name).
    this.#rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter<K>(this.#keyOf);
    this.#clock = options.clock ?? realClock;
    this.#metrics = options.metrics ?? {};
  }

  /**
   * Queues `item` to be handed out now. Does nothing to an item already ready except raise
   * its priority; makes a delayed item ready. Ignored once shutting down.
   */
  add(item: K, options?: AddOptions): void {
    if (this.#shuttingDown) return;
    const priority = priorityOf(options);
    const key = this.#keyOf(item);
    const entry = this.#entries.get(key);
    if (!entry) {
      const created = newEntry(key, item, priority, undefined, 0);
      this.#entries.set(key, created);
      this.#becomeReady(created, this.#clock.now());
    } else {
      this.#raise(entry, priority);
      if (entry.readyAt !== undefined) {
        this.#delayed.remove(entry);
        this.#becomeReady(entry, this.#clock.now());
        this.#rearm();
      }
    }
    this.#dispatch();
  }

  /**
   * Queues `item` to be handed out in `delayMs` (now if not positive). An item already queued
   * keeps the earlier of its due times and the higher priority. Counts as a retry in the
   * metrics, as client-go's `AddAfter` does. Ignored once shutting down.
   */
  addAfter(item: K, delayMs: number, options?: AddOptions): void {
    if (this.#shuttingDown) return;
    this.#metrics.retries?.();
    if (!(delayMs > 0)) {
      this.add(item, options);
      return;
    }
    const priority = priorityOf(options);
    const key = this.#keyOf(item);
    const readyAt = this.#clock.now() + delayMs;
    const entry = this.#entries.get(key);
    if (!entry) {
      const created = newEntry(key, item, priority, readyAt, this.#seq++);
      this.#entries.set(key, created);
      this.#delayed.push(created);
    } else {
      this.#raise(entry, priority);
      if (entry.readyAt !== undefined && readyAt < entry.readyAt) {
        entry.readyAt = readyAt;
        this.#delayed.update(entry);
      }
    }
    this.#rearm();
  }

  /** `addAfter(item, rateLimiter.when(item), options)`. Ignored once shutting down. */
  addRateLimited(item: K, options?: AddOptions): void {
    if (this.#shuttingDown) return;
    this.addAfter(item, this.#rateLimiter.when(item), options);
  }

  /** Tells the rate limiter that `item` succeeded: its backoff starts over. */
  forget(item: K): void {
    this.#rateLimiter.forget(item);
  }

  /** How many rate-limited retries of `item` the rate limiter is tracking. */
  numRequeues(item: K): number {
    return this.#rateLimiter.numRequeues(item);
  }

  /**
   * Waits for the next item and marks it as being processed; call {@linkcode WorkQueue.done}
   * with it when finished. Resolves `{ shutdown: true }` once the queue is shut down (when
   * draining: once no queued item is left), or for this caller alone when `signal` aborts.
   */
  get(signal?: AbortSignal): Promise<GetResult<K>> {
    if (signal?.aborted || this.#noMoreWork()) return Promise.resolve(SHUT_DOWN);
    // Waiters only ever wait on an empty ready heap, so no one is skipped here.
    if (this.#ready.size > 0) return Promise.resolve(this.#take());
    return new Promise<GetResult<K>>((resolve) => {
      const waiter: Waiter<K> = { resolve, signal };
      if (signal) {
        waiter.onAbort = () => {
          if (this.#waiters.delete(waiter)) resolve(SHUT_DOWN);
        };
        signal.addEventListener("abort", waiter.onAbort, { once: true });
      }
      this.#waiters.add(waiter);
    });
  }

  /**
   * Marks `item` as processed. If it was added again meanwhile, it is handed out again now
   * (or when its delay ends). Does nothing for an item that is not being processed.
   */
  done(item: K): void {
    const key = this.#keyOf(item);
    const startedAt = this.#processing.get(key);
    if (startedAt === undefined) return;
    this.#processing.delete(key);
    this.#metrics.workDuration?.((this.#clock.now() - startedAt) / 1000);
    const entry = this.#entries.get(key);
    if (entry && entry.readyAt === undefined && entry.heapIndex < 0) this.#ready.push(entry);
    this.#dispatch();
  }

  /** The number of items ready to be handed out (not delayed, not waiting for `done`). */
  len(): number {
    return this.#ready.size;
  }

  /**
   * Stops at once: queued and delayed items are dropped, waiting and later `get` calls
   * resolve `{ shutdown: true }`, adds are ignored, and a pending
   * {@linkcode WorkQueue.shutDownWithDrain} resolves. `done` may still be called.
   */
  shutDown(): void {
    if (this.#shuttingDown && !this.#draining) return;
    this.#shuttingDown = true;
    this.#draining = false;
    this.#clearTimer();
    this.#ready.clear();
    this.#delayed.clear();
    this.#entries.clear();
    this.#setReadyCount(0);
    this.#settle();
    this.#resolveDrained?.();
  }

  /**
   * Stops accepting adds and drops delayed items, keeps handing out the items already queued,
   * and resolves once none is queued and none is being processed. Workers must keep calling
   * `get` and `done` until `get` says shutdown. {@linkcode WorkQueue.shutDown} ends the wait
   * at once; after it, this resolves immediately.
   */
  shutDownWithDrain(): Promise<void> {
    if (this.#drained) return this.#drained;
    this.#drained = new Promise<void>((resolve) => this.#resolveDrained = resolve);
    if (this.#shuttingDown) {
      this.#resolveDrained!();
      return this.#drained;
    }
    this.#shuttingDown = true;
    this.#draining = true;
    // A delayed item would be added after the shut down, and so be ignored (client-go).
    for (const entry of this.#delayed.clear()) this.#entries.delete(entry.key);
    this.#clearTimer();
    this.#settle();
    return this.#drained;
  }

  /** Whether `shutDown` or `shutDownWithDrain` has been called. */
  shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /** Seconds of work in progress, summed over the items being processed (`workqueue_unfinished_work_seconds`). */
  unfinishedWorkSeconds(): number {
    const now = this.#clock.now();
    let total = 0;
    for (const startedAt of this.#processing.values()) total += now - startedAt;
    return total / 1000;
  }

  /** Seconds the longest-running item has been processed (`workqueue_longest_running_processor_seconds`). */
  longestRunningProcessorSeconds(): number {
    const now = this.#clock.now();
    let longest = 0;
    for (const startedAt of this.#processing.values()) longest = Math.max(longest, now - startedAt);
    return longest / 1000;
  }

  #raise(entry: Entry<K>, priority: number): void {
    if (priority <= entry.priority) return;
    entry.priority = priority;
    if (entry.readyAt === undefined && entry.heapIndex >= 0) this.#ready.update(entry);
  }

  /** Moves a new or delayed entry to ready, behind the items already ready at its priority. */
  #becomeReady(entry: Entry<K>, now: number): void {
    entry.readyAt = undefined;
    entry.seq = this.#seq++;
    entry.readySince = now;
    this.#metrics.adds?.();
    this.#setReadyCount(this.#readyCount + 1);
    if (!this.#processing.has(entry.key)) this.#ready.push(entry);
  }

  /** Hands the best ready entry out: it leaves the queue and its key is being processed. */
  #take(): GetResult<K> {
    const entry = this.#ready.pop()!;
    const now = this.#clock.now();
    this.#entries.delete(entry.key);
    this.#processing.set(entry.key, now);
    this.#setReadyCount(this.#readyCount - 1);
    this.#metrics.latency?.((now - entry.readySince) / 1000);
    return { item: entry.item, priority: entry.priority, shutdown: false };
  }

  /** Serves waiting getters, in order, while items are ready. */
  #dispatch(): void {
    for (const waiter of this.#waiters) {
      if (this.#ready.size === 0) break;
      this.#waiters.delete(waiter);
      if (waiter.onAbort) waiter.signal!.removeEventListener("abort", waiter.onAbort);
      waiter.resolve(this.#take());
    }
    this.#settle();
  }

  /** Shut down and nothing left that `get` could ever hand out. */
  #noMoreWork(): boolean {
    return this.#shuttingDown && this.#entries.size === 0;
  }

  /** When shutting down: releases getters once no work is left, and ends a drain. */
  #settle(): void {
    if (!this.#noMoreWork()) return;
    for (const waiter of this.#waiters) {
      if (waiter.onAbort) waiter.signal!.removeEventListener("abort", waiter.onAbort);
      waiter.resolve(SHUT_DOWN);
    }
    this.#waiters.clear();
    if (this.#processing.size === 0) this.#resolveDrained?.();
  }

  #setReadyCount(n: number): void {
    this.#readyCount = n;
    this.#metrics.depth?.(n);
  }

  /** Keeps exactly one timer armed, for the earliest delayed item, or none when none waits. */
  #rearm(): void {
    const next = this.#delayed.peek();
    if (!next) {
      this.#clearTimer();
      return;
    }
    if (this.#timerArmed && this.#timerDueAt === next.readyAt) return;
    this.#clearTimer();
    const wait = Math.min(Math.max(0, next.readyAt! - this.#clock.now()), MAX_TIMER_MS);
    this.#timerDueAt = next.readyAt!;
    this.#timerArmed = true;
    this.#timer = this.#clock.setTimeout(() => this.#onTimer(), wait);
  }

  #clearTimer(): void {
    if (!this.#timerArmed) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerArmed = false;
  }

  #onTimer(): void {
    this.#timer = undefined;
    this.#timerArmed = false;
    const now = this.#clock.now();
    for (
      let next = this.#delayed.peek();
      next && next.readyAt! <= now;
      next = this.#delayed.peek()
    ) {
      this.#delayed.pop();
      this.#becomeReady(next, now);
    }
    this.#rearm();
    this.#dispatch();
  }
}

function newEntry<K>(
  key: string,
  item: K,
  priority: number,
  readyAt: number | undefined,
  seq: number,
): Entry<K> {
  return { key, item, priority, seq, readyAt, readySince: 0, heapIndex: -1 };
}

function priorityOf(options: AddOptions | undefined): number {
  const priority = options?.priority ?? 0;
  if (Number.isNaN(priority)) throw new RangeError("WorkQueue: priority must be a number, got NaN");
  return priority;
}
