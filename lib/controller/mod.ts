/**
 * Controllers: a work queue fed by sources, and workers that call a {@linkcode Reconciler},
 * with controller-runtime's semantics for results and errors. Build one with
 * {@linkcode newControllerManagedBy}; {@linkcode Controller} is usable on its own. The
 * vocabulary of reconciling ({@linkcode Request}, {@linkcode Result},
 * {@linkcode TerminalError}) lives here too, as `ctrl.Request` and `reconcile.Result` do.
 *
 * @example A controller for ConfigMaps
 * ```ts
 * import { Manager } from "@rudder/operator";
 * import { ConfigMap } from "@rudder/operator";
 * import { newControllerManagedBy, type Result } from "@rudder/operator";
 *
 * const mgr = new Manager();
 * newControllerManagedBy(mgr).for(ConfigMap).complete(async (request, ctx): Promise<Result> => {
 *   const cm = await mgr.getClient().get(ConfigMap, request);
 *   ctx.log.info("{name} has {keys} keys", {
 *     name: request.name,
 *     keys: Object.keys(cm.data ?? {}).length,
 *   });
 *   return { requeueAfter: 60_000 };
 * });
 * ```
 *
 * @module
 */

export {
  Controller,
  type ControllerMetrics,
  type ControllerOptions,
  type ReconcileAdmission,
  type ScrapedQueue,
  type WatchedKind,
} from "./controller.ts";
export {
  ControllerBuilder,
  type ControllerHost,
  newControllerManagedBy,
  type OwnsOptions,
  type ShardingHost,
  type WatchOptions,
} from "./builder.ts";
export {
  isTerminalError,
  type ReconcileContext,
  type ReconcileFunc,
  type Reconciler,
  type Request,
  type Result,
  TerminalError,
} from "../reconcile/reconcile.ts";
