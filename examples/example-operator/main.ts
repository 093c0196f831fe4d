/**
 * The example operator's entry point: the Manager exactly as DESIGN.md §1 builds it. Outside a
 * cluster, set LEADER_ELECTION_NAMESPACE (leader election needs a namespace for its Lease),
 * and METRICS_BIND_ADDRESS or HEALTH_PROBE_BIND_ADDRESS to move the servers.
 *
 * Run: deno run -A examples/example-operator/main.ts (with a kubeconfig), or build it with
 * `rudder build`.
 *
 * @module
 */

import process from "node:process";
import { configureLogging, Manager, type ManagerOptions } from "../../mod.ts";
import { LeaderElectionLostError } from "../../lib/leaderelection/mod.ts";
import { setupExampleController } from "./controllers/example_controller.ts";

/** Registers the operator's controllers and checks with a manager (`rudder manifests` calls it). */
export function setup(mgr: Manager): void {
  mgr.addHealthzCheck("ping", () => {});
  setupExampleController(mgr);
}

/** The manager of DESIGN.md §1, with its controller registered. */
export function createManager(overrides: Partial<ManagerOptions> = {}): Manager {
  const mgr = new Manager({
    metricsBindAddress: process.env.METRICS_BIND_ADDRESS ?? "127.0.0.1:8080",
    healthProbeBindAddress: process.env.HEALTH_PROBE_BIND_ADDRESS ?? ":8081",
    leaderElection: true,
    leaderElectionID: "example-leader",
    leaderElectionNamespace: process.env.LEADER_ELECTION_NAMESPACE,
    ...overrides,
  });
  setup(mgr);
  return mgr;
}

if (import.meta.main) {
  await configureLogging({
    dev: process.env.LOG_FORMAT === "dev",
    categories: [["example-operator"]],
  });
  try {
    await createManager().start(); // resolves after a graceful stop (SIGTERM/SIGINT)
  } catch (err) {
    console.error(err instanceof LeaderElectionLostError ? `leadership lost: ${err.message}` : err);
    process.exit(1);
  }
}
