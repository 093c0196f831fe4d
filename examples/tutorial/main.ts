/**
 * The tutorial's operator (docs/tutorial.md): the Website controller in a Manager. Run it with a
 * kubeconfig and LEADER_ELECTION_NAMESPACE set, or with `rudder dev`, which does both.
 *
 * @module
 */

import process from "node:process";
import { configureLogging, Manager, type ManagerOptions } from "@rudder/operator";
import { LeaderElectionLostError } from "@rudder/operator/leaderelection";
import { describeError } from "@rudder/operator/manager";
import { setupWebsiteController } from "./controllers/website_controller.ts";

/** Registers the controllers and checks with `mgr` (`rudder manifests` calls it too). */
export function setup(mgr: Manager): void {
  mgr.addHealthzCheck("ping", () => {});
  setupWebsiteController(mgr);
}

/** The operator's manager, configured from the environment. */
export function createManager(overrides: Partial<ManagerOptions> = {}): Manager {
  const mgr = new Manager({
    metricsBindAddress: process.env.METRICS_BIND_ADDRESS ?? ":8080",
    healthProbeBindAddress: process.env.HEALTH_PROBE_BIND_ADDRESS ?? ":8081",
    leaderElection: true,
    leaderElectionID: "website-operator-leader",
    leaderElectionNamespace: process.env.LEADER_ELECTION_NAMESPACE,
    leaderElectionReleaseOnCancel: true,
    ...overrides,
  });
  setup(mgr);
  return mgr;
}

if (import.meta.main) {
  try {
    await configureLogging({
      dev: process.env.LOG_FORMAT === "dev",
      categories: [["website-operator"]],
    });
    await createManager().start(); // until SIGTERM or SIGINT
  } catch (err) {
    // One line that names the problem: no stack trace, no page of bundled source.
    console.error(
      err instanceof LeaderElectionLostError
        ? `leadership lost: ${err.message}`
        : describeError(err),
    );
    process.exit(1);
  }
}
