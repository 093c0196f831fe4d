/**
 * The client-go exec credential plugin (`users[].user.exec`): runs a command such as
 * `aws eks get-token`, reads the `ExecCredential` it prints and caches the token or client
 * certificate until shortly before it expires. A plugin that does not answer within a
 * deadline (30 s by default) is killed with its whole process group. Messages name the user,
 * the command and the reason, and at most the end of stderr with anything that looks like the
 * credential blanked; never stdout, which holds the secret.
 *
 * @module
 */

import type { ChildProcess } from "node:child_process";
import { nodeProcess, platform } from "../../util/runtime.ts";
import { abortable } from "../../util/abort.ts";
import { concat } from "../../util/bytes.ts";
import { redactText } from "../redact.ts";
import { copyCredentials } from "./auth.ts";
import { clientCertificateProblem } from "./client_certificate.ts";
import { describeType, fieldError, formatDuration, type KubeconfigError } from "./errors.ts";
import type { AuthProvider, Credentials } from "./types.ts";

/** An exec credential is refreshed this long before it expires, so no request carries a dying token. */
const EXEC_EXPIRY_SKEW_MS = 10_000;

/**
 * How long a plugin may take before it is killed. Generous for a plugin that calls a cloud
 * API (`aws eks get-token` takes 1–3 s), short enough that a hung one does not stall every
 * request for minutes; plugins never wait for a person here, as they run non-interactively.
 */
export const DEFAULT_EXEC_TIMEOUT_MS = 30_000;

/** Only the tail of a failing plugin's stderr is shown: the end usually says what went wrong. */
const STDERR_TAIL_LINES = 10;

/** A plugin printing more than this is broken; its output is not kept beyond it. */
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

/** Words of stdout at least this long are blanked in stderr: they may be the credential. */
const MIN_STDOUT_WORD = 8;

const EXEC_API_VERSIONS = [
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
] as const;

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
  /**
   * Milliseconds a run may take before the plugin (and its process group) is killed and the
   * run fails; default {@linkcode DEFAULT_EXEC_TIMEOUT_MS} (30 s).
   */
  timeoutMs?: number;
  /** Clock in milliseconds since the epoch; tests replace it. Default `Date.now`. */
  now?: () => number;
}

interface CachedCredentials {
  credentials: Credentials;
  /** Epoch milliseconds after which the plugin must run again; unset means never. */
  renewAt?: number;
}

/** What a finished run left behind. */
interface RunOutput {
  stdout: string;
  stderr: string;
}

/** A run that failed: the reason for the message, and stderr to show (redacted) with it. */
class RunFailure {
  readonly reason: string;
  readonly stderr: string;
  readonly stdout: string;

  constructor(reason: string, stderr: string, stdout: string) {
    this.reason = reason;
    this.stderr = stderr;
    this.stdout = stdout;
  }
}

/** Every string in a parsed JSON value, to blank in messages. */
function jsonStrings(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) { for (const item of value) jsonStrings(item, out); }
  else if (value && typeof value === "object") {
    for (const item of Object.values(value)) jsonStrings(item, out);
  }
  return out;
}

/** The parts of a plugin's stdout that may be the credential: its JSON strings and long words. */
function stdoutSecrets(stdout: string): string[] {
  const secrets: string[] = [];
  try {
    secrets.push(...jsonStrings(JSON.parse(stdout)));
  } catch {
    // Not JSON: the words below cover it.
  }
  for (const word of stdout.split(/[\s"'`,;:{}[\]()=]+/)) {
    if (word.length >= MIN_STDOUT_WORD) secrets.push(word);
  }
  for (const line of stdout.split("\n")) if (line.trim() !== "") secrets.push(line.trim());
  return secrets;
}

/** Kills the plugin and everything it started: its process group, else the process itself. */
function killTree(child: ChildProcess): void {
  if (child.pid !== undefined && platform() !== "win32") {
    try {
      nodeProcess().kill(-child.pid, "SIGKILL");
      return;
    } catch {
      // No process group of its own (the runtime ignored `detached`): kill the process.
    }
  }
  try {
    child.kill("SIGKILL");
  } catch {
    // Already gone.
  }
}

/**
 * Runs a client-go exec credential plugin (`aws eks get-token`, `gke-gcloud-auth-plugin`,
 * `kubelogin`, …) and caches what it prints until shortly before `status.expirationTimestamp`.
 * Concurrent callers share one run; a failed run is not cached, so the next call runs the
 * plugin again. A run that takes longer than `timeoutMs` (default 30 s) kills the plugin's
 * process group and fails naming the command and the timeout. Failures name the kubeconfig
 * user and the command and show the end of the plugin's stderr with anything that looks like
 * the credential blanked, never its stdout (which holds the secret).
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
 *   timeoutMs: 10_000,
 * });
 * const { headers } = await auth.credentials();
 * ```
 */
export class ExecCredentialProvider implements AuthProvider {
  readonly #options: ExecCredentialOptions;
  readonly #now: () => number;
  readonly #skewMs: number;
  readonly #timeoutMs: number;
  #cached?: CachedCredentials;
  #inFlight?: Promise<Credentials>;
  /** `performance.now()` when the run in flight started. */
  #runStarted = 0;

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
    const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
    if (!(timeoutMs > 0)) {
      throw new RangeError(`exec plugin timeoutMs must be > 0, got ${timeoutMs}`);
    }
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#skewMs = options.expirySkewMs ?? EXEC_EXPIRY_SKEW_MS;
    this.#timeoutMs = timeoutMs;
  }

  /** The plugin's token and/or client certificate; runs the plugin when none is cached. */
  credentials(signal?: AbortSignal): Promise<Credentials> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const cached = this.#cached;
    if (cached && (cached.renewAt === undefined || this.#now() < cached.renewAt)) {
      return Promise.resolve(copyCredentials(cached.credentials));
    }
    if (!this.#inFlight) {
      this.#runStarted = performance.now();
      this.#inFlight = this.#run().finally(() => {
        this.#inFlight = undefined;
      });
    }
    const run = this.#inFlight;
    return abortable(run.then(copyCredentials), signal).catch((err: unknown) => {
      // A request's deadline passing while the plugin runs would otherwise read only "The
      // request timed out.", hiding that the plugin is what it waited for.
      if (signal?.aborted && err === signal.reason && isTimeout(err) && this.#inFlight === run) {
        throw this.#stillRunning(err);
      }
      throw err;
    });
  }

  /** The timeout `reason` of a caller, naming the plugin it was waiting for and its deadline. */
  #stillRunning(reason: Error): DOMException {
    const { user, command } = this.#options;
    const running = formatDuration(Math.round(performance.now() - this.#runStarted));
    return new DOMException(
      `${reason.message.replace(/\.$/, "")} while waiting for credentials from the exec ` +
        `plugin of user ${JSON.stringify(user)} (command ${JSON.stringify(command)}), which ` +
        `had not answered after ${running}; the plugin is killed when it has run ` +
        `${formatDuration(this.#timeoutMs)} (its deadline)`,
      "TimeoutError",
    );
  }

  /** Drops the cached credentials so the plugin runs again; resolves `true`. */
  invalidate(): Promise<boolean> {
    this.#cached = undefined;
    return Promise.resolve(true);
  }

  async #run(): Promise<Credentials> {
    let output: RunOutput;
    try {
      output = await this.#exec();
    } catch (err) {
      if (err instanceof RunFailure) throw this.#failure(err.reason, err.stderr, err.stdout);
      throw err;
    }
    const cached = this.#parse(output.stdout);
    this.#cached = cached;
    return cached.credentials;
  }

  #environment(): Record<string, string> {
    const options = this.#options;
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.baseEnv ?? nodeProcess().env)) {
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
    return env;
  }

  #exec(): Promise<RunOutput> {
    const options = this.#options;
    return new Promise((resolve, reject) => {
      let child: ChildProcess;
      try {
        // Fetched on first use: most operators never run a credential plugin, and Deno's
        // node:child_process costs resident memory from the start.
        const { spawn } = nodeProcess().getBuiltinModule(
          "node:child_process",
        ) as typeof import("node:child_process");
        child = spawn(options.command, options.args ?? [], {
          env: this.#environment(),
          // Its own process group, so a timeout kills whatever the plugin started too.
          detached: platform() !== "win32",
          stdio: ["pipe", "pipe", "pipe"],
          windowsHide: true,
        });
      } catch (err) {
        reject(new RunFailure(spawnReason(err), "", ""));
        return;
      }
      const stdout: Uint8Array[] = [];
      const stderr: Uint8Array[] = [];
      let size = 0;
      let settled = false;
      const text = (chunks: Uint8Array[]) => new TextDecoder().decode(concat(chunks));
      const finish = (outcome: { ok: RunOutput } | { failure: RunFailure }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if ("ok" in outcome) resolve(outcome.ok);
        else reject(outcome.failure);
      };
      const collect = (into: Uint8Array[]) => (chunk: Uint8Array) => {
        size += chunk.length;
        if (size > MAX_OUTPUT_BYTES) {
          killTree(child);
          finish({ failure: new RunFailure("printed more than 16 MiB", "", "") });
          return;
        }
        into.push(chunk);
      };
      child.stdout?.on("data", collect(stdout));
      child.stderr?.on("data", collect(stderr));
      const timer = setTimeout(() => {
        killTree(child);
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish({
          failure: new RunFailure(
            `did not answer within ${formatDuration(this.#timeoutMs)} and was killed`,
            text(stderr),
            text(stdout),
          ),
        });
      }, this.#timeoutMs);
      child.on("error", (err) => {
        finish({ failure: new RunFailure(spawnReason(err), text(stderr), text(stdout)) });
      });
      child.on("close", (code, signal) => {
        if (code === 0) {
          finish({ ok: { stdout: text(stdout), stderr: text(stderr) } });
          return;
        }
        const reason = typeof code === "number"
          ? `exit code ${code}`
          : signal
          ? `killed by ${signal}`
          : "could not be run";
        finish({ failure: new RunFailure(reason, text(stderr), text(stdout)) });
      });
      // Plugins must not wait for a terminal that is not there.
      child.stdin?.on("error", () => {});
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
    // Values the plugin printed are never quoted: a broken plugin may print the token anywhere.
    if (credential.apiVersion !== apiVersion) {
      throw this.#failure(`printed a different apiVersion, expected ${apiVersion}`);
    }
    if (credential.kind !== "ExecCredential") {
      throw this.#failure("printed a kind other than the expected ExecCredential");
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
      const problem = clientCertificateProblem(
        clientCertificateData as string,
        clientKeyData as string,
      );
      if (problem) {
        const field = problem.field === "cert" ? "clientCertificateData" : "clientKeyData";
        throw this.#failure(`printed a status.${field} that ${problem.reason}`);
      }
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
        throw this.#failure("printed a status.expirationTimestamp that is not an RFC 3339 time");
      }
      renewAt = expiresAt - this.#skewMs;
    }
    return { credentials, renewAt };
  }

  #failure(reason: string, stderr = "", stdout = ""): KubeconfigError {
    const { user, command, installHint, origin } = this.#options;
    let detail = `exec plugin for user ${JSON.stringify(user)} (command ${
      JSON.stringify(command)
    }) failed: ${reason}`;
    const secrets = stdoutSecrets(stdout);
    const last = this.#cached?.credentials;
    if (last?.headers?.Authorization) secrets.push(last.headers.Authorization.slice(7));
    if (last?.clientCertificate) secrets.push(last.clientCertificate.key);
    const tail = stderr.trimEnd().split("\n").slice(-STDERR_TAIL_LINES).join("\n").trim();
    if (tail !== "") detail += `\nstderr:\n${redactText(tail, secrets)}`;
    if (installHint) detail += `\n${installHint.trim()}`;
    // No cause: the runtime's error for a failed run may carry the plugin's output.
    return fieldError(origin, detail);
  }
}

function isTimeout(err: unknown): err is Error {
  return err instanceof Error && err.name === "TimeoutError";
}

function spawnReason(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (code === "ENOENT") return "command not found";
  if (code === "EACCES") return "command is not executable";
  if (typeof code === "string") return code;
  return "could not be run";
}
