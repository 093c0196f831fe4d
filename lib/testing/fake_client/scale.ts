/**
 * The `scale` subresource: where a kind keeps its replicas and selector, and the
 * `autoscaling/v1` Scale the API server makes of an object.
 *
 * @module
 */

import type { KubeObject, ResourceType } from "../../api/resource.ts";
import type { LabelSelectorObject } from "../../client/options.ts";
import { parseLabelSelector } from "../../cache/selector.ts";
import { isJsonObject, jsonClone, type JsonObject } from "../../util/json.ts";
import { apiError, type Where } from "./errors.ts";
import { getPath, metadataOf, type Path } from "./objects.ts";

/** Where the `scale` subresource finds replicas and the selector. */
export interface ScalePaths {
  /** Path of the desired replicas. */
  specReplicas: Path;
  /** Path of the observed replicas. */
  statusReplicas: Path;
  /** Path of the selector string (custom kinds); built-in kinds format `spec.selector`. */
  labelSelector?: Path;
  /** The server defaults built-in kinds' `spec.replicas` to 1. */
  defaultReplicas?: number;
}

/** The scale paths of the built-in scalable kinds. */
export const BUILTIN_SCALE: ScalePaths = {
  specReplicas: ["spec", "replicas"],
  statusReplicas: ["status", "replicas"],
  defaultReplicas: 1,
};

/** The built-in kinds with a `scale` subresource, by `apiVersion/kind`. */
export const BUILTIN_SCALABLE: ReadonlySet<string> = new Set([
  "apps/v1/Deployment",
  "apps/v1/StatefulSet",
  "apps/v1/ReplicaSet",
]);

/** The scale paths of a custom kind whose CRD names none: the API server's defaults. */
export const DEFAULT_CUSTOM_SCALE: ScalePaths = {
  specReplicas: ["spec", "replicas"],
  statusReplicas: ["status", "replicas"],
  labelSelector: ["status", "selector"],
};

/** The Scale's selector string of a LabelSelector object, in Go's canonical form. */
function selectorString(selector: unknown): string | undefined {
  if (!isJsonObject(selector)) return undefined;
  try {
    return parseLabelSelector(selector as LabelSelectorObject).toString();
  } catch {
    return undefined;
  }
}

/** The `autoscaling/v1` Scale of an object. */
export function scaleOf(
  type: ResourceType<KubeObject>,
  paths: ScalePaths,
  obj: JsonObject,
  where: Where,
): JsonObject {
  const meta = metadataOf(obj);
  let replicas = getPath(obj, paths.specReplicas) ?? paths.defaultReplicas;
  if (replicas === undefined) {
    throw apiError(
      where,
      500,
      "InternalError",
      `Internal error occurred: the spec replicas field ".${
        paths.specReplicas.join(".")
      }" does not exist`,
    );
  }
  if (typeof replicas !== "number") replicas = Number(replicas);
  const selector = paths.labelSelector
    ? getPath(obj, paths.labelSelector)
    : selectorString(getPath(obj, ["spec", "selector"]));
  const scaleMeta: JsonObject = {
    name: meta.name,
    namespace: type.scope === "Namespaced" ? meta.namespace : undefined,
    uid: meta.uid,
    resourceVersion: meta.resourceVersion,
    creationTimestamp: meta.creationTimestamp,
  };
  return jsonClone({
    apiVersion: "autoscaling/v1",
    kind: "Scale",
    metadata: scaleMeta,
    spec: replicas ? { replicas } : {},
    status: {
      replicas: Number(getPath(obj, paths.statusReplicas) ?? 0),
      ...(typeof selector === "string" && selector ? { selector } : {}),
    },
  });
}
