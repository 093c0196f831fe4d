/**
 * Upgrading a CRD version (docs/guides/crd-versions.md): `Backup` moves from `v1alpha1` to `v1`.
 * Both versions share one schema shape (the API server converts with `None`: it only rewrites
 * `apiVersion`), so v1 may add optional fields but must not rename or remove any.
 *
 * @module
 */

import { z } from "zod";
import { defineResource, type ObjectOf } from "@rudder/operator";

const spec = z.object({
  schedule: z.string(),
  retain: z.number().int().min(1).default(7),
});

/** The old version, as released. */
export const BackupV1alpha1 = defineResource({
  group: "guides.rudder.dev",
  version: "v1alpha1",
  kind: "Backup",
  scope: "Namespaced",
  spec,
});

/** The new version: served and stored, with the old one still served for old clients. */
export const Backup = defineResource({
  group: "guides.rudder.dev",
  version: "v1",
  kind: "Backup",
  scope: "Namespaced",
  spec: spec.extend({ suspend: z.boolean().optional() }),
  storage: true,
  versions: [{ definition: BackupV1alpha1.definition }],
});

/** A v1 Backup. */
export type Backup = ObjectOf<typeof Backup>;
