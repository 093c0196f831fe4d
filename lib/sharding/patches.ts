/**
 * The JSON patches sharding writes. Each tests the labels it expects before it changes them, so
 * a concurrent change (the sharder or another replica's fallback, the shard's acknowledgement, a
 * user) makes the patch fail instead of being overwritten. Where a patch adds a label (or the
 * whole label map) that was absent when read, JSON patch cannot test for absence: it tests the
 * object's `resourceVersion` instead, since an `add` of a key that appeared meanwhile replaces it,
 * and an `add` of `/metadata/labels` replaces every label.
 *
 * @module
 */

import { escapePointerToken, type JsonPatchOperation } from "../client/json_patch.ts";

/** A label's JSON pointer: `/metadata/labels/<key>` with `/` escaped. */
export function labelPath(key: string): string {
  return `/metadata/labels/${escapePointerToken(key)}`;
}

type Labels = Readonly<Record<string, string>> | undefined;

/** Tests that the object is still the version read, when that version is known. */
function unchanged(resourceVersion: string | undefined): JsonPatchOperation[] {
  return resourceVersion === undefined
    ? []
    : [{ op: "test", path: "/metadata/resourceVersion", value: resourceVersion }];
}

/**
 * Operations that make `labels` end with `key` set to `value`, checking what is there now: the
 * key's value when it has one, else that the object is still `resourceVersion`.
 */
function setLabel(
  labels: Labels,
  key: string,
  value: string,
  resourceVersion: string | undefined,
): JsonPatchOperation[] {
  if (!labels) {
    return [
      ...unchanged(resourceVersion),
      { op: "add", path: "/metadata/labels", value: { [key]: value } },
    ];
  }
  const current = labels[key];
  if (current === undefined) {
    return [...unchanged(resourceVersion), { op: "add", path: labelPath(key), value }];
  }
  return [
    { op: "test", path: labelPath(key), value: current },
    { op: "replace", path: labelPath(key), value },
  ];
}

/** Operations that remove `key` if `labels` has it, checking its value first. */
function removeLabel(labels: Labels, key: string): JsonPatchOperation[] {
  const current = labels?.[key];
  if (current === undefined) return [];
  return [
    { op: "test", path: labelPath(key), value: current },
    { op: "remove", path: labelPath(key) },
  ];
}

/**
 * Assigns an object to `shard` (clearing a drain mark): for an unassigned object, or a direct
 * move off a dead shard. Fails if the labels changed since `labels` was read (for an unassigned
 * object: if the object changed at all since `resourceVersion`).
 */
export function assignPatch(
  labels: Labels,
  shardKey: string,
  drainKey: string,
  shard: string,
  resourceVersion: string | undefined,
): JsonPatchOperation[] {
  return [
    ...removeLabel(labels, drainKey),
    ...setLabel(labels, shardKey, shard, resourceVersion),
  ];
}

/**
 * Marks an object of `shard` as draining. Only the sharder writes the mark, so a mark that
 * appeared meanwhile is the same mark: the object's other changes (a reconciler's status) need
 * not fail it.
 */
export function drainPatch(
  labels: Labels,
  shardKey: string,
  drainKey: string,
  shard: string,
): JsonPatchOperation[] {
  return [
    { op: "test", path: labelPath(shardKey), value: shard },
    ...setLabel(labels, drainKey, "true", undefined),
  ];
}

/** Withdraws a drain mark (the ring moved the object back to its shard). */
export function undrainPatch(
  labels: Labels,
  shardKey: string,
  drainKey: string,
  shard: string,
): JsonPatchOperation[] {
  return [
    { op: "test", path: labelPath(shardKey), value: shard },
    ...removeLabel(labels, drainKey),
  ];
}

/**
 * The shard's acknowledgement: removes its shard label and the drain mark (if any), only if
 * the object is still assigned to `shard`.
 */
export function releasePatch(
  labels: Labels,
  shardKey: string,
  drainKey: string,
  shard: string,
): JsonPatchOperation[] {
  return [
    { op: "test", path: labelPath(shardKey), value: shard },
    { op: "remove", path: labelPath(shardKey) },
    ...removeLabel(labels, drainKey),
  ];
}
