/**
 * Certificates for webhook serving when no cert-manager provides them: a CA and a serving
 * certificate signed by it, X.509 v3 with the extensions TLS stacks require (Deno refuses v1),
 * ECDSA P-256 over WebCrypto (`lib/util/certs.ts` makes them).
 *
 * @module
 */

import {
  createCertificateAuthority,
  loadCertificateAuthority,
  parseCertificatePem,
} from "../util/certs.ts";

const DAY_MS = 24 * 3600_000;

/** A CA and a serving certificate it signed, all PEM. */
export interface ServingCertificates {
  /** The CA certificate: what `caBundle` holds. */
  caCert: string;
  /** The CA's private key (PKCS #8), to sign the next serving certificate. */
  caKey: string;
  /** The serving certificate (`tls.crt`). */
  cert: string;
  /** Its private key (`tls.key`, PKCS #8). */
  key: string;
}

/**
 * Makes certificates for a webhook server reachable under `dnsNames` (and `ips`), valid for
 * `validity` milliseconds from an hour ago (a skewed clock still accepts them) and never past
 * the CA's expiry. The CA is reused when given (its certificate and key), else made, valid for
 * `caValidity` (default: ten times `validity`).
 *
 * @example
 * ```ts
 * import { generateServingCertificates } from "@rudder/operator/webhook";
 *
 * const certs = await generateServingCertificates({
 *   dnsNames: ["example-webhook-service.example-system.svc"],
 *   validity: 365 * 24 * 3600_000,
 * });
 * console.log(certs.cert.startsWith("-----BEGIN CERTIFICATE-----")); // true
 * ```
 */
export async function generateServingCertificates(options: {
  dnsNames: string[];
  ips?: string[];
  validity: number;
  caValidity?: number;
  ca?: { cert: string; key: string };
}): Promise<ServingCertificates> {
  const days = options.validity / DAY_MS;
  const ca = options.ca
    ? await loadCertificateAuthority(options.ca, days)
    : await createCertificateAuthority(
      "rudder-webhook-ca",
      (options.caValidity ?? options.validity * 10) / DAY_MS,
    );
  const serving = await ca.issueServing({
    commonName: options.dnsNames[0] ?? options.ips?.[0] ?? "webhook",
    dnsNames: options.dnsNames,
    ips: options.ips,
    days,
  });
  return { caCert: ca.cert, caKey: ca.key, cert: serving.cert, key: serving.key };
}

/**
 * When the first certificate in `pem` expires.
 *
 * @example
 * ```ts ignore
 * import { certificateNotAfter } from "@rudder/operator/webhook";
 *
 * console.log(certificateNotAfter(readFileSync("tls.crt", "utf8")).toISOString());
 * ```
 */
export function certificateNotAfter(pem: string): Date {
  return parseCertificatePem(pem).notAfter;
}
