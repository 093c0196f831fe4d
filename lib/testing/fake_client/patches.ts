/**
 * Patches as the API server applies them: merge, JSON and strategic merge patches, with the
 * server's refusals (BadRequest, 415 UnsupportedMediaType, 422 for a patch that cannot apply).
 *
 * @module
 */

import { applyJsonPatch, type JsonPatchOperation } from "../../client/json_patch.ts";
import { applyMergePatch, type PatchType } from "../../client/patch.ts";
import { applyStrategicMergePatch, schemaForKind } from "../../client/strategic_merge.ts";
import { isJsonObject, type JsonObject } from "../../util/json.ts";
import { apiError, badRequest, unprocessablePatch, type Where } from "./errors.ts";

/** `target` with a merge, JSON or strategic merge patch applied, or the server's refusal. */
export function applyPatch(
  type: { apiVersion: string; kind: string },
  target: JsonObject,
  patchType: PatchType,
  body: unknown,
  where: Where,
): JsonObject {
  let result: unknown;
  switch (patchType) {
    case "application/merge-patch+json":
      if (!isJsonObject(body)) throw badRequest("the merge patch must be a JSON object", where);
      result = applyMergePatch(target, body);
      break;
    case "application/json-patch+json":
      if (!Array.isArray(body)) {
        throw badRequest("the JSON patch must be a list of operations", where);
      }
      try {
        // A malformed operation fails inside applyJsonPatch, and becomes the 422 below.
        result = applyJsonPatch(target, body as JsonPatchOperation[]);
      } catch (err) {
        throw unprocessablePatch(where, err);
      }
      break;
    case "application/strategic-merge-patch+json": {
      const schema = schemaForKind(type.apiVersion, type.kind);
      if (!schema) {
        throw apiError(
          where,
          415,
          "UnsupportedMediaType",
          "the body of the request was in an unknown format - accepted media types include: " +
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        );
      }
      if (!isJsonObject(body)) {
        throw badRequest("the strategic merge patch must be a JSON object", where);
      }
      try {
        result = applyStrategicMergePatch(target, body, schema);
      } catch (err) {
        throw unprocessablePatch(where, err);
      }
      break;
    }
    default:
      throw apiError(
        where,
        415,
        "UnsupportedMediaType",
        `the patch type ${patchType} is not supported`,
      );
  }
  if (!isJsonObject(result)) {
    throw unprocessablePatch(where, new Error("the patch did not give an object"));
  }
  return result;
}
