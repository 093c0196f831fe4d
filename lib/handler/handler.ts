/**
 * Event handlers turn events about objects into requests on a controller's queue, like
 * controller-runtime's `handler` package: the object itself, its owner, or anything a function
 * maps it to.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { type KubeObject, parseApiVersion, type ResourceType } from "../api/resource.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import {
  type CreateEvent,
  type DeleteEvent,
  type GenericEvent,
  type UpdateEvent,
} from "../event/event.ts";
import { LOW_PRIORITY } from "../workqueue/workqueue.ts";
import { type Request, requestFor, type RequestQueue } from "../reconcile/reconcile.ts";

const logger = getLogger(["rudder", "controller", "handler"]);

/** Turns events into requests. Each hook is optional. */
export interface EventHandler<T extends KubeObject = KubeObject> {
  /** An object appeared. */
  create?(event: CreateEvent<T>, queue: RequestQueue): void;
  /** An object changed. */
  update?(event: UpdateEvent<T>, queue: RequestQueue): void;
  /** An object went away. */
  delete?(event: DeleteEvent<T>, queue: RequestQueue): void;
  /** An event from a channel source. */
  generic?(event: GenericEvent<T>, queue: RequestQueue): void;
}

/** Initial-list adds and resyncs yield to live changes. */
function createPriority(event: CreateEvent<KubeObject>): number | undefined {
  return event.isInInitialList ? LOW_PRIORITY : undefined;
}

function updatePriority(event: UpdateEvent<KubeObject>): number | undefined {
  const same =
    event.objectOld.metadata?.resourceVersion === event.objectNew.metadata?.resourceVersion;
  return same ? LOW_PRIORITY : undefined;
}

function addAll(
  queue: RequestQueue,
  requests: Iterable<Request>,
  priority: number | undefined,
): void {
  for (const request of requests) {
    if (request.name) queue.add(request, priority === undefined ? undefined : { priority });
  }
}

/**
 * Enqueues the object of each event, like controller-runtime's `EnqueueRequestForObject`: what
 * `for(T)` uses.
 *
 * @example
 * ```ts
 * import { ConfigMap, newControllerManagedBy } from "@rudder/operator";
 * import { type ControllerHost } from "@rudder/operator/controller";
 * import { enqueueRequestForObject } from "@rudder/operator/handler";
 *
 * declare const mgr: ControllerHost;
 * newControllerManagedBy(mgr).named("cms").watches(ConfigMap, enqueueRequestForObject());
 * ```
 */
export function enqueueRequestForObject<T extends KubeObject = KubeObject>(): EventHandler<T> {
  return {
    create: (e, q) => addAll(q, [requestFor(e.object)], createPriority(e)),
    update: (e, q) => {
      const requests = [requestFor(e.objectNew)];
      const old = requestFor(e.objectOld);
      if (old.name !== requests[0].name || old.namespace !== requests[0].namespace) {
        requests.push(old);
      }
      addAll(q, requests, updatePriority(e));
    },
    delete: (e, q) => addAll(q, [requestFor(e.object)], undefined),
    generic: (e, q) => addAll(q, [requestFor(e.object)], undefined),
  };
}

/** Options of {@linkcode enqueueRequestForOwner}. */
export interface OwnerHandlerOptions {
  /** Only the owner reference marked `controller: true`; default false (every owner of the kind). */
  onlyController?: boolean;
}

function ownerRequests(
  obj: DeepReadonly<KubeObject>,
  owner: { group: string; kind: string; scope: string },
  onlyController: boolean,
): Request[] {
  const requests: Request[] = [];
  for (const ref of obj.metadata?.ownerReferences ?? []) {
    if (onlyController && !ref.controller) continue;
    if (ref.kind !== owner.kind || parseApiVersion(ref.apiVersion).group !== owner.group) continue;
    // Owners are in the object's namespace, or cluster-scoped.
    requests.push({
      namespace: owner.scope === "Namespaced" ? obj.metadata?.namespace ?? "" : "",
      name: ref.name,
    });
  }
  return requests;
}

/**
 * Enqueues the owners of type `ownerType` of each event's object (found in its
 * ownerReferences, matched by group and kind), like controller-runtime's
 * `EnqueueRequestForOwner`: what `owns(T)` uses with `onlyController`.
 *
 * @example
 * ```ts
 * import { ConfigMap, Deployment, newControllerManagedBy } from "@rudder/operator";
 * import { type ControllerHost } from "@rudder/operator/controller";
 * import { enqueueRequestForOwner } from "@rudder/operator/handler";
 *
 * declare const mgr: ControllerHost;
 * newControllerManagedBy(mgr).for(Deployment)
 *   .watches(ConfigMap, enqueueRequestForOwner(Deployment, { onlyController: true }));
 * ```
 */
export function enqueueRequestForOwner<T extends KubeObject = KubeObject>(
  ownerType: ResourceType<KubeObject>,
  options: OwnerHandlerOptions = {},
): EventHandler<T> {
  const onlyController = options.onlyController ?? false;
  const owner = { group: ownerType.group, kind: ownerType.kind, scope: ownerType.scope };
  return {
    create: (e, q) => addAll(q, ownerRequests(e.object, owner, onlyController), createPriority(e)),
    update: (e, q) => {
      const requests = new Map<string, Request>();
      for (const obj of [e.objectOld, e.objectNew]) {
        for (const request of ownerRequests(obj, owner, onlyController)) {
          requests.set(`${request.namespace}/${request.name}`, request);
        }
      }
      addAll(q, requests.values(), updatePriority(e));
    },
    delete: (e, q) => addAll(q, ownerRequests(e.object, owner, onlyController), undefined),
    generic: (e, q) => addAll(q, ownerRequests(e.object, owner, onlyController), undefined),
  };
}

/** Maps an object to the requests it should cause; may be async. */
export type MapFunc<T extends KubeObject = KubeObject> = (
  obj: DeepReadonly<T>,
) => Request[] | Promise<Request[]>;

/**
 * Enqueues whatever `map` returns for each event's object (both objects of an update), like
 * controller-runtime's `EnqueueRequestsFromMapFunc`. `map` may be async; if it throws or
 * rejects, the error is logged and the event is dropped.
 *
 * @example
 * ```ts
 * import { ConfigMap, newControllerManagedBy } from "@rudder/operator";
 * import { type ControllerHost } from "@rudder/operator/controller";
 * import { enqueueRequestsFromMapFunc } from "@rudder/operator/handler";
 *
 * declare const mgr: ControllerHost;
 * // Every ConfigMap change reconciles the "main" object of its namespace.
 * newControllerManagedBy(mgr).named("per-namespace").watches(
 *   ConfigMap,
 *   enqueueRequestsFromMapFunc((cm) => [{ namespace: cm.metadata?.namespace ?? "", name: "main" }]),
 * );
 * ```
 */
export function enqueueRequestsFromMapFunc<T extends KubeObject = KubeObject>(
  map: MapFunc<T>,
): EventHandler<T> {
  const run = (objects: DeepReadonly<T>[], queue: RequestQueue, priority: number | undefined) => {
    for (const obj of objects) {
      let mapped: Request[] | Promise<Request[]>;
      try {
        mapped = map(obj);
      } catch (err) {
        logger.error("Map function threw for {kind} {name}: {error}", {
          kind: obj.kind,
          name: obj.metadata?.name,
          error: err,
        });
        continue;
      }
      if (Array.isArray(mapped)) addAll(queue, mapped, priority);
      else {
        mapped.then((requests) => addAll(queue, requests, priority)).catch((err) =>
          logger.error("Map function failed for {kind} {name}: {error}", {
            kind: obj.kind,
            name: obj.metadata?.name,
            error: err,
          })
        );
      }
    }
  };
  return {
    create: (e, q) => run([e.object], q, createPriority(e)),
    update: (e, q) =>
      run(
        e.objectOld === e.objectNew ? [e.objectNew] : [e.objectOld, e.objectNew],
        q,
        updatePriority(e),
      ),
    delete: (e, q) => run([e.object], q, undefined),
    generic: (e, q) => run([e.object], q, undefined),
  };
}
