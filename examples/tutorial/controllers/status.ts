/**
 * The Website's status: the generation the operator acted on, the content's version, and a
 * Ready condition.
 *
 * @module
 */

import { clone, type DeepReadonly, mergeFrom, setStatusCondition } from "@rudder/operator";
import type { ObjectClient } from "@rudder/operator/controllerutil";
import type { Website } from "../api/website.ts";

/** The Ready condition as the reconciler sees it. */
export interface Readiness {
  status: "True" | "False";
  reason: string;
  message: string;
}

/**
 * Sets the Ready condition, observedGeneration and (when given) the content's version, and
 * patches the status subresource only when that changed something.
 */
export async function setReady(
  client: ObjectClient,
  site: Website | DeepReadonly<Website>,
  ready: Readiness,
  contentVersion?: string,
): Promise<void> {
  const updated = clone(site);
  const status = (updated.status ??= {});
  status.observedGeneration = site.metadata?.generation;
  if (contentVersion !== undefined) status.contentVersion = contentVersion;
  setStatusCondition(status.conditions ??= [], {
    type: "Ready",
    ...ready,
    observedGeneration: site.metadata?.generation,
  });
  if (JSON.stringify(updated.status) !== JSON.stringify(site.status)) {
    await client.status().patch(updated, mergeFrom(site));
  }
}
