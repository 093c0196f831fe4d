/**
 * The events that flow from sources through predicates to event handlers, and the requests
 * handlers put on a controller's queue: the vocabulary shared by handler.ts, predicate.ts,
 * source.ts and controller.ts.
 *
 * @module
 */

import type { KubeObject } from "../api/resource.ts";
import type { DeepReadonly } from "../api/readonly.ts";

/** An object appeared (or was in the initial list). */
export interface CreateEvent<T extends KubeObject = KubeObject> {
  /** The object. */
  object: DeepReadonly<T>;
  /** True when the object came with the informer's initial list rather than a live change. */
  isInInitialList: boolean;
}

/** An object changed, or a resync re-delivered it (then `objectOld === objectNew`). */
export interface UpdateEvent<T extends KubeObject = KubeObject> {
  /** The object before the change. */
  objectOld: DeepReadonly<T>;
  /** The object after the change. */
  objectNew: DeepReadonly<T>;
}

/** An object went away. */
export interface DeleteEvent<T extends KubeObject = KubeObject> {
  /** Its last known state. */
  object: DeepReadonly<T>;
  /** True when the final state may be older than the deletion (missed while disconnected). */
  deleteStateUnknown: boolean;
}

/** An event from outside the cluster (a channel source), about one object. */
export interface GenericEvent<T extends KubeObject = KubeObject> {
  /** The object the event concerns (at least its namespace and name). */
  object: DeepReadonly<T>;
}
