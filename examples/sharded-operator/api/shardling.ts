/**
 * The `Shardling` custom resource: a small object whose replicas of the operator split between
 * them, each owning one ConfigMap with the data of its spec.
 *
 * @module
 */

import { z } from "zod";
import { defineResource, type ObjectOf } from "@rudder/operator";

/** The Shardling kind: its resource type, CRD, validator and TypeScript type in one. */
export const Shardling = defineResource({
  group: "shard.example.com",
  version: "v1alpha1",
  kind: "Shardling",
  scope: "Namespaced",
  spec: z.object({
    data: z.record(z.string(), z.string()).default({})
      .describe("What the Shardling's ConfigMap holds."),
  }),
  status: z.object({
    observedGeneration: z.number().int().optional(),
    shard: z.string().optional().describe("The replica that reconciled it last."),
  }),
  printerColumns: [
    { name: "Shard", jsonPath: ".status.shard" },
    { name: "Age", jsonPath: ".metadata.creationTimestamp", type: "date" },
  ],
});

/** A Shardling object. */
export type Shardling = ObjectOf<typeof Shardling>;
