/**
 * The shared parts of every resource, as types and as zod fragments for `defineResource`
 * schemas: object metadata, owner references, label selectors and the Phase + Conditions status
 * convention (`metav1.Condition`, a list merged by `type`). The zod fragments carry the same
 * rules as Kubernetes' own OpenAPI, so the CRD they end up in validates like a built-in kind.
 *
 * @example A status that follows the Phase + Conditions convention
 * ```ts
 * import { z } from "zod";
 * import { conditionsSchema, phaseSchema } from "@rudder/operator";
 *
 * const status = z.object({
 *   phase: phaseSchema(["Pending", "Running", "Failed"]).optional(),
 *   observedGeneration: z.int().optional(),
 *   conditions: conditionsSchema.optional(),
 * });
 * ```
 *
 * @module
 */

import { z } from "zod";
import type { Condition, LabelSelector, ObjectMeta, OwnerReference } from "./generated/meta_v1.ts";
import { listType, mapType, type ZodEnumSchema, type ZodSchemaOf } from "./schema.ts";

export type {
  Condition,
  LabelSelector,
  LabelSelectorRequirement,
  ObjectMeta,
  OwnerReference,
} from "./generated/meta_v1.ts";

/**
 * One `metav1.OwnerReference`: the object that owns this one (garbage collection, `owns()`
 * watches).
 *
 * @example
 * ```ts
 * import { ownerReferenceSchema } from "@rudder/operator/api";
 *
 * ownerReferenceSchema.parse({ apiVersion: "v1", kind: "ConfigMap", name: "a", uid: "1" });
 * ```
 */
export const ownerReferenceSchema: ZodSchemaOf<OwnerReference> = z.object({
  apiVersion: z.string().describe("API version of the referent."),
  kind: z.string().describe("Kind of the referent."),
  name: z.string().describe("Name of the referent."),
  uid: z.string().describe("UID of the referent."),
  controller: z.boolean().optional().describe("True when the referent is the managing controller."),
  blockOwnerDeletion: z.boolean().optional()
    .describe("True when the owner cannot be deleted from storage before this object is."),
}).describe("An object that owns this one.");

/**
 * `metav1.ObjectMeta` for `parse`: the fields an operator reads are typed, every other field
 * (managedFields, …) is kept as it is.
 *
 * @example
 * ```ts
 * import { objectMetaSchema } from "@rudder/operator/api";
 *
 * const meta = objectMetaSchema.parse({ name: "web", labels: { app: "web" }, uid: "1" });
 * console.log(meta.labels?.app); // web
 * ```
 */
export const objectMetaSchema: ZodSchemaOf<ObjectMeta> = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.int().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  deletionGracePeriodSeconds: z.int().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z.array(ownerReferenceSchema).optional(),
}) as ZodSchemaOf<ObjectMeta>;

/**
 * A `metav1.LabelSelector` (`matchLabels` and `matchExpressions`), e.g. the selector of the
 * objects a resource manages; atomic for server-side apply, as in Kubernetes.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { labelSelectorSchema } from "@rudder/operator/api";
 *
 * const spec = z.object({ selector: labelSelectorSchema });
 * spec.parse({ selector: { matchLabels: { app: "web" } } });
 * ```
 */
export const labelSelectorSchema: ZodSchemaOf<LabelSelector> = mapType(
  z.object({
    matchLabels: z.record(z.string(), z.string()).optional()
      .describe("Labels that must have exactly these values."),
    matchExpressions: listType(
      z.array(z.object({
        key: z.string().describe("The label key."),
        operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"])
          .describe("In, NotIn, Exists or DoesNotExist."),
        values: listType(z.array(z.string()), "atomic").optional()
          .describe("Values for In and NotIn; empty for Exists and DoesNotExist."),
      })),
      "atomic",
    ).optional().describe("Set-based requirements, ANDed."),
  }),
  "atomic",
).describe("A label query over a set of objects; empty matches everything.");

/**
 * One `metav1.Condition`, with the API server's own rules: a CamelCase `type` (optionally
 * prefixed by a DNS subdomain), `status` True/False/Unknown, a non-empty CamelCase `reason`, an
 * RFC 3339 `lastTransitionTime` and a `message` of at most 32768 characters.
 *
 * @example
 * ```ts
 * import { conditionSchema } from "@rudder/operator/api";
 *
 * conditionSchema.parse({
 *   type: "Ready",
 *   status: "True",
 *   reason: "Reconciled",
 *   message: "",
 *   lastTransitionTime: "2025-01-01T00:00:00Z",
 * });
 * ```
 */
export const conditionSchema: ZodSchemaOf<Condition> = z.object({
  type: z.string().max(316)
    .regex(
      /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
    )
    .describe("Type of condition in CamelCase or in foo.example.com/CamelCase."),
  status: z.enum(["True", "False", "Unknown"]).describe("Status of the condition."),
  observedGeneration: z.int().min(0).optional()
    .describe("The .metadata.generation that the condition was set based upon."),
  lastTransitionTime: z.iso.datetime({ offset: true })
    .describe("Last time the condition transitioned from one status to another."),
  reason: z.string().min(1).max(1024).regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/)
    .describe("A CamelCase identifier of the reason for the condition's last transition."),
  message: z.string().max(32768)
    .describe("A human-readable message about the transition; may be empty."),
}).describe("One aspect of the current state of the resource.");

/**
 * `status.conditions`: a list of {@linkcode conditionSchema} with one entry per `type`
 * (`x-kubernetes-list-type: map` keyed by `type`), as `setStatusCondition` keeps it.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * import { conditionsSchema } from "@rudder/operator";
 *
 * const status = z.object({ conditions: conditionsSchema.optional() });
 * console.log(status.parse({}).conditions); // undefined
 * ```
 */
export const conditionsSchema: ZodSchemaOf<Condition[]> = listType(
  z.array(conditionSchema),
  "map",
  ["type"],
)
  .describe("The latest observations of the resource's state, one per type.");

/**
 * `status.phase`: one of `phases`, a simple summary next to the conditions.
 *
 * @example
 * ```ts
 * import { phaseSchema } from "@rudder/operator";
 *
 * const phase = phaseSchema(["Pending", "Running", "Failed"]);
 * console.log(phase.parse("Running")); // Running
 * ```
 */
export function phaseSchema<const P extends readonly [string, ...string[]]>(
  phases: P,
): ZodEnumSchema<P[number]> {
  if (phases.length === 0 || phases.some((p) => !p)) {
    throw new Error("phaseSchema needs at least one phase, and no empty one");
  }
  return z.enum(phases).describe(`The phase of the resource: ${phases.join(", ")}.`);
}
