/**
 * The sharder: one replica of the ring (elected with the `<ring>-sharder` Lease) assigns
 * objects to shards.
 *
 * - It watches only the unassigned objects of the sharded kinds and their owned kinds (label
 *   selector `!shard.rudder.dev/<ring>`, metadata only) and labels each: a sharded object with
 *   its ring shard, an owned object with its owner's shard (or the ring shard of its owner's key
 *   while the owner moves). Owned-kind objects without a sharded owner are left alone.
 * - On every change of the ring it sweeps the assigned objects with paged metadata lists,
 *   holding one page at a time: an object whose ring shard differs from its label is marked to
 *   drain when its shard is alive (the shard hands it over, then it is assigned again), and
 *   relabelled at once when its shard is gone. A drain mark on an object the ring gives back to
 *   its shard is withdrawn. Owned objects of a gone shard go straight to their owner's new shard,
 *   and so do owned objects left behind on a live shard their settled owner has left. While
 *   hand-overs are under way, it sweeps again every few seconds.
 * - Newly elected alone in its ring, it first waits for a quiet ring (no change for 2 s, at
 *   most 5 s), so that replicas started together share the objects from the start.
 * - Its writes (in {@linkcode ShardWriter}) test what they read, as the fallback's do: while the
 *   sharder's replica is gone and its Lease not yet expired, every other member's
 *   fallback (fallback.ts) assigns unassigned objects and moves a gone shard's objects, and a dead
 *   shard's Lease, claimed by whichever writer comes first, decides who moves its objects.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { DeepReadonly } from "../api/readonly.ts";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import { Informer } from "../cache/informer.ts";
import { objectKey } from "../cache/store.ts";
import type { Client } from "../client/client.ts";
import type { RestClient } from "../kube/rest.ts";
import { errorMessage } from "../util/logging.ts";
import { WorkQueue } from "../workqueue/workqueue.ts";
import { controllingOwner, objectRingKey, ringKey } from "./labels.ts";
import type { RingMembers } from "./membership.ts";
import type { ShardingMetrics } from "./metrics.ts";
import { drainPatch, undrainPatch } from "./patches.ts";
import type { HashRing } from "./ring.ts";
import {
  type ListPage,
  metadataPages,
  Pool,
  type ShardedKind,
  ShardWriter,
  uniqueKinds,
} from "./writer.ts";

const logger = getLogger(["rudder", "sharding", "sharder"]);

const ASSIGN_WORKERS = 8;
/** Patches a sweep has in flight at once: a dead shard's thousand objects move in seconds. */
const SWEEP_CONCURRENCY = 16;
/**
 * Milliseconds after a sweep that left hand-overs under way before the next one: it finds the
 * children that reached their old shard's cache only after their owner was handed over.
 */
const SETTLE_SWEEP_MS = 5_000;
/**
 * A newly elected sharder waits until the ring has not changed for this long (milliseconds)
 * before it assigns or moves anything: replicas started together (a rollout, a scale-up) then
 * land in one ring, instead of every object going to the first replica and two thirds of them
 * moving on again through drains.
 */
const RING_QUIET_MS = 2_000;
/** The longest a newly elected sharder waits for a quiet ring (milliseconds). */
const RING_QUIET_MAX_MS = 5_000;

/** What to do with an assigned object in a sweep. */
export type MoveDecision =
  /** Nothing: it is where the ring says, or already draining towards it. */
  | "none"
  /** Mark it to drain: its shard is alive and must hand it over. */
  | "drain"
  /** Withdraw its drain mark: the ring gives it back to its shard. */
  | "undrain"
  /** Relabel it to its ring shard at once: its shard is gone. */
  | "move";

/**
 * The sweep's decision for a sharded object labelled `current` (draining or not), whose ring
 * shard is `target`, given which shards are alive.
 *
 * @example
 * ```ts
 * import { decideMove } from "./sharder.ts";
 *
 * const alive = (shard: string) => shard !== "dead-0";
 * console.log(decideMove("a", false, "b", alive)); // drain
 * console.log(decideMove("dead-0", false, "b", alive)); // move
 * ```
 */
export function decideMove(
  current: string,
  draining: boolean,
  target: string | undefined,
  alive: (shard: string) => boolean,
): MoveDecision {
  if (target === undefined) return "none";
  if (current === target) return draining ? "undrain" : "none";
  if (!alive(current)) return "move";
  return draining ? "none" : "drain";
}

/** Options of {@linkcode Sharder}. */
export interface SharderOptions {
  /** The ring's name. */
  ring: string;
  /** The sharded kinds. */
  kinds: () => readonly ShardedKind[];
  /** The ring's live members. */
  members: RingMembers;
  /** For the watches of unassigned objects and the sweep's paged lists. */
  rest: RestClient;
  /** An uncached client for the labels' patches and the owners' reads. */
  client: Client;
  /** Metric hooks. */
  metrics?: Pick<ShardingMetrics, "moved">;
  /** Objects per page in a sweep; default 500. */
  pageSize?: number;
  /** Reads a page of a metadata list; default from `rest`. */
  listPage?: ListPage;
  /** The namespace of the shard Leases. */
  leaseNamespace: string;
  /** Who the sharder is, written as the holder of the dead shards' Leases it claims. */
  identity: string;
  /** Seconds a claim of a dead shard's Lease lasts if the sharder dies before releasing it. */
  claimSeconds: number;
  /**
   * The namespaces the sharded kinds live in (the manager cache's namespaces); default all.
   * With a namespaced Role the sharder can only watch and list these.
   */
  namespaces?: readonly string[];
}

/** The kind of each item in the assignment queue, and where it is. */
interface Unassigned {
  kind: number;
  key: string;
}

/** The sharder of one ring, while this replica is elected; see the module doc. */
export class Sharder {
  readonly #options: SharderOptions;
  readonly #shardKey: string;
  readonly #drainKey: string;
  readonly #writer: ShardWriter;
  #sweeping: Promise<void> | undefined;
  #sweepAgain = false;
  /** Asks for a sweep against the current ring, while running. */
  #resweep: () => void = () => {};

  /** A sharder; {@linkcode Sharder.run} runs it. */
  constructor(options: SharderOptions) {
    this.#options = options;
    this.#writer = new ShardWriter({
      ...options,
      listPage: options.listPage ?? metadataPages(options.rest),
    });
    this.#shardKey = this.#writer.shardKey;
    this.#drainKey = this.#writer.drainKey;
  }

  /** Assigns and moves objects until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const kinds = this.#options.kinds();
    const forTypes = kinds.map((k) => k.type);
    const informers = uniqueKinds(kinds).flatMap((type) =>
      this.#writer.namespacesOf(type).map((namespace) =>
        new Informer<KubeObject>(this.#options.rest, type, {
          namespace,
          labelSelector: `!${this.#shardKey}`,
          metadataOnly: true,
          resyncPeriod: 0,
        })
      )
    );
    const queue = new WorkQueue<Unassigned>({
      name: `${this.#options.ring}-sharder`,
      keyOf: (item) => `${item.kind}|${item.key}`,
    });
    signal.addEventListener("abort", () => queue.shutDown(), { once: true });
    const enqueueAll = () => {
      informers.forEach((informer, kind) => {
        for (const obj of informer.store.list()) queue.add({ kind, key: objectKey(obj) });
      });
    };
    informers.forEach((informer, kind) => {
      const enqueue = (obj: DeepReadonly<KubeObject>) => queue.add({ kind, key: objectKey(obj) });
      informer.addEventHandler({ onAdd: enqueue, onUpdate: (_old, obj) => enqueue(obj) });
    });
    const runs = informers.map((informer) => informer.run(signal));
    // Sweeps on a ring change only once the quiet-ring wait below is over (#resweep does
    // nothing before): else the sharder's own shard joining the ring during the wait swept at
    // once, giving it every object of a ring that restarted, two thirds of which then moved on.
    const stopListening = this.#options.members.onChange(() => {
      enqueueAll();
      this.#resweep();
    });
    logger.info("Sharding ring {ring} as its sharder", { ring: this.#options.ring });
    // Alone in the ring, it waits for replicas starting beside it; a sharder that takes over a
    // ring of several replicas starts at once, so nothing waits longer than the failover.
    if (this.#options.members.ring.members.length <= 1) {
      await quietRing(this.#options.members, signal);
    }
    this.#resweep = () => this.#requestSweep(signal, forTypes, kinds);
    this.#resweep();
    const workers = Array.from({ length: ASSIGN_WORKERS }, async () => {
      for (;;) {
        const next = await queue.get();
        if (next.shutdown) return;
        try {
          const retry = await this.#assign(informers[next.item.kind], next.item.key, forTypes);
          if (retry) queue.addRateLimited(next.item);
          else queue.forget(next.item);
        } catch (err) {
          if (!signal.aborted) {
            logger.warn("Assigning {key} failed, retrying: {error}", {
              key: next.item.key,
              error: errorMessage(err),
            });
            queue.addRateLimited(next.item);
          }
        } finally {
          queue.done(next.item);
        }
      }
    });
    try {
      await Promise.all([...workers, ...runs]);
      await this.#sweeping?.catch(() => {});
    } finally {
      stopListening();
    }
  }

  /** Labels one unassigned object; true to try again later (the ring is empty, a conflict). */
  async #assign(
    informer: Informer<KubeObject>,
    key: string,
    forTypes: readonly ResourceType<KubeObject>[],
  ): Promise<boolean> {
    const obj = informer.store.get(key);
    if (!obj || obj.metadata?.labels?.[this.#shardKey] !== undefined) return false;
    const ring = this.#options.members.ring;
    if (ring.empty) return false; // every unassigned object is queued again when a shard joins
    const type = informer.type;
    // undefined: an object of an owned kind that no sharded object owns, not ours
    const target = await this.#writer.targetOf(obj, type, forTypes, ring);
    if (!target) return false;
    const ok = await this.#writer.assign(obj, target);
    if (ok) {
      logger.debug("Assigned {kind} {key} to {shard}", { kind: type.kind, key, shard: target });
      // The ring changed while we decided: a sweep that started meanwhile may have missed it.
      if (this.#options.members.ring !== ring) this.#resweep();
    }
    return !ok;
  }

  /** Starts a sweep, or asks the running one to run once more when it ends. */
  #requestSweep(
    signal: AbortSignal,
    forTypes: readonly ResourceType<KubeObject>[],
    kinds: readonly ShardedKind[],
  ): void {
    if (this.#sweeping) {
      this.#sweepAgain = true;
      return;
    }
    this.#sweeping = (async () => {
      do {
        this.#sweepAgain = false;
        try {
          await this.#sweep(signal, forTypes, kinds);
        } catch (err) {
          if (signal.aborted) return;
          logger.warn("Sweeping ring {ring} failed, retrying: {error}", {
            ring: this.#options.ring,
            error: errorMessage(err),
          });
          await new Promise((resolve) => setTimeout(resolve, 1_000));
          this.#sweepAgain = true;
        }
      } while (this.#sweepAgain && !signal.aborted);
    })().finally(() => {
      this.#sweeping = undefined;
    });
  }

  /** One pass over the assigned objects against the current ring. */
  async #sweep(
    signal: AbortSignal,
    forTypes: readonly ResourceType<KubeObject>[],
    kinds: readonly ShardedKind[],
  ): Promise<void> {
    const ring = this.#options.members.ring;
    if (ring.empty) return;
    const alive = (shard: string) => ring.has(shard);
    const pool = new Pool(SWEEP_CONCURRENCY);
    // A dead shard's objects move only once the sharder holds its Lease: a shard coming back
    // meanwhile finds it held and waits, instead of reconciling objects that are moving away.
    const claims = new Map<string, Promise<boolean>>();
    const claimed = (shard: string) => {
      let claim = claims.get(shard);
      if (!claim) claims.set(shard, claim = this.#writer.claim(shard));
      return claim;
    };
    try {
      const handingOver = await this.#sweepWith(
        signal,
        forTypes,
        kinds,
        ring,
        alive,
        pool,
        claimed,
      );
      if (handingOver && !signal.aborted) {
        const timer = setTimeout(() => {
          if (!signal.aborted) this.#resweep();
        }, SETTLE_SWEEP_MS);
        signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
      }
    } finally {
      await pool.drain().catch(() => {});
      for (const [shard, claim] of claims) {
        if (await claim.catch(() => false)) await this.#writer.unclaim(shard);
      }
    }
  }

  /**
   * The sweep's two passes (children of gone shards or left behind, then the sharded objects);
   * true when hand-overs are still under way.
   */
  async #sweepWith(
    signal: AbortSignal,
    forTypes: readonly ResourceType<KubeObject>[],
    kinds: readonly ShardedKind[],
    ring: HashRing,
    alive: (shard: string) => boolean,
    pool: Pool,
    claimed: (shard: string) => Promise<boolean>,
  ): Promise<boolean> {
    // Children of a gone shard first, straight to where their owner goes: the owner's new shard
    // then finds them in its cache when it first reconciles the owner.
    for (const type of uniqueKinds(kinds).filter((t) => !forTypes.includes(t))) {
      for await (const obj of this.#writer.list(type, signal)) {
        const current = obj.metadata?.labels?.[this.#shardKey] ?? "";
        const owner = controllingOwner(obj, forTypes);
        if (!owner) continue;
        if (alive(current)) {
          // Left behind: a child that reached its shard's cache only after its owner was handed
          // over keeps the old label. Once the owner has settled elsewhere, the child follows.
          if (ring.shardFor(ringKey(owner)) === current) continue;
          await pool.run(async () => {
            const settled = await this.#writer.settledShard(owner, forTypes);
            if (!settled || settled === current || !alive(settled)) return;
            await this.#writer.assign(obj, settled);
          });
          continue;
        }
        await pool.run(async () => {
          if (!(await claimed(current))) return;
          const target = await this.#writer.ownerShard(owner, forTypes, ring);
          if (!target) return;
          await this.#writer.assign(obj, target);
        });
      }
    }
    await pool.drain();
    let moved = 0;
    let handingOver = false;
    for (const type of forTypes) {
      for await (const obj of this.#writer.list(type, signal)) {
        const labels = obj.metadata?.labels;
        const current = labels?.[this.#shardKey] ?? "";
        const draining = labels?.[this.#drainKey] === "true";
        const target = ring.shardFor(objectRingKey(obj, forTypes));
        const decision = decideMove(current, draining, target, alive);
        if (decision === "drain" || (draining && alive(current))) handingOver = true;
        if (decision === "none") continue;
        await pool.run(async () => {
          if (decision === "move" && !(await claimed(current))) return;
          const done = decision === "drain"
            ? this.#writer.patch(
              obj,
              drainPatch(labels, this.#shardKey, this.#drainKey, current),
            )
            : decision === "undrain"
            ? this.#writer.patch(obj, undrainPatch(labels, this.#shardKey, this.#drainKey, current))
            : this.#writer.assign(obj, target!);
          if (!(await done)) return; // changed: the next sweep sees it
          if (decision !== "undrain") {
            moved++;
            this.#options.metrics?.moved(this.#options.ring, type.kind);
          }
          logger.debug("{decision} {kind} {namespace}/{name}: {current} → {target}", {
            decision,
            kind: type.kind,
            namespace: obj.metadata?.namespace ?? "",
            name: obj.metadata?.name ?? "",
            current,
            target,
          });
        });
      }
    }
    await pool.drain();
    logger.info("Swept ring {ring} of {count} shards ({members}): {moved} objects moved", {
      ring: this.#options.ring,
      count: ring.members.length,
      members: ring.members.join(", "),
      moved,
    });
    return handingOver;
  }
}

/**
 * Resolves once `members` has not changed for {@linkcode RING_QUIET_MS}, after at most
 * {@linkcode RING_QUIET_MAX_MS}, or when `signal` aborts.
 */
function quietRing(members: RingMembers, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    let quiet: ReturnType<typeof setTimeout> | undefined;
    const done = () => {
      clearTimeout(quiet);
      clearTimeout(cap);
      stopListening();
      signal.removeEventListener("abort", done);
      resolve();
    };
    const cap = setTimeout(done, RING_QUIET_MAX_MS);
    const restart = () => {
      clearTimeout(quiet);
      quiet = setTimeout(done, RING_QUIET_MS);
    };
    const stopListening = members.onChange(restart);
    signal.addEventListener("abort", done, { once: true });
    if (signal.aborted) done();
    else restart();
  });
}
