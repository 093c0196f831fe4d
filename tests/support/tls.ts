// TLS from the client's side: the certificates a server presents, and fetch trusting one CA.
import { connect } from "node:tls";
import { createFetcher } from "../../lib/kube/transport.ts";

function pem(der: Uint8Array): string {
  const base64 = btoa(String.fromCharCode(...der));
  return `-----BEGIN CERTIFICATE-----\n${base64.match(/.{1,64}/g)!.join("\n")}\n` +
    "-----END CERTIFICATE-----\n";
}

interface PeerCertificate {
  raw?: Uint8Array;
  fingerprint256?: string;
  issuerCertificate?: PeerCertificate;
}

/**
 * The certificates `url`'s server presents, serving certificate first, as PEM. The handshake
 * does not verify them: this is how a test learns a self-signed server's CA.
 */
export function presentedCertificates(url: string): Promise<string[]> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: hostname.replace(/^\[|\]$/g, ""),
      port: Number(port),
      servername: "localhost",
      rejectUnauthorized: false,
    }, () => {
      const chain: string[] = [];
      const seen = new Set<string>();
      let cert = socket.getPeerCertificate(true) as PeerCertificate | undefined;
      while (cert?.raw && !seen.has(cert.fingerprint256 ?? "")) {
        seen.add(cert.fingerprint256 ?? "");
        chain.push(pem(new Uint8Array(cert.raw)));
        cert = cert.issuerCertificate;
      }
      socket.end();
      resolve(chain);
    });
    socket.on("error", reject);
  });
}

/** `fetch` that trusts only `ca` (PEM); closes its connections after the answer is read. */
export async function fetchTrusting(
  ca: string,
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; text: string }> {
  const fetcher = createFetcher({ caData: ca });
  try {
    const response = await fetcher.fetch(url, init);
    return { status: response.status, text: await response.text() };
  } finally {
    fetcher.close();
  }
}
