/**
 * X.509 v3 certificates made with WebCrypto alone (ECDSA P-256, encoded by `der.ts`): a CA with
 * serving and client certificates (the local control plane's, webhook servers'), and the
 * self-signed serving certificate a manager uses when no certificate is given. Deno's TLS stack
 * refuses v1 certificates, so every certificate here carries v3 extensions; Go's, the API
 * server's, reads them too.
 *
 * @module
 */

import {
  bitString,
  boolean,
  children,
  explicit,
  implicit,
  integer,
  octetString,
  oid,
  read,
  readOid,
  readTime,
  sequence,
  set,
  TAG,
  time,
  utf8,
} from "./der.ts";

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

function pem(label: string, der: ArrayBuffer | Uint8Array): string {
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

function serialNumber(): Uint8Array {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f; // a positive serial
  bytes[0] |= 0x01; // of the full 16 bytes
  return bytes;
}

function fromPem(text: string): Uint8Array<ArrayBuffer> {
  const base64 = text.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  return Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
}

/**
 * `days` from an hour ago (a skewed clock still accepts a certificate made just now), cut at
 * `end`, in whole seconds: what a certificate's times hold, so `notAfter` is the written one.
 */
function validity(days: number, end?: Date): { notBefore: Date; notAfter: Date } {
  const second = (ms: number) => new Date(Math.floor(ms / 1000) * 1000);
  const notBefore = second(Date.now() - 60 * 60 * 1000);
  const notAfter = notBefore.getTime() + days * DAY_MS;
  return { notBefore, notAfter: second(end ? Math.min(notAfter, end.getTime()) : notAfter) };
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
  const keys = await generateKeys();
  const subject = distinguishedName(commonName, []);
  const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
  const keyId = await keyIdentifier(spki);
  const { notBefore, notAfter } = validity(days);
  const der = await signCertificate({
    issuer: subject,
    subject,
    notBefore,
    notAfter,
    spki,
    signingKey: keys.privateKey,
    extensions: [
      extension(EXT.basicConstraints, true, sequence(boolean(true), integer(0))),
      extension(EXT.keyUsage, true, keyUsage(KEY_USAGE.keyCertSign | KEY_USAGE.cRLSign)),
      extension(EXT.subjectKeyIdentifier, false, octetString(keyId)),
    ],
  });
  const pair = { cert: pem("CERTIFICATE", der), key: await privateKeyPem(keys.privateKey) };
  return authority({ subject, notAfter, keyId }, keys.privateKey, pair, days);
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
  const parsed = parseCertificate(fromPem(firstCertificate(pair.cert)));
  const key = await crypto.subtle.importKey("pkcs8", fromPem(pair.key), ALGORITHM, true, ["sign"]);
  const keyId = parsed.subjectKeyId ?? await keyIdentifier(parsed.spki);
  return authority({ subject: parsed.subject, notAfter: parsed.notAfter, keyId }, key, pair, days);
}

/** What signing needs of a CA: its name (as encoded), its expiry and its key identifier. */
interface Issuer {
  subject: Uint8Array;
  notAfter: Date;
  keyId: Uint8Array;
}

function authority(
  issuer: Issuer,
  caKey: CryptoKey,
  pair: CertificatePair,
  defaultDays: number,
): CertificateAuthority {
  async function issue(
    subject: Uint8Array,
    usage: string,
    subjectAltNames: Uint8Array[],
    days: number,
  ): Promise<CertificatePair> {
    const keys = await generateKeys();
    const spki = new Uint8Array(await crypto.subtle.exportKey("spki", keys.publicKey));
    const extensions = [
      extension(EXT.basicConstraints, true, sequence()),
      extension(
        EXT.keyUsage,
        true,
        keyUsage(KEY_USAGE.digitalSignature | KEY_USAGE.keyEncipherment),
      ),
      extension(EXT.extendedKeyUsage, false, sequence(oid(usage))),
      extension(EXT.subjectKeyIdentifier, false, octetString(await keyIdentifier(spki))),
      extension(EXT.authorityKeyIdentifier, false, sequence(implicit(0, issuer.keyId))),
    ];
    if (subjectAltNames.length > 0) {
      extensions.push(extension(EXT.subjectAltName, false, sequence(...subjectAltNames)));
    }
    const der = await signCertificate({
      issuer: issuer.subject,
      subject,
      ...validity(days, issuer.notAfter),
      spki,
      signingKey: caKey,
      extensions,
    });
    return { cert: pem("CERTIFICATE", der), key: await privateKeyPem(keys.privateKey) };
  }

  return {
    cert: pair.cert,
    key: pair.key,
    notAfter: issuer.notAfter,
    async issueServing({ commonName, dnsNames = [], ips = [], days = defaultDays }) {
      return await issue(distinguishedName(commonName, []), OID.serverAuth, [
        ...dnsNames.map((name) => implicit(2, new TextEncoder().encode(name))),
        ...ips.map((ip) => implicit(7, ipBytes(ip))),
      ], days);
    },
    async issueClient({ commonName, organizations = [], days = defaultDays }) {
      return await issue(distinguishedName(commonName, organizations), OID.clientAuth, [], days);
    },
  };
}

/** Object identifiers of the extensions and usages made here. */
const EXT = {
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  authorityKeyIdentifier: "2.5.29.35",
  extendedKeyUsage: "2.5.29.37",
} as const;

const OID = {
  commonName: "2.5.4.3",
  organization: "2.5.4.10",
  ecdsaWithSHA256: "1.2.840.10045.4.3.2",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
} as const;

/** The bits of the KeyUsage extension, numbered as RFC 5280 numbers them (bit 0 first). */
const KEY_USAGE = {
  digitalSignature: 1 << 0,
  keyEncipherment: 1 << 2,
  keyCertSign: 1 << 5,
  cRLSign: 1 << 6,
} as const;

/** A KeyUsage value: a BIT STRING with bit 0 the first byte's highest, trailing zeros dropped. */
function keyUsage(bits: number): Uint8Array {
  let byte = 0;
  for (let bit = 0; bit < 8; bit++) if (bits & (1 << bit)) byte |= 0x80 >> bit;
  let unused = 0;
  while (unused < 7 && !(byte & (1 << unused))) unused++;
  return bitString(Uint8Array.of(byte), unused);
}

/** An Extension: its identifier, whether it is critical, and its DER value. */
function extension(id: string, critical: boolean, value: Uint8Array): Uint8Array {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
}

/** A Name of one CN and any number of O attributes, each its own RDN. */
function distinguishedName(commonName: string, organizations: string[]): Uint8Array {
  return sequence(
    ...organizations.map((o) => set(sequence(oid(OID.organization), utf8(o)))),
    set(sequence(oid(OID.commonName), utf8(commonName))),
  );
}

/** The 4 or 16 bytes of an IPv4 or IPv6 address. */
function ipBytes(ip: string): Uint8Array {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(ip)) return Uint8Array.from(ip.split(".").map(Number));
  const [head, tail = ""] = ip.split("::");
  const groups = (part: string) => (part === "" ? [] : part.split(":"));
  const left = groups(head);
  const right = groups(tail);
  if (!ip.includes(":") || left.length + right.length > 8) {
    throw new TypeError(`not an IP address: ${ip}`);
  }
  const all = [
    ...left,
    ...Array(ip.includes("::") ? 8 - left.length - right.length : 0).fill("0"),
    ...right,
  ];
  if (all.length !== 8 || !all.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) {
    throw new TypeError(`not an IP address: ${ip}`);
  }
  return Uint8Array.from(all.flatMap((group) => {
    const value = parseInt(group, 16);
    return [value >> 8, value & 0xff];
  }));
}

/** The key identifier of RFC 5280 4.2.1.2 (1): SHA-1 of the subjectPublicKey's bits. */
async function keyIdentifier(spki: Uint8Array): Promise<Uint8Array> {
  const [, key] = children(read(spki));
  const point = key.content.subarray(1); // after the BIT STRING's unused-bits byte
  return new Uint8Array(await crypto.subtle.digest("SHA-1", point.slice()));
}

/** Signs a TBSCertificate made of these parts: the certificate, DER. */
async function signCertificate(parts: {
  issuer: Uint8Array;
  subject: Uint8Array;
  notBefore: Date;
  notAfter: Date;
  spki: Uint8Array;
  signingKey: CryptoKey;
  extensions: Uint8Array[];
}): Promise<Uint8Array<ArrayBuffer>> {
  const algorithm = sequence(oid(OID.ecdsaWithSHA256));
  const tbs = sequence(
    explicit(0, integer(2)), // v3
    integer(serialNumber()),
    algorithm,
    parts.issuer,
    sequence(time(parts.notBefore), time(parts.notAfter)),
    parts.subject,
    parts.spki,
    explicit(3, sequence(...parts.extensions)),
  );
  // WebCrypto signs as r ‖ s; X.509 wants Ecdsa-Sig-Value, a SEQUENCE of the two INTEGERs.
  const raw = new Uint8Array(await crypto.subtle.sign(SIGNING, parts.signingKey, tbs.slice()));
  const signature = sequence(integer(raw.subarray(0, 32)), integer(raw.subarray(32)));
  const der = sequence(tbs, algorithm, bitString(signature));
  return new Uint8Array(der);
}

/** What is read back from a certificate: for loading a CA, and for tests. */
export interface ParsedCertificate {
  /** The subject Name as encoded. */
  subject: Uint8Array;
  /** The subject's attributes, by object identifier, in order (CN is 2.5.4.3, O 2.5.4.10). */
  subjectAttributes: { type: string; value: string }[];
  notBefore: Date;
  notAfter: Date;
  /** SubjectPublicKeyInfo, DER. */
  spki: Uint8Array;
  /** Whether BasicConstraints says it is a CA. */
  isCA: boolean;
  /** The key identifier of its SubjectKeyIdentifier extension, if any. */
  subjectKeyId?: Uint8Array;
  /** ExtendedKeyUsage's object identifiers. */
  extendedKeyUsages: string[];
  /** SubjectAltName's DNS names and IP addresses (dotted or hex groups). */
  dnsNames: string[];
  ips: string[];
}

/** Reads the parts of a DER certificate that certs.ts writes; throws on anything else. */
export function parseCertificate(der: Uint8Array): ParsedCertificate {
  const [tbsElement] = children(read(der));
  const tbs = children(tbsElement);
  const fields = tbs[0].tag === 0xa0 ? tbs.slice(1) : tbs;
  const [, , , validityElement, subjectElement, spkiElement, ...rest] = fields;
  const [notBefore, notAfter] = children(validityElement).map(readTime);
  const parsed: ParsedCertificate = {
    subject: subjectElement.raw,
    subjectAttributes: children(subjectElement).flatMap((rdn) =>
      children(rdn).map((attribute) => {
        const [type, value] = children(attribute);
        return { type: readOid(type), value: new TextDecoder().decode(value.content) };
      })
    ),
    notBefore,
    notAfter,
    spki: spkiElement.raw,
    isCA: false,
    extendedKeyUsages: [],
    dnsNames: [],
    ips: [],
  };
  const extensions = rest.find((element) => element.tag === 0xa3);
  for (const entry of extensions ? children(children(extensions)[0]) : []) {
    const items = children(entry);
    const id = readOid(items[0]);
    const value = read(items[items.length - 1].content);
    if (id === EXT.basicConstraints) {
      const [ca] = children(value);
      parsed.isCA = ca?.tag === TAG.boolean && ca.content[0] !== 0;
    } else if (id === EXT.subjectKeyIdentifier) {
      parsed.subjectKeyId = value.content;
    } else if (id === EXT.extendedKeyUsage) {
      parsed.extendedKeyUsages = children(value).map(readOid);
    } else if (id === EXT.subjectAltName) {
      for (const name of children(value)) {
        if (name.tag === 0x82) parsed.dnsNames.push(new TextDecoder().decode(name.content));
        if (name.tag === 0x87) parsed.ips.push(ipText(name.content));
      }
    }
  }
  return parsed;
}

function ipText(bytes: Uint8Array): string {
  if (bytes.length === 4) return Array.from(bytes).join(".");
  const groups: string[] = [];
  for (let i = 0; i < bytes.length; i += 2) {
    groups.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  }
  return groups.join(":");
}

/** The first PEM CERTIFICATE block of `text`. */
function firstCertificate(text: string): string {
  const first = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/);
  if (!first) throw new Error("no PEM certificate found");
  return first[0];
}

/** Reads the first certificate of a PEM bundle (see {@linkcode parseCertificate}). */
export function parseCertificatePem(text: string): ParsedCertificate {
  return parseCertificate(fromPem(firstCertificate(text)));
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
