/**
 * The fallback: every member of a ring, not only the elected sharder, keeps objects from staying
 * without a live shard while the sharder's replica is gone and its Lease has yet to expire.
 *
 * - It watches the unassigned objects of the sharded and owned kinds (selector
 *   `!shard.rudder.dev/<ring>`, metadata only: normally none). One still unassigned
 *   {@linkcode FALLBACK_UNASSIGNED_GRACE_MS} after this replica first saw it, which the elected
 *   sharder would have labelled at once, it assigns from its own view of the ring: a sharded
 *   object to its ring shard, an owned one to its owner's shard.
 * - When a shard leaves the ring (its Lease expired or was released), it waits
 *   {@linkcode FALLBACK_DEAD_SHARD_GRACE_MS}; if objects are still labelled with that shard, it
 *   claims the shard's Lease, moves them without a drain (children first, to their owner's
 *   shard) and releases the Lease. Another writer's live claim (the sharder's, another
 *   replica's) makes it wait for that claim to end and look again.
 *
 * Every write tests what it read (the labels, and the `resourceVersion` where a label is added),
 * and a claim is an update of the Lease version the ring saw: of two replicas, one wins, and a
 * lost race (409, 422) is neither an error nor retried unless the object is seen unassigned
 * again. Moves between two live shards (drains) stay the elected sharder's alone, which keeps
 * the hand-over free of overlap. While this replica is the sharder, its sharder assigns the
 * unassigned objects; a gone shard's objects go to whoever claims its Lease first.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { DeepReadonly } from "../api/readonly.ts";
import { gvkKey, type KubeObject, type ResourceType } from "../api/resource.ts";
import { Informer } from "../cache/informer.ts";
import { objectKey } from "../cache/store.ts";
import type { RestClient } from "../kube/rest.ts";
import { type Clock, realClock, type TimerHandle } from "../util/clock.ts";
import { errorMessage } from "../util/logging.ts";
import { controllingOwner, type ObjectReferenceForRing, objectRingKey, ringKey } from "./labels.ts";
import type { RingMembers } from "./membership.ts";
import type { ShardingMetrics } from "./metrics.ts";
import type { HashRing } from "./ring.ts";
import { Pool, type ShardedKind, type ShardWriter, uniqueKinds } from "./writer.ts";

const logger = getLogger(["rudder", "sharding", "fallback"]);

/**
 * Milliseconds an object may stay unassigned, once a replica has seen it, before that replica's
 * fallback assigns it: the elected sharder labels it at once, so this is only spent when the
 * sharder is gone. Well inside the 10 s an object may go without a shard.
 *
 * @example
 * ```ts
 * import { FALLBACK_UNASSIGNED_GRACE_MS } from "@rudder/operator/sharding";
 *
 * console.log(FALLBACK_UNASSIGNED_GRACE_MS); // 2500
 * ```
 */
export const FALLBACK_UNASSIGNED_GRACE_MS = 2_500;
/**
 * Milliseconds after a shard leaves the ring before the fallback moves its objects: the sharder
 * starts at once and claims the shard's Lease first when it is alive.
 */
export const FALLBACK_DEAD_SHARD_GRACE_MS = 1_000;
/** Milliseconds between looks at a gone shard whose Lease another writer has claimed. */
const CLAIM_POLL_MS = 1_000;
/** Milliseconds before a failed write or list is tried again. */
const RETRY_MS = 2_000;
/** Patches a takeover has in flight at once. */
const MOVE_CONCURRENCY = 16;

/** Options of {@linkcode Fallback}. */
export interface FallbackOptions {
  /** The ring's name. */
  ring: string;
  /** The sharded kinds. */
  kinds: () => readonly ShardedKind[];
  /** The ring's live members. */
  members: RingMembers;
  /** The writes (its identity is the holder of the Leases it claims). */
  writer: ShardWriter;
  /** Whether this replica may act: it holds its shard Lease. */
  member: () => boolean;
  /** Whether this replica is the ring's sharder now (then the sharder does the work). */
  sharder: () => boolean;
  /** Timers; default the real clock. */
  clock?: Clock;
  /** Metric hooks. */
  metrics?: Pick<ShardingMetrics, "fallbackAssigned">;
  /** Default {@linkcode FALLBACK_UNASSIGNED_GRACE_MS}. */
  unassignedGrace?: number;
  /** Default {@linkcode FALLBACK_DEAD_SHARD_GRACE_MS}. */
  deadShardGrace?: number;
}

/** An unassigned object this replica has seen. */
interface Pending {
  type: ResourceType<KubeObject>;
  obj: DeepReadonly<KubeObject>;
  /** When it was first seen (clock ms). */
  since: number;
  timer?: TimerHandle;
  /** An attempt is running. */
  busy?: boolean;
}

/** The fallback of one replica; see the module doc. */
export class Fallback {
  readonly #options: FallbackOptions;
  readonly #clock: Clock;
  readonly #pending = new Map<string, Pending>();
  /** The gone shards being watched over, and what stops each watch. */
  readonly #gone = new Map<string, AbortController>();
  readonly #tasks = new Set<Promise<void>>();
  readonly #stop = new AbortController();
  #stopListening: () => void = () => {};

  /** A fallback; {@linkcode Fallback.start} starts it (or {@linkcode Fallback.run} with watches). */
  constructor(options: FallbackOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
  }

  /** Follows the ring's changes until {@linkcode Fallback.stop}. */
  start(): void {
    this.#stopListening = this.#options.members.onChange((ring, previous) =>
      this.#ringChanged(ring, previous)
    );
  }

  /** Stops every timer and takeover, and waits for the writes in flight. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#stopListening();
    for (const entry of this.#pending.values()) this.#clock.clearTimeout(entry.timer);
    this.#pending.clear();
    for (const gone of this.#gone.values()) gone.abort();
    this.#gone.clear();
    while (this.#tasks.size > 0) await Promise.allSettled([...this.#tasks]);
  }

  /**
   * Watches the unassigned objects of every kind through `rest` and runs until `signal` aborts.
   */
  async run(rest: RestClient, namespaces: readonly string[] | undefined, signal: AbortSignal) {
    const shardKey = this.#options.writer.shardKey;
    const informers = uniqueKinds(this.#options.kinds()).flatMap((type) =>
      (type.scope === "Cluster" || !namespaces ? [undefined] : [...namespaces]).map((namespace) =>
        new Informer<KubeObject>(rest, type, {
          namespace,
          labelSelector: `!${shardKey}`,
          metadataOnly: true,
          resyncPeriod: 0,
        })
      )
    );
    for (const informer of informers) {
      const seen = (obj: DeepReadonly<KubeObject>) => this.observe(informer.type, obj);
      informer.addEventHandler({
        onAdd: seen,
        onUpdate: (_old, obj) => seen(obj),
        onDelete: (obj) => this.forget(informer.type, obj),
      });
    }
    this.start();
    try {
      await Promise.all(informers.map((informer) => informer.run(signal)));
    } finally {
      await this.stop();
    }
  }

  /** `obj` of `type` was seen (added or changed); an assigned one is forgotten. */
  observe(type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>): void {
    if (this.#stop.signal.aborted) return;
    if (obj.metadata?.labels?.[this.#options.writer.shardKey] !== undefined) {
      this.forget(type, obj);
      return;
    }
    const forTypes = this.#options.kinds().map((k) => k.type);
    // An object of an owned kind that no sharded object owns is not sharding's (most ConfigMaps).
    if (!forTypes.includes(type) && !controllingOwner(obj, forTypes)) return;
    const key = pendingKey(type, obj);
    const entry = this.#pending.get(key);
    if (entry) {
      entry.obj = obj;
      if (entry.timer === undefined && !entry.busy) this.#schedule(key, entry);
      return;
    }
    const fresh: Pending = { type, obj, since: this.#clock.now() };
    this.#pending.set(key, fresh);
    this.#schedule(key, fresh);
  }

  /** `obj` of `type` is gone, or no longer unassigned. */
  forget(type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>): void {
    const key = pendingKey(type, obj);
    const entry = this.#pending.get(key);
    if (!entry) return;
    this.#clock.clearTimeout(entry.timer);
    this.#pending.delete(key);
  }

  /** Arms the entry's timer for the end of its grace (at once when that has passed). */
  #schedule(key: string, entry: Pending, at?: number): void {
    const grace = this.#options.unassignedGrace ?? FALLBACK_UNASSIGNED_GRACE_MS;
    const due = at ?? entry.since + grace;
    entry.timer = this.#clock.setTimeout(() => {
      entry.timer = undefined;
      this.#track(this.#assign(key, entry));
    }, due - this.#clock.now());
  }

  /** Assigns one object still unassigned after its grace. */
  async #assign(key: string, entry: Pending): Promise<void> {
    if (this.#pending.get(key) !== entry) return;
    const later = () => this.#schedule(key, entry, this.#clock.now() + RETRY_MS);
    const ring = this.#options.members.ring;
    if (!this.#options.member() || this.#options.sharder() || ring.empty) {
      later(); // the sharder does it, or this replica cannot yet
      return;
    }
    const { type, obj } = entry;
    const forTypes = this.#options.kinds().map((k) => k.type);
    entry.busy = true;
    try {
      const target = await this.#options.writer.targetOf(obj, type, forTypes, ring);
      if (!target) return later();
      if (this.#pending.get(key) !== entry) return;
      if (!(await this.#options.writer.assign(obj, target))) {
        // Lost a race, or it changed: its next event (if still unassigned) decides.
        logger.debug("Assigning {kind} {key} lost a race", {
          kind: type.kind,
          key: objectKey(obj),
        });
        return;
      }
      this.#pending.delete(key);
      this.#options.metrics?.fallbackAssigned(this.#options.ring, type.kind, "unassigned");
      logger.debug("Assigned unassigned {kind} {key} to {shard} in the sharder's stead", {
        kind: type.kind,
        key: objectKey(obj),
        shard: target,
      });
    } catch (err) {
      if (this.#stop.signal.aborted) return;
      logger.warn("Assigning {kind} {key} failed, retrying: {error}", {
        kind: type.kind,
        key: objectKey(obj),
        error: errorMessage(err),
      });
      later();
    } finally {
      entry.busy = false;
    }
  }

  #ringChanged(ring: HashRing, previous: HashRing): void {
    if (this.#stop.signal.aborted) return;
    for (const shard of ring.members) {
      this.#gone.get(shard)?.abort(); // it came back
      this.#gone.delete(shard);
    }
    for (const shard of previous.members) {
      if (ring.has(shard) || this.#gone.has(shard)) continue;
      const stop = new AbortController();
      this.#gone.set(shard, stop);
      this.#track(
        this.#takeOver(shard, stop.signal).catch((err) => {
          logger.warn("Taking over gone shard {shard} failed: {error}", {
            shard,
            error: errorMessage(err),
          });
        }).finally(() => {
          if (this.#gone.get(shard) === stop) this.#gone.delete(shard);
        }),
      );
    }
  }

  /** Moves the objects of gone `shard` once its grace has passed, unless another writer does. */
  async #takeOver(shard: string, signal: AbortSignal): Promise<void> {
    const writer = this.#options.writer;
    await this.#sleep(this.#options.deadShardGrace ?? FALLBACK_DEAD_SHARD_GRACE_MS, signal);
    while (!signal.aborted) {
      const claimedUntil = writer.claimedUntil(shard);
      if (
        !this.#options.member() || this.#options.members.ring.empty || claimedUntil !== undefined
      ) {
        // Another writer moves them (or this replica cannot): look again when its claim ends.
        await this.#sleep(CLAIM_POLL_MS, signal);
        continue;
      }
      try {
        if (!(await this.#holdsObjects(shard, signal))) return;
        if (signal.aborted) return;
        if (!(await writer.claim(shard))) {
          await this.#sleep(CLAIM_POLL_MS, signal);
          continue;
        }
        try {
          await this.#move(shard, signal);
        } finally {
          await writer.unclaim(shard);
        }
        // Then look once more: an object that changed under a patch keeps the gone shard's label.
        await this.#sleep(CLAIM_POLL_MS, signal);
      } catch (err) {
        if (signal.aborted) return;
        logger.warn("Moving the objects of gone shard {shard} failed, retrying: {error}", {
          shard,
          error: errorMessage(err),
        });
        await this.#sleep(RETRY_MS, signal);
      }
    }
  }

  /** Whether any object is still labelled with `shard`. */
  async #holdsObjects(shard: string, signal: AbortSignal): Promise<boolean> {
    const selector = `${this.#options.writer.shardKey}=${shard}`;
    for (const type of uniqueKinds(this.#options.kinds())) {
      for await (const _ of this.#options.writer.list(type, signal, selector, 1)) return true;
    }
    return false;
  }

  /** Moves the objects labelled with gone `shard`: children first, then the sharded objects. */
  async #move(shard: string, signal: AbortSignal): Promise<void> {
    const writer = this.#options.writer;
    const kinds = this.#options.kinds();
    const forTypes = kinds.map((k) => k.type);
    const selector = `${writer.shardKey}=${shard}`;
    const pool = new Pool(MOVE_CONCURRENCY);
    let moved = 0;
    const move = (type: ResourceType<KubeObject>, obj: KubeObject, target: string | undefined) =>
      pool.run(async () => {
        if (!target || this.#options.members.ring.has(shard)) return; // or it came back
        if (!(await writer.assign(obj, target))) return;
        moved++;
        this.#options.metrics?.fallbackAssigned(this.#options.ring, type.kind, "dead-shard");
      });
    try {
      // The owners on the gone shard, by key: their children go where they go, without a read.
      const ring = this.#options.members.ring;
      const owners: { type: ResourceType<KubeObject>; obj: KubeObject; target?: string }[] = [];
      const going = new Map<string, string | undefined>();
      for (const type of forTypes) {
        for await (const obj of writer.list(type, signal, selector)) {
          const target = ring.shardFor(objectRingKey(obj, forTypes));
          owners.push({ type, obj, target });
          going.set(ringKey(ownKey(type, obj)), target);
        }
      }
      // Children first, so the owner's new shard finds them when it first reconciles the owner.
      for (const type of uniqueKinds(kinds).filter((t) => !forTypes.includes(t))) {
        for await (const obj of writer.list(type, signal, selector)) {
          if (signal.aborted) return;
          const owner = controllingOwner(obj, forTypes);
          if (!owner) continue; // not sharding's
          const key = ringKey(owner);
          if (going.has(key)) {
            await move(type, obj, going.get(key));
          } else {
            await pool.run(async () => {
              const target = await writer.ownerShard(owner, forTypes, this.#options.members.ring);
              await move(type, obj, target);
            });
          }
        }
      }
      await pool.drain();
      for (const { type, obj, target } of owners) {
        if (signal.aborted) return;
        await move(type, obj, target);
      }
      await pool.drain();
    } finally {
      await pool.drain().catch(() => {});
      if (moved > 0) {
        logger.info("Moved {count} objects of gone shard {shard} in the sharder's stead", {
          count: moved,
          shard,
        });
      }
    }
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task);
    task.finally(() => this.#tasks.delete(task)).catch(() => {});
  }

  #sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.#clock.clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.#stop.signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = this.#clock.setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      this.#stop.signal.addEventListener("abort", done, { once: true });
    });
  }
}

/** The key parts of `obj` itself, of `type`. */
function ownKey(type: ResourceType<KubeObject>, obj: KubeObject): ObjectReferenceForRing {
  return {
    group: type.group,
    kind: type.kind,
    namespace: obj.metadata?.namespace ?? "",
    name: obj.metadata?.name ?? "",
  };
}

function pendingKey(type: ResourceType<KubeObject>, obj: DeepReadonly<KubeObject>): string {
  return `${gvkKey(type)}|${objectKey(obj)}`;
}
