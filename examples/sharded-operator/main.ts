/**
 * The sharded example operator's entry point: every replica runs the Shardling controller for
 * the Shardlings of its own shard, one of them also assigns the Shardlings to shards (the
 * sharder). `rudder manifests` (see rudder.json's `sharding`) writes a Deployment of 3 replicas
 * that sets POD_NAME (the shard's name) and POD_NAMESPACE (where the shard Leases live).
 *
 * Outside a cluster set them yourself, one distinct POD_NAME per process:
 *
 * ```sh
 * POD_NAME=replica-a POD_NAMESPACE=default METRICS_BIND_ADDRESS=127.0.0.1:8080 \
 *   HEALTH_PROBE_BIND_ADDRESS=127.0.0.1:8081 deno run -A examples/sharded-operator/main.ts
 * ```
 *
 * SHARD_LEASE_DURATION_MS, SHARD_RENEW_DEADLINE_MS and SHARD_RETRY_PERIOD_MS shorten the shard
 * Leases (the tests use 3 s); RECORD_FILE records each reconcile's start and end
 * (controllers/record.ts); METRICS_SERVING=insecure-http serves metrics over plain HTTP, for
 * local development; LOG_FORMAT=dev prints readable lines instead of JSON; MEMORY_PROBE=1 prints
 * the replica's memory on SIGUSR2, for the sharding benchmark (memory_probe.ts).
 *
 * @module
 */

import { hostname } from "node:os";
import process from "node:process";
import { configureLogging, Manager, type ManagerOptions } from "@rudder/operator";
import { describeError } from "@rudder/operator/manager";
import { setupShardlingController } from "./controllers/shardling_controller.ts";
import { installMemoryProbe } from "./memory_probe.ts";

/** The ring the replicas share: rudder.json's `sharding.ring` is the same. */
export const RING = "shardlings";

/** Milliseconds from the environment variable `name`, if set. */
function millis(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === "") return undefined;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed <= 0) {
    throw new Error(`${name} must be a positive number of milliseconds, not ${value}`);
  }
  return parsed;
}

/**
 * Registers the operator's controller and checks with `mgr`. `rudder manifests` calls it with a
 * manager that never starts, to learn what the controller watches and that it is sharded.
 */
export function setup(mgr: Manager): void {
  mgr.addHealthzCheck("ping", () => {});
  setupShardlingController(mgr, {
    // The name its manager's shard Lease has (POD_NAME, else the host name).
    shard: mgr.sharding()?.shardName ?? hostname(),
    recordFile: process.env.RECORD_FILE || undefined,
  });
}

/** The operator's manager, configured from the environment, with its controller. */
export function createManager(overrides: Partial<ManagerOptions> = {}): Manager {
  const leaseDuration = millis("SHARD_LEASE_DURATION_MS");
  const renewDeadline = millis("SHARD_RENEW_DEADLINE_MS");
  const retryPeriod = millis("SHARD_RETRY_PERIOD_MS");
  const mgr = new Manager({
    metricsBindAddress: process.env.METRICS_BIND_ADDRESS ?? ":8443",
    // Plain HTTP only when asked for in so many words; anything else serves HTTPS.
    metricsServing: process.env.METRICS_SERVING === "insecure-http" ? "insecure-http" : "secure",
    healthProbeBindAddress: process.env.HEALTH_PROBE_BIND_ADDRESS ?? ":8081",
    // No leader election: the only controller is sharded and runs on every replica. The
    // namespace is where the shard Leases go when POD_NAMESPACE is unset (`rudder dev` sets it).
    leaderElectionNamespace: process.env.LEADER_ELECTION_NAMESPACE,
    // The shard's name is POD_NAME and its Leases' namespace POD_NAMESPACE (the defaults).
    sharding: {
      ring: RING,
      ...(leaseDuration ? { leaseDuration } : {}),
      ...(renewDeadline ? { renewDeadline } : {}),
      ...(retryPeriod ? { retryPeriod } : {}),
    },
    ...overrides,
  });
  setup(mgr);
  return mgr;
}

if (import.meta.main) {
  try {
    await configureLogging({
      dev: process.env.LOG_FORMAT === "dev",
      categories: [["sharded-operator"]],
    });
    await installMemoryProbe();
    await createManager().start(); // until SIGTERM or SIGINT; the shard's Lease is released
  } catch (err) {
    // One line that names the problem: no stack trace, no page of bundled source.
    console.error(describeError(err));
    process.exit(1);
  }
}
