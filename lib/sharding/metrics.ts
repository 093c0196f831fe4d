/**
 * The sharding metrics, registered in the manager's registry when sharding is on:
 *
 * - `rudder_shard_objects{ring,shard,kind}`: objects this shard caches, per kind (at scrape);
 * - `rudder_shard_ring_members{ring}`: live shards in the ring, as this replica sees it;
 * - `rudder_shard_member{ring,shard}`: 1 while this process holds its shard Lease;
 * - `rudder_shard_moves_total{ring,kind}`: objects the sharder moved (drain marks and direct
 *   moves off dead shards);
 * - `rudder_shard_fallback_assignments_total{ring,kind,reason}`: objects this replica's fallback
 *   assigned in the sharder's stead (`reason`: `unassigned`, or `dead-shard` for a move off a gone
 *   shard);
 * - `rudder_shard_drains_total{ring,kind}`: drains this shard acknowledged;
 * - `rudder_shard_drain_duration_seconds{ring,kind}`: from seeing the drain mark to the
 *   acknowledgement.
 *
 * @module
 */

import { Counter, exponentialBuckets, Gauge, Histogram } from "../metrics/metric.ts";
import { family, type Registry, safely } from "../metrics/registry.ts";

/** Counts of cached objects by kind, read at scrape time from one shard's cache. */
export type ObjectCounter = () => Promise<
  { ring: string; shard: string; kind: string; count: number }[]
>;

/** What the sharding parts report. */
export interface ShardingMetrics {
  /** The ring has `count` live members. */
  ringMembers(ring: string, count: number): void;
  /** This process holds (or stopped holding) its shard Lease. */
  member(ring: string, shard: string, holding: boolean): void;
  /** The sharder moved one object of `kind`. */
  moved(ring: string, kind: string): void;
  /** The fallback assigned one object of `kind` (`reason`: `unassigned` or `dead-shard`). */
  fallbackAssigned(ring: string, kind: string, reason: "unassigned" | "dead-shard"): void;
  /** This shard acknowledged a drain of `kind` that took `seconds`. */
  drained(ring: string, kind: string, seconds: number): void;
  /** Reports this shard's cached objects at each scrape; returns what stops it. */
  countObjects(counter: ObjectCounter): () => void;
}

const counters = new WeakMap<Registry, Set<ObjectCounter>>();

/** The sharding metrics of `registry`, registered on first use. */
export function shardingMetrics(registry: Registry): ShardingMetrics {
  let objectCounters = counters.get(registry);
  if (!objectCounters) counters.set(registry, objectCounters = new Set());
  const sources = objectCounters;
  const objects = family(
    registry,
    "rudder_shard_objects",
    () =>
      new Gauge<"ring" | "shard" | "kind">({
        name: "rudder_shard_objects",
        help: "Objects of a sharded kind (or a kind that follows its owner) this shard caches.",
        labelNames: ["ring", "shard", "kind"],
        collect: async (gauge) => {
          // Every count first, then reset and set in one go: a scrape that overlaps this one
          // must never render the gauge between the reset and the sets.
          const counts = await Promise.all([...sources].map((count) => count()));
          gauge.reset();
          for (const { count: n, ...labels } of counts.flat()) gauge.set(labels, n);
        },
      }),
  );
  const members = family(registry, "rudder_shard_ring_members", () =>
    new Gauge<"ring">({
      name: "rudder_shard_ring_members",
      help: "Live shards in the ring (Leases held and not expired), as this replica sees them.",
      labelNames: ["ring"],
    }));
  const member = family(registry, "rudder_shard_member", () =>
    new Gauge<"ring" | "shard">({
      name: "rudder_shard_member",
      help: "1 while this process holds its shard Lease, else 0.",
      labelNames: ["ring", "shard"],
    }));
  const moves = family(registry, "rudder_shard_moves_total", () =>
    new Counter<"ring" | "kind">({
      name: "rudder_shard_moves_total",
      help: "Objects the sharder moved to another shard (drain marks and moves off dead shards).",
      labelNames: ["ring", "kind"],
    }));
  const fallback = family(
    registry,
    "rudder_shard_fallback_assignments_total",
    () =>
      new Counter<"ring" | "kind" | "reason">({
        name: "rudder_shard_fallback_assignments_total",
        help: "Objects this replica assigned in the sharder's stead: unassigned ones past their " +
          "grace, and moves off a gone shard.",
        labelNames: ["ring", "kind", "reason"],
      }),
  );
  const drains = family(registry, "rudder_shard_drains_total", () =>
    new Counter<"ring" | "kind">({
      name: "rudder_shard_drains_total",
      help: "Drains this shard acknowledged (objects it handed over).",
      labelNames: ["ring", "kind"],
    }));
  const drainDuration = family(
    registry,
    "rudder_shard_drain_duration_seconds",
    () =>
      new Histogram<"ring" | "kind">({
        name: "rudder_shard_drain_duration_seconds",
        help: "Seconds from a drain mark seen by the shard to its acknowledgement.",
        labelNames: ["ring", "kind"],
        buckets: exponentialBuckets(0.005, 2, 14),
      }),
  );
  void objects;
  return {
    ringMembers: safely("rudder_shard_ring_members", (ring: string, count: number) => {
      members.set({ ring }, count);
    }),
    member: safely("rudder_shard_member", (ring: string, shard: string, holding: boolean) => {
      member.set({ ring, shard }, holding ? 1 : 0);
    }),
    moved: safely("rudder_shard_moves_total", (ring: string, kind: string) => {
      moves.inc({ ring, kind });
    }),
    fallbackAssigned: safely(
      "rudder_shard_fallback_assignments_total",
      (ring: string, kind: string, reason: string) => {
        fallback.inc({ ring, kind, reason });
      },
    ),
    drained: safely("rudder_shard_drains_total", (ring: string, kind: string, seconds: number) => {
      drains.inc({ ring, kind });
      drainDuration.observe({ ring, kind }, seconds);
    }),
    countObjects: (counter) => {
      sources.add(counter);
      return () => sources.delete(counter);
    },
  };
}
