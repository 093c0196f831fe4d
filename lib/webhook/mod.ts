/**
 * Admission (defaulting and validating) and CRD conversion webhooks, like controller-runtime's
 * `pkg/webhook`: a TLS server on `:9443` whose certificate is reloaded from disk when it
 * changes, a builder typed by the resource, raw handlers for any kind, the `AdmissionReview`
 * and `ConversionReview` types, and webhook configurations derived from what is registered.
 * A raw mutating handler answers with a JSON patch: `createJsonPatch` from
 * `@rudder/operator/client` computes it from the object before and after.
 *
 * @example Default and cap `spec.replicas`
 * ```ts
 * import { z } from "zod";
 * import { defineResource, Manager } from "@rudder/operator";
 * import { AdmissionDeniedError, newWebhookManagedBy } from "@rudder/operator/webhook";
 *
 * const Example = defineResource({
 *   group: "example.com",
 *   version: "v1",
 *   kind: "Example",
 *   scope: "Namespaced",
 *   spec: z.object({ replicas: z.number().int().min(0).optional() }),
 * });
 *
 * const mgr = new Manager({ webhookServer: { port: 9443, certDir: "/tmp/serving-certs" } });
 * newWebhookManagedBy(mgr, Example)
 *   .withDefaulter((example) => {
 *     example.spec.replicas ??= 1;
 *   })
 *   .withValidator({
 *     validateCreate: (example) => check(example.spec.replicas ?? 1),
 *     validateUpdate: (_old, example) => check(example.spec.replicas ?? 1),
 *   })
 *   .complete();
 *
 * function check(replicas: number): string[] {
 *   if (replicas > 10) throw new AdmissionDeniedError("spec.replicas must be at most 10");
 *   return replicas > 5 ? ["more than 5 replicas is unusual"] : [];
 * }
 * // await mgr.start();
 * ```
 *
 * @module
 */

export {
  ADMISSION_API_VERSION,
  AdmissionDeniedError,
  type AdmissionGroupVersionKind,
  type AdmissionGroupVersionResource,
  admissionHandler,
  type AdmissionHandlerFunc,
  type AdmissionOperation,
  type AdmissionRequest,
  type AdmissionResponse,
  type AdmissionResult,
  type AdmissionReview,
  admissionReviewResponse,
  type AdmissionUserInfo,
  allowed,
  decodeAdmissionReview,
  denialFromError,
  denied,
  ReviewDecodeError,
} from "./admission.ts";
export {
  type Defaulter,
  defaultingResult,
  generateMutatePath,
  generateValidatePath,
  newWebhookManagedBy,
  validationResult,
  type Validator,
  type Warnings,
  WebhookBuilder,
  type WebhookHost,
} from "./builder.ts";
export {
  CONVERSION_API_VERSION,
  conversionHandler,
  ConversionRegistry,
  type ConversionRequest,
  type ConversionResponse,
  type ConversionReview,
  type Converted,
  convertReview,
  decodeConversionReview,
  type SpokeConversion,
} from "./conversion.ts";
export {
  type WebhookClientConfig,
  type WebhookConfigurationOptions,
  type WebhookConfigurations,
  webhookConfigurations,
  type WebhookDescription,
} from "./configurations.ts";
export {
  certificateNotAfter,
  generateServingCertificates,
  type ServingCertificates,
} from "./certificates.ts";
export {
  CertificateRotator,
  type CertificateRotatorOptions,
  DEFAULT_CERT_CHECK_INTERVAL_MS,
  DEFAULT_CERT_VALIDITY_MS,
  DEFAULT_RENEW_BEFORE_MS,
  WEBHOOK_CERT_ENV,
  webhookCertificatesFromEnv,
} from "./rotation.ts";
export {
  CONVERSION_PATH,
  DEFAULT_CERT_POLL_INTERVAL_MS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_MAX_REQUEST_BODY_BYTES,
  DEFAULT_WEBHOOK_PORT,
  type RegisteredWebhook,
  type WebhookHandler,
  type WebhookInfo,
  WebhookServer,
  type WebhookServerOptions,
} from "./server.ts";
