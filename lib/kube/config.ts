/**
 * Where the API server is and how to talk to it: kubeconfig files (merged `$KUBECONFIG`
 * lists, contexts, certificates, tokens, exec credential plugins) and in-cluster service
 * account configuration. The counterpart of client-go's `clientcmd` and `rest.InClusterConfig`.
 *
 * @module
 */

import { execFile } from "node:child_process";
import { Buffer } from "node:buffer";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import { getLogger } from "@logtape/logtape";
import { LineCounter, parseDocument } from "yaml";
import { abortable } from "../util/abort.ts";

/** Credentials to attach to one request. */
export interface Credentials {
  /** Extra request headers, e.g. `Authorization: Bearer …`. */
  headers?: Record<string, string>;
  /** A PEM client certificate and its PEM private key, for mutual TLS. */
  clientCertificate?: { cert: string; key: string };
}

/**
 * Supplies the credentials of a {@linkcode KubeConfig}. Implementations refresh what can
 * expire (a rotated token file, an exec plugin's token) and never log secrets.
 */
export interface AuthProvider {
  /** The credentials to use for the next request. */
  credentials(signal?: AbortSignal): Promise<Credentials>;
  /**
   * Called after the server answered 401 Unauthorized. Drops cached credentials and resolves
   * `true` when fetching them again may help, so the caller retries the request once.
   */
  invalidate?(): Promise<boolean>;
}

/**
 * Everything needed to reach one API server as one user: the counterpart of client-go's
 * `rest.Config`. Plain data plus an {@linkcode AuthProvider}.
 */
export interface KubeConfig {
  /** Base URL of the API server without a trailing slash, e.g. `https://127.0.0.1:6443`. */
  server: string;
  /** The default namespace: from the context, the in-cluster namespace file, else `default`. */
  namespace: string;
  /** PEM bundle of CAs that verify the server; unset means the runtime's root store. */
  caData?: string;
  /** Skip verification of the server's certificate (kubeconfig `insecure-skip-tls-verify`). */
  insecureSkipTLSVerify?: boolean;
  /** Server name to verify the certificate against, when it differs from the URL's host. */
  tlsServerName?: string;
  /** HTTP(S) proxy URL from the kubeconfig's `proxy-url`. */
  proxyURL?: string;
  /** How requests authenticate. */
  auth: AuthProvider;
  /** Name of the kubeconfig context this came from; unset in-cluster. */
  contextName?: string;
  /** Where this came from, for messages: the kubeconfig file(s) or `in-cluster`. */
  source: string;
}

/** Options of {@linkcode loadConfig}. */
export interface LoadConfigOptions {
  /** Path of a kubeconfig file; wins over `$KUBECONFIG`, in-cluster and `~/.kube/config`. */
  kubeconfig?: string;
  /** Context to use instead of the file's `current-context`. */
  context?: string;
}

const logger = getLogger(["rudder", "kube", "config"]);

/** Where in-cluster pods find their service account (the kubelet mounts it there). */
export const DEFAULT_SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** How long a token read from a file is trusted before the file is read again (client-go: 1 min). */
const TOKEN_FILE_MAX_AGE_MS = 60_000;

/** An exec credential is refreshed this long before it expires, so no request carries a dying token. */
const EXEC_EXPIRY_SKEW_MS = 10_000;

/** Only the tail of a failing plugin's stderr is shown: the end usually says what went wrong. */
const STDERR_TAIL_LINES = 10;

const EXEC_API_VERSIONS = [
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
] as const;

/** The cluster extension whose `extension` is handed to exec plugins as `spec.cluster.config`. */
const EXEC_CLUSTER_EXTENSION = "client.authentication.k8s.io/exec";

// ---------------------------------------------------------------------------------------------
// Errors

/**
 * A kubeconfig (or in-cluster configuration) that cannot be used. `file` is the file at fault
 * and `field` the path of the offending field inside it (e.g. `users[0].user.token`), when the
 * problem is one field. Messages never contain tokens, keys or passwords.
 *
 * @example Tell a broken kubeconfig from other failures
 * ```ts
 * import { KubeconfigError, loadKubeconfigFile } from "@rudder/operator/kube";
 *
 * try {
 *   await loadKubeconfigFile("/etc/operator/kubeconfig");
 * } catch (err) {
 *   if (err instanceof KubeconfigError) console.error(err.file, err.field, err.message);
 *   else throw err;
 * }
 * ```
 */
export class KubeconfigError extends Error {
  /** The file at fault: a kubeconfig, a file it references, or a service account file. */
  readonly file: string;
  /** Path of the offending field inside `file`, e.g. `clusters[1].cluster.server`. */
  readonly field?: string;

  /** Builds an error with a complete message and the file and field it concerns. */
  constructor(message: string, options: { file: string; field?: string; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "KubeconfigError";
    this.file = options.file;
    this.field = options.field;
  }
}

/** Where a value came from, so errors about it can name the file and the field. */
interface Origin {
  file: string;
  field: string;
}

function fieldError(origin: Origin, detail: string, cause?: unknown): KubeconfigError {
  return new KubeconfigError(`kubeconfig ${origin.file}: ${origin.field}: ${detail}`, {
    file: origin.file,
    field: origin.field,
    cause,
  });
}

function fileError(file: string, detail: string, cause?: unknown): KubeconfigError {
  return new KubeconfigError(`kubeconfig ${file}: ${detail}`, { file, cause });
}

/** A short reason for a failed file operation, without the stack or the file's content. */
function describeFsError(err: unknown): string {
  const code = err instanceof Error && "code" in err ? String(err.code) : undefined;
  switch (code) {
    case "ENOENT":
      return "no such file";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "is a directory";
    case undefined:
      return err instanceof Error ? err.message : String(err);
    default:
      return code;
  }
}

function isNotFoundError(err: unknown): boolean {
  return err instanceof Error && "code" in err && (err.code === "ENOENT" || err.code === "ENOTDIR");
}

function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

// ---------------------------------------------------------------------------------------------
// Auth providers

function copyCredentials(credentials: Credentials): Credentials {
  const copy: Credentials = {};
  if (credentials.headers) copy.headers = { ...credentials.headers };
  if (credentials.clientCertificate) copy.clientCertificate = { ...credentials.clientCertificate };
  return copy;
}

/** Credentials that never change: a static token, basic auth, a client certificate. */
class StaticAuthProvider implements AuthProvider {
  // Private fields keep secrets out of console.log / inspect output.
  readonly #credentials: Credentials;

  constructor(credentials: Credentials) {
    this.#credentials = credentials;
  }

  credentials(): Promise<Credentials> {
    return Promise.resolve(copyCredentials(this.#credentials));
  }

  invalidate(): Promise<boolean> {
    // The same static credentials would be refused again.
    return Promise.resolve(false);
  }
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

function combineAuthProviders(providers: AuthProvider[]): AuthProvider {
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
      text = await fs.promises.readFile(this.path, "utf8");
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

/** The cluster as an exec plugin sees it in `KUBERNETES_EXEC_INFO` (`spec.cluster`). */
export interface ExecClusterInfo {
  /** The API server URL. */
  server: string;
  /** Base64 of the PEM CA bundle. */
  "certificate-authority-data"?: string;
  /** Whether the server certificate is not verified. */
  "insecure-skip-tls-verify"?: boolean;
  /** Server name the certificate is verified against. */
  "tls-server-name"?: string;
  /** Proxy URL for requests to the server. */
  "proxy-url"?: string;
  /** The cluster's `client.authentication.k8s.io/exec` extension, if any. */
  config?: unknown;
}

/** Options of {@linkcode ExecCredentialProvider}: a kubeconfig `users[].user.exec` block. */
export interface ExecCredentialOptions {
  /** Executable to run, absolute or looked up on `PATH`. */
  command: string;
  /** Its arguments. */
  args?: string[];
  /** Extra environment variables on top of this process's environment. */
  env?: { name: string; value: string }[];
  /** `client.authentication.k8s.io/v1` or `client.authentication.k8s.io/v1beta1`. */
  apiVersion: string;
  /** `Never`, `IfAvailable` or `Always`; plugins never run interactively here. */
  interactiveMode?: string;
  /** Shown when the plugin cannot be run, e.g. how to install it. */
  installHint?: string;
  /** Passed as `spec.cluster` in `KUBERNETES_EXEC_INFO` (kubeconfig `provideClusterInfo`). */
  cluster?: ExecClusterInfo;
  /** Name of the kubeconfig user, for messages. */
  user: string;
  /** The kubeconfig file and field of the exec block, for messages. */
  origin: { file: string; field: string };
  /** Environment the plugin inherits; default `process.env`. */
  baseEnv?: Record<string, string | undefined>;
  /** Credentials are renewed this long before they expire; default 10 s. */
  expirySkewMs?: number;
  /** Clock in milliseconds since the epoch; tests replace it. Default `Date.now`. */
  now?: () => number;
}

interface CachedCredentials {
  credentials: Credentials;
  /** Epoch milliseconds after which the plugin must run again; unset means never. */
  renewAt?: number;
}

/**
 * Runs a client-go exec credential plugin (`aws eks get-token`, `gke-gcloud-auth-plugin`,
 * `kubelogin`, …) and caches what it prints until shortly before `status.expirationTimestamp`.
 * Concurrent callers share one run. Failures name the kubeconfig user and the command and show
 * the end of the plugin's stderr, never its stdout (which holds the secret).
 *
 * @example Run a plugin directly
 * ```ts
 * import { ExecCredentialProvider } from "@rudder/operator/kube";
 *
 * const auth = new ExecCredentialProvider({
 *   command: "aws",
 *   args: ["eks", "get-token", "--cluster-name", "prod"],
 *   apiVersion: "client.authentication.k8s.io/v1",
 *   user: "prod-admin",
 *   origin: { file: "/home/me/.kube/config", field: "users[0].user.exec" },
 * });
 * const { headers } = await auth.credentials();
 * ```
 */
export class ExecCredentialProvider implements AuthProvider {
  readonly #options: ExecCredentialOptions;
  readonly #now: () => number;
  readonly #skewMs: number;
  #cached?: CachedCredentials;
  #inFlight?: Promise<Credentials>;

  /** Checks the options; the plugin first runs on the first {@linkcode credentials} call. */
  constructor(options: ExecCredentialOptions) {
    if (!(EXEC_API_VERSIONS as readonly string[]).includes(options.apiVersion)) {
      throw fieldError(
        { ...options.origin, field: `${options.origin.field}.apiVersion` },
        `unsupported exec plugin apiVersion ${JSON.stringify(options.apiVersion)}; ` +
          `use one of ${EXEC_API_VERSIONS.join(", ")}`,
      );
    }
    const mode = options.interactiveMode;
    if (mode !== undefined && mode !== "Never" && mode !== "IfAvailable") {
      const field = { ...options.origin, field: `${options.origin.field}.interactiveMode` };
      if (mode === "Always") {
        throw fieldError(
          field,
          `user ${JSON.stringify(options.user)}: exec plugin requires interactive mode ` +
            `(interactiveMode: Always), but a controller never runs plugins interactively`,
        );
      }
      throw fieldError(field, `expected Never, IfAvailable or Always, got ${JSON.stringify(mode)}`);
    }
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#skewMs = options.expirySkewMs ?? EXEC_EXPIRY_SKEW_MS;
  }

  /** The plugin's token and/or client certificate; runs the plugin when none is cached. */
  credentials(signal?: AbortSignal): Promise<Credentials> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const cached = this.#cached;
    if (cached && (cached.renewAt === undefined || this.#now() < cached.renewAt)) {
      return Promise.resolve(copyCredentials(cached.credentials));
    }
    this.#inFlight ??= this.#run().finally(() => {
      this.#inFlight = undefined;
    });
    return abortable(this.#inFlight.then(copyCredentials), signal);
  }

  /** Drops the cached credentials so the plugin runs again; resolves `true`. */
  invalidate(): Promise<boolean> {
    this.#cached = undefined;
    return Promise.resolve(true);
  }

  async #run(): Promise<Credentials> {
    const { stdout } = await this.#exec();
    const cached = this.#parse(stdout);
    this.#cached = cached;
    return cached.credentials;
  }

  #exec(): Promise<{ stdout: string }> {
    const options = this.#options;
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.baseEnv ?? process.env)) {
      if (value !== undefined) env[name] = value;
    }
    for (const { name, value } of options.env ?? []) env[name] = value;
    const spec: Record<string, unknown> = { interactive: false };
    if (options.cluster) spec.cluster = options.cluster;
    env.KUBERNETES_EXEC_INFO = JSON.stringify({
      apiVersion: options.apiVersion,
      kind: "ExecCredential",
      spec,
    });
    return new Promise((resolve, reject) => {
      const child = execFile(
        options.command,
        options.args ?? [],
        { env, encoding: "utf8", maxBuffer: 16 * 1024 * 1024, windowsHide: true },
        (error, stdout, stderr) => {
          if (!error) {
            resolve({ stdout });
            return;
          }
          const code = (error as { code?: unknown }).code;
          let reason: string;
          if (code === "ENOENT") reason = "command not found";
          else if (code === "EACCES") reason = "command is not executable";
          else if (typeof code === "number") reason = `exit code ${code}`;
          else if (error.signal) reason = `killed by ${error.signal}`;
          else if (typeof code === "string") reason = code;
          else reason = "could not be run";
          reject(this.#failure(reason, String(stderr ?? ""), error));
        },
      );
      // Plugins must not wait for a terminal that is not there.
      child.stdin?.end();
    });
  }

  #parse(stdout: string): CachedCredentials {
    const apiVersion = this.#options.apiVersion;
    let output: unknown;
    try {
      output = JSON.parse(stdout);
    } catch {
      throw this.#failure("printed output that is not JSON");
    }
    if (typeof output !== "object" || output === null || Array.isArray(output)) {
      throw this.#failure(`printed a JSON ${describeType(output)}, not an ExecCredential object`);
    }
    const credential = output as Record<string, unknown>;
    if (credential.apiVersion !== apiVersion) {
      throw this.#failure(
        `printed apiVersion ${describeValue(credential.apiVersion)}, expected ${apiVersion}`,
      );
    }
    if (credential.kind !== "ExecCredential") {
      throw this.#failure(
        `printed kind ${describeValue(credential.kind)}, expected ExecCredential`,
      );
    }
    const status = credential.status;
    if (typeof status !== "object" || status === null || Array.isArray(status)) {
      throw this.#failure("printed an ExecCredential without status");
    }
    const { token, clientCertificateData, clientKeyData, expirationTimestamp } = status as Record<
      string,
      unknown
    >;
    for (const [name, value] of Object.entries({ token, clientCertificateData, clientKeyData })) {
      if (value !== undefined && value !== null && typeof value !== "string") {
        throw this.#failure(`printed status.${name} of type ${describeType(value)}, not a string`);
      }
    }
    const credentials: Credentials = {};
    if (typeof token === "string" && token !== "") {
      credentials.headers = { Authorization: `Bearer ${token}` };
    }
    const hasCert = typeof clientCertificateData === "string" && clientCertificateData !== "";
    const hasKey = typeof clientKeyData === "string" && clientKeyData !== "";
    if (hasCert !== hasKey) {
      throw this.#failure(
        hasCert
          ? "printed status.clientCertificateData without status.clientKeyData"
          : "printed status.clientKeyData without status.clientCertificateData",
      );
    }
    if (hasCert && hasKey) {
      credentials.clientCertificate = {
        cert: clientCertificateData as string,
        key: clientKeyData as string,
      };
    }
    if (!credentials.headers && !credentials.clientCertificate) {
      throw this.#failure("printed neither status.token nor status.clientCertificateData");
    }
    let renewAt: number | undefined;
    if (expirationTimestamp !== undefined && expirationTimestamp !== null) {
      const expiresAt = typeof expirationTimestamp === "string"
        ? Date.parse(expirationTimestamp)
        : Number.NaN;
      if (Number.isNaN(expiresAt)) {
        throw this.#failure(
          `printed status.expirationTimestamp ${describeValue(expirationTimestamp)}, ` +
            `not an RFC 3339 time`,
        );
      }
      renewAt = expiresAt - this.#skewMs;
    }
    return { credentials, renewAt };
  }

  #failure(reason: string, stderr = "", cause?: unknown): KubeconfigError {
    const { user, command, installHint, origin } = this.#options;
    let detail = `exec plugin for user ${JSON.stringify(user)} (command ${
      JSON.stringify(command)
    }) failed: ${reason}`;
    const tail = stderr.trimEnd().split("\n").slice(-STDERR_TAIL_LINES).join("\n").trim();
    if (tail !== "") detail += `\nstderr:\n${tail}`;
    if (installHint) detail += `\n${installHint.trim()}`;
    // The cause (execFile's error) carries stdout, which may hold a token: keep only its message.
    const safeCause = cause instanceof Error ? new Error(cause.message.split("\n")[0]) : undefined;
    return fieldError(origin, detail, safeCause);
  }
}

/** A short rendering of a value a plugin printed, for messages: strings only, cut short. */
function describeValue(value: unknown): string {
  if (typeof value === "string") {
    return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
  }
  return describeType(value);
}

// ---------------------------------------------------------------------------------------------
// Reading kubeconfig documents

/** Typed access to one mapping of a kubeconfig, with errors that name the file and field. */
class FieldReader {
  constructor(
    readonly file: string,
    readonly path: string,
    readonly value: Record<string, unknown>,
  ) {}

  origin(key: string): Origin {
    return { file: this.file, field: this.path === "" ? key : `${this.path}.${key}` };
  }

  #get(key: string): unknown {
    const value = this.value[key];
    // YAML `key:` with nothing after it means "unset", as in client-go.
    return value === null ? undefined : value;
  }

  #wrongType(key: string, expected: string, value: unknown): KubeconfigError {
    return fieldError(this.origin(key), `expected ${expected}, got ${describeType(value)}`);
  }

  string(key: string): string | undefined {
    const value = this.#get(key);
    if (value === undefined || typeof value === "string") return value;
    throw this.#wrongType(key, "a string", value);
  }

  /** A string that is `undefined` when empty: client-go treats `""` as unset. */
  nonEmptyString(key: string): string | undefined {
    const value = this.string(key);
    return value === "" ? undefined : value;
  }

  boolean(key: string): boolean | undefined {
    const value = this.#get(key);
    if (value === undefined || typeof value === "boolean") return value;
    throw this.#wrongType(key, "a boolean", value);
  }

  object(key: string): FieldReader | undefined {
    const value = this.#get(key);
    if (value === undefined) return undefined;
    if (typeof value !== "object" || Array.isArray(value)) {
      throw this.#wrongType(key, "a mapping", value);
    }
    return new FieldReader(this.file, this.origin(key).field, value as Record<string, unknown>);
  }

  list(key: string): FieldReader[] {
    const value = this.#get(key);
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw this.#wrongType(key, "a list", value);
    const field = this.origin(key).field;
    return value.map((item, index) => {
      if (typeof item !== "object" || item === null || Array.isArray(item)) {
        throw fieldError(
          { file: this.file, field: `${field}[${index}]` },
          `expected a mapping, got ${describeType(item)}`,
        );
      }
      return new FieldReader(this.file, `${field}[${index}]`, item as Record<string, unknown>);
    });
  }

  stringList(key: string): string[] | undefined {
    const value = this.#get(key);
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) throw this.#wrongType(key, "a list of strings", value);
    const field = this.origin(key).field;
    return value.map((item, index) => {
      if (typeof item === "string") return item;
      throw fieldError(
        { file: this.file, field: `${field}[${index}]` },
        `expected a string, got ${describeType(item)}`,
      );
    });
  }

  /** The raw value, for fields passed through untouched (an exec extension's config). */
  raw(key: string): unknown {
    return this.#get(key);
  }
}

/** Where a named kubeconfig entry was defined. */
interface EntrySource {
  /** The kubeconfig file that defined it. */
  file: string;
  /** The directory relative paths in it are resolved against. */
  baseDir: string;
  /** Its path in the file, e.g. `users[2]`. */
  path: string;
}

interface ClusterEntry extends EntrySource {
  name: string;
  /** The `cluster` mapping, read lazily: only the selected cluster must be usable. */
  cluster: FieldReader;
}

interface UserEntry extends EntrySource {
  name: string;
  user: FieldReader;
}

interface ContextEntry extends EntrySource {
  name: string;
  cluster?: string;
  user?: string;
  namespace?: string;
}

interface ParsedKubeconfig {
  file: string;
  clusters: ClusterEntry[];
  users: UserEntry[];
  contexts: ContextEntry[];
  currentContext?: string;
}

/** Checks the structure of one kubeconfig document; field contents are read when used. */
function readKubeconfig(document: unknown, file: string, baseDir: string): ParsedKubeconfig {
  if (document === null || document === undefined) {
    // An empty file is an empty config, as in client-go.
    return { file, clusters: [], users: [], contexts: [] };
  }
  if (typeof document !== "object" || Array.isArray(document)) {
    throw fileError(file, `expected a mapping at the top level, got ${describeType(document)}`);
  }
  const root = new FieldReader(file, "", document as Record<string, unknown>);
  const named = (item: FieldReader, key: string) => {
    const name = item.string("name");
    if (name === undefined) {
      throw fieldError(item.origin("name"), "missing; every entry needs a name");
    }
    const body = item.object(key) ?? new FieldReader(file, item.origin(key).field, {});
    return { name, body, source: { file, baseDir, path: item.path } };
  };
  const clusters = root.list("clusters").map((item) => {
    const { name, body, source } = named(item, "cluster");
    // Type errors anywhere in the file are reported, as client-go's decoder does.
    readClusterFields(body);
    return { ...source, name, cluster: body };
  });
  const users = root.list("users").map((item) => {
    const { name, body, source } = named(item, "user");
    readUserFields(body);
    return { ...source, name, user: body };
  });
  const contexts = root.list("contexts").map((item) => {
    const { name, body, source } = named(item, "context");
    return {
      ...source,
      name,
      cluster: body.nonEmptyString("cluster"),
      user: body.nonEmptyString("user"),
      namespace: body.nonEmptyString("namespace"),
    };
  });
  return {
    file,
    clusters,
    users,
    contexts,
    currentContext: root.nonEmptyString("current-context"),
  };
}

interface ClusterFields {
  server?: string;
  certificateAuthority?: string;
  certificateAuthorityData?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  proxyURL?: string;
  execExtension?: unknown;
}

function readClusterFields(cluster: FieldReader): ClusterFields {
  let execExtension: unknown;
  const extensions = cluster.raw("extensions");
  // Extensions are otherwise ignored, so a malformed one is not an error.
  if (Array.isArray(extensions)) {
    for (const entry of extensions) {
      if (typeof entry === "object" && entry !== null && entry.name === EXEC_CLUSTER_EXTENSION) {
        execExtension = entry.extension;
        break;
      }
    }
  }
  return {
    server: cluster.nonEmptyString("server"),
    certificateAuthority: cluster.nonEmptyString("certificate-authority"),
    certificateAuthorityData: cluster.nonEmptyString("certificate-authority-data"),
    insecureSkipTLSVerify: cluster.boolean("insecure-skip-tls-verify"),
    tlsServerName: cluster.nonEmptyString("tls-server-name"),
    proxyURL: cluster.nonEmptyString("proxy-url"),
    execExtension,
  };
}

interface ExecFields {
  reader: FieldReader;
  command?: string;
  args?: string[];
  env: { name: string; value: string }[];
  apiVersion?: string;
  interactiveMode?: string;
  installHint?: string;
  provideClusterInfo?: boolean;
}

interface UserFields {
  clientCertificate?: string;
  clientCertificateData?: string;
  clientKey?: string;
  clientKeyData?: string;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  exec?: ExecFields;
  authProvider?: { reader: FieldReader; name?: string };
}

function readUserFields(user: FieldReader): UserFields {
  const exec = user.object("exec");
  const authProvider = user.object("auth-provider");
  return {
    clientCertificate: user.nonEmptyString("client-certificate"),
    clientCertificateData: user.nonEmptyString("client-certificate-data"),
    clientKey: user.nonEmptyString("client-key"),
    clientKeyData: user.nonEmptyString("client-key-data"),
    token: user.nonEmptyString("token"),
    tokenFile: user.nonEmptyString("tokenFile"),
    username: user.nonEmptyString("username"),
    password: user.nonEmptyString("password"),
    exec: exec && {
      reader: exec,
      command: exec.nonEmptyString("command"),
      args: exec.stringList("args"),
      env: exec.list("env").map((variable) => {
        const name = variable.string("name");
        const value = variable.string("value");
        if (name === undefined || name === "") {
          throw fieldError(variable.origin("name"), "missing; every env entry needs a name");
        }
        if (value === undefined) {
          throw fieldError(variable.origin("value"), `missing for env variable ${name}`);
        }
        return { name, value };
      }),
      apiVersion: exec.nonEmptyString("apiVersion"),
      interactiveMode: exec.nonEmptyString("interactiveMode"),
      installHint: exec.nonEmptyString("installHint"),
      provideClusterInfo: exec.boolean("provideClusterInfo"),
    },
    authProvider: authProvider && { reader: authProvider, name: authProvider.string("name") },
  };
}

// ---------------------------------------------------------------------------------------------
// Turning the selected context into a KubeConfig

function resolvePath(baseDir: string, file: string): string {
  return path.resolve(baseDir, file);
}

/** Decodes a kubeconfig `-data` field; Go's decoder also ignores line breaks. */
function decodeBase64(value: string, origin: Origin): string {
  const compact = value.replace(/[\r\n]/g, "");
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    throw fieldError(origin, "invalid base64");
  }
  return Buffer.from(compact, "base64").toString("utf8");
}

function requirePem(text: string, origin: Origin, what: string): string {
  if (!text.includes("-----BEGIN ")) throw fieldError(origin, `${what} contains no PEM block`);
  return text;
}

async function readReferencedFile(filePath: string, origin: Origin): Promise<string> {
  try {
    return await fs.promises.readFile(filePath, "utf8");
  } catch (err) {
    throw fieldError(origin, `cannot read ${filePath} (${describeFsError(err)})`, err);
  }
}

/** PEM text from a `-data` field (preferred, as in client-go) or the file a path field names. */
async function readPem(
  reader: FieldReader,
  baseDir: string,
  fileKey: string,
  dataKey: string,
  data: string | undefined,
  filePath: string | undefined,
): Promise<string | undefined> {
  if (data !== undefined) {
    const origin = reader.origin(dataKey);
    return requirePem(decodeBase64(data, origin), origin, "the decoded data");
  }
  if (filePath !== undefined) {
    const origin = reader.origin(fileKey);
    const resolved = resolvePath(baseDir, filePath);
    return requirePem(await readReferencedFile(resolved, origin), origin, resolved);
  }
  return undefined;
}

interface ResolvedCluster {
  server: string;
  caData?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  proxyURL?: string;
  execExtension?: unknown;
}

async function resolveCluster(entry: ClusterEntry): Promise<ResolvedCluster> {
  const reader = entry.cluster;
  const fields = readClusterFields(reader);
  if (fields.server === undefined) {
    throw fieldError(
      reader.origin("server"),
      `cluster ${JSON.stringify(entry.name)} has no server`,
    );
  }
  let url: URL | undefined;
  try {
    url = new URL(fields.server);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) {
    throw fieldError(
      reader.origin("server"),
      `expected an http or https URL, got ${JSON.stringify(fields.server)}`,
    );
  }
  if (fields.proxyURL !== undefined && !URL.canParse(fields.proxyURL)) {
    throw fieldError(reader.origin("proxy-url"), `not a URL: ${JSON.stringify(fields.proxyURL)}`);
  }
  const caData = await readPem(
    reader,
    entry.baseDir,
    "certificate-authority",
    "certificate-authority-data",
    fields.certificateAuthorityData,
    fields.certificateAuthority,
  );
  if (caData !== undefined && fields.insecureSkipTLSVerify) {
    // client-go refuses this too: the user asked for two contradicting things.
    throw fieldError(
      reader.origin("insecure-skip-tls-verify"),
      `cluster ${JSON.stringify(entry.name)} sets both a certificate authority and ` +
        `insecure-skip-tls-verify; remove one`,
    );
  }
  const resolved: ResolvedCluster = { server: fields.server.replace(/\/+$/, "") };
  if (caData !== undefined) resolved.caData = caData;
  if (fields.insecureSkipTLSVerify) resolved.insecureSkipTLSVerify = true;
  if (fields.tlsServerName !== undefined) resolved.tlsServerName = fields.tlsServerName;
  if (fields.proxyURL !== undefined) resolved.proxyURL = fields.proxyURL;
  if (fields.execExtension !== undefined) resolved.execExtension = fields.execExtension;
  return resolved;
}

function execClusterInfo(cluster: ResolvedCluster): ExecClusterInfo {
  const info: ExecClusterInfo = { server: cluster.server };
  if (cluster.caData !== undefined) {
    info["certificate-authority-data"] = Buffer.from(cluster.caData, "utf8").toString("base64");
  }
  if (cluster.insecureSkipTLSVerify) info["insecure-skip-tls-verify"] = true;
  if (cluster.tlsServerName !== undefined) info["tls-server-name"] = cluster.tlsServerName;
  if (cluster.proxyURL !== undefined) info["proxy-url"] = cluster.proxyURL;
  if (cluster.execExtension !== undefined) info.config = cluster.execExtension;
  return info;
}

async function resolveAuth(
  entry: UserEntry | undefined,
  cluster: ResolvedCluster,
  environment: ConfigEnvironment,
): Promise<AuthProvider> {
  if (!entry) return new StaticAuthProvider({});
  const reader = entry.user;
  const fields = readUserFields(reader);
  const user = JSON.stringify(entry.name);
  if (fields.authProvider) {
    const name = fields.authProvider.name ?? "(unnamed)";
    throw fieldError(
      reader.origin("auth-provider"),
      `user ${user}: auth-provider ${name} is not supported; use an exec credential plugin`,
    );
  }
  const providers: AuthProvider[] = [];

  const cert = await readPem(
    reader,
    entry.baseDir,
    "client-certificate",
    "client-certificate-data",
    fields.clientCertificateData,
    fields.clientCertificate,
  );
  const key = await readPem(
    reader,
    entry.baseDir,
    "client-key",
    "client-key-data",
    fields.clientKeyData,
    fields.clientKey,
  );
  if (cert !== undefined && key === undefined) {
    throw fieldError(
      reader.origin("client-key"),
      `user ${user} has a client certificate but no client-key or client-key-data`,
    );
  }
  if (key !== undefined && cert === undefined) {
    throw fieldError(
      reader.origin("client-certificate"),
      `user ${user} has a client key but no client-certificate or client-certificate-data`,
    );
  }
  if (cert !== undefined && key !== undefined) {
    providers.push(new StaticAuthProvider({ clientCertificate: { cert, key } }));
  }

  const hasToken = fields.token !== undefined || fields.tokenFile !== undefined;
  if (hasToken && fields.username !== undefined) {
    throw fieldError(
      reader.origin("username"),
      `user ${user} sets both a token and a username/password; only one may be used`,
    );
  }
  if (fields.password !== undefined && fields.username === undefined) {
    throw fieldError(reader.origin("username"), `user ${user} has a password but no username`);
  }
  if (fields.token !== undefined) {
    // A literal token wins over tokenFile, as in client-go.
    providers.push(
      new StaticAuthProvider({ headers: { Authorization: `Bearer ${fields.token}` } }),
    );
  } else if (fields.tokenFile !== undefined) {
    const source = new FileTokenSource({
      path: resolvePath(entry.baseDir, fields.tokenFile),
      origin: reader.origin("tokenFile"),
      now: environment.now,
    });
    // Read now so a missing file fails loading, not the first request.
    await source.token();
    providers.push(source);
  } else if (fields.username !== undefined) {
    const basic = Buffer.from(`${fields.username}:${fields.password ?? ""}`, "utf8")
      .toString("base64");
    providers.push(new StaticAuthProvider({ headers: { Authorization: `Basic ${basic}` } }));
  }

  if (fields.exec) {
    const exec = fields.exec;
    const origin = reader.origin("exec");
    if (exec.command === undefined) {
      throw fieldError(exec.reader.origin("command"), `user ${user}: exec plugin has no command`);
    }
    if (exec.apiVersion === undefined) {
      throw fieldError(
        exec.reader.origin("apiVersion"),
        `user ${user}: exec plugin has no apiVersion`,
      );
    }
    // Like client-go: a command with a slash is a path relative to the kubeconfig, a bare
    // name is looked up on PATH.
    const command = exec.command.includes("/") || exec.command.includes(path.sep)
      ? resolvePath(entry.baseDir, exec.command)
      : exec.command;
    providers.push(
      new ExecCredentialProvider({
        command,
        args: exec.args,
        env: exec.env,
        apiVersion: exec.apiVersion,
        interactiveMode: exec.interactiveMode,
        installHint: exec.installHint,
        cluster: exec.provideClusterInfo ? execClusterInfo(cluster) : undefined,
        user: entry.name,
        origin,
        baseEnv: environment.env,
        now: environment.now,
      }),
    );
  }
  return combineAuthProviders(providers);
}

/** clusters, users and contexts of several files, the first definition of a name winning. */
interface MergedKubeconfig {
  source: string;
  files: string[];
  clusters: Map<string, ClusterEntry>;
  users: Map<string, UserEntry>;
  contexts: Map<string, ContextEntry>;
  currentContext?: { name: string; file: string };
}

function mergeKubeconfigs(parsed: ParsedKubeconfig[], source: string): MergedKubeconfig {
  const merged: MergedKubeconfig = {
    source,
    files: parsed.map((file) => file.file),
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
  };
  for (const file of parsed) {
    for (const cluster of file.clusters) {
      if (!merged.clusters.has(cluster.name)) merged.clusters.set(cluster.name, cluster);
    }
    for (const user of file.users) {
      if (!merged.users.has(user.name)) merged.users.set(user.name, user);
    }
    for (const context of file.contexts) {
      if (!merged.contexts.has(context.name)) merged.contexts.set(context.name, context);
    }
    if (!merged.currentContext && file.currentContext !== undefined) {
      merged.currentContext = { name: file.currentContext, file: file.file };
    }
  }
  return merged;
}

function listNames(names: Iterable<string>): string {
  const all = [...names].map((name) => JSON.stringify(name));
  return all.length === 0 ? "none" : all.join(", ");
}

async function buildKubeConfig(
  merged: MergedKubeconfig,
  contextOption: string | undefined,
  environment: ConfigEnvironment,
): Promise<KubeConfig> {
  let contextName: string;
  if (contextOption !== undefined && contextOption !== "") {
    contextName = contextOption;
    if (!merged.contexts.has(contextName)) {
      throw fileError(
        merged.source,
        `context ${JSON.stringify(contextName)} (from the context option) not found; ` +
          `contexts: ${listNames(merged.contexts.keys())}`,
      );
    }
  } else if (merged.currentContext) {
    contextName = merged.currentContext.name;
    if (!merged.contexts.has(contextName)) {
      throw fieldError(
        { file: merged.currentContext.file, field: "current-context" },
        `names context ${JSON.stringify(contextName)}, which is not defined; ` +
          `contexts: ${listNames(merged.contexts.keys())}`,
      );
    }
  } else {
    throw fieldError(
      { file: merged.source, field: "current-context" },
      `not set and no context option given; contexts: ${listNames(merged.contexts.keys())}`,
    );
  }
  const context = merged.contexts.get(contextName)!;
  const contextField = (key: string): Origin => ({
    file: context.file,
    field: `${context.path}.context.${key}`,
  });
  if (context.cluster === undefined) {
    throw fieldError(
      contextField("cluster"),
      `context ${JSON.stringify(contextName)} has no cluster`,
    );
  }
  const clusterEntry = merged.clusters.get(context.cluster);
  if (!clusterEntry) {
    throw fieldError(
      contextField("cluster"),
      `cluster ${JSON.stringify(context.cluster)} is not defined; ` +
        `clusters: ${listNames(merged.clusters.keys())}`,
    );
  }
  let userEntry: UserEntry | undefined;
  if (context.user !== undefined) {
    userEntry = merged.users.get(context.user);
    if (!userEntry) {
      throw fieldError(
        contextField("user"),
        `user ${JSON.stringify(context.user)} is not defined; users: ${
          listNames(merged.users.keys())
        }`,
      );
    }
  }
  const cluster = await resolveCluster(clusterEntry);
  const auth = await resolveAuth(userEntry, cluster, environment);
  const config: KubeConfig = {
    server: cluster.server,
    namespace: context.namespace ?? "default",
    auth,
    contextName,
    source: merged.source,
  };
  if (cluster.caData !== undefined) config.caData = cluster.caData;
  if (cluster.insecureSkipTLSVerify) config.insecureSkipTLSVerify = true;
  if (cluster.tlsServerName !== undefined) config.tlsServerName = cluster.tlsServerName;
  if (cluster.proxyURL !== undefined) config.proxyURL = cluster.proxyURL;
  return config;
}

function parseKubeconfigText(text: string, file: string): unknown {
  const lineCounter = new LineCounter();
  // prettyErrors would quote the offending lines, which may hold a token.
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  const [error] = document.errors;
  if (error) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    throw new KubeconfigError(
      `kubeconfig ${file}: invalid YAML at line ${line}, column ${col}: ${error.message}`,
      { file },
    );
  }
  return document.toJS();
}

/** Reads the files that exist; `undefined` for a missing one, which callers skip. */
async function readKubeconfigFile(
  file: string,
): Promise<ParsedKubeconfig | undefined> {
  let text: string;
  try {
    text = await fs.promises.readFile(file, "utf8");
  } catch (err) {
    if (isNotFoundError(err)) return undefined;
    throw fileError(file, `cannot read (${describeFsError(err)})`, err);
  }
  return readKubeconfig(parseKubeconfigText(text, file), file, path.dirname(file));
}

async function loadFiles(
  paths: string | string[],
  context: string | undefined,
  environment: ConfigEnvironment,
): Promise<KubeConfig> {
  // client-go drops duplicates of a $KUBECONFIG list, keeping the first.
  const listed = (Array.isArray(paths) ? paths : [paths]).filter((entry) => entry !== "");
  const unique = [...new Set(listed.map((entry) => path.resolve(entry)))];
  if (unique.length === 0) {
    throw new KubeconfigError("no kubeconfig file given", { file: "" });
  }
  const parsed: ParsedKubeconfig[] = [];
  for (const file of unique) {
    const one = await readKubeconfigFile(file);
    if (one) parsed.push(one);
  }
  if (parsed.length === 0) {
    const detail = unique.length === 1
      ? `kubeconfig ${unique[0]}: no such file`
      : `none of the kubeconfig files exist: ${unique.join(", ")}`;
    throw new KubeconfigError(detail, { file: unique.join(", ") });
  }
  const source = parsed.map((file) => file.file).join(", ");
  return await buildKubeConfig(mergeKubeconfigs(parsed, source), context, environment);
}

/**
 * Loads kubeconfig files and returns the configuration of one context: `options.context`, else
 * the `current-context`. Several files are merged like client-go merges `$KUBECONFIG`: for each
 * cluster, user and context name the first file defining it wins, `current-context` comes from
 * the first file that sets one, and missing files are skipped (it is an error when none
 * exists). Relative paths inside a file are resolved against that file's directory.
 *
 * @example Use a context of a given file
 * ```ts
 * import { loadKubeconfigFile } from "@rudder/operator/kube";
 *
 * const config = await loadKubeconfigFile("/home/me/.kube/config", { context: "kind-dev" });
 * console.log(config.server, config.namespace);
 * ```
 */
export function loadKubeconfigFile(
  paths: string | string[],
  options: { context?: string } = {},
): Promise<KubeConfig> {
  return loadFiles(paths, options.context, {});
}

/**
 * Builds the configuration of one context from a kubeconfig that is already parsed (for
 * example a Secret's `value` decoded with `yaml`). Relative paths resolve against
 * `options.baseDir` (default: the working directory); `options.source` names the object in
 * messages (default `kubeconfig object`).
 *
 * @example
 * ```ts
 * import { kubeconfigFromObject } from "@rudder/operator/kube";
 *
 * const config = await kubeconfigFromObject({
 *   clusters: [{ name: "dev", cluster: { server: "https://127.0.0.1:6443/" } }],
 *   users: [{ name: "dev", user: { token: "abc" } }],
 *   contexts: [{ name: "dev", context: { cluster: "dev", user: "dev" } }],
 *   "current-context": "dev",
 * });
 * console.log(config.server); // https://127.0.0.1:6443
 * ```
 */
export async function kubeconfigFromObject(
  obj: unknown,
  options: { context?: string; source?: string; baseDir?: string } = {},
): Promise<KubeConfig> {
  const source = options.source ?? "kubeconfig object";
  const baseDir = path.resolve(options.baseDir ?? process.cwd());
  const parsed = readKubeconfig(obj, source, baseDir);
  return await buildKubeConfig(mergeKubeconfigs([parsed], source), options.context, {});
}

// ---------------------------------------------------------------------------------------------
// In-cluster

/**
 * The configuration of a pod talking to its own cluster with its service account, like
 * client-go's `rest.InClusterConfig`: the server from `KUBERNETES_SERVICE_HOST` and
 * `KUBERNETES_SERVICE_PORT`, the CA from `ca.crt`, the namespace from `namespace` and a token
 * from `token` that is re-read at least every minute, because the kubelet rotates it.
 *
 * @example
 * ```ts
 * import { inClusterConfig } from "@rudder/operator/kube";
 *
 * const config = await inClusterConfig();
 * console.log(config.server, config.namespace); // https://10.96.0.1:443 my-namespace
 * ```
 */
export async function inClusterConfig(
  options: { serviceAccountDir?: string; env?: Record<string, string | undefined> } = {},
): Promise<KubeConfig> {
  const dir = options.serviceAccountDir ?? DEFAULT_SERVICE_ACCOUNT_DIR;
  const env = options.env ?? process.env;
  return await buildInClusterConfig(dir, env, {});
}

async function buildInClusterConfig(
  dir: string,
  env: Record<string, string | undefined>,
  environment: ConfigEnvironment,
): Promise<KubeConfig> {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeconfigError(
      "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set",
      { file: dir },
    );
  }
  const tokenSource = new FileTokenSource({ path: path.join(dir, "token"), now: environment.now });
  try {
    await tokenSource.token();
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new KubeconfigError(`in-cluster config: service account ${reason}`, {
      file: tokenSource.path,
      cause: err,
    });
  }
  const caFile = path.join(dir, "ca.crt");
  let caData: string | undefined;
  try {
    caData = await fs.promises.readFile(caFile, "utf8");
  } catch (err) {
    if (!isNotFoundError(err)) {
      throw new KubeconfigError(
        `in-cluster config: cannot read ${caFile} (${describeFsError(err)})`,
        { file: caFile, cause: err },
      );
    }
    // client-go goes on without it too; the server may have a publicly trusted certificate.
    logger.warn("In-cluster CA file {path} not found; using the runtime's root certificates", {
      path: caFile,
    });
  }
  let namespace = "default";
  try {
    namespace = (await fs.promises.readFile(path.join(dir, "namespace"), "utf8")).trim() ||
      "default";
  } catch (err) {
    if (!isNotFoundError(err)) {
      throw new KubeconfigError(
        `in-cluster config: cannot read ${path.join(dir, "namespace")} (${describeFsError(err)})`,
        { file: path.join(dir, "namespace"), cause: err },
      );
    }
  }
  const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const config: KubeConfig = {
    server: `https://${bracketed}:${port}`,
    namespace,
    auth: tokenSource,
    source: "in-cluster",
  };
  if (caData !== undefined) config.caData = caData;
  return config;
}

// ---------------------------------------------------------------------------------------------
// loadConfig

/**
 * What {@linkcode loadConfigFrom} reads from the machine, so tests can supply their own.
 * Internal: applications call {@linkcode loadConfig}.
 */
export interface ConfigEnvironment {
  /** Environment variables (`KUBECONFIG`, `KUBERNETES_SERVICE_*`); default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Home directory holding `.kube/config`; default `os.homedir()`. */
  homeDir?: string;
  /** Service account directory; default {@linkcode DEFAULT_SERVICE_ACCOUNT_DIR}. */
  serviceAccountDir?: string;
  /** Clock for token caches, in milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
}

/**
 * {@linkcode loadConfig} with the environment variables, home directory and service account
 * directory given explicitly. Internal: for tests.
 *
 * @example
 * ```ts
 * import { loadConfigFrom } from "./config.ts";
 *
 * const config = await loadConfigFrom({ env: {}, homeDir: "/tmp/fake-home" });
 * ```
 */
export async function loadConfigFrom(
  environment: ConfigEnvironment,
  options: LoadConfigOptions = {},
): Promise<KubeConfig> {
  const env = environment.env ?? process.env;
  if (options.kubeconfig !== undefined && options.kubeconfig !== "") {
    return await loadFiles(options.kubeconfig, options.context, environment);
  }
  const tried = ["kubeconfig option: not given"];

  const list = env.KUBECONFIG;
  if (list !== undefined && list !== "") {
    return await loadFiles(list.split(path.delimiter), options.context, environment);
  }
  tried.push("$KUBECONFIG: not set");

  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    const dir = environment.serviceAccountDir ?? DEFAULT_SERVICE_ACCOUNT_DIR;
    try {
      return await buildInClusterConfig(dir, env, environment);
    } catch (err) {
      // controller-runtime falls back to ~/.kube/config too, e.g. when the pod has no token.
      const reason = err instanceof Error ? err.message : String(err);
      logger.debug("In-cluster config unusable, trying ~/.kube/config: {reason}", { reason });
      tried.push(`in-cluster: ${reason}`);
    }
  } else {
    tried.push("in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT not set");
  }

  const homeFile = path.join(environment.homeDir ?? os.homedir(), ".kube", "config");
  const parsed = await readKubeconfigFile(homeFile);
  if (parsed) {
    return await buildKubeConfig(
      mergeKubeconfigs([parsed], homeFile),
      options.context,
      environment,
    );
  }
  tried.push(`${homeFile}: no such file`);
  throw new KubeconfigError(`no Kubernetes configuration found; tried ${tried.join("; ")}`, {
    file: homeFile,
  });
}

/**
 * Finds the configuration the way controller-runtime's `GetConfig` does: the
 * `options.kubeconfig` file; else the files listed in `$KUBECONFIG` (merged); else the pod's
 * service account when `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` are set; else
 * `~/.kube/config`. `options.context` replaces the `current-context`. Throws a
 * {@linkcode KubeconfigError} that lists every place tried when nothing is found.
 *
 * @example
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 *
 * const config = await loadConfig();
 * console.log(`talking to ${config.server} (from ${config.source})`);
 * ```
 */
export function loadConfig(options: LoadConfigOptions = {}): Promise<KubeConfig> {
  return loadConfigFrom({}, options);
}
