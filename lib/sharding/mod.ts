/**
 * Sharding: a controller's objects spread across the manager's replicas, with hand-overs that
 * never reconcile one object in two places. Opt in with the manager's `sharding` option and
 * `.sharded()` on a controller:
 *
 * - each replica holds its own shard Lease (named after its pod, labelled
 *   `sharding.rudder.dev/ring: <ring>`); the live Leases make a consistent-hash ring;
 * - one replica, elected with the `<ring>-sharder` Lease, labels each object with its shard
 *   (`shard.rudder.dev/<ring>: <shard>`; owned objects follow their controlling owner) and moves
 *   objects when the ring changes, through a drain mark (`drain.rudder.dev/<ring>: "true"`) that
 *   the old shard acknowledges once its in-flight reconcile has ended;
 * - every replica's fallback assigns what the sharder has left unassigned past a short grace,
 *   and moves a gone shard's objects, so that a sharder's failover leaves nothing waiting for
 *   the next election;
 * - each replica caches only its shard's objects, and an object that moves away is not a delete.
 *
 * @example Two controllers' worth of objects, spread over the replicas
 * ```ts
 * import { ConfigMap, Deployment, Manager, newControllerManagedBy } from "@rudder/operator";
 * import { shardLabel } from "@rudder/operator/sharding";
 *
 * const mgr = new Manager({ sharding: { ring: "example", namespace: "operators" } });
 * newControllerManagedBy(mgr).for(Deployment).owns(ConfigMap).sharded()
 *   .complete(async (request, ctx) => {
 *     ctx.log.info("reconciling {name} on this shard", { name: request.name });
 *   });
 * console.log(shardLabel("example")); // shard.rudder.dev/example
 * ```
 *
 * @module
 */

export {
  controllingOwner,
  drainLabel,
  type ObjectReferenceForRing,
  objectRingKey,
  RING_LABEL,
  ringKey,
  sharderLeaseName,
  shardLabel,
  validateRingName,
} from "./labels.ts";
export { DEFAULT_VIRTUAL_NODES, hashKey, HashRing, type HashRingOptions } from "./ring.ts";
export type { ShardingOptions } from "./options.ts";
export { leaseExpiry, liveShards } from "./membership.ts";
export { FALLBACK_DEAD_SHARD_GRACE_MS, FALLBACK_UNASSIGNED_GRACE_MS } from "./fallback.ts";
export type { ManagerSharding } from "./sharding.ts";
