/**
 * The dispatcher: hands the store changes a reflector (./reflector.ts) makes to event handlers. Each handler has its
 * own queue, drained by its own loop, so a slow or throwing handler never blocks the stream
 * reader, nor any other handler.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { DeepReadonly } from "../api/readonly.ts";

const logger = getLogger(["rudder", "cache", "informer"]);

/**
 * One change a reflector made to its store, as it reaches the dispatcher. `initial` marks adds
 * from a (re)list; `listed` follows the changes of each completed list.
 *
 * @example
 * ```ts
 * import type { ConfigMap } from "@rudder/operator";
 * import type { StoreChange } from "@rudder/operator/cache";
 *
 * function describe(change: StoreChange<ConfigMap>): string {
 *   return change.type === "listed" ? `listed at ${change.resourceVersion}` : change.type;
 * }
 * console.log(describe({ type: "listed", resourceVersion: "42" })); // listed at 42
 * ```
 */
export type StoreChange<T> =
  | { type: "add"; obj: DeepReadonly<T>; initial: boolean }
  | { type: "update"; old: DeepReadonly<T>; obj: DeepReadonly<T> }
  | { type: "delete"; obj: DeepReadonly<T> }
  | { type: "listed"; resourceVersion?: string };

/**
 * What an informer's handler hears, as client-go's `ResourceEventHandler`. `isInInitialList`
 * marks adds from a (re)list's first delivery.
 *
 * @example
 * ```ts
 * import type { ConfigMap } from "@rudder/operator";
 * import type { ResourceEventHandler } from "@rudder/operator/cache";
 *
 * const handler: ResourceEventHandler<ConfigMap> = {
 *   onAdd: (cm, initial) => console.log("add", cm.metadata?.name, initial),
 *   onDelete: (cm) => console.log("delete", cm.metadata?.name),
 * };
 * handler.onAdd?.({ apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } }, true);
 * // add a true
 * ```
 */
export interface ResourceEventHandler<T> {
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

/** What a handler's queue holds: a store change, or the mark that the initial list is done. */
type Notification<T> = Exclude<StoreChange<T>, { type: "listed" }> | { type: "synced" };

/**
 * One handler's queue. Notifications are appended by the stream reader and drained by this
 * listener's own loop, which yields to the event loop every few hundred calls so I/O goes on.
 */
class Listener<T> implements HandlerRegistration {
  readonly #handler: ResourceEventHandler<T>;
  readonly #description: string;
  #queue: Notification<T>[] = [];
  #head = 0;
  #draining = false;
  #removed = false;
  #synced = false;

  constructor(handler: ResourceEventHandler<T>, description: string) {
    this.#handler = handler;
    this.#description = description;
  }

  push(notification: Notification<T>): void {
    if (this.#removed) return;
    this.#queue.push(notification);
    if (!this.#draining) {
      this.#draining = true;
      // A macrotask, so the stream reader goes on first; setImmediate rather than setTimeout(0),
      // which waits at least 1 ms (2 ms on a busy Deno) before every delivery. The global, which
      // every runtime has: importing `node:timers` on Deno loads a module of its Node layer.
      setImmediate(() => this.#drain());
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
        await new Promise((resolve) => setImmediate(resolve));
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
 * Fans store changes out to handlers, each through its own queue. A handler added after the
 * first list hears the current objects as initial adds first.
 *
 * @example
 * ```ts
 * import { type ConfigMap } from "@rudder/operator";
 * import { Dispatcher } from "@rudder/operator/cache";
 *
 * const dispatcher = new Dispatcher<ConfigMap>("ConfigMaps");
 * dispatcher.add({ onAdd: (cm) => console.log("add", cm.metadata?.name) }, []);
 * const obj = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "a" } } as const;
 * dispatcher.dispatch({ type: "add", obj, initial: false });
 * await new Promise((resolve) => setTimeout(resolve, 10)); // add a
 * ```
 */
export class Dispatcher<T> {
  readonly #listeners = new Set<Listener<T>>();
  readonly #description: string;
  #synced = false;

  /** A dispatcher whose log records name `description` (kind, namespace, selectors). */
  constructor(description: string) {
    this.#description = description;
  }

  /**
   * Adds a handler. `current`, when given, are the objects already listed: the handler hears
   * each as an initial add, then counts as synced. Without it, the handler syncs with the
   * first `listed` change.
   */
  add(
    handler: ResourceEventHandler<T>,
    current?: Iterable<DeepReadonly<T>>,
  ): HandlerRegistration {
    const listener = new Listener(handler, this.#description);
    this.#listeners.add(listener);
    if (current) {
      for (const obj of current) listener.push({ type: "add", obj, initial: true });
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

  /** Queues a change for every handler; returns at once. */
  dispatch(change: StoreChange<T>): void {
    if (change.type === "listed") {
      if (this.#synced) return;
      this.#synced = true;
      for (const listener of this.#listeners) listener.push({ type: "synced" });
      return;
    }
    for (const listener of this.#listeners) listener.push(change);
  }
}
