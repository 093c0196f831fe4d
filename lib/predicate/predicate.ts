/**
 * Predicates filter events before they reach an event handler, like controller-runtime's
 * `predicate` package. A predicate that does not define a hook lets that kind of event through.
 *
 * @module
 */

import type { KubeObject } from "../api/resource.ts";
import { parseLabelSelector } from "../cache/selector.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import type { LabelSelectorInput } from "../client/options.ts";
import { jsonEqual } from "../util/json.ts";
import type { CreateEvent, DeleteEvent, GenericEvent, UpdateEvent } from "../event/event.ts";

/** Decides, per kind of event, whether it goes on to the handler. */
export interface Predicate<T extends KubeObject = KubeObject> {
  /** Whether a create event passes; default true. */
  create?(event: CreateEvent<T>): boolean;
  /** Whether an update event passes; default true. */
  update?(event: UpdateEvent<T>): boolean;
  /** Whether a delete event passes; default true. */
  delete?(event: DeleteEvent<T>): boolean;
  /** Whether a generic event passes; default true. */
  generic?(event: GenericEvent<T>): boolean;
}

/** Whether every predicate lets a create event through. */
export function passesCreate<T extends KubeObject>(
  predicates: readonly Predicate<T>[],
  event: CreateEvent<T>,
): boolean {
  return predicates.every((p) => p.create?.(event) ?? true);
}

/** Whether every predicate lets an update event through. */
export function passesUpdate<T extends KubeObject>(
  predicates: readonly Predicate<T>[],
  event: UpdateEvent<T>,
): boolean {
  return predicates.every((p) => p.update?.(event) ?? true);
}

/** Whether every predicate lets a delete event through. */
export function passesDelete<T extends KubeObject>(
  predicates: readonly Predicate<T>[],
  event: DeleteEvent<T>,
): boolean {
  return predicates.every((p) => p.delete?.(event) ?? true);
}

/** Whether every predicate lets a generic event through. */
export function passesGeneric<T extends KubeObject>(
  predicates: readonly Predicate<T>[],
  event: GenericEvent<T>,
): boolean {
  return predicates.every((p) => p.generic?.(event) ?? true);
}

/**
 * A predicate that applies `filter` to the object of every event (the new object of an
 * update), like controller-runtime's `NewPredicateFuncs`.
 *
 * @example
 * ```ts
 * import { newPredicateFuncs } from "@rudder/operator/predicate";
 *
 * const onlyManaged = newPredicateFuncs((obj) => obj.metadata?.labels?.["managed-by"] === "me");
 * ```
 */
export function newPredicateFuncs<T extends KubeObject = KubeObject>(
  filter: (obj: DeepReadonly<T>) => boolean,
): Predicate<T> {
  return {
    create: (e) => filter(e.object),
    update: (e) => filter(e.objectNew),
    delete: (e) => filter(e.object),
    generic: (e) => filter(e.object),
  };
}

/**
 * Lets updates through only when `metadata.generation` changed — that is, the spec changed, not
 * the status or metadata. Creates, deletes and generic events pass.
 *
 * @example
 * ```ts
 * import { newControllerManagedBy, Deployment } from "@rudder/operator";
 * import { type ControllerHost } from "@rudder/operator/controller";
 * import { generationChangedPredicate } from "@rudder/operator/predicate";
 *
 * declare const mgr: ControllerHost;
 * newControllerManagedBy(mgr).for(Deployment, { predicates: [generationChangedPredicate] });
 * ```
 */
export const generationChangedPredicate: Predicate = {
  update: (e) => e.objectOld.metadata?.generation !== e.objectNew.metadata?.generation,
};

/** Lets updates through only when the labels changed. */
export const labelChangedPredicate: Predicate = {
  update: (e) => !jsonEqual(e.objectOld.metadata?.labels ?? {}, e.objectNew.metadata?.labels ?? {}),
};

/** Lets updates through only when the annotations changed. */
export const annotationChangedPredicate: Predicate = {
  update: (e) =>
    !jsonEqual(e.objectOld.metadata?.annotations ?? {}, e.objectNew.metadata?.annotations ?? {}),
};

/** Lets updates through only when the resourceVersion changed: drops resyncs. */
export const resourceVersionChangedPredicate: Predicate = {
  update: (e) => e.objectOld.metadata?.resourceVersion !== e.objectNew.metadata?.resourceVersion,
};

/** Lets events through only for objects whose labels match `selector`. */
export function labelSelectorPredicate(selector: LabelSelectorInput): Predicate {
  const parsed = parseLabelSelector(selector);
  return newPredicateFuncs((obj) => parsed.matches(obj.metadata?.labels));
}

/** Lets an event through when every predicate does. */
export function and<T extends KubeObject>(...predicates: Predicate<T>[]): Predicate<T> {
  return {
    create: (e) => passesCreate(predicates, e),
    update: (e) => passesUpdate(predicates, e),
    delete: (e) => passesDelete(predicates, e),
    generic: (e) => passesGeneric(predicates, e),
  };
}

/** Lets an event through when any predicate does (none given: nothing passes). */
export function or<T extends KubeObject>(...predicates: Predicate<T>[]): Predicate<T> {
  return {
    create: (e) => predicates.some((p) => p.create?.(e) ?? true),
    update: (e) => predicates.some((p) => p.update?.(e) ?? true),
    delete: (e) => predicates.some((p) => p.delete?.(e) ?? true),
    generic: (e) => predicates.some((p) => p.generic?.(e) ?? true),
  };
}

/** Lets an event through when `predicate` does not. */
export function not<T extends KubeObject>(predicate: Predicate<T>): Predicate<T> {
  return {
    create: (e) => !(predicate.create?.(e) ?? true),
    update: (e) => !(predicate.update?.(e) ?? true),
    delete: (e) => !(predicate.delete?.(e) ?? true),
    generic: (e) => !(predicate.generic?.(e) ?? true),
  };
}
