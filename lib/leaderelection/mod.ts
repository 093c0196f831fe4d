/**
 * Leader election over `coordination.k8s.io/v1` Leases, with client-go's semantics: expiry is
 * judged by local observed time, a renewal that does not succeed within the renew deadline
 * means the lease is lost. A manager runs one when `leaderElection` is set.
 *
 * @example
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 * import { newClient } from "@rudder/operator";
 * import { LeaderElector } from "@rudder/operator/leaderelection";
 *
 * const elector = new LeaderElector({
 *   client: newClient(await loadConfig()),
 *   namespace: "default",
 *   name: "example-leader",
 * });
 * console.log(elector.isLeader());
 * ```
 *
 * @module
 */

export {
  LeaderElectionLostError,
  type LeaderElectionMetrics,
  type LeaderElectionOptions,
  LeaderElector,
  type LeaseKey,
} from "./leader_election.ts";
