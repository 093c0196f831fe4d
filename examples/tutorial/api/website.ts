/**
 * The Website custom resource: a static site, served by a Deployment of web servers, whose
 * files come from a ConfigMap the user manages. One zod schema gives the TypeScript type, the
 * validator and the CRD.
 *
 * @module
 */

import { z } from "zod";
import { conditionsSchema, defineResource, type ObjectOf } from "@rudder/operator";

/** The Website kind: its resource type, CRD, validator and TypeScript type in one. */
export const Website = defineResource({
  group: "tutorial.rudder.dev",
  version: "v1",
  kind: "Website",
  scope: "Namespaced",
  spec: z.object({
    image: z.string().default("nginx:1.27").describe("The web server's image."),
    replicas: z.number().int().min(0).default(1).describe("How many web servers run."),
    contentFrom: z.string().min(1).describe("A ConfigMap in the same namespace: the site's files."),
  }),
  status: z.object({
    observedGeneration: z.number().int().optional(),
    contentVersion: z.string().optional().describe("The content ConfigMap's resourceVersion."),
    conditions: conditionsSchema.optional(),
  }),
  printerColumns: [
    { name: "Content", jsonPath: ".spec.contentFrom" },
    { name: "Ready", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  ],
});

/** A Website object. */
export type Website = ObjectOf<typeof Website>;
