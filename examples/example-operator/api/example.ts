/**
 * The `Example` custom resource: a spec with a replica count, and a status that follows the
 * Phase + Conditions convention.
 *
 * @module
 */

import { z } from "zod";
import { conditionsSchema, defineResource, type ObjectOf, phaseSchema } from "../../../mod.ts";

/**
 * Version v1beta1 of Example, served beside v1alpha1 (which is stored and the conversion hub):
 * `spec.replicas` is called `spec.size` here. The webhook converts between the two.
 */
export const ExampleV1beta1 = defineResource({
  group: "example.com",
  version: "v1beta1",
  kind: "Example",
  scope: "Namespaced",
  shortNames: ["ex"],
  spec: z.object({
    size: z.number().int().min(0).default(1).describe("How many pods the Deployment runs."),
    image: z.string().default("registry.k8s.io/pause:3.10").describe("Image of those pods."),
  }),
  status: z.object({
    phase: phaseSchema(["Pending", "Running", "Deleting"]).optional(),
    observedGeneration: z.number().int().optional(),
    conditions: conditionsSchema.optional(),
  }),
  printerColumns: [
    { name: "Size", jsonPath: ".spec.size" },
    { name: "Phase", jsonPath: ".status.phase" },
    { name: "Age", jsonPath: ".metadata.creationTimestamp", type: "date" },
  ],
});

/** An Example object in version v1beta1. */
export type ExampleV1beta1 = ObjectOf<typeof ExampleV1beta1>;

/** The Example kind: its resource type, CRD, validator and TypeScript type in one. */
export const Example = defineResource({
  group: "example.com",
  version: "v1alpha1",
  kind: "Example",
  scope: "Namespaced",
  shortNames: ["ex"],
  spec: z.object({
    replicas: z.number().int().min(0).default(1).describe("How many pods the Deployment runs."),
    image: z.string().default("registry.k8s.io/pause:3.10").describe("Image of those pods."),
  }),
  status: z.object({
    phase: phaseSchema(["Pending", "Running", "Deleting"]).optional(),
    observedGeneration: z.number().int().optional(),
    conditions: conditionsSchema.optional(),
  }),
  printerColumns: [
    { name: "Replicas", jsonPath: ".spec.replicas" },
    { name: "Phase", jsonPath: ".status.phase" },
    { name: "Age", jsonPath: ".metadata.creationTimestamp", type: "date" },
  ],
  versions: [ExampleV1beta1],
});

/** An Example object. */
export type Example = ObjectOf<typeof Example>;
