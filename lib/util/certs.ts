/**
 * X.509 v3 certificates made with `@peculiar/x509` over WebCrypto (ECDSA P-256): a CA with
 * serving and client certificates (the local control plane's), and the self-signed serving
 * certificate a manager uses when no certificate is given. Deno's TLS stack refuses v1
 * certificates, so every certificate here carries v3 extensions.
 *
 * @module
 */

import type * as X509 from "@peculiar/x509";

// tsyringe, inside @peculiar/x509, needs the Reflect metadata API before it loads. A bundler
// (bun build) may evaluate static imports out of order, so both load here, in order.
await import("reflect-metadata");
const x509: typeof X509 = await import("@peculiar/x509");

x509.cryptoProvider.set(globalThis.crypto);

const ALGORITHM: EcKeyGenParams = { name: "ECDSA", namedCurve: "P-256" };
const SIGNING: EcdsaParams = { name: "ECDSA", hash: "SHA-256" };
const DAY_MS = 24 * 60 * 60 * 1000;

/** A certificate with its private key, both PEM-encoded. */
export interface CertificatePair {
  /** The certificate, PEM (`-----BEGIN CERTIFICATE-----`). */
  cert: string;
  /** The private key, PEM PKCS #8 (`-----BEGIN PRIVATE KEY-----`). */
  key: string;
}

/**
 * A certificate authority that can sign serving and client certificates. What it signs is valid
 * for `days` (by default the CA's own validity), from an hour ago, and never outlives the CA.
 */
export interface CertificateAuthority extends CertificatePair {
  /** When the CA's certificate expires. */
  readonly notAfter: Date;
  /** Signs a serving certificate for the given DNS names and IP addresses. */
  issueServing(
    options: { commonName: string; dnsNames?: string[]; ips?: string[]; days?: number },
  ): Promise<CertificatePair>;
  /** Signs a client certificate: `commonName` is the user, `organizations` its groups. */
  issueClient(
    options: { commonName: string; organizations?: string[]; days?: number },
  ): Promise<CertificatePair>;
}

/** A key pair for signing service-account tokens, PEM-encoded. */
export interface SigningKeyPair {
  /** The public key, PEM SPKI (`-----BEGIN PUBLIC KEY-----`). */
  publicKey: string;
  /** The private key, PEM PKCS #8. */
  privateKey: string;
}

function pem(label: string, der: ArrayBuffer): string {
  const base64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  const lines = base64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

async function generateKeys(): Promise<CryptoKeyPair> {
  return await crypto.subtle.generateKey(ALGORITHM, true, ["sign", "verify"]) as CryptoKeyPair;
}

async function privateKeyPem(key: CryptoKey): Promise<string> {
  return pem("PRIVATE KEY", await crypto.subtle.exportKey("pkcs8", key));
}

function serialNumber(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f; // a positive serial
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function fromPem(text: string): ArrayBuffer {
  const base64 = text.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)).buffer;
}

/** `days` from an hour ago (a skewed clock still accepts a certificate made just now), cut at `end`. */
function validity(days: number, end?: Date): { notBefore: Date; notAfter: Date } {
  const notBefore = new Date(Date.now() - 60 * 60 * 1000);
  const notAfter = notBefore.getTime() + days * DAY_MS;
  return { notBefore, notAfter: new Date(end ? Math.min(notAfter, end.getTime()) : notAfter) };
}

/** Generates an ECDSA P-256 key pair for signing service-account tokens. */
export async function generateSigningKeyPair(): Promise<SigningKeyPair> {
  const keys = await generateKeys();
  return {
    publicKey: pem("PUBLIC KEY", await crypto.subtle.exportKey("spki", keys.publicKey)),
    privateKey: await privateKeyPem(keys.privateKey),
  };
}

/**
 * Creates a self-signed CA valid for `days` (default 365) whose certificates are all X.509 v3.
 *
 * @example
 * ```ts
 * import { createCertificateAuthority } from "./certs.ts";
 *
 * const ca = await createCertificateAuthority("rudder-envtest-ca");
 * const serving = await ca.issueServing({ commonName: "localhost", ips: ["127.0.0.1"] });
 * console.log(serving.cert.startsWith("-----BEGIN CERTIFICATE-----"));
 * ```
 */
export async function createCertificateAuthority(
  commonName: string,
  days = 365,
): Promise<CertificateAuthority> {
  const caKeys = await generateKeys();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: `CN=${escapeRdn(commonName)}`,
    ...validity(days),
    signingAlgorithm: SIGNING,
    keys: caKeys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign |
          x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  const pair = { cert: caCert.toString("pem") + "\n", key: await privateKeyPem(caKeys.privateKey) };
  return authority(caCert, caKeys.privateKey, pair, days);
}

/**
 * The CA of `pair` (its certificate and ECDSA P-256 PKCS #8 key, PEM), to sign more with: what it
 * signs is valid for `days` unless asked otherwise, and never past the CA's own expiry.
 *
 * @example
 * ```ts
 * import { createCertificateAuthority, loadCertificateAuthority } from "./certs.ts";
 *
 * const first = await createCertificateAuthority("webhook-ca");
 * const again = await loadCertificateAuthority({ cert: first.cert, key: first.key });
 * const serving = await again.issueServing({ commonName: "svc", dnsNames: ["svc.ns.svc"] });
 * console.log(serving.cert.startsWith("-----BEGIN CERTIFICATE-----"));
 * ```
 */
export async function loadCertificateAuthority(
  pair: CertificatePair,
  days = 365,
): Promise<CertificateAuthority> {
  const caCert = new x509.X509Certificate(pair.cert);
  const key = await crypto.subtle.importKey("pkcs8", fromPem(pair.key), ALGORITHM, true, ["sign"]);
  return authority(caCert, key, pair, days);
}

function authority(
  caCert: X509.X509Certificate,
  caKey: CryptoKey,
  pair: CertificatePair,
  defaultDays: number,
): CertificateAuthority {
  async function issue(
    subject: string,
    usage: string,
    subjectAltNames: X509.JsonGeneralName[],
    days: number,
  ): Promise<CertificatePair> {
    const keys = await generateKeys();
    const extensions: X509.Extension[] = [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([usage]),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ];
    if (subjectAltNames.length > 0) {
      extensions.push(new x509.SubjectAlternativeNameExtension(subjectAltNames));
    }
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serialNumber(),
      subject,
      issuer: caCert.subject,
      ...validity(days, caCert.notAfter),
      signingAlgorithm: SIGNING,
      publicKey: keys.publicKey,
      signingKey: caKey,
      extensions,
    });
    return { cert: cert.toString("pem") + "\n", key: await privateKeyPem(keys.privateKey) };
  }

  return {
    cert: pair.cert,
    key: pair.key,
    notAfter: caCert.notAfter,
    issueServing({ commonName, dnsNames = [], ips = [], days = defaultDays }) {
      return issue(`CN=${escapeRdn(commonName)}`, x509.ExtendedKeyUsage.serverAuth, [
        ...dnsNames.map((value) => ({ type: "dns" as const, value })),
        ...ips.map((value) => ({ type: "ip" as const, value })),
      ], days);
    },
    issueClient({ commonName, organizations = [], days = defaultDays }) {
      const subject = [
        `CN=${escapeRdn(commonName)}`,
        ...organizations.map((o) => `O=${escapeRdn(o)}`),
      ].join(", ");
      return issue(subject, x509.ExtendedKeyUsage.clientAuth, [], days);
    },
  };
}

/** Escapes the characters RFC 4514 reserves in a distinguished-name value. */
function escapeRdn(value: string): string {
  return value.replace(/[,+"\\<>;=]/g, (c) => `\\${c}`);
}

/**
 * A serving certificate for `hosts` (DNS names and IP addresses), signed by a CA made for it
 * alone and valid for `days` (default 365), as controller-runtime makes one for its metrics
 * server when it has no certificate directory. `cert` is the chain (serving certificate, then
 * the CA), so a client that trusts the CA it finds there can verify the server.
 *
 * @example
 * ```ts ignore
 * import { selfSignedServingCertificate } from "./certs.ts";
 *
 * const { cert, key } = await selfSignedServingCertificate(["localhost", "127.0.0.1"]);
 * Deno.serve({ port: 8443, cert, key }, () => new Response("ok"));
 * ```
 */
export async function selfSignedServingCertificate(
  hosts: string[],
  days = 365,
): Promise<CertificatePair> {
  const [first = "localhost"] = hosts;
  const ca = await createCertificateAuthority(`${first}-ca@${Math.floor(Date.now() / 1000)}`, days);
  const isIP = (host: string) => /^[\d.]+$/.test(host) || host.includes(":");
  const serving = await ca.issueServing({
    commonName: `${first}@${Math.floor(Date.now() / 1000)}`,
    dnsNames: hosts.filter((host) => !isIP(host)),
    ips: hosts.filter(isIP),
  });
  return { cert: serving.cert + ca.cert, key: serving.key };
}
