/**
 * Rudder: a controller-runtime for Deno, Bun and Node. Write Kubernetes operators in TypeScript and
 * ship them as one self-contained executable.
 *
 * This root holds the names a reconciler author reaches for first, as controller-runtime's
 * `ctrl` package does: the {@linkcode Manager}, {@linkcode newControllerManagedBy},
 * {@linkcode Request} and {@linkcode Result}, {@linkcode defineResource}, the client's
 * essentials and the built-in kinds an operator commonly owns. Everything else lives in the
 * subpath of its concept, named after controller-runtime's packages: `@rudder/operator/client`,
 * `/cache`, `/controller`, `/handler`, `/predicate`, `/source`, `/workqueue`, `/manager`,
 * `/leaderelection`, `/healthz`, `/metrics`, `/controllerutil`, `/events`, `/webhook`, `/api`,
 * `/kube`, `/testing` and `/cli`. Every name here is one of theirs, re-exported.
 *
 * @example An operator
 * ```ts
 * import { z } from "zod";
 * import { conditionsSchema, defineResource, Deployment, ignoreNotFound, Manager, newControllerManagedBy, type ObjectOf, type Result } from "@rudder/operator";
 *
 * export const Example = defineResource({
 *   group: "example.com",
 *   version: "v1alpha1",
 *   kind: "Example",
 *   scope: "Namespaced",
 *   spec: z.object({ replicas: z.number().int().min(0).default(1) }),
 *   status: z.object({ phase: z.string().optional(), conditions: conditionsSchema.optional() }),
 * });
 * export type Example = ObjectOf<typeof Example>;
 *
 * const mgr = new Manager({ leaderElection: true, leaderElectionID: "example-leader" });
 * newControllerManagedBy(mgr).for(Example).owns(Deployment).complete(
 *   async (req, ctx): Promise<Result> => {
 *     const client = mgr.getClient();
 *     const example = await client.get(Example, req).catch(ignoreNotFound);
 *     if (!example) return {}; // deleted: nothing to do
 *     if (example.status?.phase !== "Running") {
 *       await client.status().update({ ...example, status: { ...example.status, phase: "Running" } });
 *     }
 *     ctx.log.info("reconciled {name}", { name: req.name });
 *     return { requeueAfter: 5 * 60_000 };
 *   },
 * );
 * // await mgr.start(); // until SIGTERM or SIGINT
 * ```
 *
 * @module
 */

export { Manager, type ManagerOptions } from "./lib/manager/mod.ts";
export { configureLogging } from "./lib/manager/mod.ts";
export {
  newControllerManagedBy,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  TerminalError,
} from "./lib/controller/mod.ts";
export { loadConfig } from "./lib/kube/mod.ts";
export {
  type Client,
  ignoreAlreadyExists,
  ignoreNotFound,
  isNotFound,
  mergeFrom,
  newClient,
} from "./lib/client/mod.ts";
export {
  addFinalizer,
  containsFinalizer,
  createOrPatch,
  createOrUpdate,
  removeFinalizer,
  setControllerReference,
} from "./lib/controllerutil/mod.ts";
export {
  clone,
  conditionsSchema,
  ConfigMap,
  type DeepReadonly,
  defineResource,
  Deployment,
  findStatusCondition,
  Job,
  type KubeObject,
  type ObjectOf,
  phaseSchema,
  Pod,
  Secret,
  Service,
  ServiceAccount,
  setStatusCondition,
  StatefulSet,
} from "./lib/api/mod.ts";
