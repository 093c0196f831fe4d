/**
 * Helpers for `status.conditions` lists of `metav1.Condition`, with the semantics of
 * apimachinery's `meta.SetStatusCondition` and friends: one condition per type, and a
 * `lastTransitionTime` that moves only when the condition's `status` changes.
 *
 * @module
 */

import type { Condition } from "../api/generated/meta_v1.ts";
import type { DeepReadonly } from "../api/readonly.ts";

/** The statuses a condition can have. */
export type ConditionStatus = "True" | "False" | "Unknown";

/**
 * A condition to set with {@linkcode setStatusCondition}: a {@linkcode Condition} whose
 * `lastTransitionTime` may be left out (it is then the current time when the status changes)
 * and whose `message` may be left out (it is then empty).
 */
export interface NewCondition {
  /** Type of condition in CamelCase or in `foo.example.com/CamelCase`. */
  type: string;
  /** `True`, `False` or `Unknown`. */
  status: ConditionStatus;
  /** A CamelCase identifier of the reason for the condition's last transition; not empty. */
  reason: string;
  /** A human-readable message; default `""`. */
  message?: string;
  /** The `metadata.generation` the condition was set from. */
  observedGeneration?: number;
  /**
   * When the status last changed (RFC 3339). Used only when the status changes; default: now,
   * to the second.
   */
  lastTransitionTime?: string;
}

/** Options of {@linkcode setStatusCondition}. */
export interface SetStatusConditionOptions {
  /** The current time, for `lastTransitionTime`; default `() => new Date()`. */
  clock?: () => Date;
}

/** A `metav1.Time`: RFC 3339 in UTC, to the second. */
function rfc3339Seconds(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

function assertMutable(conditions: unknown[], what: string): void {
  if (Object.isFrozen(conditions)) {
    throw new TypeError(
      `${what}: the conditions list is frozen (read from the cache); clone the object first`,
    );
  }
}

/**
 * Sets `condition` in `conditions`, in place, and says whether anything changed. A condition
 * of a new type is appended. For an existing type, `lastTransitionTime` changes only when
 * `status` changes (to `condition.lastTransitionTime`, else now); `reason`, `message` and
 * `observedGeneration` are updated whenever they differ. Like apimachinery's
 * `meta.SetStatusCondition`.
 *
 * @example
 * ```ts
 * import { setStatusCondition } from "@rudder/operator";
 * import { type Condition } from "@rudder/operator/api";
 *
 * const conditions: Condition[] = [];
 * setStatusCondition(conditions, { type: "Ready", status: "False", reason: "Starting" }); // true
 * const again = setStatusCondition(conditions, {
 *   type: "Ready",
 *   status: "False",
 *   reason: "Starting",
 * });
 * console.log(again); // false: nothing changed, lastTransitionTime stayed
 * ```
 */
export function setStatusCondition(
  conditions: Condition[],
  condition: NewCondition,
  options: SetStatusConditionOptions = {},
): boolean {
  assertMutable(conditions, "setStatusCondition");
  const now = () => rfc3339Seconds((options.clock ?? (() => new Date()))());
  const index = conditions.findIndex((c) => c.type === condition.type);
  if (index === -1) {
    const added: Condition = {
      type: condition.type,
      status: condition.status,
      reason: condition.reason,
      message: condition.message ?? "",
      lastTransitionTime: condition.lastTransitionTime || now(),
    };
    if (condition.observedGeneration !== undefined) {
      added.observedGeneration = condition.observedGeneration;
    }
    conditions.push(added);
    return true;
  }
  // A condition taken from a frozen object is replaced rather than changed in place.
  const existing = Object.isFrozen(conditions[index])
    ? { ...conditions[index] }
    : conditions[index];
  let changed = false;
  if (existing.status !== condition.status) {
    existing.status = condition.status;
    existing.lastTransitionTime = condition.lastTransitionTime || now();
    changed = true;
  }
  if (existing.reason !== condition.reason) {
    existing.reason = condition.reason;
    changed = true;
  }
  const message = condition.message ?? "";
  if ((existing.message ?? "") !== message) {
    existing.message = message;
    changed = true;
  }
  // An absent observedGeneration is Go's zero value.
  if ((existing.observedGeneration ?? 0) !== (condition.observedGeneration ?? 0)) {
    if (condition.observedGeneration === undefined) delete existing.observedGeneration;
    else existing.observedGeneration = condition.observedGeneration;
    changed = true;
  }
  if (changed) conditions[index] = existing;
  return changed;
}

/**
 * Removes the condition of type `type` from `conditions`, in place; true when there was one.
 * Like apimachinery's `meta.RemoveStatusCondition`.
 *
 * @example
 * ```ts
 * import { type Condition, removeStatusCondition } from "@rudder/operator/api";
 *
 * const conditions: Condition[] = [
 *   { type: "Degraded", status: "True", reason: "Crash", message: "", lastTransitionTime: "" },
 * ];
 * console.log(removeStatusCondition(conditions, "Degraded"), conditions.length); // true 0
 * ```
 */
export function removeStatusCondition(conditions: Condition[], type: string): boolean {
  assertMutable(conditions, "removeStatusCondition");
  let kept = 0;
  for (const condition of conditions) {
    if (condition.type !== type) conditions[kept++] = condition;
  }
  const removed = kept !== conditions.length;
  conditions.length = kept;
  return removed;
}

/**
 * The condition of type `type`, or `undefined`. Like apimachinery's `meta.FindStatusCondition`;
 * `conditions` may be absent or frozen.
 *
 * @example
 * ```ts
 * import { findStatusCondition } from "@rudder/operator";
 * import { type Condition } from "@rudder/operator/api";
 *
 * const status: { conditions?: Condition[] } = {};
 * console.log(findStatusCondition(status.conditions, "Ready")); // undefined
 * ```
 */
export function findStatusCondition<C extends DeepReadonly<Condition>>(
  conditions: readonly C[] | undefined,
  type: string,
): C | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * True when the condition of type `type` is present with status `status`. Like apimachinery's
 * `meta.IsStatusConditionPresentAndEqual`.
 *
 * @example
 * ```ts
 * import { type Condition, isStatusConditionPresentAndEqual } from "@rudder/operator/api";
 *
 * const conditions: Condition[] = [
 *   { type: "Ready", status: "Unknown", reason: "Probing", message: "", lastTransitionTime: "" },
 * ];
 * console.log(isStatusConditionPresentAndEqual(conditions, "Ready", "Unknown")); // true
 * ```
 */
export function isStatusConditionPresentAndEqual(
  conditions: readonly DeepReadonly<Condition>[] | undefined,
  type: string,
  status: ConditionStatus,
): boolean {
  return findStatusCondition(conditions, type)?.status === status;
}

/**
 * True when the condition of type `type` is present with status `True`. Like apimachinery's
 * `meta.IsStatusConditionTrue`.
 *
 * @example
 * ```ts
 * import { type Condition, isStatusConditionTrue } from "@rudder/operator/api";
 *
 * const conditions: Condition[] = [
 *   { type: "Ready", status: "True", reason: "Running", message: "", lastTransitionTime: "" },
 * ];
 * console.log(isStatusConditionTrue(conditions, "Ready")); // true
 * ```
 */
export function isStatusConditionTrue(
  conditions: readonly DeepReadonly<Condition>[] | undefined,
  type: string,
): boolean {
  return isStatusConditionPresentAndEqual(conditions, type, "True");
}

/**
 * True when the condition of type `type` is present with status `False` (an absent condition
 * is neither true nor false). Like apimachinery's `meta.IsStatusConditionFalse`.
 *
 * @example
 * ```ts
 * import { type Condition, isStatusConditionFalse } from "@rudder/operator/api";
 *
 * const conditions: Condition[] = [];
 * console.log(isStatusConditionFalse(conditions, "Ready")); // false: absent
 * ```
 */
export function isStatusConditionFalse(
  conditions: readonly DeepReadonly<Condition>[] | undefined,
  type: string,
): boolean {
  return isStatusConditionPresentAndEqual(conditions, type, "False");
}
