/**
 * Field ownership, as the API server records it in `managedFields`: which manager (a name, an
 * operation, a subresource) owns which leaf fields of an object, and how a write moves
 * ownership. Server-side apply reads it to find conflicts and fields to remove.
 *
 * Simplified as the fake's server-side apply is: lists are owned whole, not item by item.
 *
 * @module
 */

import { isJsonObject, jsonEqual, type JsonObject } from "../../util/json.ts";
import { getPath, overlaps, type Path } from "./objects.ts";

/** The manager of writes without `fieldManager`: the real client's User-Agent product. */
export const DEFAULT_FIELD_MANAGER = "rudder";
/** The manager the API server assigns existing fields to when an object is first applied. */
const BEFORE_FIRST_APPLY = "before-first-apply";

/** `metadata` fields the server owns: never taken from a write, never owned by a manager. */
export const SYSTEM_METADATA: ReadonlySet<string> = new Set([
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "selfLink",
]);

/** How a manager wrote: by update (PUT, patch) or by server-side apply. */
export type Operation = "Update" | "Apply";

/** The fields each manager owns: by manager key, then by path (as JSON) to the path. */
export type Managers = Map<string, Map<string, Path>>;

/** A field manager: its name, whether it updates or applies, and through which subresource. */
export function managerKey(name: string, operation: Operation, subresource: string): string {
  return JSON.stringify([name, operation, subresource]);
}

/** The name and operation of a manager key. */
export function parseManagerKey(key: string): { name: string; operation: Operation } {
  const [name, operation] = JSON.parse(key);
  return { name: String(name), operation: operation === "Apply" ? "Apply" : "Update" };
}

/** The owners of an object stored without managedFields: all of it is `before-first-apply`'s. */
export function ownersBeforeFirstApply(obj: JsonObject): Managers {
  const owned = new Map(ownedLeaves(obj).map((path) => [JSON.stringify(path), path]));
  return new Map([[managerKey(BEFORE_FIRST_APPLY, "Update", ""), owned]]);
}

/**
 * The leaf fields of an object that field managers own: scalars, lists (owned whole) and empty
 * objects, leaving out `apiVersion`, `kind` and the metadata the server sets.
 */
export function ownedLeaves(obj: unknown): Path[] {
  const leaves: Path[] = [];
  const walk = (value: unknown, path: string[]) => {
    if (isJsonObject(value) && (path.length === 0 || Object.keys(value).length > 0)) {
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined || item === null) continue;
        if (path.length === 0 && (key === "apiVersion" || key === "kind")) continue;
        if (path.length === 1 && path[0] === "metadata" && SYSTEM_METADATA.has(key)) continue;
        walk(item, [...path, key]);
      }
    } else if (path.length > 0) leaves.push(path);
  };
  walk(obj, []);
  return leaves;
}

/** The owned leaves that a write from `before` to `after` set, changed or removed. */
function changedLeaves(before: unknown, after: unknown): Path[] {
  const changed = ownedLeaves(after).filter((path) =>
    !jsonEqual(getPath(before, path), getPath(after, path))
  );
  const removed = ownedLeaves(before).filter((path) => getPath(after, path) === undefined);
  return [...changed, ...removed];
}

/** Whether a manager other than `self` owns `path` or part of it. */
export function ownedByOthers(managers: Managers, self: string, path: Path): boolean {
  for (const [manager, paths] of managers) {
    if (manager === self) continue;
    for (const owned of paths.values()) if (overlaps(owned, path)) return true;
  }
  return false;
}

/**
 * Moves field ownership after a write: whoever owned a field the write changed loses it; an
 * updater gains the fields it changed, an applier owns exactly what it applied.
 */
export function own(
  managers: Managers,
  manager: string,
  operation: Operation,
  before: JsonObject,
  after: JsonObject,
  applied: readonly Path[],
): void {
  const changed = changedLeaves(before, after);
  for (const [key, paths] of managers) {
    if (operation === "Apply" && key === manager) continue;
    for (const [pathKey, path] of paths) {
      if (changed.some((c) => overlaps(c, path))) paths.delete(pathKey);
    }
  }
  const owned = operation === "Apply"
    ? new Map<string, Path>()
    : managers.get(manager) ?? new Map();
  const gained = operation === "Apply" ? applied : changed;
  for (const path of gained) {
    if (getPath(after, path) !== undefined) owned.set(JSON.stringify(path), path);
  }
  managers.set(manager, owned);
  for (const [key, paths] of managers) if (paths.size === 0) managers.delete(key);
}
