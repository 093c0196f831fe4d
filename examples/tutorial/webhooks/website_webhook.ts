/**
 * The Website webhooks: a defaulter that labels each Website with the name of its content
 * ConfigMap (so `kubectl get websites -l` finds the sites of a ConfigMap), and a validator that
 * refuses content the schema cannot judge: the shared site directory, which the operator itself
 * writes. The API server calls them before it stores a Website.
 *
 * @module
 */

import type { Manager } from "@rudder/operator";
import { AdmissionDeniedError, newWebhookManagedBy } from "@rudder/operator/webhook";
import { Website } from "../api/website.ts";
import { DIRECTORY } from "../controllers/directory.ts";

/** The label the defaulter sets to the name of a Website's content ConfigMap. */
export const CONTENT_LABEL = "tutorial.rudder.dev/content";

/** Sets the content label, keeping every other label. */
export function defaultWebsite(site: Website): void {
  site.metadata = {
    ...site.metadata,
    labels: { ...site.metadata?.labels, [CONTENT_LABEL]: site.spec.contentFrom },
  };
}

/** Refuses the site directory as content; warns about a single replica. */
export function validateWebsite(site: Website): string[] {
  if (site.spec.contentFrom === DIRECTORY) {
    throw new AdmissionDeniedError(
      `spec.contentFrom must not be ${DIRECTORY}: the operator writes that ConfigMap`,
      {
        code: 422,
        reason: "Invalid",
        causes: [{ field: "spec.contentFrom", message: "reserved" }],
      },
    );
  }
  return site.spec.replicas === 1 ? ["one replica: the site is down while it restarts"] : [];
}

/** Registers the Website webhooks with the manager's webhook server. */
export function setupWebsiteWebhook(mgr: Manager): void {
  newWebhookManagedBy(mgr, Website)
    .withDefaulter(defaultWebsite)
    .withValidator({
      validateCreate: (site) => validateWebsite(site),
      validateUpdate: (_old, site) => validateWebsite(site),
    })
    .complete();
}
