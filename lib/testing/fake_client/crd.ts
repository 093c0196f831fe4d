/**
 * CustomResourceDefinitions in the fake: the kinds a CRD serves (with their `scale` paths,
 * selectable fields and schemas), and the status the API server gives a CRD it accepts.
 *
 * @module
 */

import { type KubeObject, type ResourceType, resourceType } from "../../api/resource.ts";
import type { JSONSchemaProps } from "../../api/schema.ts";
import { isJsonObject, jsonClone, type JsonObject } from "../../util/json.ts";
import type { ScalePaths } from "./scale.ts";

/** The `apiVersion/kind` of CustomResourceDefinitions. */
export const CRD_KEY = "apiextensions.k8s.io/v1/CustomResourceDefinition";

/** A kind a CustomResourceDefinition serves, with its scale paths and selectable fields. */
export interface ServedKind {
  /** The kind's resource type. */
  type: ResourceType<KubeObject>;
  /** Where its `scale` subresource reads and writes, when it has one. */
  scale?: ScalePaths;
  /** Its `selectableFields`, as paths without the leading dot. */
  selectableFields: string[];
  /** Its structural schema (`schema.openAPIV3Schema`), when it has one. */
  schema?: JSONSchemaProps;
}

/** The structural schema of one entry of a CRD's `spec.versions`, when it has one. */
export function versionSchema(version: JsonObject): JSONSchemaProps | undefined {
  const schema = isJsonObject(version.schema) ? version.schema.openAPIV3Schema : undefined;
  return isJsonObject(schema) ? schema as JSONSchemaProps : undefined;
}

function jsonPathToPath(jsonPath: unknown): string[] | undefined {
  if (typeof jsonPath !== "string" || !jsonPath.startsWith(".")) return undefined;
  return jsonPath.slice(1).split(".");
}

/** The kinds `crd` serves: one per served version. */
export function servedKinds(crd: JsonObject): ServedKind[] {
  const spec = isJsonObject(crd.spec) ? crd.spec : {};
  const names = isJsonObject(spec.names) ? spec.names : {};
  const { kind, plural } = names;
  const group = spec.group;
  if (typeof kind !== "string" || typeof group !== "string" || typeof plural !== "string") {
    return [];
  }
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isJsonObject) : [];
  return versions.filter((version) => version.served !== false).map((version) => {
    const subresources = isJsonObject(version.subresources) ? version.subresources : {};
    const scale = isJsonObject(subresources.scale) ? subresources.scale : undefined;
    const fields = Array.isArray(version.selectableFields) ? version.selectableFields : [];
    return {
      type: resourceType({
        group,
        version: String(version.name),
        kind,
        plural,
        listKind: typeof names.listKind === "string" ? names.listKind : undefined,
        scope: spec.scope === "Cluster" ? "Cluster" : "Namespaced",
        subresources: [
          ...(isJsonObject(subresources.status) ? ["status"] : []),
          ...(scale ? ["scale"] : []),
        ],
      }),
      scale: scale
        ? {
          specReplicas: jsonPathToPath(scale.specReplicasPath) ?? ["spec", "replicas"],
          statusReplicas: jsonPathToPath(scale.statusReplicasPath) ?? ["status", "replicas"],
          labelSelector: jsonPathToPath(scale.labelSelectorPath),
        }
        : undefined,
      selectableFields: fields.filter(isJsonObject).map((field) =>
        jsonPathToPath(field.jsonPath)?.join(".")
      ).filter((field): field is string => field !== undefined),
      schema: versionSchema(version),
    };
  });
}

/** The status of a CRD the API server has just accepted: names accepted, established. */
export function establishedStatus(crd: JsonObject, now: string): JsonObject {
  const spec = isJsonObject(crd.spec) ? crd.spec : {};
  const versions = Array.isArray(spec.versions) ? spec.versions.filter(isJsonObject) : [];
  return {
    conditions: [
      {
        type: "NamesAccepted",
        status: "True",
        lastTransitionTime: now,
        reason: "NoConflicts",
        message: "no conflicts found",
      },
      {
        type: "Established",
        status: "True",
        lastTransitionTime: now,
        reason: "InitialNamesAccepted",
        message: "the initial names have been accepted",
      },
    ],
    acceptedNames: jsonClone(spec.names ?? {}),
    storedVersions: versions.filter((v) => v.storage).map((v) => v.name),
  };
}
