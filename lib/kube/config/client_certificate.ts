/**
 * Checks a client certificate and its private key when a configuration is loaded, so that a
 * key pasted into the certificate field (or the other way round), a damaged PEM block or a key
 * of another certificate is reported as that field's error on every runtime. Left to the TLS
 * stack, these fail only at the first request, and Bun then says `FailedToOpenSocket: Was there
 * a typo in the url or port?`. Like Go's `tls.X509KeyPair`, blocks of the other kind are
 * skipped, so one file may hold both. Messages never contain key material.
 *
 * @module
 */

import { checkCertificate, checkKeyPair } from "../../util/x509_check.ts";

/** Which of the two values is at fault, and why. */
export interface ClientCertificateProblem {
  /** `cert` for the certificate's field, `key` for the key's. */
  field: "cert" | "key";
  /** What is wrong, as a sentence without any of the value. */
  reason: string;
}

/** `-----BEGIN <label>-----` … `-----END <label>-----` blocks with their labels. */
function pemBlocks(text: string): { label: string; block: string }[] {
  const blocks: { label: string; block: string }[] = [];
  const pattern = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
  for (const match of text.matchAll(pattern)) blocks.push({ label: match[1], block: match[0] });
  return blocks;
}

const isKeyLabel = (label: string) => label === "PRIVATE KEY" || label.endsWith(" PRIVATE KEY");

/**
 * The problem of a PEM client certificate and PEM private key, or `undefined` when the
 * certificate parses, the key parses, and the key is the certificate's.
 */
export function clientCertificateProblem(
  cert: string,
  key: string,
): ClientCertificateProblem | undefined {
  const certBlocks = pemBlocks(cert);
  const certificates = certBlocks.filter((b) => b.label === "CERTIFICATE");
  if (certificates.length === 0) {
    const holdsKey = certBlocks.some((b) => isKeyLabel(b.label));
    return {
      field: "cert",
      reason: holdsKey
        ? "holds a private key, not a certificate (the certificate and key may be swapped)"
        : "holds no PEM CERTIFICATE block",
    };
  }
  try {
    for (const { block } of certificates) checkCertificate(block);
  } catch {
    return { field: "cert", reason: "is not a valid certificate (a PEM block does not parse)" };
  }
  const keyBlocks = pemBlocks(key);
  const keyBlock = keyBlocks.find((b) => isKeyLabel(b.label));
  if (!keyBlock) {
    const holdsCertificate = keyBlocks.some((b) => b.label === "CERTIFICATE");
    return {
      field: "key",
      reason: holdsCertificate
        ? "holds a certificate, not a private key (the certificate and key may be swapped)"
        : "holds no PEM PRIVATE KEY block",
    };
  }
  // The first certificate is the client's own; the rest is its chain.
  const problem = checkKeyPair(certificates[0].block, keyBlock.label, keyBlock.block);
  if (problem === "certificate") {
    return { field: "cert", reason: "is not a valid certificate (a PEM block does not parse)" };
  }
  if (problem === "key") {
    // The runtime's words are left out: nothing of a key may reach a message.
    return {
      field: "key",
      reason: `is not a valid private key (its ${keyBlock.label} block does not parse)`,
    };
  }
  if (problem === "mismatch") {
    return { field: "key", reason: "is not the private key of the client certificate" };
  }
  return undefined;
}
