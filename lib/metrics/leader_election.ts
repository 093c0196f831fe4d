/**
 * client-go's leader-election gauge, `leader_election_master_status{name}`, as
 * controller-runtime registers it (`pkg/metrics/leaderelection.go`).
 *
 * @module
 */

import { Gauge } from "./metric.ts";
import { family, type Registry, registry as defaultRegistry, safely } from "./registry.ts";

/** What a leader elector calls; the manager's leader elector takes it as its `metrics`. */
type LeaderStatusHook = { leaderStatus(name: string, isLeader: boolean): void };

const NAME = "leader_election_master_status";
const hooks = new WeakMap<Registry, { gauge: Gauge<"name">; metrics: LeaderStatusHook }>();

/**
 * A hook that sets `leader_election_master_status{name}` on `registry` (default: the global
 * {@linkcode registry}): `leaderStatus(name, true)` on winning the lease called `name` makes it 1,
 * `leaderStatus(name, false)` on losing or releasing it 0. The gauge is registered on the first
 * call; later calls with the same registry return the same hook.
 *
 * @example
 * ```ts
 * import { leaderElectionMetrics } from "./leader_election.ts";
 * import { Registry } from "@rudder/operator/metrics";
 *
 * const registry = new Registry();
 * leaderElectionMetrics(registry).leaderStatus("example-leader", true);
 * console.log(await registry.metrics()); // leader_election_master_status{name="example-leader"} 1
 * ```
 */
export function leaderElectionMetrics(
  registry: Registry = defaultRegistry,
): { leaderStatus(name: string, isLeader: boolean): void } {
  const known = hooks.get(registry);
  if (known && registry.get(NAME) === known.gauge) return known.metrics;
  const gauge = family(registry, NAME, () =>
    new Gauge<"name">({
      name: NAME,
      help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates " +
        "backup, 1 indicates master. 'name' is the string used to identify the lease. Please " +
        "make sure to group by name.",
      labelNames: ["name"],
    }));
  const metrics: LeaderStatusHook = {
    leaderStatus: safely(NAME, (name: string, isLeader: boolean) => {
      gauge.set({ name }, isLeader ? 1 : 0);
    }),
  };
  hooks.set(registry, { gauge, metrics });
  return metrics;
}
