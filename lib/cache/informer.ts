/**
 * The informer: keeps a {@linkcode Store} equal to the API server's view of one kind (in one
 * namespace, with one selector) and tells event handlers what changed.
 *
 * It is three pieces that snap together, as in kube-rs: the watcher (./watcher.ts, the
 * list-and-watch state machine Listing → Watching ⇄ Backoff, usable on its own), the reflector
 * (./reflector.ts, which applies its events to the store and hands each change to the
 * dispatcher) and the dispatcher (./dispatcher.ts, one queue per handler, so a slow handler
 * cannot make the API server drop the watch). The informer wires them and adds resyncs and
 * health.
 *
 * @module
 */

import type { KubeObject, ResourceType } from "../api/resource.ts";
import type { RestClient } from "../kube/rest.ts";
import { Store, type StoreOptions } from "./store.ts";
import { Dispatcher, type HandlerRegistration, type ResourceEventHandler } from "./dispatcher.ts";
import { Reflector } from "./reflector.ts";
import {
  describeWatch,
  type Watcher,
  watcher,
  type WatcherOptions,
  type WatcherState,
  type WatcherStatus,
} from "./watcher.ts";
import { jittered } from "../util/timers.ts";

export type { HandlerRegistration, ResourceEventHandler } from "./dispatcher.ts";

/** Where the informer is in its cycle: the watcher's state, or `Stopped`. */
export type InformerState = "Stopped" | WatcherState;

/**
 * The health of one informer's watch, for readiness checks and metrics: its watcher's status,
 * with the informer's state (`Stopped` when it is not running) and what the informer adds.
 * `failingSince` is only set while the informer runs.
 */
export interface InformerHealth extends Omit<WatcherStatus, "state"> {
  /** Kind, namespace and selectors, for messages. */
  description: string;
  /** The watcher's state while the informer runs, `Stopped` otherwise. */
  state: InformerState;
  /** True once the first list is in the store. */
  synced: boolean;
  /**
   * True when the watch has been failing (backing off between attempts) for longer than the
   * informer's `unhealthyAfter`: readiness fails then.
   */
  stuck?: boolean;
}

/** Options of {@linkcode Informer}. */
export interface InformerOptions<T extends KubeObject>
  extends StoreOptions<T>, Omit<WatcherOptions, "signal"> {
  /** Milliseconds between resyncs that re-deliver every object as an update; default 10 h ± 10 %; 0 disables. */
  resyncPeriod?: number;
  /**
   * Milliseconds a watch may keep failing before {@linkcode InformerHealth.stuck} is set and
   * readiness fails; default 60 000 (a few backoff rounds: a blip must not flap readiness).
   */
  unhealthyAfter?: number;
  /** The store to fill; default a new one with the given transform and indexers. */
  store?: Store<T>;
  /** Called, in the stream reader, after each watch event changed the store. */
  onChange?: (key: string, resourceVersion: string | undefined) => void;
  /** Called, in the stream reader, after a list replaced the store's contents. */
  onReplace?: (resourceVersion: string | undefined) => void;
  /**
   * Whether a watch `Delete` of this object only means it left the selector: it then leaves the
   * store with no delete event (see the reflector's option of the same name).
   */
  isDeparture?: (obj: T) => boolean;
}

const DEFAULT_RESYNC_MS = 10 * 60 * 60 * 1000;
const DEFAULT_UNHEALTHY_AFTER_MS = 60_000;

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
  readonly #dispatcher: Dispatcher<T>;
  readonly #reflector: Reflector<T>;
  readonly #description: string;
  #watcher: Watcher<T> | undefined;
  #running = false;

  /** Creates an informer; nothing happens until {@linkcode Informer.run}. */
  constructor(rest: RestClient, type: ResourceType<T>, options: InformerOptions<T> = {}) {
    this.#rest = rest;
    this.type = type;
    this.#options = options;
    this.store = options.store ?? new Store<T>(options);
    this.#description = describeWatch(type, options);
    this.#dispatcher = new Dispatcher(this.#description);
    this.#reflector = new Reflector(this.store, {
      dispatcher: this.#dispatcher,
      onChange: options.onChange,
      onReplace: options.onReplace,
      isDeparture: options.isDeparture,
    });
  }

  /** True once the first list is in the store. */
  hasSynced(): boolean {
    return this.#reflector.hasSynced();
  }

  /** Resolves when the first list is in the store; rejects when `signal` aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.#reflector.waitForSync(signal);
  }

  /** A snapshot of the watch's health. */
  health(): InformerHealth {
    const status = this.#watcher?.status();
    const description = this.#description;
    const synced = this.hasSynced();
    if (!status) return { description, state: "Stopped", synced, lists: 0, watches: 0 };
    const { failingSince, ...watch } = status;
    const failing = this.#running ? failingSince : undefined;
    const limit = this.#options.unhealthyAfter ?? DEFAULT_UNHEALTHY_AFTER_MS;
    return {
      ...watch,
      description,
      state: this.#running ? status.state : "Stopped",
      synced,
      ...(failing === undefined ? {} : { failingSince: failing }),
      stuck: failing !== undefined && Date.now() - failing >= limit,
    };
  }

  /**
   * Adds a handler. When the informer has objects already, the handler first hears each as
   * an add with `isInInitialList` true, like a handler added before the first list.
   */
  addEventHandler(handler: ResourceEventHandler<T>): HandlerRegistration {
    return this.#dispatcher.add(handler, this.hasSynced() ? this.store.list() : undefined);
  }

  /**
   * Runs until `signal` aborts: list, watch, recover, repeat. Never rejects; failures are
   * logged, counted in {@linkcode Informer.health} and retried with backoff.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) {
      throw new Error(`informer for ${this.#description} is already running`);
    }
    this.#running = true;
    const events = watcher(this.#rest, this.type, { ...this.#options, signal });
    this.#watcher = events;
    let resyncTimer: ReturnType<typeof setTimeout> | undefined;
    const scheduleResync = () => {
      const period = this.#options.resyncPeriod ?? DEFAULT_RESYNC_MS;
      if (period <= 0 || signal.aborted) return;
      resyncTimer = setTimeout(() => {
        for (const obj of this.store.list()) {
          this.#dispatcher.dispatch({ type: "update", old: obj, obj });
        }
        scheduleResync();
      }, jittered(period, 0.1));
    };
    scheduleResync();
    try {
      for await (const event of events) this.#reflector.apply(event);
    } finally {
      clearTimeout(resyncTimer);
      this.#running = false;
    }
  }
}
