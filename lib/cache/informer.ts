/**
 * The informer: keeps a {@linkcode Store} equal to the API server's view of one kind (in one
 * namespace, with one selector) and tells event handlers what changed.
 *
 * One explicit state machine, read top to bottom in {@linkcode Informer.run}:
 *
 * ```
 *           ┌──────────────────────────── 410 Gone / decode error of the list ─┐
 *           ▼                                                                   │
 *   Listing ──(streaming list: ADDED… + initial-events-end bookmark,           │
 *     │        or paged list: limit=500 + continue)──► atomic store swap ──► Watching
 *     │                                                                     │  │  │
 *     │ error ► Backoff ◄──────────── error (network, 5xx, 429, idle deadline)┘  │  │
 *     │           │ 0.8 s → 30 s, ×2, jitter; reset after 2 min healthy          │  │
 *     └◄──────────┘ (back to Listing if never listed, else to Watching) ◄────────┘  │
 *                                              stream ended by the server's timeout ┘
 * ```
 *
 * The stream reader never waits for handlers: each handler has its own queue, drained
 * separately, so a slow handler cannot make the API server drop the watch.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import { resourcePath } from "../api/resource.ts";
import { ApiError, isGone, isTooManyRequests } from "../kube/errors.ts";
import type { QueryValue, RestClient } from "../kube/rest.ts";
import { WatchDecodeError, type WatchEvent } from "../kube/watch.ts";
import { sleep } from "../util/abort.ts";
import { objectKey, Store, type StoreOptions } from "./store.ts";
import { deepFreeze, type DeepReadonly } from "../api/readonly.ts";

const logger = getLogger(["rudder", "cache", "informer"]);

/** Where the informer is in its cycle. */
export type InformerState = "Stopped" | "Listing" | "Watching" | "Backoff";

/** What a handler hears. `isInInitialList` marks adds from a (re)list's first delivery. */
export interface EventHandler<T> {
  /** An object appeared. */
  onAdd?(obj: DeepReadonly<T>, isInInitialList: boolean): void;
  /** An object changed (or a resync re-delivered it, then `oldObj === newObj`). */
  onUpdate?(oldObj: DeepReadonly<T>, newObj: DeepReadonly<T>): void;
  /** An object went away (its last known state). */
  onDelete?(obj: DeepReadonly<T>): void;
}

/** A handler's registration: remove it, or ask whether it has heard the initial list. */
export interface HandlerRegistration {
  /** Stops delivery to this handler. */
  remove(): void;
  /** True once every object of the initial list has been delivered to this handler. */
  hasSynced(): boolean;
}

/** The health of one informer's watch, for readiness checks and metrics. */
export interface InformerHealth {
  /** Kind, namespace and selectors, for messages. */
  description: string;
  /** Current state. */
  state: InformerState;
  /** True once the first list is in the store. */
  synced: boolean;
  /** Epoch milliseconds of the last event or bookmark seen. */
  lastEventTime?: number;
  /** The last error, cleared when a watch runs healthily again. */
  lastError?: string;
  /** The resourceVersion the next watch starts from. */
  resourceVersion?: string;
  /** How many lists were made (1 on a healthy run). */
  lists: number;
  /** How many watches were started. */
  watches: number;
}

/** Options of {@linkcode Informer}. */
export interface InformerOptions<T extends KubeObject> extends StoreOptions<T> {
  /** Namespace to watch; all namespaces when unset. Ignored for cluster-scoped kinds. */
  namespace?: string;
  /** Label selector in the API's string form. */
  labelSelector?: string;
  /** Field selector in the API's string form. */
  fieldSelector?: string;
  /** Watch only metadata (PartialObjectMetadata), for large kinds such as Secrets. */
  metadataOnly?: boolean;
  /** Milliseconds between resyncs that re-deliver every object as an update; default 10 h ± 10 %; 0 disables. */
  resyncPeriod?: number;
  /** Objects per page of a paged list; default 500. */
  pageSize?: number;
  /** Try streaming lists (`sendInitialEvents`) first; default true. */
  streamingList?: boolean;
  /** Bounds of the server-side watch timeout in seconds; default [240, 290] (Bun drops idle connections at 300 s). */
  watchTimeoutSeconds?: [number, number];
  /**
   * Milliseconds without any event (bookmarks included) after which a watch is taken for dead
   * and started again; default: the watch timeout plus 30 s.
   */
  idleTimeout?: number;
  /** Backoff after failures: initial and maximum milliseconds; default 800 and 30 000. */
  backoff?: { initial: number; max: number };
  /** The store to fill; default a new one with the given transform and indexers. */
  store?: Store<T>;
  /** Called, in the stream reader, after each watch event changed the store. */
  onChange?: (key: string, resourceVersion: string | undefined) => void;
  /** Called, in the stream reader, after a list replaced the store's contents. */
  onReplace?: (resourceVersion: string | undefined) => void;
}

const DEFAULT_RESYNC_MS = 10 * 60 * 60 * 1000;
const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_WATCH_TIMEOUT: [number, number] = [240, 290];
const IDLE_MARGIN_MS = 30_000;
const DEFAULT_BACKOFF = { initial: 800, max: 30_000 };
/** A watch that ran this long without trouble resets the backoff. */
const HEALTHY_RESET_MS = 2 * 60 * 1000;
const INITIAL_EVENTS_END = "k8s.io/initial-events-end";
const METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/** The watch went quiet for longer than the idle deadline. */
class IdleWatchError extends Error {
  constructor(ms: number) {
    super(`no event for ${Math.round(ms / 1000)} s: the watch is taken for dead`);
    this.name = "IdleWatchError";
  }
}

/** The list could not be completed and must start over (410 on a continue token, …). */
class RelistNeeded extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "RelistNeeded";
  }
}

function jittered(ms: number, fraction: number): number {
  return ms * (1 - fraction + Math.random() * 2 * fraction);
}

function describeError(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

type Notification<T> =
  | { type: "add"; obj: DeepReadonly<T>; initial: boolean }
  | { type: "update"; old: DeepReadonly<T>; obj: DeepReadonly<T> }
  | { type: "delete"; obj: DeepReadonly<T> }
  | { type: "synced" };

/**
 * One handler's queue. Notifications are appended by the stream reader and drained by this
 * listener's own loop, which yields to the event loop every few hundred calls so I/O goes on.
 */
class Listener<T> implements HandlerRegistration {
  readonly #handler: EventHandler<T>;
  readonly #description: string;
  #queue: Notification<T>[] = [];
  #head = 0;
  #draining = false;
  #removed = false;
  #synced = false;

  constructor(handler: EventHandler<T>, description: string) {
    this.#handler = handler;
    this.#description = description;
  }

  push(notification: Notification<T>): void {
    if (this.#removed) return;
    this.#queue.push(notification);
    if (!this.#draining) {
      this.#draining = true;
      setTimeout(() => this.#drain(), 0);
    }
  }

  async #drain(): Promise<void> {
    let sinceYield = 0;
    while (this.#head < this.#queue.length && !this.#removed) {
      const notification = this.#queue[this.#head++];
      this.#deliver(notification);
      if (this.#head >= 4096 && this.#head * 2 >= this.#queue.length) {
        // Drop delivered entries so a queue that never empties does not grow without bound.
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      if (++sinceYield >= 256) {
        sinceYield = 0;
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
    }
    // Nothing can be pushed between the loop's last check and here: no await in between.
    this.#queue = [];
    this.#head = 0;
    this.#draining = false;
  }

  #deliver(notification: Notification<T>): void {
    try {
      switch (notification.type) {
        case "add":
          this.#handler.onAdd?.(notification.obj, notification.initial);
          break;
        case "update":
          this.#handler.onUpdate?.(notification.old, notification.obj);
          break;
        case "delete":
          this.#handler.onDelete?.(notification.obj);
          break;
        case "synced":
          this.#synced = true;
          break;
      }
    } catch (err) {
      // A handler's bug must not stop delivery to it or to anyone else.
      logger.error("Event handler for {informer} threw: {error}", {
        informer: this.#description,
        error: err,
      });
    }
  }

  remove(): void {
    this.#removed = true;
    this.#queue = [];
    this.#head = 0;
  }

  hasSynced(): boolean {
    return this.#synced;
  }
}

/**
 * Lists and watches one kind into a {@linkcode Store}, tells handlers about every change, and
 * recovers by itself from every failure a watch can have.
 *
 * @example
 * ```ts
 * import { ConfigMap, loadConfig } from "@rudder/operator";
 * import { Informer } from "@rudder/operator/cache";
 * import { RestClient } from "@rudder/operator/kube";
 *
 * const informer = new Informer(new RestClient(await loadConfig()), ConfigMap, {
 *   namespace: "default",
 * });
 * informer.addEventHandler({ onAdd: (cm) => console.log("added", cm.metadata?.name) });
 * const stop = new AbortController();
 * informer.run(stop.signal);
 * await informer.waitForSync();
 * console.log(informer.store.list().length);
 * stop.abort();
 * ```
 */
export class Informer<T extends KubeObject> {
  /** The objects, frozen; kept current by the informer, read by everyone. */
  readonly store: Store<T>;
  /** The kind watched. */
  readonly type: ResourceType<T>;
  readonly #rest: RestClient;
  readonly #options: InformerOptions<T>;
  readonly #listeners = new Set<Listener<T>>();
  readonly #syncWaiters: (() => void)[] = [];
  readonly #health: InformerHealth;
  #streamingList: boolean;
  #running = false;

  /** Creates an informer; nothing happens until {@linkcode Informer.run}. */
  constructor(rest: RestClient, type: ResourceType<T>, options: InformerOptions<T> = {}) {
    this.#rest = rest;
    this.type = type;
    this.#options = options;
    this.store = options.store ?? new Store<T>(options);
    this.#streamingList = options.streamingList ?? true;
    const where = type.scope === "Namespaced" && options.namespace
      ? ` in ${options.namespace}`
      : "";
    const selectors = [options.labelSelector, options.fieldSelector].filter(Boolean).join(", ");
    this.#health = {
      description: `${type.kind}${where}${selectors ? ` (${selectors})` : ""}`,
      state: "Stopped",
      synced: false,
      lists: 0,
      watches: 0,
    };
  }

  /** True once the first list is in the store. */
  hasSynced(): boolean {
    return this.#health.synced;
  }

  /** Resolves when the first list is in the store; rejects when `signal` aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#health.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal!.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#syncWaiters.push(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  /** A snapshot of the watch's health. */
  health(): InformerHealth {
    return { ...this.#health };
  }

  /**
   * Adds a handler. When the informer has objects already, the handler first hears each as
   * an add with `isInInitialList` true, like a handler added before the first list.
   */
  addEventHandler(handler: EventHandler<T>): HandlerRegistration {
    const listener = new Listener(handler, this.#health.description);
    this.#listeners.add(listener);
    if (this.#health.synced) {
      for (const obj of this.store.list()) listener.push({ type: "add", obj, initial: true });
      listener.push({ type: "synced" });
    }
    return {
      remove: () => {
        listener.remove();
        this.#listeners.delete(listener);
      },
      hasSynced: () => listener.hasSynced(),
    };
  }

  #notify(notification: Notification<T>): void {
    for (const listener of this.#listeners) listener.push(notification);
  }

  #setState(state: InformerState): void {
    this.#health.state = state;
  }

  #query(extra: Record<string, QueryValue>): Record<string, QueryValue> {
    return {
      labelSelector: this.#options.labelSelector || undefined,
      fieldSelector: this.#options.fieldSelector || undefined,
      ...extra,
    };
  }

  #path(): string {
    return resourcePath(this.type, { namespace: this.#options.namespace });
  }

  /** Objects from the wire, with the kind's apiVersion and kind (lists and metadata omit them). */
  #typed(obj: Record<string, unknown>): T {
    if (this.#options.metadataOnly || !obj.apiVersion) obj.apiVersion = this.type.apiVersion;
    if (this.#options.metadataOnly || !obj.kind) obj.kind = this.type.kind;
    return obj as T;
  }

  /**
   * Runs until `signal` aborts: list, watch, recover, repeat. Never rejects; failures are
   * logged, counted in {@linkcode Informer.health} and retried with backoff.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) {
      throw new Error(`informer for ${this.#health.description} is already running`);
    }
    this.#running = true;
    const backoffOptions = this.#options.backoff ?? DEFAULT_BACKOFF;
    let backoff = backoffOptions.initial;
    let needList = true;
    let resyncTimer: ReturnType<typeof setTimeout> | undefined;
    const scheduleResync = () => {
      const period = this.#options.resyncPeriod ?? DEFAULT_RESYNC_MS;
      if (period <= 0 || signal.aborted) return;
      resyncTimer = setTimeout(() => {
        for (const obj of this.store.list()) this.#notify({ type: "update", old: obj, obj });
        scheduleResync();
      }, jittered(period, 0.1));
    };
    scheduleResync();
    try {
      while (!signal.aborted) {
        let waitMs = 0;
        try {
          if (needList) {
            this.#setState("Listing");
            const stream = await this.#list(signal);
            needList = false;
            backoff = backoffOptions.initial;
            if (stream) {
              // A streaming list continues as the watch, on the same connection.
              this.#setState("Watching");
              await this.#consume(stream.events, stream.controller, signal);
            }
          } else {
            this.#setState("Watching");
            const started = Date.now();
            await this.#watch(signal);
            if (Date.now() - started >= HEALTHY_RESET_MS) backoff = backoffOptions.initial;
          }
          // The server ended the watch (its timeout): start the next one at once.
          this.#health.lastError = undefined;
          continue;
        } catch (err) {
          if (signal.aborted) break;
          if (err instanceof RelistNeeded || isGone(err)) {
            logger.info("Relisting {informer}: {reason}", {
              informer: this.#health.description,
              reason: describeError(err),
            });
            this.#health.lastError = describeError(err);
            // The first relist goes at once; a relist loop backs off like any failure.
            waitMs = needList ? backoff : 0;
            needList = true;
          } else {
            this.#health.lastError = describeError(err);
            // 429 is the API server pacing its clients (or a new CRD's storage warming up).
            const level = isTooManyRequests(err)
              ? "info"
              : err instanceof IdleWatchError || err instanceof WatchDecodeError
              ? "warn"
              : "error";
            logger[level]("Watch of {informer} failed: {error}", {
              informer: this.#health.description,
              error: describeError(err),
            });
            waitMs = isTooManyRequests(err) && (err as ApiError).retryAfterSeconds !== undefined
              ? (err as ApiError).retryAfterSeconds! * 1000
              : backoff;
          }
        }
        if (waitMs > 0) {
          this.#setState("Backoff");
          // An abort ends the wait early; the loop then sees the signal and stops.
          await sleep(jittered(waitMs, 0.25), signal).catch(() => {});
          backoff = Math.min(backoffOptions.max, backoff * 2);
        }
      }
    } finally {
      clearTimeout(resyncTimer);
      this.#setState("Stopped");
      this.#running = false;
    }
  }

  /**
   * Lists into the store. A streaming list returns its open stream, which goes on as the
   * watch; a paged list returns nothing and the watch starts from its resourceVersion.
   */
  async #list(signal: AbortSignal): Promise<
    { events: AsyncGenerator<WatchEvent<T>>; controller: AbortController } | undefined
  > {
    this.#health.lists++;
    if (this.#streamingList) {
      try {
        return await this.#streamingListInto(signal);
      } catch (err) {
        // Servers without WatchList refuse the parameters; remember and page instead.
        if (err instanceof ApiError && (err.code === 400 || err.code === 422 || err.code === 403)) {
          if (err.code !== 403) {
            logger.info("Streaming lists are not supported for {informer}; using paged lists", {
              informer: this.#health.description,
            });
            this.#streamingList = false;
          } else {
            throw err;
          }
        } else {
          throw err;
        }
      }
    }
    await this.#pagedListInto(signal);
    return undefined;
  }

  async #streamingListInto(signal: AbortSignal) {
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    // #consume links the signal again for the watch part of the stream.
    this.#health.watches++;
    const events = this.#rest.watch<T>({
      path: this.#path(),
      accept: this.#options.metadataOnly ? METADATA_ACCEPT : undefined,
      query: this.#query({
        sendInitialEvents: true,
        resourceVersionMatch: "NotOlderThan",
        allowWatchBookmarks: true,
        timeoutSeconds: this.#watchTimeoutSeconds(),
      }),
      signal: controller.signal,
    });
    const initial: T[] = [];
    const idle = this.#idleGuard(controller);
    try {
      for (;;) {
        const next = await events.next();
        idle.touch();
        if (next.done) {
          throw new RelistNeeded("the stream ended before the initial list was complete");
        }
        const event = next.value;
        if (event.type === "ERROR") throw this.#errorEvent(event.object);
        if (event.type === "BOOKMARK") {
          const annotations = event.object.metadata?.annotations;
          if (annotations?.[INITIAL_EVENTS_END] === "true") {
            this.#replace(initial, event.object.metadata?.resourceVersion);
            // The same stream goes on as the watch.
            this.#setState("Watching");
            idle.stop();
            signal.removeEventListener("abort", onAbort);
            return { events, controller };
          }
          continue;
        }
        initial.push(this.#typed(event.object as unknown as Record<string, unknown>));
      }
    } catch (err) {
      idle.stop();
      signal.removeEventListener("abort", onAbort);
      controller.abort();
      await events.return(undefined).catch(() => {});
      throw err;
    }
  }

  async #pagedListInto(signal: AbortSignal): Promise<void> {
    const items: T[] = [];
    let token: string | undefined;
    let resourceVersion: string | undefined;
    do {
      let page: {
        metadata?: { continue?: string; resourceVersion?: string };
        items?: Record<string, unknown>[];
      };
      try {
        page = await this.#rest.request({
          path: this.#path(),
          accept: this.#options.metadataOnly ? METADATA_LIST_ACCEPT : undefined,
          query: this.#query({
            limit: this.#options.pageSize ?? DEFAULT_PAGE_SIZE,
            continue: token,
          }),
          signal,
        });
      } catch (err) {
        if (token && isGone(err)) throw new RelistNeeded("the list's continue token expired");
        throw err;
      }
      for (const item of page.items ?? []) items.push(this.#typed(item));
      token = page.metadata?.continue || undefined;
      resourceVersion = page.metadata?.resourceVersion;
    } while (token);
    this.#replace(items, resourceVersion);
  }

  /** Swaps the store's contents at once and tells handlers what changed. */
  #replace(objects: T[], resourceVersion: string | undefined): void {
    const firstSync = !this.#health.synced;
    const diff = this.store.replace(objects);
    this.#health.lastError = undefined;
    this.#health.resourceVersion = resourceVersion;
    this.#options.onReplace?.(resourceVersion);
    this.#health.lastEventTime = Date.now();
    for (const obj of diff.deleted) this.#notify({ type: "delete", obj });
    for (const { previous, current } of diff.updated) {
      this.#notify({ type: "update", old: previous, obj: current });
    }
    for (const obj of diff.added) this.#notify({ type: "add", obj, initial: true });
    if (firstSync) {
      this.#health.synced = true;
      this.#notify({ type: "synced" });
      for (const resolve of this.#syncWaiters.splice(0)) resolve();
    }
  }

  #watchTimeoutSeconds(): number {
    const [low, high] = this.#options.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT;
    return Math.floor(low + Math.random() * (high - low + 1));
  }

  /** Aborts `controller` with an {@linkcode IdleWatchError} when nothing arrives in time. */
  #idleGuard(controller: AbortController, timeoutSeconds?: number) {
    const limit = this.#options.idleTimeout ??
      ((timeoutSeconds ?? (this.#options.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT)[1]) * 1000 +
        IDLE_MARGIN_MS);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(new IdleWatchError(limit)), limit);
    };
    arm();
    return {
      touch: arm,
      stop: () => clearTimeout(timer),
    };
  }

  async #watch(signal: AbortSignal): Promise<void> {
    const controller = new AbortController();
    this.#health.watches++;
    const timeoutSeconds = this.#watchTimeoutSeconds();
    const events = this.#rest.watch<T>({
      path: this.#path(),
      accept: this.#options.metadataOnly ? METADATA_ACCEPT : undefined,
      query: this.#query({
        resourceVersion: this.#health.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds,
      }),
      signal: controller.signal,
    });
    await this.#consume(events, controller, signal, timeoutSeconds);
  }

  /** Applies watch events to the store until the stream ends or fails. */
  async #consume(
    events: AsyncGenerator<WatchEvent<T>>,
    controller: AbortController,
    signal: AbortSignal,
    timeoutSeconds?: number,
  ): Promise<void> {
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const idle = this.#idleGuard(controller, timeoutSeconds);
    try {
      for await (const event of events) {
        idle.touch();
        this.#health.lastEventTime = Date.now();
        if (event.type === "ERROR") throw this.#errorEvent(event.object);
        const rv = event.object.metadata?.resourceVersion;
        if (event.type === "BOOKMARK") {
          if (rv) this.#health.resourceVersion = rv;
          continue;
        }
        const obj = this.#typed(event.object as unknown as Record<string, unknown>);
        if (event.type === "DELETED") {
          const previous = this.store.delete(objectKey(obj));
          // The stored state went through the transform; the event's object did not.
          this.#notify({ type: "delete", obj: previous ?? (deepFreeze(obj) as DeepReadonly<T>) });
        } else {
          const { stored, previous } = this.store.upsert(obj);
          if (previous) this.#notify({ type: "update", old: previous, obj: stored });
          else this.#notify({ type: "add", obj: stored, initial: false });
        }
        if (rv) this.#health.resourceVersion = rv;
        this.#options.onChange?.(objectKey(obj), rv);
      }
    } catch (err) {
      if (signal.aborted) return;
      const reason = controller.signal.reason;
      if (controller.signal.aborted && reason instanceof IdleWatchError) throw reason;
      throw err;
    } finally {
      idle.stop();
      signal.removeEventListener("abort", onAbort);
      controller.abort();
    }
  }

  #errorEvent(status: WatchEvent<T>["object"]): Error {
    const error = new ApiError(status as ConstructorParameters<typeof ApiError>[0], {
      method: "WATCH",
      path: this.#path(),
    });
    return isGone(error) ? new RelistNeeded(`the watch expired: ${error.message}`) : error;
  }
}
