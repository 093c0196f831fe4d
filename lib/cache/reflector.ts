/**
 * The reflector: applies a watcher's events (./watcher.ts) to a {@linkcode Store} and hands
 * each change, as a `StoreChange` with the previous state, to a dispatcher
 * (./dispatcher.ts) once the store has it, as kube-rs's reflector does. A list is gathered from
 * `Init` to `InitDone` and swapped in at once, so readers never see half a list; each listed
 * object is transformed and frozen as it comes, while the next page is on its way. `Apply` and
 * `Delete` change one object. The reflector also knows when the first list is in the store.
 *
 * @module
 */

import type { KubeObject } from "../api/resource.ts";
import { deepFreeze, type DeepReadonly } from "../api/readonly.ts";
import type { Dispatcher } from "./dispatcher.ts";
import { objectKey, type Store, type StoreReplacement } from "./store.ts";
import { isOlderResourceVersion, type WatcherEvent } from "./watcher.ts";
import { type Span, SpanStatusCode, startSpan } from "../util/tracing.ts";
import { shrinkAfterBurst } from "../util/runtime.ts";

/** A list of at least this many objects is a burst worth giving memory back after. */
const SHRINK_AFTER_LIST_OF = 1000;

/** Options of {@linkcode Reflector} and {@linkcode reflector}. */
export interface ReflectorOptions<T> {
  /**
   * Where each change goes right after the store made it: an informer's {@linkcode Dispatcher},
   * which queues it for every handler (anything with its `dispatch` will do).
   */
  dispatcher?: Pick<Dispatcher<T>, "dispatch">;
  /** Called after each watch event changed the store. */
  onChange?: (key: string, resourceVersion: string | undefined) => void;
  /** Called after a list replaced the store's contents. */
  onReplace?: (resourceVersion: string | undefined) => void;
  /** Names the watch in the span of each list (`rudder.informer`), e.g. `ConfigMap in default`. */
  description?: string;
  /**
   * Whether a watch `Delete` of this object (its last state in the store, else the event's)
   * only means that it left the watch's selector rather than that it was deleted: it then leaves
   * the store without a delete event, so that handlers (and finalizer logic) never take a move
   * for a deletion. Default: every `Delete` is a deletion, as in client-go.
   */
  isDeparture?: (obj: T) => boolean;
}

/**
 * Applies watcher events to a store, one at a time, synchronously. An `Apply` or `Delete`
 * whose resourceVersion is older than the stored object's (a replayed or duplicated event) is
 * ignored, so a stream that goes back in time cannot roll the store back.
 *
 * @example
 * ```ts
 * import { type ConfigMap } from "@rudder/operator";
 * import { Reflector, Store } from "@rudder/operator/cache";
 *
 * const store = new Store<ConfigMap>();
 * const reflect = new Reflector(store);
 * reflect.apply({ type: "Init" });
 * reflect.apply({
 *   type: "InitApply",
 *   object: { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a", resourceVersion: "1" } },
 * });
 * reflect.apply({ type: "InitDone", resourceVersion: "1" });
 * console.log(store.size); // 1
 * ```
 */
export class Reflector<T extends KubeObject> {
  /** The store kept current. */
  readonly store: Store<T>;
  readonly #options: ReflectorOptions<T>;
  /** The list being received, between Init and InitDone. */
  #replacement: StoreReplacement<T> | undefined;
  #synced = false;
  /** The span of the list being received (from Init to InitDone). */
  #listSpan: Span | undefined;
  readonly #syncWaiters: (() => void)[] = [];

  /** A reflector into `store`; `options` hears about each change. */
  constructor(store: Store<T>, options: ReflectorOptions<T> = {}) {
    this.store = store;
    this.#options = options;
  }

  /** True once a first list is in the store (kube-rs: the store is ready). */
  hasSynced(): boolean {
    return this.#synced;
  }

  /** Resolves when a first list is in the store; rejects when `signal` aborts first. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal!.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#syncWaiters.push(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  /** Applies one event to the store. */
  apply(event: WatcherEvent<T>): void {
    switch (event.type) {
      case "Init":
        this.#replacement = this.store.beginReplace();
        this.#startListSpan();
        break;
      case "InitApply":
        if (!this.#replacement) this.#startListSpan();
        (this.#replacement ??= this.store.beginReplace()).add(event.object);
        break;
      case "InitDone": {
        const replacement = this.#replacement ?? this.store.beginReplace();
        this.#replacement = undefined;
        this.#replace(replacement, event.resourceVersion);
        break;
      }
      case "Apply":
      case "Delete":
        this.#change(event.type, event.object, event.resourceVersion);
        break;
    }
  }

  /** A list starts; one that had not finished was abandoned by the watcher (it starts over). */
  #startListSpan(): void {
    if (this.#listSpan) {
      this.#listSpan.setStatus({ code: SpanStatusCode.ERROR, message: "the list started over" });
      this.#listSpan.end();
    }
    const relist = this.#synced;
    this.#listSpan = startSpan(relist ? "informer relist" : "informer list", {
      root: true,
      attributes: () => ({
        "rudder.informer": this.#options.description,
        "rudder.informer.relist": relist,
      }),
    });
  }

  #replace(replacement: StoreReplacement<T>, resourceVersion: string | undefined): void {
    const diff = replacement.commit();
    const span = this.#listSpan;
    this.#listSpan = undefined;
    if (span?.isRecording()) {
      span.setAttributes({
        "rudder.informer.objects": this.store.size,
        "rudder.informer.added": diff.added.length,
        "rudder.informer.updated": diff.updated.length,
        "rudder.informer.deleted": diff.deleted.length,
        "rudder.informer.resource_version": resourceVersion,
      });
    }
    span?.end();
    this.#options.onReplace?.(resourceVersion);
    const dispatcher = this.#options.dispatcher;
    if (dispatcher) {
      for (const obj of diff.deleted) {
        // Missing from the new list: gone, unless it is known to have left the selector.
        if (!this.#options.isDeparture?.(obj as T)) dispatcher.dispatch({ type: "delete", obj });
      }
      for (const { previous, current } of diff.updated) {
        dispatcher.dispatch({ type: "update", old: previous, obj: current });
      }
      for (const obj of diff.added) dispatcher.dispatch({ type: "add", obj, initial: true });
      dispatcher.dispatch({ type: "listed", resourceVersion });
    }
    if (!this.#synced) {
      this.#synced = true;
      for (const resolve of this.#syncWaiters.splice(0)) resolve();
    }
    // Bun keeps the code a large list compiled and some of its garbage until asked to let go:
    // 2-3 MiB with 10,000 ConfigMaps (bench/README.md, "Bun's memory per cached object").
    if (this.store.size >= SHRINK_AFTER_LIST_OF) shrinkAfterBurst();
  }

  #change(type: "Apply" | "Delete", object: T, resourceVersion: string | undefined): void {
    const key = objectKey(object);
    const current = this.store.get(key);
    const rv = object.metadata?.resourceVersion;
    if (current && isOlderResourceVersion(rv, current.metadata?.resourceVersion)) return;
    const dispatcher = this.#options.dispatcher;
    if (type === "Delete") {
      const previous = this.store.delete(key);
      if (this.#options.isDeparture?.((previous ?? object) as T)) {
        this.#options.onChange?.(key, resourceVersion);
        return;
      }
      // The stored state went through the transform; the event's object did not.
      dispatcher?.dispatch({
        type: "delete",
        obj: previous ?? (deepFreeze(object) as DeepReadonly<T>),
      });
    } else {
      const { stored, previous } = this.store.upsert(object);
      if (previous) dispatcher?.dispatch({ type: "update", old: previous, obj: stored });
      else dispatcher?.dispatch({ type: "add", obj: stored, initial: false });
    }
    this.#options.onChange?.(key, resourceVersion);
  }
}

/**
 * Applies a watcher's events to `store` and passes each one on once the store has it, like
 * kube-rs's `reflector`: iterate the result to keep the store current.
 *
 * @example Keep a store of ConfigMaps without an informer
 * ```ts
 * import { ConfigMap, loadConfig } from "@rudder/operator";
 * import { reflector, Store, watcher } from "@rudder/operator/cache";
 * import { RestClient } from "@rudder/operator/kube";
 *
 * const store = new Store<ConfigMap>();
 * const rest = new RestClient(await loadConfig());
 * const signal = AbortSignal.timeout(10_000);
 * for await (const event of reflector(store, watcher(rest, ConfigMap, { signal }))) {
 *   if (event.type === "InitDone") console.log(store.size, "ConfigMaps");
 * }
 * ```
 */
export async function* reflector<T extends KubeObject>(
  store: Store<T>,
  events: AsyncIterable<WatcherEvent<T>>,
  options: ReflectorOptions<T> = {},
): AsyncGenerator<WatcherEvent<T>, void, undefined> {
  const reflect = new Reflector(store, options);
  for await (const event of events) {
    reflect.apply(event);
    yield event;
  }
}
