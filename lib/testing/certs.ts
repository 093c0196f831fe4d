/**
 * X.509 v3 certificates for the local control plane. They live in `lib/util/certs.ts`, where the
 * manager also makes its self-signed serving certificates; this module keeps the testing
 * import path.
 *
 * @module
 */

export {
  type CertificateAuthority,
  type CertificatePair,
  createCertificateAuthority,
  generateSigningKeyPair,
  type SigningKeyPair,
} from "../util/certs.ts";
