/**
 * Logging and metrics (docs/guides/logging-and-metrics.md): a controller that logs with the
 * reconcile's logger and counts what it does in a metric of its own, served on the manager's
 * /metrics next to controller-runtime's families.
 *
 * @module
 */

import { ConfigMap, type Manager, newControllerManagedBy } from "@rudder/operator";
import { Counter } from "@rudder/operator/metrics";
import { labelSelectorPredicate } from "@rudder/operator/predicate";

/** Registers the controller and its counter in the manager's registry. */
export function setupCountingController(mgr: Manager): void {
  const seen = mgr.getMetricsRegistry().register(
    new Counter({
      name: "guide_configmaps_seen_total",
      help: "ConfigMaps reconciled by the guide's controller, by namespace.",
      labelNames: ["namespace"],
    }),
  );
  newControllerManagedBy(mgr)
    .named("metrics-guide")
    .for(ConfigMap, {
      predicates: [labelSelectorPredicate({ matchLabels: { "guides.rudder.dev/count": "true" } })],
    })
    .complete((req, ctx) => {
      seen.inc({ namespace: req.namespace });
      // Message templates: the values stay fields in JSON output.
      ctx.log.info("saw ConfigMap {name}", { name: req.name });
      return {};
    });
}
