/**
 * Mutating and validating webhook configurations derived from what a webhook server has
 * registered, pointed at a Service (for `rudder manifests`) or a URL (for envtest). The
 * settings are kubebuilder's: `failurePolicy: Fail`, `sideEffects: None`,
 * `admissionReviewVersions: [v1]`, `matchPolicy: Equivalent`, and a timeout.
 *
 * @module
 */

import type {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "../api/builtins.ts";
import type { ResourceType } from "../api/resource.ts";
import type { AdmissionOperation } from "./admission.ts";

/** What a configuration needs to know of a webhook (a `RegisteredWebhook` is one). */
export interface WebhookDescription {
  /** The path served. */
  path: string;
  /** `mutating` or `validating`. */
  type: "mutating" | "validating";
  /** Operations sent; default CREATE and UPDATE (and DELETE for validating webhooks). */
  operations?: readonly (AdmissionOperation | string)[];
  /** The kind admitted. */
  resource: Pick<ResourceType, "group" | "version" | "kind" | "plural" | "scope">;
}

type MutatingWebhook = NonNullable<MutatingWebhookConfiguration["webhooks"]>[number];
type ValidatingWebhook = NonNullable<ValidatingWebhookConfiguration["webhooks"]>[number];

/** How the API server reaches a webhook: a Service (with a path) or a URL, and the CA bundle. */
export type WebhookClientConfig = NonNullable<
  MutatingWebhookConfiguration["webhooks"]
>[number]["clientConfig"];

/** Options of {@linkcode webhookConfigurations}. */
export interface WebhookConfigurationOptions {
  /**
   * Prefix of the configurations' names, e.g. `example-operator`: they are called
   * `<name>-mutating-webhook-configuration` and `<name>-validating-webhook-configuration`, as
   * kubebuilder's are after its name prefix.
   */
  name: string;
  /** Where the API server calls a path: a Service or a URL, with the CA bundle if known. */
  clientConfig(path: string): WebhookClientConfig;
  /** Seconds the API server waits for an answer; default 10 (the maximum is 30). */
  timeoutSeconds?: number;
  /** `Fail` (the default: no write passes unchecked) or `Ignore`. */
  failurePolicy?: "Fail" | "Ignore";
  /** Labels on both configurations. */
  labels?: Record<string, string>;
  /** Annotations on both configurations (e.g. cert-manager's `inject-ca-from`). */
  annotations?: Record<string, string>;
}

/** The two webhook configurations; either may be absent when nothing of its type is registered. */
export interface WebhookConfigurations {
  /** Defaulting webhooks. */
  mutating?: MutatingWebhookConfiguration;
  /** Validating webhooks. */
  validating?: ValidatingWebhookConfiguration;
}

/**
 * The webhook configurations for `webhooks` (from `WebhookServer.webhooks()`). Each webhook's
 * name is `m<kind>-<version>.<group>` or `v<kind>-<version>.<group>` (the core group becomes
 * `core.k8s.io`), its rule the kind's group, version, plural and scope.
 *
 * @example
 * ```ts ignore
 * import { webhookConfigurations } from "@rudder/operator/webhook";
 *
 * const { mutating, validating } = webhookConfigurations(mgr.getWebhookServer().webhooks(), {
 *   name: "example-operator",
 *   clientConfig: (path) => ({ service: { namespace: "example-system", name: "example-webhook", path } }),
 * });
 * ```
 */
export function webhookConfigurations(
  webhooks: readonly WebhookDescription[],
  options: WebhookConfigurationOptions,
): WebhookConfigurations {
  const metadata = (type: string) => ({
    name: `${options.name}-${type}-webhook-configuration`,
    ...(options.labels ? { labels: { ...options.labels } } : {}),
    ...(options.annotations ? { annotations: { ...options.annotations } } : {}),
  });
  const common = (webhook: WebhookDescription) => {
    const { resource } = webhook;
    const group = resource.group || "core.k8s.io";
    const prefix = webhook.type === "mutating" ? "m" : "v";
    return {
      name: `${prefix}${resource.kind.toLowerCase()}-${resource.version}.${group}`,
      admissionReviewVersions: ["v1"],
      clientConfig: options.clientConfig(webhook.path),
      failurePolicy: options.failurePolicy ?? "Fail",
      matchPolicy: "Equivalent",
      sideEffects: "None",
      timeoutSeconds: options.timeoutSeconds ?? 10,
      rules: [{
        apiGroups: [resource.group],
        apiVersions: [resource.version],
        operations: [
          ...(webhook.operations ??
            (webhook.type === "mutating" ? ["CREATE", "UPDATE"] : ["CREATE", "UPDATE", "DELETE"])),
        ],
        resources: [resource.plural],
        scope: resource.scope === "Cluster" ? "Cluster" : "Namespaced",
      }],
    };
  };
  const result: WebhookConfigurations = {};
  const mutating: MutatingWebhook[] = webhooks.filter((w) => w.type === "mutating").map(common);
  const validating: ValidatingWebhook[] = webhooks.filter((w) => w.type === "validating")
    .map(common);
  if (mutating.length > 0) {
    result.mutating = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingWebhookConfiguration",
      metadata: metadata("mutating"),
      webhooks: mutating,
    };
  }
  if (validating.length > 0) {
    result.validating = {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: metadata("validating"),
      webhooks: validating,
    };
  }
  return result;
}
