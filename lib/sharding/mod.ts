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
export {
  type ResolvedShardingOptions,
  resolveShardingOptions,
  type ShardingOptions,
} from "./options.ts";
export { leaseExpiry, liveShards, RingMembers, type RingMembersOptions } from "./membership.ts";
export { type ObjectCounter, type ShardingMetrics, shardingMetrics } from "./metrics.ts";
export {
  CONTROLLER_UID_FIELD,
  controllerUID,
  Departures,
  ShardGate,
  type ShardGateOptions,
} from "./shard.ts";
export { decideMove, type MoveDecision, Sharder, type SharderOptions } from "./sharder.ts";
export {
  type ListPage,
  type MetadataPage,
  metadataPages,
  ownedTarget,
  type ShardedKind,
  ShardWriter,
  type ShardWriterOptions,
} from "./writer.ts";
export {
  Fallback,
  FALLBACK_DEAD_SHARD_GRACE_MS,
  FALLBACK_UNASSIGNED_GRACE_MS,
  type FallbackOptions,
} from "./fallback.ts";
export {
  shardAssigner,
  type ShardAssignerOptions,
  shardWebhook,
  type ShardWebhookOptions,
  shardWebhookPath,
} from "./webhook.ts";
export { Sharding, type ShardingDeps } from "./sharding.ts";
