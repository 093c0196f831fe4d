/**
 * Auth providers for the credentials a kubeconfig user can hold: a static bearer token, basic
 * auth, a client certificate, a token file that something rotates ({@linkcode FileTokenSource}),
 * and the combination of several. The exec credential plugin lives in exec.ts.
 *
 * @module
 */

import { encodeBase64 } from "../../util/encoding.ts";
import { getLogger } from "@logtape/logtape";
import { abortable } from "../../util/abort.ts";
import { describeFsError, fieldError, KubeconfigError, type Origin } from "./errors.ts";
import type { AuthProvider, Credentials } from "./types.ts";
import { readTextFile } from "../../util/files.ts";

const logger = getLogger(["rudder", "kube", "config"]);

/** How long a token read from a file is trusted before the file is read again (client-go: 1 min). */
const TOKEN_FILE_MAX_AGE_MS = 60_000;

/** A copy a caller may change without changing the credentials the next caller gets. */
export function copyCredentials(credentials: Credentials): Credentials {
  const copy: Credentials = {};
  if (credentials.headers) copy.headers = { ...credentials.headers };
  if (credentials.clientCertificate) copy.clientCertificate = { ...credentials.clientCertificate };
  return copy;
}

/** Credentials that never change: a static token, basic auth, a client certificate. */
export class StaticAuthProvider implements AuthProvider {
  // Private fields keep secrets out of console.log / inspect output.
  readonly #credentials: Credentials;

  /** Hands out copies of `credentials`. */
  constructor(credentials: Credentials) {
    this.#credentials = credentials;
  }

  /** A copy of the credentials. */
  credentials(): Promise<Credentials> {
    return Promise.resolve(copyCredentials(this.#credentials));
  }

  /** Resolves `false`: the same static credentials would be refused again. */
  invalidate(): Promise<boolean> {
    return Promise.resolve(false);
  }
}

/** `Authorization: Bearer <token>`. */
export function bearerAuth(token: string): AuthProvider {
  return new StaticAuthProvider({ headers: { Authorization: `Bearer ${token}` } });
}

/** `Authorization: Basic base64(<username>:<password>)`. */
export function basicAuth(username: string, password: string): AuthProvider {
  const basic = encodeBase64(`${username}:${password}`);
  return new StaticAuthProvider({ headers: { Authorization: `Basic ${basic}` } });
}

/** A client certificate and its key, for mutual TLS. */
export function clientCertificateAuth(cert: string, key: string): AuthProvider {
  return new StaticAuthProvider({ clientCertificate: { cert, key } });
}

/**
 * Several providers at once, e.g. a client certificate plus a bearer token. For a header or the
 * client certificate, the first provider that supplies it wins.
 */
class CombinedAuthProvider implements AuthProvider {
  readonly #providers: AuthProvider[];

  constructor(providers: AuthProvider[]) {
    this.#providers = providers;
  }

  async credentials(signal?: AbortSignal): Promise<Credentials> {
    const all = await Promise.all(this.#providers.map((provider) => provider.credentials(signal)));
    const merged: Credentials = {};
    for (const credentials of all) {
      for (const [name, value] of Object.entries(credentials.headers ?? {})) {
        merged.headers ??= {};
        if (!(name in merged.headers)) merged.headers[name] = value;
      }
      if (credentials.clientCertificate && !merged.clientCertificate) {
        merged.clientCertificate = credentials.clientCertificate;
      }
    }
    return merged;
  }

  async invalidate(): Promise<boolean> {
    const results = await Promise.all(
      this.#providers.map((provider) => provider.invalidate?.() ?? Promise.resolve(false)),
    );
    return results.some(Boolean);
  }
}

/** One provider for all of `providers`; no credentials at all for an empty list. */
export function combineAuthProviders(providers: AuthProvider[]): AuthProvider {
  if (providers.length === 0) return new StaticAuthProvider({});
  if (providers.length === 1) return providers[0];
  return new CombinedAuthProvider(providers);
}

/** Options of {@linkcode FileTokenSource}. */
export interface FileTokenSourceOptions {
  /** The file holding the bearer token. */
  path: string;
  /** How long a read token is used before the file is read again; default 60 s. */
  maxAgeMs?: number;
  /** Clock in milliseconds since the epoch; tests replace it. Default `Date.now`. */
  now?: () => number;
  /** The kubeconfig file and field that named `path`, so errors can point at them. */
  origin?: { file: string; field: string };
}

/**
 * A bearer token read from a file that something else rotates (a projected service account
 * token, a kubeconfig `tokenFile`). The file is read again once the token is older than
 * `maxAgeMs`, or after {@linkcode FileTokenSource.invalidate}. When a re-read fails, the last
 * good token keeps being used, as client-go does, because a rotation may be half-written.
 *
 * @example Send a rotated token
 * ```ts
 * import { FileTokenSource } from "@rudder/operator/kube";
 *
 * const source = new FileTokenSource({ path: "/var/run/secrets/tokens/api-token" });
 * const { headers } = await source.credentials(); // { Authorization: "Bearer …" }
 * ```
 */
export class FileTokenSource implements AuthProvider {
  /** The file holding the token. */
  readonly path: string;
  /** How long a read token is used before the file is read again. */
  readonly maxAgeMs: number;
  readonly #now: () => number;
  readonly #origin?: Origin;
  #token?: string;
  #readAt = Number.NEGATIVE_INFINITY;
  #inFlight?: Promise<string>;

  /** Creates a source; nothing is read until the first {@linkcode FileTokenSource.token}. */
  constructor(options: FileTokenSourceOptions) {
    this.path = options.path;
    this.maxAgeMs = options.maxAgeMs ?? TOKEN_FILE_MAX_AGE_MS;
    this.#now = options.now ?? Date.now;
    this.#origin = options.origin;
  }

  /** The current token, trimmed of surrounding whitespace; reads the file when stale. */
  token(signal?: AbortSignal): Promise<string> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#token !== undefined && this.#now() - this.#readAt < this.maxAgeMs) {
      return Promise.resolve(this.#token);
    }
    this.#inFlight ??= this.#reload().finally(() => {
      this.#inFlight = undefined;
    });
    return abortable(this.#inFlight, signal);
  }

  /** `Authorization: Bearer <token>`. */
  async credentials(signal?: AbortSignal): Promise<Credentials> {
    return { headers: { Authorization: `Bearer ${await this.token(signal)}` } };
  }

  /** Makes the next request read the file again; always worth a retry, so resolves `true`. */
  invalidate(): Promise<boolean> {
    this.#readAt = Number.NEGATIVE_INFINITY;
    return Promise.resolve(true);
  }

  async #reload(): Promise<string> {
    try {
      const token = await this.#read();
      this.#token = token;
      this.#readAt = this.#now();
      return token;
    } catch (err) {
      if (this.#token === undefined) throw err;
      // The message names the file and the reason only; the token never enters it.
      logger.warn("Cannot re-read token file {path}, using the previous token: {reason}", {
        path: this.path,
        reason: err instanceof Error ? err.message : String(err),
      });
      return this.#token;
    }
  }

  async #read(): Promise<string> {
    let text: string;
    try {
      text = await readTextFile(this.path);
    } catch (err) {
      throw this.#error(`cannot read token file ${this.path} (${describeFsError(err)})`, err);
    }
    const token = text.trim();
    if (token === "") throw this.#error(`token file ${this.path} is empty`);
    return token;
  }

  #error(detail: string, cause?: unknown): KubeconfigError {
    if (this.#origin) return fieldError(this.#origin, detail, cause);
    return new KubeconfigError(detail, { file: this.path, cause });
  }
}
