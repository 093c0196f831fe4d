/**
 * Checks of PEM certificates and private keys for what Rudder reports at load time (a CA that is
 * not a certificate, a client key that is not the certificate's). On Bun and Node they are
 * `node:crypto`'s (`X509Certificate`, `createPrivateKey`, `checkPrivateKey`); on Deno, whose
 * `node:crypto` starts its Node compatibility layer (about 5 MiB resident in an idle operator),
 * they read the DER structure instead: a certificate must be a well-formed X.509 structure, a
 * key a well-formed PKCS #8, PKCS #1 or SEC 1 key, and a key matches when its public part (an
 * RSA modulus and exponent, or the EC public point SEC 1 keys carry) equals the certificate's.
 * An EC or EdDSA key without its public part is taken as matching there; Deno's TLS stack still
 * rejects a mismatch at the first connection.
 *
 * @module
 */

import { children, type Element, read, readOid, TAG } from "./der.ts";
import { decodeBase64 } from "./encoding.ts";
import { deno, nodeProcess } from "./runtime.ts";

type NodeCrypto = typeof import("node:crypto");

function nodeCrypto(): NodeCrypto {
  return nodeProcess().getBuiltinModule("node:crypto") as NodeCrypto;
}

const RSA = "1.2.840.113549.1.1.1";
const EC = "1.2.840.10045.2.1";

/** The bytes of the first PEM block of `text`. */
function pemBody(text: string): Uint8Array {
  const block = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/.exec(text);
  if (!block) throw new Error("PEM: no block");
  const body = block[2];
  if (/[^A-Za-z0-9+/=\s]/.test(body)) throw new Error("PEM: not base64");
  return decodeBase64(body);
}

/** Reads `bytes` as exactly one DER element. */
function whole(bytes: Uint8Array): Element {
  const element = read(bytes);
  if (element.raw.length !== bytes.length) throw new Error("DER: trailing bytes");
  return element;
}

function expectTag(element: Element | undefined, tag: number): Element {
  if (!element || element.tag !== tag) throw new Error("DER: unexpected element");
  return element;
}

/** The SubjectPublicKeyInfo of a DER certificate; throws when it is not X.509's shape. */
function certificateSpki(der: Uint8Array): Element {
  const [tbs, algorithm, signature] = children(expectTag(whole(der), TAG.sequence));
  expectTag(algorithm, TAG.sequence);
  expectTag(signature, TAG.bitString);
  const fields = children(expectTag(tbs, TAG.sequence));
  const rest = fields[0]?.tag === 0xa0 ? fields.slice(1) : fields;
  // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
  expectTag(rest[0], TAG.integer);
  for (const i of [1, 2, 3, 4]) expectTag(rest[i], TAG.sequence);
  const spki = expectTag(rest[5], TAG.sequence);
  const [spkiAlgorithm, key] = children(spki);
  readOid(children(expectTag(spkiAlgorithm, TAG.sequence))[0]);
  expectTag(key, TAG.bitString);
  return spki;
}

/**
 * Throws when `pem` (one PEM CERTIFICATE block) is not a certificate.
 *
 * @example
 * ```ts
 * import { checkCertificate } from "./x509_check.ts";
 *
 * try {
 *   checkCertificate("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----");
 * } catch {
 *   console.log("not a certificate");
 * }
 * ```
 */
export function checkCertificate(pem: string): void {
  if (deno()) certificateSpki(pemBody(pem));
  else new (nodeCrypto().X509Certificate)(pem);
}

/** A key's public part to compare: an RSA key's modulus and exponent, or an EC point. */
type PublicPart = { rsa: [Uint8Array, Uint8Array] } | { ec: Uint8Array } | undefined;

function rsaPublic(rsaPrivateKey: Element): PublicPart {
  const [version, modulus, exponent] = children(expectTag(rsaPrivateKey, TAG.sequence));
  expectTag(version, TAG.integer);
  return {
    rsa: [expectTag(modulus, TAG.integer).content, expectTag(exponent, TAG.integer).content],
  };
}

function ecPublic(ecPrivateKey: Element): PublicPart {
  const [version, secret, ...optional] = children(expectTag(ecPrivateKey, TAG.sequence));
  expectTag(version, TAG.integer);
  expectTag(secret, TAG.octetString);
  const tagged = optional.find((element) => element.tag === 0xa1);
  return tagged ? { ec: expectTag(read(tagged.content), TAG.bitString).content } : undefined;
}

/** The public part of a PEM key block with `label`; throws when it does not parse. */
function keyPublicPart(label: string, der: Uint8Array): PublicPart {
  if (label === "RSA PRIVATE KEY") return rsaPublic(whole(der));
  if (label === "EC PRIVATE KEY") return ecPublic(whole(der));
  if (label !== "PRIVATE KEY") throw new Error(`unsupported key block ${label}`);
  const [version, algorithm, key] = children(expectTag(whole(der), TAG.sequence));
  expectTag(version, TAG.integer);
  const id = readOid(children(expectTag(algorithm, TAG.sequence))[0]);
  const inner = read(expectTag(key, TAG.octetString).content);
  if (id === RSA) return rsaPublic(inner);
  if (id === EC) return ecPublic(inner);
  return undefined;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

function matches(spki: Element, part: PublicPart): boolean {
  if (!part) return true;
  const [, keyBits] = children(spki);
  const key = keyBits.content.subarray(1); // after the count of unused bits
  if ("ec" in part) return sameBytes(key, part.ec.subarray(1));
  // An RSA key against a certificate of another kind of key.
  if (key[0] !== TAG.sequence) return false;
  const [modulus, exponent] = children(expectTag(whole(key), TAG.sequence));
  return sameBytes(modulus.content, part.rsa[0]) && sameBytes(exponent.content, part.rsa[1]);
}

/** What {@linkcode checkKeyPair} found wrong. */
export type KeyPairProblem = "certificate" | "key" | "mismatch";

/**
 * Which of a PEM certificate (`cert`, one CERTIFICATE block) and a PEM private key block
 * (`key`, labelled `label`) is at fault: `certificate` or `key` when it does not parse,
 * `mismatch` when the key is not the certificate's; `undefined` when they are a pair.
 *
 * @example
 * ```ts
 * import { checkKeyPair } from "./x509_check.ts";
 *
 * console.log(checkKeyPair("not a certificate", "PRIVATE KEY", "not a key")); // "certificate"
 * ```
 */
export function checkKeyPair(cert: string, label: string, key: string): KeyPairProblem | undefined {
  if (!deno()) {
    const crypto = nodeCrypto();
    let certificate: InstanceType<NodeCrypto["X509Certificate"]>;
    try {
      certificate = new crypto.X509Certificate(cert);
    } catch {
      return "certificate";
    }
    let privateKey: ReturnType<NodeCrypto["createPrivateKey"]>;
    try {
      privateKey = crypto.createPrivateKey(key);
    } catch {
      return "key";
    }
    return certificate.checkPrivateKey(privateKey) ? undefined : "mismatch";
  }
  let spki: Element;
  try {
    spki = certificateSpki(pemBody(cert));
  } catch {
    return "certificate";
  }
  let part: PublicPart;
  try {
    part = keyPublicPart(label, pemBody(key));
  } catch {
    return "key";
  }
  try {
    return matches(spki, part) ? undefined : "mismatch";
  } catch {
    return "certificate";
  }
}
