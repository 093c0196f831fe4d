/**
 * Event handlers: what turns an event about an object into requests on a controller's queue,
 * as controller-runtime's `pkg/handler`: the object itself ({@linkcode enqueueRequestForObject}),
 * its owner ({@linkcode enqueueRequestForOwner}), or whatever a function maps it to
 * ({@linkcode enqueueRequestsFromMapFunc}). The events themselves are here too.
 *
 * @example Reconcile the Examples that name a ConfigMap
 * ```ts
 * import { ConfigMap } from "@rudder/operator";
 * import { enqueueRequestsFromMapFunc } from "@rudder/operator/handler";
 *
 * const handler = enqueueRequestsFromMapFunc<ConfigMap>((cm) => {
 *   const owner = cm.metadata?.annotations?.["example.com/for"];
 *   return owner ? [{ namespace: cm.metadata?.namespace ?? "", name: owner }] : [];
 * });
 * console.log(typeof handler.create);
 * ```
 *
 * @module
 */

export {
  enqueueRequestForObject,
  enqueueRequestForOwner,
  enqueueRequestsFromMapFunc,
  type EventHandler,
  type MapFunc,
  type OwnerHandlerOptions,
} from "./handler.ts";
export type { CreateEvent, DeleteEvent, GenericEvent, UpdateEvent } from "../event/event.ts";
export type { RequestQueue } from "../reconcile/reconcile.ts";
