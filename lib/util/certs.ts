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

/** A certificate authority that can sign serving and client certificates. */
export interface CertificateAuthority extends CertificatePair {
  /** Signs a serving certificate for the given DNS names and IP addresses. */
  issueServing(options: { commonName: string; dnsNames?: string[]; ips?: string[] }): Promise<
    CertificatePair
  >;
  /** Signs a client certificate: `commonName` is the user, `organizations` its groups. */
  issueClient(options: { commonName: string; organizations?: string[] }): Promise<
    CertificatePair
  >;
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

function validity(days: number): { notBefore: Date; notAfter: Date } {
  // Back-date by an hour so a skewed clock does not reject a certificate made just now.
  const notBefore = new Date(Date.now() - 60 * 60 * 1000);
  return { notBefore, notAfter: new Date(notBefore.getTime() + days * DAY_MS) };
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
  const caName = `CN=${commonName}`;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: caName,
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

  async function issue(
    subject: string,
    usage: string,
    subjectAltNames: X509.JsonGeneralName[],
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
      ...validity(days),
      signingAlgorithm: SIGNING,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      extensions,
    });
    return { cert: cert.toString("pem") + "\n", key: await privateKeyPem(keys.privateKey) };
  }

  return {
    cert: caCert.toString("pem") + "\n",
    key: await privateKeyPem(caKeys.privateKey),
    issueServing({ commonName, dnsNames = [], ips = [] }) {
      return issue(`CN=${escapeRdn(commonName)}`, x509.ExtendedKeyUsage.serverAuth, [
        ...dnsNames.map((value) => ({ type: "dns" as const, value })),
        ...ips.map((value) => ({ type: "ip" as const, value })),
      ]);
    },
    issueClient({ commonName, organizations = [] }) {
      const subject = [
        `CN=${escapeRdn(commonName)}`,
        ...organizations.map((o) => `O=${escapeRdn(o)}`),
      ].join(", ");
      return issue(subject, x509.ExtendedKeyUsage.clientAuth, []);
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
