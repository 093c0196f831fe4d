/**
 * Requeues, rate limits and terminal errors (docs/guides/requeues-and-errors.md): a controller
 * for ConfigMaps labelled `guides.rudder.dev/requeue`, whose `data.mode` picks what the
 * reconcile returns — so each way out of a reconcile can be watched happening.
 *
 * @module
 */

import {
  ConfigMap,
  ignoreNotFound,
  type Manager,
  newControllerManagedBy,
  type Request,
  type Result,
  TerminalError,
} from "@rudder/operator";
import { labelSelectorPredicate } from "@rudder/operator/predicate";
import { bucket, itemExponentialFailure, maxOf } from "@rudder/operator/workqueue";

/** What one reconcile does, by the ConfigMap's `data.mode`. */
export function outcome(mode: string | undefined): Result {
  switch (mode) {
    case "poll":
      // Not an error: look again later (an external system we wait for, say).
      return { requeueAfter: 250 };
    case "invalid":
      // Retrying cannot help: log it, count it, and do not requeue.
      throw new TerminalError("data.mode is invalid; fix the object");
    case "flaky":
      // Any other error: requeued with the rate limiter's per-item backoff.
      throw new Error("the backend did not answer");
    default:
      return {}; // done until something changes
  }
}

/** Per item: 5 ms doubling up to 1 min; overall: at most 50 requeues a second (burst 100). */
export const rateLimiter = maxOf<Request>(
  itemExponentialFailure<Request>(5, 60_000),
  bucket<Request>(50, 100),
);

/** Registers the controller; `calls` counts reconciles by name, for the guide's test. */
export function setupRequeueController(mgr: Manager, calls: Map<string, number>): void {
  newControllerManagedBy(mgr)
    .named("requeue-guide")
    .for(ConfigMap, {
      predicates: [
        labelSelectorPredicate({ matchLabels: { "guides.rudder.dev/requeue": "true" } }),
      ],
    })
    .withOptions({ rateLimiter, maxConcurrentReconciles: 2 })
    .complete(async (req) => {
      calls.set(req.name, (calls.get(req.name) ?? 0) + 1);
      const configMap = await mgr.getClient().get(ConfigMap, req).catch(ignoreNotFound);
      if (!configMap) return {};
      return outcome(configMap.data?.mode);
    });
}
