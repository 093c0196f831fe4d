/**
 * HTTPS serving with a certificate from a directory that may change while the server runs, as
 * a mounted Kubernetes Secret does (`tls.crt`, `tls.key`). Like controller-runtime's
 * certwatcher, the files are read again every few seconds; when they changed, the new pair is
 * served. Deno.serve and Bun.serve take their certificate only at start, so a change restarts
 * the listener on the same port (a scrape in that instant may fail and is retried next time).
 * A pair that cannot be read, parsed or served, or whose key is not the certificate's (the
 * certificate written and the key not yet), is logged and the previous one kept, the listener
 * untouched: a new pair is checked before the running listener stops.
 *
 * @module
 */

import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { getLogger } from "@logtape/logtape";
import { type Handler, parseAddress, type RunningServer, serve } from "./server.ts";

const logger = getLogger(["rudder", "manager", "certificates"]);

/** Milliseconds between two reads of a certificate directory (controller-runtime: 10 s). */
export const DEFAULT_CERTIFICATE_POLL_INTERVAL_MS = 10_000;

/** Where a certificate and its key are, and how often to look for a new pair. */
export interface CertificateDirectoryOptions {
  /** The directory. */
  certDir: string;
  /** File name of the PEM certificate (chain) in `certDir`; default `tls.crt`. */
  certName?: string;
  /** File name of the PEM private key in `certDir`; default `tls.key`. */
  keyName?: string;
  /** Milliseconds between reads; default {@linkcode DEFAULT_CERTIFICATE_POLL_INTERVAL_MS}. */
  pollInterval?: number;
}

interface Pair {
  cert: string;
  key: string;
}

/** Reads the pair; an error names the file and why, never its content. */
async function readPair(certPath: string, keyPath: string): Promise<Pair> {
  const read = async (path: string, what: string) => {
    try {
      return await readFile(path, "utf8");
    } catch (err) {
      const code = (err as { code?: string }).code ?? (err as Error).name;
      throw new Error(`cannot read the TLS ${what} ${path} (${code})`);
    }
  };
  const cert = await read(certPath, "certificate");
  const key = await read(keyPath, "key");
  if (!cert.includes("-----BEGIN CERTIFICATE-----")) {
    throw new Error(`the TLS certificate ${certPath} holds no PEM certificate`);
  }
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) {
    throw new Error(`the TLS key ${keyPath} holds no PEM private key`);
  }
  return { cert, key };
}

/**
 * Throws, naming the file, when the certificate or the key cannot be parsed or the key is not the
 * certificate's.
 */
function checkPair(pair: Pair, certPath: string, keyPath: string): void {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pair.cert);
  } catch (err) {
    throw new Error(`the TLS certificate ${certPath} cannot be parsed (${reason(err)})`);
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(pair.key);
  } catch {
    // The parser's message may quote what it read; a key's text stays out of logs.
    throw new Error(`the TLS key ${keyPath} cannot be parsed`);
  }
  if (!certificate.checkPrivateKey(key)) {
    throw new Error(`the TLS key ${keyPath} is not the key of the certificate ${certPath}`);
  }
}

/** The message of an error from serving a pair, which never quotes the key. */
function reason(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Serves `handler` over HTTPS on `address` with the certificate in `options.certDir`, reloading
 * it when the files change. Rejects when the directory has no readable pair at start.
 */
export async function serveWithCertificateDirectory(
  handler: Handler,
  address: string,
  options: CertificateDirectoryOptions,
): Promise<RunningServer> {
  const certPath = join(options.certDir, options.certName ?? "tls.crt");
  const keyPath = join(options.certDir, options.keyName ?? "tls.key");
  let pair = await readPair(certPath, keyPath);
  checkPair(pair, certPath, keyPath);
  let current = await serve(handler, { address, tls: pair });
  const { hostname } = parseAddress(address);
  // Restarts bind the port chosen at first, also when port 0 was asked.
  const sameAddress = `${hostname.includes(":") ? `[${hostname}]` : hostname}:${current.port}`;

  const reload = async () => {
    let next: Pair;
    try {
      next = await readPair(certPath, keyPath);
      if (next.cert === pair.cert && next.key === pair.key) return;
      checkPair(next, certPath, keyPath);
    } catch (err) {
      logger.warn("Keeping the current certificate: {reason}", { reason: reason(err) });
      return;
    }
    await current.stop();
    try {
      current = await serve(handler, { address: sameAddress, tls: next });
      pair = next;
      logger.info("Serving the new certificate from {dir}", { dir: options.certDir });
    } catch (err) {
      logger.warn(
        "The new certificate in {dir} cannot be served, keeping the previous one: {reason}",
        {
          dir: options.certDir,
          reason: reason(err),
        },
      );
      current = await serve(handler, { address: sameAddress, tls: pair });
    }
  };

  let reloading = Promise.resolve();
  const timer = setInterval(() => {
    reloading = reloading.then(reload).catch((err) => {
      logger.error("Reloading the certificate from {dir} failed: {reason}", {
        dir: options.certDir,
        reason: reason(err),
      });
    });
  }, options.pollInterval ?? DEFAULT_CERTIFICATE_POLL_INTERVAL_MS);

  return {
    get hostname() {
      return current.hostname;
    },
    port: current.port,
    url: current.url,
    stop: async () => {
      clearInterval(timer);
      await reloading;
      await current.stop();
    },
  };
}
