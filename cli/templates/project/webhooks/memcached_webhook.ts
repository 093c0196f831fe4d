/**
 * +rudder:template:if defaulting && validation
 * The Memcached webhooks: a defaulter (`spec.replicas` is 1 unless set) and a validator that caps
 * `spec.replicas` at `MAX_REPLICAS`. The API server calls them before it stores a Memcached.
 * +rudder:template:end
 * +rudder:template:if defaulting && !validation
 * The Memcached webhook: a defaulter (`spec.replicas` is 1 unless set). The API server calls it
 * before it stores a Memcached.
 * +rudder:template:end
 * +rudder:template:if !defaulting && validation
 * The Memcached webhook: a validator that caps `spec.replicas` at `MAX_REPLICAS`. The API server
 * calls it before it stores a Memcached.
 * +rudder:template:end
 *
 * @module
 */

import type { Manager } from "@rudder/operator";
import { AdmissionDeniedError, newWebhookManagedBy } from "@rudder/operator/webhook";
import { Memcached } from "../api/memcached.ts";

// +rudder:template:if validation
/** The most copies a Memcached may ask for. */
export const MAX_REPLICAS = 10;
// +rudder:template:end

// +rudder:template:if defaulting
/** Sets what a Memcached leaves out: `spec.replicas` is 1 unless set. */
export function defaultMemcached(memcached: Memcached): void {
  memcached.spec.replicas ??= 1;
}
// +rudder:template:end

// +rudder:template:if validation
/** Refuses a Memcached that asks for more than `MAX_REPLICAS` copies; returns its warnings. */
export function validateMemcached(memcached: Memcached): string[] {
  const replicas = memcached.spec.replicas ?? 1;
  if (replicas > MAX_REPLICAS) {
    throw new AdmissionDeniedError(
      `spec.replicas must be at most ${MAX_REPLICAS}, not ${replicas}`,
      { code: 422, reason: "Invalid" },
    );
  }
  return [];
}
// +rudder:template:end

/** Registers the Memcached webhooks with the manager's webhook server. */
export function setupMemcachedWebhook(mgr: Manager): void {
  newWebhookManagedBy(mgr, Memcached)
    // +rudder:template:if defaulting
    .withDefaulter(defaultMemcached)
    // +rudder:template:end
    // +rudder:template:if validation
    .withValidator({
      validateCreate: (memcached) => validateMemcached(memcached),
      validateUpdate: (_old, memcached) => validateMemcached(memcached),
    })
    // +rudder:template:end
    .complete();
}
