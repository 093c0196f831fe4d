/**
 * The webhook part of `rudder manifests`: the Service, the Mutating- and
 * ValidatingWebhookConfigurations derived from what `setup(mgr)` registers, CRD conversions
 * pointed at the Service, and the serving certificate in one of two modes:
 *
 * - `rudder` (the default: the manifests apply to any cluster, with nothing installed first): the operator itself keeps a CA and serving certificate in a
 *   Secret of its namespace, renews it, and injects `caBundle` (`CertificateRotator`, the
 *   Manager's `webhookCertificates`, configured from the `WEBHOOK_*` environment written
 *   here; see `webhookCertificatesFromEnv`). The manifests add its RBAC.
 * - `cert-manager`: an `Issuer` (self-signed) and a `Certificate` whose Secret is mounted at
 *   the certificate directory; cert-manager's CA injector fills `caBundle` in every object
 *   annotated `cert-manager.io/inject-ca-from`. Needs cert-manager in the cluster.
 *
 * @module
 */

import type { PolicyRule } from "./project.ts";
import { webhookConfigurations } from "../lib/webhook/configurations.ts";
import type { CRDObject, Discovery } from "./discover.ts";

/** How the webhook serving certificate is provisioned. */
export type CertMode = "cert-manager" | "rudder";

/** The certificate modes `--cert-mode` accepts; the first is the default. */
export const CERT_MODES: readonly CertMode[] = ["rudder", "cert-manager"];

/** Where the container reads `tls.crt` and `tls.key`: controller-runtime's default. */
export const WEBHOOK_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs";

/** What the webhook part adds: objects by file, and the Deployment's additions. */
export interface WebhookManifests {
  /** Objects by path under the output directory. */
  files: Map<string, unknown>;
  /** CRDs with their conversion pointed at the Service (and annotated for cert-manager). */
  crds: CRDObject[];
  /** Volumes of the pod. */
  volumes: Record<string, unknown>[];
  /** Mounts of the manager container. */
  volumeMounts: Record<string, unknown>[];
  /** Environment of the manager container (rudder mode: what its CertificateRotator needs). */
  env: Record<string, unknown>[];
  /** Namespaced rules the operator needs (rudder mode: its Secret). */
  namespacedRules: PolicyRule[];
  /** Cluster rules the operator needs (rudder mode: patch its configurations and CRDs). */
  clusterRules: PolicyRule[];
}

/**
 * The webhook objects of an operator named `name` in `namespace`, whose pods carry
 * `selectorLabels`.
 */
export function webhookManifests(
  settings: { name: string; namespace: string },
  discovery: Discovery,
  certMode: CertMode,
  labels: { selector: Record<string, string>; object: Record<string, string> },
): WebhookManifests {
  const { name, namespace } = settings;
  const service = `${name}-webhook-service`;
  const secret = `${name}-webhook-server-cert`;
  const certificate = `${name}-serving-cert`;
  const inject = certMode === "cert-manager"
    ? { "cert-manager.io/inject-ca-from": `${namespace}/${certificate}` }
    : undefined;
  const files = new Map<string, unknown>();
  files.set("webhook/service.yaml", {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: service, namespace, labels: labels.object },
    spec: {
      selector: labels.selector,
      ports: [{ name: "webhook", port: 443, protocol: "TCP", targetPort: "webhook" }],
    },
  });
  const hooks = discovery.admissionWebhooks ?? [];
  const configurationNames: Record<"mutating" | "validating", string> = {
    mutating: `${name}-mutating-webhook-configuration`,
    validating: `${name}-validating-webhook-configuration`,
  };
  const { mutating, validating } = webhookConfigurations(
    hooks.map((hook) => ({ ...hook, resource: hook })),
    {
      name,
      clientConfig: (path) => ({ service: { name: service, namespace, path } }),
      labels: labels.object,
      ...(inject ? { annotations: inject } : {}),
    },
  );
  if (mutating) files.set("webhook/mutating_webhook_configuration.yaml", mutating);
  if (validating) files.set("webhook/validating_webhook_configuration.yaml", validating);
  const converting: string[] = [];
  const crds = discovery.crds.map((crd) => {
    const spec = crd.spec as { conversion?: { strategy?: string } } | undefined;
    if (spec?.conversion?.strategy !== "Webhook") return crd;
    converting.push(crd.metadata!.name!);
    const copy = structuredClone(crd) as CRDObject & {
      metadata: { name: string; annotations?: Record<string, string> };
      spec: { conversion: { webhook: { clientConfig: unknown } } };
    };
    copy.spec.conversion.webhook.clientConfig = {
      service: { name: service, namespace, path: "/convert" },
    };
    if (inject) copy.metadata.annotations = { ...copy.metadata.annotations, ...inject };
    return copy;
  });
  const volumes: Record<string, unknown>[] = [];
  const volumeMounts: Record<string, unknown>[] = [];
  const env: Record<string, unknown>[] = [];
  const namespacedRules: PolicyRule[] = [];
  const clusterRules: PolicyRule[] = [];
  if (certMode === "cert-manager") {
    files.set("certmanager/issuer.yaml", {
      apiVersion: "cert-manager.io/v1",
      kind: "Issuer",
      metadata: { name: `${name}-selfsigned-issuer`, namespace, labels: labels.object },
      spec: { selfSigned: {} },
    });
    files.set("certmanager/certificate.yaml", {
      apiVersion: "cert-manager.io/v1",
      kind: "Certificate",
      metadata: { name: certificate, namespace, labels: labels.object },
      spec: {
        dnsNames: [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`],
        issuerRef: { kind: "Issuer", name: `${name}-selfsigned-issuer` },
        secretName: secret,
      },
    });
    volumes.push({ name: "webhook-certs", secret: { secretName: secret, defaultMode: 0o440 } });
    volumeMounts.push({ name: "webhook-certs", mountPath: WEBHOOK_CERT_DIR, readOnly: true });
  } else {
    // The operator writes the certificate it keeps in its Secret here.
    volumes.push({ name: "webhook-certs", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } });
    volumeMounts.push({ name: "webhook-certs", mountPath: WEBHOOK_CERT_DIR });
    namespacedRules.push({
      apiGroups: [""],
      resources: ["secrets"],
      verbs: ["create"],
    }, {
      apiGroups: [""],
      resources: ["secrets"],
      resourceNames: [secret],
      verbs: ["get", "update", "watch"],
    });
    const configurations = (["mutating", "validating"] as const)
      .filter((type) => hooks.some((hook) => hook.type === type));
    for (const type of configurations) {
      clusterRules.push({
        apiGroups: ["admissionregistration.k8s.io"],
        resources: [`${type}webhookconfigurations`],
        resourceNames: [configurationNames[type]],
        verbs: ["get", "patch", "update"],
      });
    }
    env.push(
      { name: "WEBHOOK_CERT_SECRET", value: secret },
      {
        name: "WEBHOOK_CERT_NAMESPACE",
        valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
      },
      { name: "WEBHOOK_SERVICE", value: service },
      {
        name: "WEBHOOK_MUTATING_CONFIGURATIONS",
        value: configurations.includes("mutating") ? configurationNames.mutating : "",
      },
      {
        name: "WEBHOOK_VALIDATING_CONFIGURATIONS",
        value: configurations.includes("validating") ? configurationNames.validating : "",
      },
      { name: "WEBHOOK_CONVERSION_CRDS", value: [...converting].sort().join(",") },
    );
    if (converting.length > 0) {
      clusterRules.push({
        apiGroups: ["apiextensions.k8s.io"],
        resources: ["customresourcedefinitions"],
        resourceNames: [...converting].sort(),
        verbs: ["get", "patch", "update"],
      });
    }
  }
  return { files, crds, volumes, volumeMounts, env, namespacedRules, clusterRules };
}
