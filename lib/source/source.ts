/**
 * Sources feed events to a controller, like controller-runtime's `source` package: the kind
 * source (changes of one kind, from the shared cache) and the channel source (events from an
 * async iterable: external triggers, or "reconcile everything" on demand).
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import type { Cache } from "../cache/cache.ts";
import type { HandlerRegistration } from "../cache/informer.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import type { GenericEvent } from "../event/event.ts";
import type { RequestQueue } from "../reconcile/reconcile.ts";
import type { EventHandler } from "../handler/handler.ts";
import { duringEvent } from "../util/tracing.ts";
import {
  passesCreate,
  passesDelete,
  passesGeneric,
  passesUpdate,
  type Predicate,
} from "../predicate/predicate.ts";

const logger = getLogger(["rudder", "controller", "source"]);

/** Delivers events to a controller's queue. */
export interface Source {
  /** What the source watches, for messages (e.g. `kind source: ConfigMap`). */
  readonly description: string;
  /** Starts delivering events to `queue` until `signal` aborts. Resolves once set up. */
  start(signal: AbortSignal, queue: RequestQueue): Promise<void>;
  /** Resolves once the initial state has been delivered (the informer listed). */
  waitForSync(signal: AbortSignal): Promise<void>;
}

/** Polls `check` until true or `signal` aborts (then rejects with its reason). */
async function until(check: () => boolean, signal: AbortSignal): Promise<void> {
  while (!check()) {
    signal.throwIfAborted();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Options of {@linkcode kindSource}. */
export interface KindSourceOptions<T extends KubeObject> {
  /** Filters applied before the handler. */
  predicates?: Predicate<T>[];
  /** Watch metadata only (PartialObjectMetadata), through separate informers. */
  metadataOnly?: boolean;
}

/**
 * Events about every object of `type` in `cache`, through `handler`, like controller-runtime's
 * `source.Kind`. The informer is shared with every other reader of the cache.
 *
 * @example
 * ```ts
 * import { ConfigMap } from "@rudder/operator";
 * import { type Cache } from "@rudder/operator/cache";
 * import { enqueueRequestForObject } from "@rudder/operator/handler";
 * import { kindSource } from "@rudder/operator/source";
 *
 * declare const cache: Cache;
 * const source = kindSource(cache, ConfigMap, enqueueRequestForObject());
 * ```
 */
export function kindSource<T extends KubeObject>(
  cache: Cache,
  type: ResourceType<T>,
  handler: EventHandler<T>,
  options: KindSourceOptions<T> = {},
): Source {
  const predicates = options.predicates ?? [];
  let registration: HandlerRegistration | undefined;
  return {
    description: `kind source: ${type.kind}${options.metadataOnly ? " (metadata)" : ""}`,
    async start(signal, queue) {
      const informer = await cache.getInformer(type, { metadataOnly: options.metadataOnly });
      registration = informer.addEventHandler({
        onAdd: (object, isInInitialList) => {
          const event = { object, isInInitialList };
          if (passesCreate(predicates, event)) {
            duringEvent(object, () => handler.create?.(event, queue));
          }
        },
        onUpdate: (objectOld, objectNew) => {
          const event = { objectOld, objectNew };
          if (passesUpdate(predicates, event)) {
            duringEvent(objectNew, () => handler.update?.(event, queue));
          }
        },
        onDelete: (object) => {
          const event = { object, deleteStateUnknown: false };
          if (passesDelete(predicates, event)) {
            duringEvent(object, () => handler.delete?.(event, queue));
          }
        },
      });
      // A controller stopped before this point (watch() after its stop, or a stop while the
      // informer was being made) has fired its abort already: a listener added now never runs.
      if (signal.aborted) registration.remove();
      else signal.addEventListener("abort", () => registration?.remove(), { once: true });
    },
    async waitForSync(signal) {
      await until(() => registration?.hasSynced() ?? false, signal);
    },
  };
}

/**
 * Events from an async iterable, through `handler`'s `generic` hook, like controller-runtime's
 * `source.Channel`. Each value is an object (at least its namespace and name) or a
 * `GenericEvent`. The iterable is read until it ends or the controller stops.
 *
 * @example
 * ```ts
 * import { type Unstructured } from "@rudder/operator/api";
 * import { enqueueRequestForObject } from "@rudder/operator/handler";
 * import { channelSource } from "@rudder/operator/source";
 *
 * async function* triggers(): AsyncGenerator<Unstructured> {
 *   yield { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace: "default", name: "settings" } };
 * }
 * const source = channelSource(triggers(), enqueueRequestForObject());
 * ```
 */
export function channelSource<T extends KubeObject>(
  events: AsyncIterable<T | DeepReadonly<T> | GenericEvent<T>>,
  handler: EventHandler<T>,
  options: { predicates?: Predicate<T>[] } = {},
): Source {
  const predicates = options.predicates ?? [];
  return {
    description: "channel source",
    start(signal, queue) {
      const iterator = events[Symbol.asyncIterator]();
      const close = () => {
        iterator.return?.()?.catch?.(() => {});
      };
      // Started after the controller stopped (watch() after its stop): close it now, since
      // the abort event has fired already.
      if (signal.aborted) close();
      else signal.addEventListener("abort", close, { once: true });
      (async () => {
        try {
          while (!signal.aborted) {
            const next = await iterator.next();
            if (next.done || signal.aborted) break;
            const value = next.value;
            const event = (value && typeof value === "object" && "object" in value &&
                !("apiVersion" in value))
              ? value as GenericEvent<T>
              : { object: value as DeepReadonly<T> };
            if (passesGeneric(predicates, event)) {
              duringEvent(event.object, () => handler.generic?.(event, queue));
            }
          }
        } catch (err) {
          if (!signal.aborted) logger.error("Channel source failed: {error}", { error: err });
        }
      })();
      return Promise.resolve();
    },
    waitForSync: () => Promise.resolve(),
  };
}
