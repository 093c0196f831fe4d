/**
 * The shard side of a sharded controller: the gate its requests pass as they leave the queue,
 * and the drain hand-over.
 *
 * - A request is reconciled here only if its object is in this shard's cache (which holds only
 *   objects labelled with this shard) without a drain mark, or if its object was really
 *   deleted while it was ours. An object that moved away, or one of another shard that a
 *   child's event named, is not reconciled here.
 * - On a drain mark, the gate stops admitting the object, waits for its in-flight reconcile to
 *   end, and then acknowledges: it removes the shard label from the object's children that it
 *   holds, then the shard label and the drain mark from the object, each patch testing the
 *   labels first. After that the sharder assigns the object to its new shard; the watch drops
 *   it from this cache without a delete event.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { DeepReadonly } from "../api/readonly.ts";
import { gvkKey, type KubeObject, type ResourceType } from "../api/resource.ts";
import type { Cache } from "../cache/cache.ts";
import type { Client } from "../client/client.ts";
import { jsonPatch } from "../client/patch.ts";
import type { ReconcileAdmission } from "../controller/controller.ts";
import { isConflict, isInvalid, isNotFound } from "../kube/errors.ts";
import type { Request } from "../reconcile/reconcile.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { errorMessage } from "../util/logging.ts";
import { drainLabel, shardLabel } from "./labels.ts";
import type { ShardingMetrics } from "./metrics.ts";
import { releasePatch } from "./patches.ts";

const logger = getLogger(["rudder", "sharding", "shard"]);

/**
 * The cache index of owned kinds by their controlling owner's uid, so that a hand-over finds an
 * object's children without scanning its namespace.
 */
export const CONTROLLER_UID_FIELD = "sharding.rudder.dev/controller-uid";

/** The index function of {@linkcode CONTROLLER_UID_FIELD}. */
export function controllerUID(obj: DeepReadonly<KubeObject>): string[] {
  const ref = obj.metadata?.ownerReferences?.find((r) => r.controller);
  return ref?.uid ? [ref.uid] : [];
}

/** How long a real delete keeps its request admissible: retries of its reconcile. */
const DELETED_TTL_MS = 10 * 60_000;
const RETRY_MS = 1_000;

/**
 * The objects this shard hands over, so that its cache takes their leaving for what it is: the
 * API server's delete event for an object that left the shard's selector carries the object's
 * previous state, just like a real delete. An object whose last state has the drain mark, or
 * that the shard is releasing (a drained object's children), has left; anything else was
 * deleted.
 */
export class Departures {
  readonly #drainKey: string;
  readonly #expected = new Set<string>();
  readonly #listeners = new Set<
    (type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>) => void
  >();

  /** Departures of `ring`. */
  constructor(ring: string) {
    this.#drainKey = drainLabel(ring);
  }

  /** `obj` of `type` is about to be released by this shard. */
  expect(type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>): void {
    this.#expected.add(departureKey(type, obj));
  }

  /** The release of `obj` did not happen after all. */
  cancel(type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>): void {
    this.#expected.delete(departureKey(type, obj));
  }

  /**
   * Whether the delete of `obj` (its last cached state) of `type` is its departure; a departure
   * is told to the listeners.
   */
  isDeparture(type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>): boolean {
    const expected = this.#expected.delete(departureKey(type, obj));
    const departed = expected || obj.metadata?.labels?.[this.#drainKey] === "true";
    if (departed) { for (const listener of this.#listeners) listener(type, obj); }
    return departed;
  }

  /**
   * Calls `listener` on every departure from now on, with the object's kind and its last cached
   * state; returns what stops it.
   */
  onDeparture(
    listener: (type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>) => void,
  ): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

function departureKey(type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>): string {
  return `${type.group}/${type.kind}|${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
}

/** Options of {@linkcode ShardGate}. */
export interface ShardGateOptions {
  /** The ring. */
  ring: string;
  /** This replica's shard. */
  shard: string;
  /** The sharded kind. */
  type: ResourceType<KubeObject>;
  /** The kinds that follow their owner of `type`. */
  owns: readonly ResourceType<KubeObject>[];
  /** The manager's cache, which selects this shard's objects of `type` and `owns`. */
  cache: Cache;
  /** An uncached client for the acknowledgements. */
  client: Client;
  /** Timers and drain durations; default the real clock. */
  clock?: Clock;
  /** Whether the owned kinds' caches have the {@linkcode CONTROLLER_UID_FIELD} index. */
  indexedOwners?: boolean;
  /** Where the shard notes the objects it releases; default a set of its own. */
  departures?: Departures;
  /** Metric hooks. */
  metrics?: Pick<ShardingMetrics, "drained">;
}

interface Drain {
  /** When the mark was seen (clock ms). */
  since: number;
  /**
   * The object as it was when its mark was seen; dropped once acknowledged, so that a large
   * hand-over keeps no copy of what left.
   */
  obj?: DeepReadonly<KubeObject>;
  /** Whether the acknowledgement is being written, or was. */
  state: "waiting" | "acknowledging" | "acknowledged";
  at: number;
}

/** The gate of one sharded controller's requests, and its drain hand-over. */
export class ShardGate implements ReconcileAdmission {
  readonly #options: ShardGateOptions;
  readonly #clock: Clock;
  readonly #shardKey: string;
  readonly #drainKey: string;
  readonly #inFlight = new Set<string>();
  readonly #draining = new Map<string, Drain>();
  /** Objects really deleted while ours, by key, with when. */
  readonly #deleted = new Map<string, number>();
  readonly #departures: Departures;
  #stopped = false;

  /** A gate; {@linkcode ShardGate.start} hooks it to the cache. */
  constructor(options: ShardGateOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#shardKey = shardLabel(options.ring);
    this.#drainKey = drainLabel(options.ring);
    this.#departures = options.departures ?? new Departures(options.ring);
  }

  /** Listens to the sharded kind's informer until `signal` aborts. */
  async start(signal: AbortSignal): Promise<void> {
    const informer = await this.#options.cache.getInformer(this.#options.type);
    const registration = informer.addEventHandler({
      onAdd: (obj) => this.observe(obj),
      onUpdate: (_old, obj) => this.observe(obj),
      onDelete: (obj) => this.observeDelete(obj),
    });
    const kind = gvkKey(this.#options.type);
    const stopListening = this.#departures.onDeparture((type, obj) => {
      if (gvkKey(type) === kind) this.left(obj);
    });
    signal.addEventListener("abort", () => {
      this.#stopped = true;
      registration.remove();
      stopListening();
    }, { once: true });
  }

  /**
   * An object of the sharded kind left this shard's cache (handed over, or relabelled by the
   * sharder): nothing about it is left to guard, so its drain is forgotten. Without this, every
   * object a shard ever handed over would stay in its drain table until it came back.
   */
  left(obj: DeepReadonly<KubeObject>): void {
    this.#draining.delete(keyOf(obj));
  }

  /** An object of this shard was added or changed (from the informer). */
  observe(obj: DeepReadonly<KubeObject>): void {
    const key = keyOf(obj);
    this.#deleted.delete(key);
    // Handed over earlier and now in this shard's cache again: it came back (the ring moved it
    // here once more), so it is ours like any other object, and a later mark drains it afresh.
    if (this.#draining.get(key)?.state === "acknowledged") this.#draining.delete(key);
    if (obj.metadata?.labels?.[this.#drainKey] === "true") {
      this.#markDraining(key, obj);
      return;
    }
    const drain = this.#draining.get(key);
    // The mark was withdrawn before we acknowledged: the object stays.
    if (drain?.state === "waiting") this.#draining.delete(key);
  }

  /** An object of this shard was deleted (a real delete: moving away is no delete event). */
  observeDelete(obj: DeepReadonly<KubeObject>): void {
    const key = keyOf(obj);
    this.#draining.delete(key);
    const now = this.#clock.now();
    this.#deleted.delete(key); // re-inserted last: the map stays in time order
    this.#deleted.set(key, now);
    for (const [old, at] of this.#deleted) {
      if (now - at < DELETED_TTL_MS) break; // in insertion order: the rest are newer
      this.#deleted.delete(old);
    }
  }

  /** Whether the object is moving away (draining or handed over). */
  isDraining(request: Request): boolean {
    return this.#draining.has(requestKey(request));
  }

  async admit(request: Request): Promise<boolean> {
    const key = requestKey(request);
    let obj: DeepReadonly<KubeObject> | undefined;
    try {
      obj = await this.#options.cache.get(this.#options.type, request);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    // From here on synchronous: the drain handler cannot slip between this check and the
    // in-flight mark, so it either sees the reconcile or the reconcile sees the drain.
    if (this.#stopped) return false;
    const drain = this.#draining.get(key);
    if (
      drain?.state === "acknowledged" &&
      isOurs(obj, this.#shardKey, this.#drainKey, this.#options.shard)
    ) {
      this.#draining.delete(key); // back on this shard (its add event may still be on its way)
    } else if (drain) {
      if (!obj && drain.state === "acknowledged") this.#draining.delete(key);
      return false;
    }
    if (!obj) {
      if (!this.#deleted.has(key)) return false;
    } else {
      const labels = obj.metadata?.labels;
      if (labels?.[this.#drainKey] === "true") {
        this.#markDraining(key, obj);
        return false;
      }
      if (labels?.[this.#shardKey] !== this.#options.shard) return false;
    }
    this.#inFlight.add(key);
    return true;
  }

  finished(request: Request): void {
    const key = requestKey(request);
    this.#inFlight.delete(key);
    const drain = this.#draining.get(key);
    if (drain?.state === "waiting") void this.#acknowledge(key, drain);
  }

  #markDraining(key: string, obj: DeepReadonly<KubeObject>): void {
    if (this.#draining.has(key)) return;
    const drain: Drain = { since: this.#clock.now(), obj, state: "waiting", at: 0 };
    this.#draining.set(key, drain);
    logger.debug("Draining {key}", { key, kind: this.#options.type.kind });
    if (!this.#inFlight.has(key)) void this.#acknowledge(key, drain);
  }

  /** Hands the object over: its children first, then the object itself. Retries until done. */
  async #acknowledge(key: string, drain: Drain): Promise<void> {
    if (drain.state !== "waiting" || this.#stopped) return;
    const obj = drain.obj;
    if (!obj) return;
    drain.state = "acknowledging";
    const { client, ring, shard, type } = this.#options;
    try {
      await this.#releaseChildren(obj);
      await this.#release(type, obj);
      drain.state = "acknowledged";
      drain.obj = undefined;
      drain.at = this.#clock.now();
      const seconds = (drain.at - drain.since) / 1000;
      this.#options.metrics?.drained(ring, type.kind, seconds);
      logger.debug("Handed {key} over after {seconds} s", { key, seconds, kind: type.kind });
    } catch (err) {
      if (this.#stopped || this.#draining.get(key) !== drain) return;
      if (isNotFound(err)) {
        this.#draining.delete(key);
        return;
      }
      if (isInvalid(err) || isConflict(err)) {
        // The labels changed under us: read them again and decide afresh.
        try {
          const current = await client.get(type, requestOf(obj));
          const labels = current.metadata?.labels;
          if (labels?.[this.#shardKey] !== shard || labels?.[this.#drainKey] !== "true") {
            // Not ours any more, or no longer draining: nothing to hand over.
            this.#draining.delete(key);
            return;
          }
          drain.obj = current;
        } catch (readErr) {
          if (isNotFound(readErr)) {
            this.#draining.delete(key);
            return;
          }
        }
      } else {
        logger.warn("Acknowledging the drain of {key} failed, retrying: {error}", {
          key,
          error: errorMessage(err),
        });
      }
      drain.state = "waiting";
      this.#clock.setTimeout(() => {
        if (this.#draining.get(key) === drain && !this.#inFlight.has(key)) {
          void this.#acknowledge(key, drain);
        }
      }, RETRY_MS);
    }
  }

  /** Removes this shard's label (and any drain mark) from `obj`, expecting it to leave. */
  async #release(type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>): Promise<void> {
    const { client, shard } = this.#options;
    this.#departures.expect(type, obj);
    try {
      await client.patch(
        obj,
        jsonPatch(releasePatch(obj.metadata?.labels, this.#shardKey, this.#drainKey, shard)),
      );
    } catch (err) {
      this.#departures.cancel(type, obj);
      throw err;
    }
  }

  /** Removes this shard's label from the children of `owner` in this cache. */
  async #releaseChildren(owner: DeepReadonly<KubeObject>): Promise<void> {
    const uid = owner.metadata?.uid;
    if (!uid) return;
    const { cache, shard } = this.#options;
    for (const kind of this.#options.owns) {
      const children = await cache.list(kind, {
        namespace: owner.metadata?.namespace,
        ...(this.#options.indexedOwners ? { fieldSelector: { [CONTROLLER_UID_FIELD]: uid } } : {}),
      });
      for (const child of children.items) {
        const controlled = child.metadata?.ownerReferences?.some((ref) =>
          ref.controller && ref.uid === uid
        );
        const labels = child.metadata?.labels;
        if (!controlled || labels?.[this.#shardKey] !== shard) continue;
        try {
          await this.#release(kind, child);
        } catch (err) {
          // Gone, or changed by someone else: either way no longer ours to release.
          if (!isNotFound(err) && !isInvalid(err) && !isConflict(err)) throw err;
        }
      }
    }
  }
}

/** Whether `obj` carries this shard's label and no drain mark. */
function isOurs(
  obj: DeepReadonly<KubeObject> | undefined,
  shardKey: string,
  drainKey: string,
  shard: string,
): boolean {
  const labels = obj?.metadata?.labels;
  return labels?.[shardKey] === shard && labels?.[drainKey] !== "true";
}

function keyOf(obj: DeepReadonly<KubeObject>): string {
  return `${obj.metadata?.namespace ?? ""}/${obj.metadata?.name ?? ""}`;
}

function requestKey(request: Request): string {
  return `${request.namespace ?? ""}/${request.name}`;
}

function requestOf(obj: DeepReadonly<KubeObject>): Request {
  return { namespace: obj.metadata?.namespace ?? "", name: obj.metadata?.name ?? "" };
}
