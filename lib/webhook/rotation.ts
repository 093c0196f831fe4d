/**
 * Webhook certificates without cert-manager ("rudder" mode of `rudder manifests`): the
 * operator keeps a CA and a serving certificate in a Secret of its namespace, writes them to
 * the certificate directory the webhook server reads, injects the CA into its webhook
 * configurations and CRD conversions, and renews the serving certificate before it expires.
 *
 * Who writes: the first replica to start creates the Secret (the API server lets one create
 * win; the others read the winner's); renewal and CA injection are done by the leader only
 * (`isLeader`), every replica copies the Secret to its certificate directory, and the webhook
 * server picks a changed file up by itself. A renewed serving certificate keeps the CA, so
 * the `caBundle` stays valid; a CA near its end is replaced and, until the next renewal,
 * injected together with the old one.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import {
  CustomResourceDefinition,
  MutatingWebhookConfiguration,
  Secret,
  ValidatingWebhookConfiguration,
} from "../api/builtins.ts";
import type { Client } from "../client/client.ts";
import type { Runnable } from "../util/runnable.ts";
import { isAlreadyExists, isConflict, isNotFound } from "../kube/errors.ts";
import { abortable, sleep } from "../util/abort.ts";
import { nodeFs } from "../util/files.ts";
import { decodeBase64Text, encodeBase64 } from "../util/encoding.ts";
import { joinPath } from "../util/paths.ts";
import { certificateNotAfter, generateServingCertificates } from "./certificates.ts";

const DAY_MS = 24 * 3600_000;
/** Default validity of a serving certificate: one year. */
export const DEFAULT_CERT_VALIDITY_MS = 365 * DAY_MS;
/** Default time before expiry a serving certificate is renewed: 30 days. */
export const DEFAULT_RENEW_BEFORE_MS = 30 * DAY_MS;
/** Default time between checks: one hour. */
export const DEFAULT_CERT_CHECK_INTERVAL_MS = 3600_000;

/** Options of {@linkcode CertificateRotator}. */
export interface CertificateRotatorOptions {
  /** An uncached client (the manager's API reader). */
  client: Client;
  /** Namespace of the Secret (the operator's). */
  namespace: string;
  /** Name of the Secret holding `ca.crt`, `ca.key`, `tls.crt` and `tls.key`. */
  secretName: string;
  /** DNS names of the serving certificate, e.g. `<service>.<namespace>.svc`. */
  dnsNames: string[];
  /** IP addresses of the serving certificate (e.g. `127.0.0.1` in tests). */
  ips?: string[];
  /** Directory to write `tls.crt` and `tls.key` to: the webhook server's `certDir`. */
  certDir: string;
  /** MutatingWebhookConfigurations whose webhooks get the CA bundle. */
  mutatingWebhookConfigurations?: string[];
  /** ValidatingWebhookConfigurations whose webhooks get the CA bundle. */
  validatingWebhookConfigurations?: string[];
  /** CRDs (`<plural>.<group>`) whose conversion webhook gets the CA bundle. */
  crds?: string[];
  /** Milliseconds a serving certificate is valid; default a year. */
  validity?: number;
  /** Renew this many milliseconds before expiry; default 30 days. */
  renewBefore?: number;
  /** Milliseconds between checks; default an hour. */
  checkInterval?: number;
  /** Whether this replica may renew and inject (the leader); default always. */
  isLeader?: () => boolean;
}

type SecretData = { "ca.crt": string; "ca.key": string; "tls.crt": string; "tls.key": string };

const FIELDS = ["ca.crt", "ca.key", "tls.crt", "tls.key"] as const;
const log = getLogger(["rudder", "webhook", "certificates"]);

function encode(data: SecretData): Record<string, string> {
  return Object.fromEntries(FIELDS.map((f) => [f, encodeBase64(data[f])]));
}

function decode(data: Record<string, string> | undefined): SecretData | undefined {
  if (!data || FIELDS.some((f) => !data[f])) return undefined;
  return Object.fromEntries(
    FIELDS.map((f) => [f, decodeBase64Text(data[f])]),
  ) as SecretData;
}

/**
 * Keeps the webhook serving certificate in a Secret, the certificate directory and the
 * `caBundle`s; see the module doc. A runnable of every replica (`needLeaderElection()` is
 * false) that the Manager starts before the webhook server, which it lets start once the
 * certificate is written (`ready`).
 *
 * @example
 * ```ts ignore
 * import { CertificateRotator } from "@rudder/operator/webhook";
 *
 * const rotator = new CertificateRotator({
 *   client: mgr.getAPIReader(),
 *   namespace: "example-system",
 *   secretName: "example-webhook-server-cert",
 *   dnsNames: ["example-webhook-service.example-system.svc"],
 *   certDir: "/tmp/k8s-webhook-server/serving-certs",
 *   validatingWebhookConfigurations: ["example-validating-webhook-configuration"],
 * });
 * mgr.add(rotator); // in the webhooks group, before the webhook server
 * ```
 *
 * The Manager makes and adds one itself when given `webhookCertificates`.
 * ```
 */
export class CertificateRotator implements Runnable {
  readonly #options: CertificateRotatorOptions;
  #written: string | undefined;
  readonly #ensured = Promise.withResolvers<void>();

  /** Creates a rotator; nothing happens until `ensure()` or `start()`. */
  constructor(options: CertificateRotatorOptions) {
    this.#options = options;
  }

  /** Every replica copies the Secret to its certificate directory. */
  needLeaderElection(): boolean {
    return false;
  }

  /**
   * Checks once — a failure rejects, since the webhook server cannot start without its
   * certificate — then every `checkInterval` until `signal` aborts, a failed check logged and
   * retried.
   */
  async start(signal: AbortSignal): Promise<void> {
    const interval = this.#options.checkInterval ?? DEFAULT_CERT_CHECK_INTERVAL_MS;
    await this.ensure();
    this.#ensured.resolve();
    while (!signal.aborted) {
      await sleep(interval, signal).catch(() => {});
      if (signal.aborted) break;
      try {
        await this.ensure();
      } catch (err) {
        log.error("Checking the webhook certificate failed: {error}", {
          error: (err as Error).message,
        });
      }
    }
  }

  /** Resolves once `start` has written the certificate: the webhook server can start then. */
  ready(signal: AbortSignal): Promise<void> {
    return abortable(this.#ensured.promise, signal);
  }

  /**
   * Makes sure the Secret holds a certificate that is not about to expire (creating it, or
   * renewing it on the leader), writes it to the certificate directory, and on the leader
   * injects the CA bundle.
   */
  async ensure(): Promise<void> {
    const leader = this.#options.isLeader?.() ?? true;
    const read = await this.#read();
    let current = read.current ?? await this.#create();
    if (read.current && leader && this.#expiring(current)) {
      current = await this.#renew(current, read.resourceVersion!);
    }
    this.#write(current);
    if (leader) await this.#inject(current["ca.crt"]);
  }

  /** Renews the serving certificate now, on any replica (tests, or an operator's own policy). */
  async rotate(): Promise<void> {
    const data = await this.#read();
    const current = data.current ?? await this.#create();
    const renewed = data.current ? await this.#renew(current, data.resourceVersion!) : current;
    this.#write(renewed);
    await this.#inject(renewed["ca.crt"]);
  }

  async #read(): Promise<{ current?: SecretData; resourceVersion?: string }> {
    try {
      const secret = await this.#options.client.get(Secret, {
        namespace: this.#options.namespace,
        name: this.#options.secretName,
      });
      return {
        current: decode(secret.data as Record<string, string> | undefined),
        resourceVersion: secret.metadata?.resourceVersion,
      };
    } catch (err) {
      if (isNotFound(err)) return {};
      throw err;
    }
  }

  #expiring(data: SecretData): boolean {
    const renewBefore = this.#options.renewBefore ?? DEFAULT_RENEW_BEFORE_MS;
    try {
      return certificateNotAfter(data["tls.crt"]).getTime() - Date.now() < renewBefore;
    } catch {
      return true;
    }
  }

  async #generate(ca?: { cert: string; key: string }): Promise<SecretData> {
    const validity = this.#options.validity ?? DEFAULT_CERT_VALIDITY_MS;
    const made = await generateServingCertificates({
      dnsNames: this.#options.dnsNames,
      ips: this.#options.ips,
      validity,
      ...(ca ? { ca } : {}),
    });
    return {
      "ca.crt": made.caCert,
      "ca.key": made.caKey,
      "tls.crt": made.cert,
      "tls.key": made.key,
    };
  }

  async #create(): Promise<SecretData> {
    const data = await this.#generate();
    try {
      await this.#options.client.create({
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: this.#options.secretName, namespace: this.#options.namespace },
        type: "kubernetes.io/tls",
        data: encode(data),
      });
      log.info("Created the webhook certificate in Secret {namespace}/{name}", {
        namespace: this.#options.namespace,
        name: this.#options.secretName,
      });
      return data;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      const winner = (await this.#read()).current;
      if (!winner) throw new Error(`Secret ${this.#options.secretName} exists but is incomplete`);
      return winner;
    }
  }

  async #renew(current: SecretData, resourceVersion: string): Promise<SecretData> {
    const renewBefore = this.#options.renewBefore ?? DEFAULT_RENEW_BEFORE_MS;
    const validity = this.#options.validity ?? DEFAULT_CERT_VALIDITY_MS;
    let caEnds = 0;
    try {
      caEnds = certificateNotAfter(current["ca.crt"]).getTime();
    } catch {
      // An unreadable CA is replaced.
    }
    const keepCA = caEnds - Date.now() > validity + renewBefore;
    const next = await this.#generate(
      keepCA ? { cert: current["ca.crt"], key: current["ca.key"] } : undefined,
    );
    // A new CA is injected with the old one until the next renewal: old certificates stay valid.
    if (!keepCA) next["ca.crt"] = next["ca.crt"] + firstCertificate(current["ca.crt"]);
    try {
      await this.#options.client.update({
        apiVersion: "v1",
        kind: "Secret",
        metadata: {
          name: this.#options.secretName,
          namespace: this.#options.namespace,
          resourceVersion,
        },
        type: "kubernetes.io/tls",
        data: encode(next),
      });
      log.info("Renewed the webhook certificate in Secret {namespace}/{name}", {
        namespace: this.#options.namespace,
        name: this.#options.secretName,
      });
      return next;
    } catch (err) {
      if (!isConflict(err)) throw err;
      const winner = (await this.#read()).current;
      if (!winner) throw err;
      return winner;
    }
  }

  /** Writes `tls.crt` and `tls.key` (key first, each replaced atomically) if they changed. */
  #write(data: SecretData): void {
    if (this.#written === data["tls.crt"]) return;
    const dir = this.#options.certDir;
    const { mkdirSync, readFileSync, renameSync, writeFileSync } = nodeFs();
    mkdirSync(dir, { recursive: true });
    let onDisk: string | undefined;
    try {
      onDisk = readFileSync(joinPath(dir, "tls.crt"), "utf8");
    } catch {
      onDisk = undefined;
    }
    if (onDisk !== data["tls.crt"]) {
      writeFileSync(joinPath(dir, ".tls.key.new"), data["tls.key"], { mode: 0o600 });
      renameSync(joinPath(dir, ".tls.key.new"), joinPath(dir, "tls.key"));
      writeFileSync(joinPath(dir, ".tls.crt.new"), data["tls.crt"]);
      renameSync(joinPath(dir, ".tls.crt.new"), joinPath(dir, "tls.crt"));
    }
    this.#written = data["tls.crt"];
  }

  /** Sets `caBundle` in the webhook configurations and CRD conversions that differ. */
  async #inject(caCert: string): Promise<void> {
    const bundle = encodeBase64(caCert);
    const { client } = this.#options;
    // Mutating and validating configurations hold their CA the same way, in each webhook.
    const setBundle = (c: { webhooks?: { clientConfig: { caBundle?: string } }[] }) => {
      let changed = false;
      for (const webhook of c.webhooks ?? []) {
        if (webhook.clientConfig.caBundle !== bundle) {
          webhook.clientConfig.caBundle = bundle;
          changed = true;
        }
      }
      return changed;
    };
    for (const name of this.#options.mutatingWebhookConfigurations ?? []) {
      await updateIfChanged(
        () => client.get(MutatingWebhookConfiguration, { name }),
        setBundle,
        (c) => client.update(c),
      );
    }
    for (const name of this.#options.validatingWebhookConfigurations ?? []) {
      await updateIfChanged(
        () => client.get(ValidatingWebhookConfiguration, { name }),
        setBundle,
        (c) => client.update(c),
      );
    }
    for (const name of this.#options.crds ?? []) {
      await updateIfChanged(() => client.get(CustomResourceDefinition, { name }), (crd) => {
        const clientConfig = crd.spec.conversion?.webhook?.clientConfig;
        if (!clientConfig || clientConfig.caBundle === bundle) return false;
        clientConfig.caBundle = bundle;
        return true;
      }, (crd) => client.update(crd));
    }
  }
}

function firstCertificate(pem: string): string {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/)?.[0] ?? "";
}

/** Reads, changes a copy and updates, again on a conflict; a missing object is skipped. */
async function updateIfChanged<T>(
  read: () => Promise<T>,
  change: (obj: T) => boolean,
  write: (obj: T) => Promise<unknown>,
): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    let obj: T;
    try {
      obj = structuredClone(await read());
    } catch (err) {
      if (isNotFound(err)) {
        log.warn("Cannot inject the webhook CA: {error}", { error: (err as Error).message });
        return;
      }
      throw err;
    }
    if (!change(obj)) return;
    try {
      await write(obj);
      return;
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }
  throw new Error("injecting the webhook CA kept conflicting");
}

/** Environment variables {@linkcode webhookCertificatesFromEnv} reads. */
export const WEBHOOK_CERT_ENV = [
  "WEBHOOK_CERT_SECRET",
  "WEBHOOK_CERT_NAMESPACE",
  "WEBHOOK_SERVICE",
  "WEBHOOK_MUTATING_CONFIGURATIONS",
  "WEBHOOK_VALIDATING_CONFIGURATIONS",
  "WEBHOOK_CONVERSION_CRDS",
] as const;

/**
 * The Manager's `webhookCertificates` from the environment `rudder manifests --cert-mode rudder`
 * gives the Deployment: `WEBHOOK_CERT_SECRET` (the Secret), `WEBHOOK_CERT_NAMESPACE` (the pod's
 * namespace), `WEBHOOK_SERVICE` (the Service, for the DNS names), and comma-separated
 * `WEBHOOK_MUTATING_CONFIGURATIONS`, `WEBHOOK_VALIDATING_CONFIGURATIONS` and
 * `WEBHOOK_CONVERSION_CRDS`. `undefined` without `WEBHOOK_CERT_SECRET` (cert-manager mode).
 *
 * @example
 * ```ts ignore
 * import process from "node:process";
 * import { Manager } from "@rudder/operator";
 * import { webhookCertificatesFromEnv } from "@rudder/operator/webhook";
 *
 * const mgr = new Manager({ webhookCertificates: webhookCertificatesFromEnv(process.env) });
 * ```
 */
export function webhookCertificatesFromEnv(
  env: Record<string, string | undefined>,
): Omit<CertificateRotatorOptions, "client" | "certDir" | "isLeader"> | undefined {
  const secretName = env.WEBHOOK_CERT_SECRET;
  if (!secretName) return undefined;
  const namespace = env.WEBHOOK_CERT_NAMESPACE;
  const service = env.WEBHOOK_SERVICE;
  if (!namespace || !service) {
    throw new Error("WEBHOOK_CERT_SECRET needs WEBHOOK_CERT_NAMESPACE and WEBHOOK_SERVICE");
  }
  const list = (value: string | undefined) =>
    (value ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  return {
    namespace,
    secretName,
    dnsNames: [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`],
    mutatingWebhookConfigurations: list(env.WEBHOOK_MUTATING_CONFIGURATIONS),
    validatingWebhookConfigurations: list(env.WEBHOOK_VALIDATING_CONFIGURATIONS),
    crds: list(env.WEBHOOK_CONVERSION_CRDS),
  };
}
