/**
 * Certificates for webhook serving when no cert-manager provides them: a CA and a serving
 * certificate signed by it, X.509 v3 with the extensions TLS stacks require (Deno refuses v1),
 * ECDSA P-256 over WebCrypto with `@peculiar/x509`.
 *
 * @module
 */

import { X509Certificate } from "node:crypto";
import type * as X509 from "@peculiar/x509";

let x509Loaded: Promise<typeof X509> | undefined;

/**
 * `@peculiar/x509`, loaded when a certificate is first made: the Manager imports this module,
 * and loading the library costs 13 MiB of RSS on Deno and 19 MiB on Bun, which an operator
 * without generated webhook certificates would carry idle. reflect-metadata must run before it
 * (its tsyringe needs the polyfill), and a bundler (bun build) may evaluate static imports out
 * of order: so both load here, in order.
 */
function loadX509(): Promise<typeof X509> {
  return x509Loaded ??= (async () => {
    await import("reflect-metadata");
    const x509: typeof X509 = await import("@peculiar/x509");
    x509.cryptoProvider.set(globalThis.crypto);
    return x509;
  })();
}

const KEY: EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const SIGNATURE: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };

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

function toPem(label: string, der: ArrayBuffer): string {
  const base64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  return `-----BEGIN ${label}-----\n${
    base64.match(/.{1,64}/g)!.join("\n")
  }\n-----END ${label}-----\n`;
}

function fromPem(pem: string): ArrayBuffer {
  const base64 = pem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)).buffer;
}

function serial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f;
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function newKeys(): Promise<CryptoKeyPair> {
  return await crypto.subtle.generateKey(KEY, true, ["sign", "verify"]) as CryptoKeyPair;
}

/**
 * Makes certificates for a webhook server reachable under `dnsNames` (and `ips`), valid for
 * `validity` milliseconds from an hour ago (a skewed clock still accepts them). The CA is
 * reused when given (its certificate and key), else made, valid for `caValidity`.
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
  const x509 = await loadX509();
  const notBefore = new Date(Date.now() - 3600_000);
  let caCert: X509.X509Certificate;
  let caKey: CryptoKey;
  if (options.ca) {
    caCert = new x509.X509Certificate(options.ca.cert);
    caKey = await crypto.subtle.importKey("pkcs8", fromPem(options.ca.key), KEY, true, ["sign"]);
  } else {
    const keys = await newKeys();
    caKey = keys.privateKey;
    caCert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: "CN=rudder-webhook-ca",
      notBefore,
      notAfter: new Date(notBefore.getTime() + (options.caValidity ?? options.validity * 10)),
      signingAlgorithm: SIGNATURE,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign |
            x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
  }
  const leafKeys = await newKeys();
  const names: X509.JsonGeneralName[] = [
    ...options.dnsNames.map((value) => ({ type: "dns" as const, value })),
    ...(options.ips ?? []).map((value) => ({ type: "ip" as const, value })),
  ];
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${
      (options.dnsNames[0] ?? options.ips?.[0] ?? "webhook").replace(/[,+"\\<>;=]/g, "")
    }`,
    issuer: caCert.subject,
    notBefore,
    notAfter: new Date(
      Math.min(notBefore.getTime() + options.validity, caCert.notAfter.getTime()),
    ),
    signingAlgorithm: SIGNATURE,
    publicKey: leafKeys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  return {
    caCert: options.ca?.cert ?? caCert.toString("pem") + "\n",
    caKey: options.ca?.key ?? toPem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", caKey)),
    cert: leaf.toString("pem") + "\n",
    key: toPem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", leafKeys.privateKey)),
  };
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
  const first = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/);
  if (!first) throw new Error("no PEM certificate found");
  return new X509Certificate(first[0]).validToDate;
}
