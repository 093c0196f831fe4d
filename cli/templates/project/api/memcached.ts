/**
 * The Memcached custom resource: what its users ask for (spec) and what the operator reports
 * (status). One zod schema gives the TypeScript type, the validator and the CRD.
 *
 * @module
 */

import { z } from "zod";
import { conditionsSchema, defineResource, type ObjectOf, phaseSchema } from "@rudder/operator";

/** The Memcached kind: its resource type, CRD, validator and TypeScript type in one. */
export const Memcached = defineResource({
  group: "cache.example.com",
  version: "v1alpha1",
  kind: "Memcached",
  scope: "Namespaced",
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
});

/** A Memcached object. */
export type Memcached = ObjectOf<typeof Memcached>;
