/**
 * The Example webhooks: a defaulter (`spec.replicas` is 1 unless set), a validator that caps
 * `spec.replicas` at {@linkcode MAX_REPLICAS} (and warns above half of it), and the conversion
 * between v1alpha1 (the hub) and v1beta1, where the field is called `spec.size`.
 *
 * @module
 */

import type { Manager } from "../../../mod.ts";
import { AdmissionDeniedError, newWebhookManagedBy } from "../../../lib/webhook/mod.ts";
import { Example, ExampleV1beta1 } from "../api/example.ts";

/** The most pods an Example may ask for. */
export const MAX_REPLICAS = 10;

/** Denies more than {@linkcode MAX_REPLICAS} replicas; warns above half of it. */
export function validateReplicas(example: Example): string[] {
  const replicas = example.spec.replicas;
  if (replicas > MAX_REPLICAS) {
    throw new AdmissionDeniedError(
      `spec.replicas must be at most ${MAX_REPLICAS}, not ${replicas}`,
      { code: 422, reason: "Invalid", causes: [{ field: "spec.replicas", message: "too many" }] },
    );
  }
  return replicas > MAX_REPLICAS / 2 ? [`${replicas} replicas is more than usual`] : [];
}

/** Registers the Example webhooks with the manager's webhook server. */
export function setupExampleWebhook(mgr: Manager): void {
  newWebhookManagedBy(mgr, Example)
    .withDefaulter((example) => {
      example.spec.replicas ??= 1;
    })
    .withValidator({
      validateCreate: (example) => validateReplicas(example),
      validateUpdate: (_old, example) => validateReplicas(example),
    })
    .withConversion(ExampleV1beta1, {
      convertTo: ({ metadata, spec: { size, ...spec }, status }) => ({
        metadata,
        spec: { ...spec, replicas: size },
        ...(status ? { status } : {}),
      }),
      convertFrom: ({ metadata, spec: { replicas, ...spec }, status }) => ({
        metadata,
        spec: { ...spec, size: replicas },
        ...(status ? { status } : {}),
      }),
    })
    .complete();
}
