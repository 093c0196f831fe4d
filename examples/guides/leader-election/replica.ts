/**
 * Leader election and several replicas (docs/guides/leader-election.md): each replica is a
 * Manager with leader election on; only the leader runs its controllers and leader runnables.
 *
 * @module
 */

import { Manager } from "@rudder/operator";
import type { KubeConfig } from "@rudder/operator/kube";

/** One replica of an operator; `onLeading` runs when it becomes the leader. */
export function createReplica(config: KubeConfig, onLeading: () => void): Manager {
  const mgr = new Manager({
    config,
    metricsBindAddress: "0",
    healthProbeBindAddress: "0",
    leaderElection: true,
    leaderElectionID: "guide-operator-leader",
    leaderElectionNamespace: "default",
    // Shorter than the defaults (15 s, 10 s, 2 s) so the guide's test hands over quickly.
    leaseDuration: 6_000,
    renewDeadline: 4_000,
    retryPeriod: 500,
    // Give the Lease up on a graceful stop, so another replica leads at once.
    leaderElectionReleaseOnCancel: true,
  });
  mgr.add({
    needLeaderElection: () => true,
    start: async (signal) => {
      onLeading();
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
    },
  });
  return mgr;
}
