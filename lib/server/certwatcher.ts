/**
 * A certificate and key read from files that may change while a server runs, as a mounted
 * Kubernetes Secret does (`tls.crt`, `tls.key`), like controller-runtime's `certwatcher`: every
 * TLS server of the library (metrics, webhooks) takes its certificate from one.
 *
 * A pair is taken only when it is good: both files readable, PEM, parseable, and the key the
 * certificate's. A pair that is not (the certificate written and the key not yet, as while a
 * Secret's files are replaced one by one) is logged and the last good one kept; the next check
 * tries again. The files are checked when the directory changes (`fs.watch`, where the runtime
 * and file system support it: a mounted Secret swaps a symlink, which a watch on the files
 * themselves would miss) and on a poll interval in any case.
 *
 * @module
 */

import type { FSWatcher } from "node:fs";
import { getLogger } from "@logtape/logtape";
import { type Clock, realClock } from "../util/clock.ts";
import type { Runnable } from "../util/runnable.ts";
import type { TLSPair } from "./types.ts";
import { nodeFs, readTextFile } from "../util/files.ts";
import { errorMessage } from "../util/logging.ts";
import { joinPath } from "../util/paths.ts";
import { checkKeyPair } from "../util/x509_check.ts";

/** Milliseconds between two checks of the certificate files (controller-runtime: 10 s). */
export const DEFAULT_CERT_POLL_INTERVAL_MS = 10_000;

const log = getLogger(["rudder", "server", "certificates"]);

/** Where the certificate and key are, and how often to check them. */
export interface CertWatcherOptions {
  /** The directory, e.g. a mounted Secret. */
  certDir: string;
  /** File name of the PEM certificate (chain) in `certDir`; default `tls.crt`. */
  certName?: string;
  /** File name of the PEM private key in `certDir`; default `tls.key`. */
  keyName?: string;
  /** Milliseconds between checks; default {@linkcode DEFAULT_CERT_POLL_INTERVAL_MS}. */
  pollInterval?: number;
  /** The clock of the poll timer; default the real one (tests pass a `FakeClock`). */
  clock?: Clock;
}

/**
 * Watches a certificate directory and hands each new good pair to its listeners.
 *
 * @example
 * ```ts ignore
 * import { CertWatcher } from "./certwatcher.ts";
 *
 * const watcher = new CertWatcher({ certDir: "/tmp/k8s-webhook-server/serving-certs" });
 * const { cert } = await watcher.load();
 * watcher.onChange((pair) => console.log("new certificate", pair.cert.length));
 * const stop = new AbortController();
 * const running = watcher.start(stop.signal);
 * // … later
 * stop.abort();
 * await running;
 * ```
 */
export class CertWatcher implements Runnable {
  /** The certificate file. */
  readonly certPath: string;
  /** The key file. */
  readonly keyPath: string;
  readonly #dir: string;
  readonly #pollInterval: number;
  readonly #clock: Clock;
  readonly #listeners = new Set<(pair: TLSPair) => void | Promise<void>>();
  #current: TLSPair | undefined;
  #checking: Promise<boolean> | undefined;

  /** Creates a watcher; nothing is read until {@linkcode CertWatcher.load} or start. */
  constructor(options: CertWatcherOptions) {
    this.#dir = options.certDir;
    this.certPath = joinPath(options.certDir, options.certName ?? "tls.crt");
    this.keyPath = joinPath(options.certDir, options.keyName ?? "tls.key");
    this.#pollInterval = options.pollInterval ?? DEFAULT_CERT_POLL_INTERVAL_MS;
    this.#clock = options.clock ?? realClock;
  }

  /**
   * Reads and checks the pair now; the first good pair becomes current. Throws naming the file
   * and the problem, never the key's content.
   */
  async load(): Promise<TLSPair> {
    const pair = await readPair(this.certPath, this.keyPath);
    checkPair(pair, this.certPath, this.keyPath);
    this.#current ??= pair;
    return pair;
  }

  /** The last good pair, once loaded. */
  current(): TLSPair | undefined {
    return this.#current;
  }

  /**
   * Calls `listener` with each new good pair (not for an unchanged or a bad one); the pair is
   * taken once every listener has. Returns the function that unsubscribes it.
   */
  onChange(listener: (pair: TLSPair) => void | Promise<void>): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Checks the files now; resolves `true` when a new good pair was taken. A pair that does not
   * load, or that a listener fails to take, is logged and the last good one kept. Concurrent
   * calls share one check.
   */
  reload(): Promise<boolean> {
    this.#checking ??= this.#check().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  /**
   * Loads the pair unless loaded already (rejects when there is no good one), then checks the
   * files when the directory changes and every poll interval, until `signal` aborts.
   */
  async start(signal: AbortSignal): Promise<void> {
    // Loaded already (a server loads before it listens): a bad pair now is no reason to stop.
    const loaded = this.#current !== undefined;
    if (!loaded) await this.load();
    if (signal.aborted) return;
    // A change noticed while a check runs may come after its read: one more check follows.
    let again = false;
    const check = () => {
      if (signal.aborted) return;
      if (this.#checking) {
        again = true;
        return;
      }
      this.reload().catch((err) => {
        log.error("Checking the certificate in {dir} failed: {error}", {
          dir: this.#dir,
          error: errorMessage(err),
        });
      }).finally(() => {
        if (again) {
          again = false;
          check();
        }
      });
    };
    if (loaded) check();
    let timer: unknown;
    const poll = () => {
      check();
      timer = this.#clock.setTimeout(poll, this.#pollInterval);
    };
    timer = this.#clock.setTimeout(poll, this.#pollInterval);
    let watcher: FSWatcher | undefined;
    try {
      watcher = nodeFs().watch(this.#dir, check);
      watcher.on("error", (err) => {
        log.debug("Watching {dir} failed, polling alone: {error}", {
          dir: this.#dir,
          error: errorMessage(err),
        });
        watcher?.close();
      });
    } catch (err) {
      log.debug("Cannot watch {dir}, polling alone: {error}", {
        dir: this.#dir,
        error: errorMessage(err),
      });
    }
    await new Promise<void>((resolve) =>
      signal.addEventListener("abort", () => resolve(), { once: true })
    );
    this.#clock.clearTimeout(timer);
    watcher?.close();
    await this.#checking?.catch(() => {});
  }

  /** A certificate watcher runs on every replica. */
  needLeaderElection(): false {
    return false;
  }

  async #check(): Promise<boolean> {
    let pair: TLSPair;
    try {
      pair = await readPair(this.certPath, this.keyPath);
      if (pair.cert === this.#current?.cert && pair.key === this.#current?.key) return false;
      checkPair(pair, this.certPath, this.keyPath);
    } catch (err) {
      log.warn("Keeping the current certificate: {reason}", { reason: errorMessage(err) });
      return false;
    }
    try {
      for (const listener of this.#listeners) await listener(pair);
    } catch (err) {
      log.warn("The new certificate in {dir} cannot be served, keeping the current one: {reason}", {
        dir: this.#dir,
        reason: errorMessage(err),
      });
      return false;
    }
    this.#current = pair;
    log.info("Took the new certificate in {dir}", { dir: this.#dir });
    return true;
  }
}

/** Reads the pair; an error names the file and why, never its content. */
async function readPair(certPath: string, keyPath: string): Promise<TLSPair> {
  const read = async (path: string, what: string) => {
    try {
      return await readTextFile(path);
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
 * Throws, naming the file, when the certificate or the key cannot be parsed or the key is not
 * the certificate's.
 */
function checkPair(pair: TLSPair, certPath: string, keyPath: string): void {
  const keyLabel = /-----BEGIN ([A-Z ]*PRIVATE KEY)-----/.exec(pair.key)?.[1] ?? "PRIVATE KEY";
  const problem = checkKeyPair(pair.cert, keyLabel, pair.key);
  if (problem === "certificate") {
    throw new Error(`the TLS certificate ${certPath} cannot be parsed`);
  }
  // The parser's message may quote what it read; a key's text stays out of logs.
  if (problem === "key") throw new Error(`the TLS key ${keyPath} cannot be parsed`);
  if (problem === "mismatch") {
    throw new Error(`the TLS key ${keyPath} is not the key of the certificate ${certPath}`);
  }
}
