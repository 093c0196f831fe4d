/**
 * The webhook half of envtest, like controller-runtime's `WebhookInstallOptions`: a serving
 * certificate (from a CA made for the run) written to a certificate directory, a free loopback
 * port, and webhook configurations and CRD conversions rewritten to call
 * `https://127.0.0.1:<port>/<path>` with that CA, so the real API server calls a webhook server
 * the test runs.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import type {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "../api/builtins.ts";
import type { WebhookClientConfig } from "../webhook/configurations.ts";
import { isAlreadyExists } from "../kube/errors.ts";
import type { RestClient } from "../kube/rest.ts";
import { createCertificateAuthority } from "./certs.ts";

/** Options of an Environment's webhooks (`EnvironmentOptions.webhookInstallOptions`). */
export interface WebhookInstallOptions {
  /** Mutating webhook configurations to install at start, pointed at the local server. */
  mutatingWebhooks?: MutatingWebhookConfiguration[];
  /** Validating webhook configurations to install at start, pointed at the local server. */
  validatingWebhooks?: ValidatingWebhookConfiguration[];
  /** Host the webhook server listens on; default `127.0.0.1`. */
  localServingHost?: string;
  /** Port of the webhook server; default a free one. */
  localServingPort?: number;
  /** Directory for `tls.crt` and `tls.key`; default `webhook-certs` in the environment's. */
  localServingCertDir?: string;
}

/** Where the test's webhook server must listen, and the CA the API server trusts for it. */
export interface WebhookServing {
  /** Host to listen on. */
  localServingHost: string;
  /** Port to listen on. */
  localServingPort: number;
  /** Directory holding `tls.crt` and `tls.key`. */
  localServingCertDir: string;
  /** The CA certificate (PEM) that signed the serving certificate. */
  localServingCAData: string;
}

/** Finds a free TCP port on `host` by binding port 0. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Makes a CA and a serving certificate for the local webhook server, writes them to the
 * certificate directory (under `dir` unless given) and picks the port. `renew()` writes a new
 * serving certificate of the same CA, key first, each file replaced atomically.
 */
export async function prepareWebhookServing(
  dir: string,
  options: WebhookInstallOptions,
): Promise<{ serving: WebhookServing; renew(): Promise<void> }> {
  const host = options.localServingHost ?? "127.0.0.1";
  const certDir = options.localServingCertDir ?? join(dir, "webhook-certs");
  mkdirSync(certDir, { recursive: true, mode: 0o700 });
  const ca = await createCertificateAuthority("rudder-envtest-webhook-ca");
  const renew = async () => {
    const pair = await ca.issueServing({
      commonName: "localhost",
      dnsNames: ["localhost"],
      ips: host === "localhost" ? ["127.0.0.1"] : [host],
    });
    writeFileSync(join(certDir, ".tls.key.new"), pair.key, { mode: 0o600 });
    renameSync(join(certDir, ".tls.key.new"), join(certDir, "tls.key"));
    writeFileSync(join(certDir, ".tls.crt.new"), pair.cert);
    renameSync(join(certDir, ".tls.crt.new"), join(certDir, "tls.crt"));
  };
  await renew();
  return {
    serving: {
      localServingHost: host,
      localServingPort: options.localServingPort ?? await freePort(host),
      localServingCertDir: certDir,
      localServingCAData: ca.cert,
    },
    renew,
  };
}

/**
 * `clientConfig` pointed at the local server: the service's path (or the URL's) on
 * `https://host:port`, trusting the local CA.
 */
export function localClientConfig(
  clientConfig: WebhookClientConfig | undefined,
  serving: WebhookServing,
): WebhookClientConfig {
  let path = clientConfig?.service?.path ?? "";
  if (!clientConfig?.service && clientConfig?.url) path = new URL(clientConfig.url).pathname;
  const host = serving.localServingHost.includes(":")
    ? `[${serving.localServingHost}]`
    : serving.localServingHost;
  return {
    url: `https://${host}:${serving.localServingPort}${path}`,
    caBundle: Buffer.from(serving.localServingCAData).toString("base64"),
  };
}

/** A CRD whose webhook conversion (if any) calls the local server. */
export function withLocalConversion<
  T extends { spec?: { conversion?: { strategy?: string; webhook?: unknown } } },
>(crd: T, serving: WebhookServing): T {
  const conversion = crd.spec?.conversion as
    | { strategy?: string; webhook?: { clientConfig?: WebhookClientConfig } }
    | undefined;
  if (conversion?.strategy !== "Webhook") return crd;
  const copy = structuredClone(crd);
  const webhook = (copy.spec!.conversion as { webhook?: Record<string, unknown> }).webhook ??= {};
  webhook.clientConfig = localClientConfig(
    (webhook as { clientConfig?: WebhookClientConfig }).clientConfig,
    serving,
  );
  webhook.conversionReviewVersions ??= ["v1"];
  return copy;
}

const PATHS = {
  MutatingWebhookConfiguration:
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
  ValidatingWebhookConfiguration:
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
};

/**
 * Creates (or replaces) the webhook configurations with every webhook's `clientConfig`
 * pointed at the local server.
 */
export async function installWebhookConfigurations(
  rest: RestClient,
  serving: WebhookServing,
  configurations: {
    mutatingWebhooks?: MutatingWebhookConfiguration[];
    validatingWebhooks?: ValidatingWebhookConfiguration[];
  },
): Promise<void> {
  const all = [
    ...(configurations.mutatingWebhooks ?? []).map((c) => ({
      ...c,
      kind: "MutatingWebhookConfiguration" as const,
    })),
    ...(configurations.validatingWebhooks ?? []).map((c) => ({
      ...c,
      kind: "ValidatingWebhookConfiguration" as const,
    })),
  ];
  for (const configuration of all) {
    const name = configuration.metadata?.name;
    if (!name) throw new Error(`a ${configuration.kind} to install has no metadata.name`);
    const body = {
      ...configuration,
      apiVersion: "admissionregistration.k8s.io/v1",
      webhooks: (configuration.webhooks ?? []).map((webhook) => ({
        ...webhook,
        clientConfig: localClientConfig(webhook.clientConfig, serving),
      })),
    };
    const path = PATHS[configuration.kind];
    try {
      await rest.request({ method: "POST", path, body });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const existing = await rest.request<{ metadata: { resourceVersion: string } }>({
        path: `${path}/${name}`,
      });
      await rest.request({
        method: "PUT",
        path: `${path}/${name}`,
        body: {
          ...body,
          metadata: { ...body.metadata, resourceVersion: existing.metadata.resourceVersion },
        },
      });
    }
  }
}
