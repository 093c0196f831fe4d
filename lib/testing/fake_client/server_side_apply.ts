/**
 * Server-side apply, simplified as the fake does it: lists are owned whole rather than item by
 * item. The configuration's fields are merged in (strategically for built-in kinds); a field
 * another manager owns and the configuration would change is a conflict unless `force`; fields
 * this manager applied before and left out now are removed unless another manager owns them.
 *
 * @module
 */

import type { KubeObject, ResourceType } from "../../api/resource.ts";
import { applyMergePatch } from "../../client/patch.ts";
import { applyStrategicMergePatch, schemaForKind } from "../../client/strategic_merge.ts";
import type { ApiError } from "../../kube/errors.ts";
import { isJsonObject, jsonClone, jsonEqual, type JsonObject } from "../../util/json.ts";
import { apiError, type Where } from "./errors.ts";
import {
  managerKey,
  type Managers,
  ownedByOthers,
  ownedLeaves,
  parseManagerKey,
  SYSTEM_METADATA,
} from "./field_ownership.ts";
import { hasStatus } from "./kinds.ts";
import { deletePath, getPath, metadataOf, overlaps, type Path, setPath } from "./objects.ts";

/** An applier, and whether it takes fields other managers own. */
export interface Applier {
  /** The applier's field manager. */
  fieldManager: string;
  /** Take conflicting fields instead of failing. */
  force?: boolean;
}

/**
 * The object `stored` becomes when `applier` applies `config` through `subresource` (`""`
 * for the main resource), and the leaves it applied; a Conflict when fields other managers own
 * would change and the applier does not force.
 */
export function applyConfiguration(
  type: ResourceType<KubeObject>,
  stored: { object: JsonObject; managers: Managers },
  config: JsonObject,
  subresource: "" | "status",
  applier: Applier,
  where: Where,
): { merged: JsonObject; leaves: Path[] } {
  const name = metadataOf(config).name;
  // The part of the configuration this endpoint writes.
  let applied: JsonObject = jsonClone(config);
  if (subresource === "status") {
    applied = {
      apiVersion: config.apiVersion,
      kind: config.kind,
      metadata: { name },
      status: config.status,
    };
  } else if (hasStatus(type)) delete applied.status;
  for (const field of SYSTEM_METADATA) delete metadataOf(applied)[field];
  const leaves = ownedLeaves(applied);
  const self = managerKey(applier.fieldManager, "Apply", subresource);
  const othersOwn = (path: Path) => ownedByOthers(stored.managers, self, path);

  const merged = mergeConfiguration(type, stored.object, applied);
  // A list only this manager owns becomes what it applies, not a merge with the old one.
  for (const path of leaves) {
    const value = getPath(applied, path);
    if (Array.isArray(value) && !othersOwn(path)) setPath(merged, path, jsonClone(value));
  }
  const conflicts: { manager: string; path: Path }[] = [];
  for (const path of leaves) {
    if (jsonEqual(getPath(stored.object, path), getPath(merged, path))) continue;
    for (const [manager, paths] of stored.managers) {
      if (manager === self) continue;
      if ([...paths.values()].some((p) => overlaps(p, path))) conflicts.push({ manager, path });
    }
  }
  if (conflicts.length > 0 && !applier.force) throw applyConflict(type, conflicts, where);
  const appliedKeys = new Set(leaves.map((path) => JSON.stringify(path)));
  for (const [pathKey, path] of stored.managers.get(self) ?? []) {
    if (!appliedKeys.has(pathKey) && !othersOwn(path)) deletePath(merged, path);
  }
  return { merged, leaves };
}

/** `config` merged into `target`: strategically for built-in kinds, else metadata strategically. */
function mergeConfiguration(
  type: ResourceType<KubeObject>,
  target: JsonObject,
  config: JsonObject,
): JsonObject {
  const schema = schemaForKind(type.apiVersion, type.kind);
  if (schema) return asObject(applyStrategicMergePatch(target, config, schema));
  const { metadata, ...rest } = config;
  const merged = asObject(applyMergePatch(target, rest));
  merged.metadata = applyStrategicMergePatch(
    target.metadata ?? {},
    metadata ?? {},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
  );
  return merged;
}

/** A merge of two objects, which is an object. */
function asObject(merged: unknown): JsonObject {
  if (!isJsonObject(merged)) throw new Error("merging two objects did not give an object");
  return merged;
}

/** The API server's Conflict for an apply that would change fields other managers own. */
function applyConflict(
  type: ResourceType<KubeObject>,
  conflicts: { manager: string; path: Path }[],
  where: Where,
): ApiError {
  const byManager = new Map<string, string[]>();
  for (const { manager, path } of conflicts) {
    const { name, operation } = parseManagerKey(manager);
    const who = `"${name}"${operation === "Update" ? ` using ${type.apiVersion}` : ""}`;
    byManager.set(who, [...(byManager.get(who) ?? []), `.${path.join(".")}`]);
  }
  const count = conflicts.length;
  const parts = [...byManager].map(([who, fields]) =>
    fields.length === 1
      ? `conflict with ${who}: ${fields[0]}`
      : `conflicts with ${who}:\n- ${fields.join("\n- ")}`
  );
  const causes = [...byManager].flatMap(([who, fields]) =>
    fields.map((field) => ({
      reason: "FieldManagerConflict",
      message: `conflict with ${who}`,
      field,
    }))
  );
  return apiError(
    where,
    409,
    "Conflict",
    `Apply failed with ${count} conflict${count === 1 ? "" : "s"}: ${parts.join("\n")}`,
    { causes },
  );
}
