/**
 * A real, local Kubernetes control plane for tests: etcd and kube-apiserver on free loopback
 * ports, secure serving with a CA made for the run, RBAC on, and an admin user authenticated
 * by a client certificate. The counterpart of controller-runtime's envtest.
 *
 * No process outlives the test run: `stop()` ends both processes, an exit hook kills them when
 * the test process exits without stopping, and a watchdog process kills them and removes the
 * temporary directory when the test process is killed outright.
 *
 * @module
 */

import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { extname, join } from "node:path";
import process from "node:process";
import { parseAllDocuments, stringify } from "yaml";
import type {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "../api/builtins.ts";
import type { AuthProvider, KubeConfig } from "../kube/config/types.ts";
import { ApiError, isAlreadyExists, isNotFound } from "../kube/errors.ts";
import { RestClient } from "../kube/rest.ts";
import { sleep } from "../util/abort.ts";
import { findControlPlaneBinaries } from "./assets.ts";
import {
  installWebhookConfigurations,
  prepareWebhookServing,
  type WebhookInstallOptions,
  type WebhookServing,
  withLocalConversion,
} from "./webhook_install.ts";
import {
  type CertificateAuthority,
  type CertificatePair,
  createCertificateAuthority,
  generateSigningKeyPair,
} from "./certs.ts";

/** A CustomResourceDefinition object as the API accepts it (apiextensions.k8s.io/v1). */
export type CustomResourceDefinitionObject = Record<string, unknown> & {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; [key: string]: unknown };
  spec?: Record<string, unknown>;
};

/** Anything that can give a CRD: a plain object, or a resource type with a `crd()` method. */
export type CRDSource = CustomResourceDefinitionObject | { crd(): CustomResourceDefinitionObject };

/**
 * Flags for a control-plane process: `"--name": "value"` (a string array repeats the flag,
 * `true` passes the bare flag, `null` removes a default).
 */
export type ProcessFlags = Record<string, string | readonly string[] | true | null>;

/** Options of {@linkcode Environment}. */
export interface EnvironmentOptions {
  /** Directories (or files) with CRD manifests, YAML or JSON, to install at start. */
  crdDirectoryPaths?: string[];
  /** CRD objects (or resource types with `crd()`) to install at start. */
  crds?: CRDSource[];
  /** Fail when a path in `crdDirectoryPaths` does not exist; default true. */
  errorIfCRDPathMissing?: boolean;
  /** Directory with `etcd` and `kube-apiserver`; default `$KUBEBUILDER_ASSETS`, then the cache. */
  binaryAssetsDirectory?: string;
  /**
   * Milliseconds for etcd and kube-apiserver to become ready, together; default
   * `$KUBEBUILDER_CONTROLPLANE_START_TIMEOUT` (a Go duration such as `90s`, as in
   * controller-runtime), else 120 000: a busy machine can take over a minute.
   */
  controlPlaneStartTimeout?: number;
  /**
   * Milliseconds each process gets to exit after SIGTERM before SIGKILL; default
   * `$KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT`, else 10 000.
   */
  controlPlaneStopTimeout?: number;
  /** Milliseconds for installed CRDs to be established and served; default 60 000. */
  crdInstallTimeout?: number;
  /** Extra or overriding kube-apiserver flags, e.g. `{ "--etcd-compaction-interval": "5s" }`. */
  kubeAPIServerFlags?: ProcessFlags;
  /** Extra or overriding etcd flags. */
  etcdFlags?: ProcessFlags;
  /** Send both processes' output to this process's stdout/stderr instead of log files. */
  attachControlPlaneOutput?: boolean;
  /**
   * Serve webhooks from the test: a serving certificate and a port are made at start (see
   * {@linkcode Environment.webhookInstallOptions}), the configurations given here are installed
   * pointing at `https://127.0.0.1:<port>/…`, and so are CRD conversion webhooks.
   */
  webhookInstallOptions?: WebhookInstallOptions;
}

/** Process ids of a running control plane. */
export interface ControlPlaneProcesses {
  /** Process id of etcd. */
  etcd: number;
  /** Process id of kube-apiserver. */
  kubeAPIServer: number;
}

const DEFAULT_START_TIMEOUT_MS = 120_000;
const DEFAULT_STOP_TIMEOUT_MS = 10_000;
const DEFAULT_CRD_TIMEOUT_MS = 60_000;
/** Milliseconds one readiness probe of etcd or kube-apiserver may take before it is retried. */
const PROBE_TIMEOUT_MS = 5_000;
const PORT_ATTEMPTS = 3;
const LOG_TAIL_LINES = 20;

/**
 * Milliseconds of a Go duration (`1m30s`, `90s`, `500ms`) or a plain number of milliseconds,
 * for the KUBEBUILDER_CONTROLPLANE_*_TIMEOUT variables.
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== trimmed) return undefined;
  return parts.reduce((total, [, value, unit]) => total + Number(value) * units[unit], 0);
}

function durationFromEnv(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === "") return undefined;
  const ms = parseDuration(value);
  if (ms === undefined) {
    throw new Error(`${name}=${JSON.stringify(value)} is not a duration such as 90s or 2m`);
  }
  return ms;
}

/** The start timeout when the options give none: the environment's, else 2 min. */
function defaultStartTimeout(): number {
  return durationFromEnv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") ?? DEFAULT_START_TIMEOUT_MS;
}

/** The stop timeout when the options give none: the environment's, else 10 s. */
function defaultStopTimeout(): number {
  return durationFromEnv("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT") ?? DEFAULT_STOP_TIMEOUT_MS;
}

/**
 * Waits for the test process to go away (its parent pid changes, or it stops existing), then
 * kills the pids listed in `<dir>/pids` and removes `<dir>`. It runs in its own session so a
 * terminal's Ctrl-C does not end it before it has cleaned up.
 */
const WATCHDOG_SCRIPT = `
parent="$1"; dir="$2"
trap '' INT HUP
while :; do
  if [ -r /proc/$$/stat ]; then
    read -r stat < /proc/$$/stat
    rest="\${stat##*) }"
    set -- $rest
    [ "$2" = "$parent" ] || break
  else
    kill -0 "$parent" 2>/dev/null || break
  fi
  sleep 0.5
done
if [ -f "$dir/pids" ]; then
  while read -r pid; do kill -KILL "$pid" 2>/dev/null; done < "$dir/pids"
fi
rm -rf "$dir"
`;

/** Finds a free TCP port on 127.0.0.1 by binding port 0. */
async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function flagArgs(defaults: ProcessFlags, overrides: ProcessFlags | undefined): string[] {
  const merged: ProcessFlags = { ...defaults, ...overrides };
  const args: string[] = [];
  for (const [name, value] of Object.entries(merged)) {
    if (value === null) continue;
    if (value === true) args.push(name);
    else if (typeof value === "string") args.push(`${name}=${value}`);
    else for (const item of value) args.push(`${name}=${item}`);
  }
  return args;
}

/** One control-plane process, its output in a log file. */
class ControlPlaneProcess {
  readonly name: string;
  readonly logFile: string;
  readonly child: ChildProcess;
  exit: { code: number | null; signal: string | null } | undefined;
  readonly exited: Promise<void>;

  constructor(name: string, binary: string, args: string[], logFile: string, attach: boolean) {
    this.name = name;
    this.logFile = logFile;
    const fd = attach ? undefined : openSync(logFile, "a");
    try {
      this.child = spawn(binary, args, {
        stdio: attach ? ["ignore", "inherit", "inherit"] : ["ignore", fd, fd],
      });
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    // The exit hook and the watchdog end this process; it must not keep the test run alive.
    this.child.unref();
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve();
      });
      this.child.once("error", (err) => {
        this.exit = { code: null, signal: `spawn error: ${err.message}` };
        resolve();
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** The last lines the process wrote, for error messages. */
  tail(lines = LOG_TAIL_LINES): string {
    try {
      const text = readFileSync(this.logFile, "utf8").trimEnd();
      return text.split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log file: output was attached to this process)";
    }
  }

  describeExit(): string {
    if (!this.exit) return "is running";
    return this.exit.code !== null
      ? `exited with code ${this.exit.code}`
      : `was ended by ${this.exit.signal}`;
  }

  async stop(timeoutMs: number): Promise<void> {
    if (this.exit || this.child.pid === undefined) return;
    this.#signal("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    // A pending timer would keep the process alive after the control plane is gone.
    const stopped = await Promise.race([this.exited.then(() => true as const), timedOut]);
    clearTimeout(timer);
    if (!stopped) {
      // process.kill, not child.kill: Deno's ChildProcess ignores a second kill() call.
      this.#signal("SIGKILL");
      await this.exited;
    }
  }

  killSync(): void {
    if (this.exit || this.child.pid === undefined) return;
    this.#signal("SIGKILL");
  }

  #signal(signal: "SIGTERM" | "SIGKILL"): void {
    try {
      process.kill(this.child.pid!, signal);
    } catch {
      // Already gone.
    }
  }
}

function staticClientCertificate(cert: string, key: string): AuthProvider {
  return { credentials: () => Promise.resolve({ clientCertificate: { cert, key } }) };
}

function toBase64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

function crdObject(source: CRDSource): CustomResourceDefinitionObject {
  return "crd" in source && typeof source.crd === "function"
    ? source.crd()
    : source as CustomResourceDefinitionObject;
}

/** Reads CRDs from files and directories; errors name the file and the document. */
function readCRDFiles(paths: string[], errorIfMissing: boolean): CustomResourceDefinitionObject[] {
  const crds: CustomResourceDefinitionObject[] = [];
  for (const path of paths) {
    let files: string[];
    try {
      files = statSync(path).isDirectory()
        ? readdirSync(path).sort().map((name) => join(path, name))
        : [path];
    } catch (err) {
      if (!errorIfMissing) continue;
      throw new Error(`CRD path ${path} cannot be read: ${(err as Error).message}`);
    }
    for (const file of files) {
      if (![".yaml", ".yml", ".json"].includes(extname(file))) continue;
      const docs = parseAllDocuments(readFileSync(file, "utf8"));
      const list = Array.isArray(docs) ? docs : [docs];
      list.forEach((doc, index) => {
        if (doc.errors.length > 0) {
          throw new Error(
            `CRD file ${file}, document ${index + 1}: invalid YAML: ${doc.errors[0].message}`,
          );
        }
        const value = doc.toJS();
        const objects = value?.kind?.endsWith("List") && Array.isArray(value.items)
          ? value.items
          : [value];
        for (const object of objects) {
          if (object?.kind !== "CustomResourceDefinition") continue;
          if (!object.metadata?.name || !object.spec) {
            throw new Error(
              `CRD file ${file}, document ${index + 1}: a CustomResourceDefinition needs ` +
                `metadata.name and spec`,
            );
          }
          crds.push(object);
        }
      });
    }
  }
  return crds;
}

const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/**
 * Creates (or updates) CRDs on the API server of `config` and waits until each is established
 * and every served version appears in discovery, at most `timeout` milliseconds (default
 * 30 000). {@linkcode Environment} uses it at start; `rudder dev` uses it on any cluster.
 *
 * @example
 * ```ts ignore
 * import { installCRDs } from "./envtest.ts";
 * import { loadConfig } from "@rudder/operator";
 * import { Example } from "./api/example.ts";
 *
 * await installCRDs(await loadConfig(), [Example]);
 * ```
 */
export async function installCRDs(
  config: KubeConfig,
  crds: CRDSource[],
  options: { timeout?: number } = {},
): Promise<void> {
  const objects = crds.map(crdObject);
  const rest = new RestClient(config);
  try {
    for (const crd of objects) {
      const name = crd.metadata?.name;
      if (!name) throw new Error("a CRD to install has no metadata.name");
      try {
        await rest.request({ method: "POST", path: CRD_PATH, body: crd });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const existing = await rest.request<{ metadata: { resourceVersion: string } }>({
          path: `${CRD_PATH}/${name}`,
        });
        await rest.request({
          method: "PUT",
          path: `${CRD_PATH}/${name}`,
          body: {
            ...crd,
            metadata: { ...crd.metadata, resourceVersion: existing.metadata.resourceVersion },
          },
        });
      }
    }
    const deadline = Date.now() + (options.timeout ?? DEFAULT_CRD_TIMEOUT_MS);
    const pending = new Set(objects.map((crd) => crd.metadata!.name!));
    let lastProblem = "";
    while (pending.size > 0) {
      for (const name of [...pending]) {
        const problem = await crdProblem(rest, name);
        if (problem) lastProblem = `${name}: ${problem}`;
        else pending.delete(name);
      }
      if (pending.size === 0) break;
      if (Date.now() > deadline) {
        throw new Error(
          `CRDs not served in time: ${[...pending].join(", ")} (last seen: ${lastProblem})`,
        );
      }
      await sleep(100);
    }
  } finally {
    rest.close();
  }
}

/** Why a CRD is not usable yet, or `undefined` when it is established and served. */
async function crdProblem(rest: RestClient, name: string): Promise<string | undefined> {
  const crd = await rest.request<CRDStatus>({ path: `${CRD_PATH}/${name}` });
  const established = crd.status?.conditions?.find((c) => c.type === "Established");
  if (established?.status !== "True") {
    return `not established${established?.message ? ` (${established.message})` : ""}`;
  }
  for (const version of crd.spec.versions.filter((v) => v.served)) {
    try {
      const list = await rest.request<{ resources: { name: string }[] }>({
        path: `/apis/${crd.spec.group}/${version.name}`,
      });
      if (!list.resources.some((r) => r.name === crd.spec.names.plural)) {
        return `${crd.spec.group}/${version.name} does not list ${crd.spec.names.plural} yet`;
      }
    } catch (err) {
      if (isNotFound(err)) return `${crd.spec.group}/${version.name} is not served yet`;
      if (err instanceof ApiError) return err.message;
      throw err;
    }
  }
  return undefined;
}

/** The certificates and keys of one environment, and the files the API server reads. */
interface GeneratedCertificates {
  ca: CertificateAuthority;
  admin: CertificatePair;
  files: {
    ca: string;
    servingCert: string;
    servingKey: string;
    saPublic: string;
    saPrivate: string;
  };
}

interface CRDStatus {
  spec: {
    group: string;
    names: { plural: string };
    versions: { name: string; served: boolean }[];
  };
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}

/**
 * A local control plane for tests.
 *
 * @example
 * ```ts ignore
 * import { after, before, it } from "node:test";
 * import { Environment } from "@rudder/operator/testing";
 * import { RestClient, type KubeConfig } from "@rudder/operator/kube";
 *
 * const env = new Environment({ crdDirectoryPaths: ["config/crd"] });
 * let config: KubeConfig;
 * before(async () => { config = await env.start(); });
 * after(() => env.stop());
 *
 * it("talks to the API server", async () => {
 *   const rest = new RestClient(config);
 *   console.log(await rest.request({ path: "/version" }));
 *   rest.close();
 * });
 * ```
 */
export class Environment {
  /** Every running environment of this process, for the exit hook. */
  static readonly #running = new Set<Environment>();
  static #exitHookInstalled = false;

  static #installExitHook(): void {
    if (Environment.#exitHookInstalled) return;
    Environment.#exitHookInstalled = true;
    // Runs on a normal exit, also when a test forgot stop(); only synchronous work runs here.
    process.on("exit", () => {
      for (const env of Environment.#running) env.#killSync();
    });
  }

  readonly #options: EnvironmentOptions;
  #directory: string | undefined;
  #config: KubeConfig | undefined;
  #ca: CertificateAuthority | undefined;
  #etcd: ControlPlaneProcess | undefined;
  #apiServer: ControlPlaneProcess | undefined;
  #watchdog: ChildProcess | undefined;
  #apiServerLaunch:
    | { binary: string; dir: string; etcdURL: string; certs: GeneratedCertificates }
    | undefined;
  #webhookServing: WebhookServing | undefined;
  #renewWebhookCertificate: (() => Promise<void>) | undefined;
  #starting: Promise<KubeConfig> | undefined;
  #stopping: Promise<void> | undefined;

  /** Creates an environment; nothing runs until {@linkcode Environment.start}. */
  constructor(options: EnvironmentOptions = {}) {
    this.#options = options;
  }

  /** The admin configuration; throws before `start()`. */
  get config(): KubeConfig {
    if (!this.#config) throw new Error("Environment is not started: call start() first");
    return this.#config;
  }

  /** Path of a kubeconfig file for the admin user, for other processes; throws before `start()`. */
  get kubeconfigPath(): string {
    if (!this.#config || !this.#directory) {
      throw new Error("Environment is not started: call start() first");
    }
    return join(this.#directory, "kubeconfig");
  }

  /**
   * Where the test's webhook server must listen and the certificate directory it serves from,
   * with `webhookInstallOptions`; throws before `start()` or without them. Pass
   * `{ host: localServingHost, port: localServingPort, certDir: localServingCertDir }` as the
   * Manager's `webhookServer`.
   */
  get webhookInstallOptions(): WebhookServing {
    if (!this.#webhookServing) {
      throw new Error("no webhook serving: start() an Environment with webhookInstallOptions");
    }
    return this.#webhookServing;
  }

  /** The temporary directory holding certificates, etcd data and logs; removed by `stop()`. */
  get directory(): string | undefined {
    return this.#directory;
  }

  /** Process ids of etcd and kube-apiserver while they run. */
  get processes(): ControlPlaneProcesses | undefined {
    if (!this.#etcd || !this.#apiServer) return undefined;
    return { etcd: this.#etcd.pid, kubeAPIServer: this.#apiServer.pid };
  }

  /**
   * Starts etcd and kube-apiserver, waits until the API server is ready, installs the CRDs and
   * waits until they are served. Resolves to the admin configuration. On failure everything
   * started is stopped and the error carries the processes' last log lines.
   */
  start(): Promise<KubeConfig> {
    if (this.#config) return Promise.resolve(this.#config);
    this.#starting ??= this.#start().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  async #start(): Promise<KubeConfig> {
    const binaries = findControlPlaneBinaries(this.#options.binaryAssetsDirectory);
    const crds = [
      ...readCRDFiles(
        this.#options.crdDirectoryPaths ?? [],
        this.#options.errorIfCRDPathMissing ?? true,
      ),
      ...(this.#options.crds ?? []).map(crdObject),
    ];
    const timeout = this.#options.controlPlaneStartTimeout ?? defaultStartTimeout();
    const deadline = Date.now() + timeout;
    const dir = mkdtempSync(join(tmpdir(), "rudder-envtest-"));
    this.#directory = dir;
    Environment.#running.add(this);
    Environment.#installExitHook();
    this.#startWatchdog(dir);
    try {
      const certs = await this.#writeCertificates(dir);
      const etcdURL = await this.#startEtcd(binaries.etcd, dir, deadline);
      const config = await this.#startAPIServer(
        binaries.kubeAPIServer,
        dir,
        etcdURL,
        certs,
        deadline,
      );
      writeFileSync(join(dir, "kubeconfig"), this.#kubeconfigYAML(config, certs.admin), {
        mode: 0o600,
      });
      this.#config = config;
      const webhooks = this.#options.webhookInstallOptions;
      if (webhooks) {
        const prepared = await prepareWebhookServing(dir, webhooks);
        this.#webhookServing = prepared.serving;
        this.#renewWebhookCertificate = prepared.renew;
        await this.installWebhooks(webhooks);
      }
      if (crds.length > 0) await this.installCRDs(crds);
      return config;
    } catch (err) {
      this.#config = undefined;
      await this.#teardown();
      throw err;
    }
  }

  #startWatchdog(dir: string): void {
    const watchdog = spawn("/bin/sh", [
      "-c",
      WATCHDOG_SCRIPT,
      "rudder-envtest-watchdog",
      String(process.pid),
      dir,
    ], {
      detached: true,
      stdio: "ignore",
    });
    watchdog.unref();
    watchdog.on("error", () => {}); // no /bin/sh: the exit hook still covers normal exits
    this.#watchdog = watchdog;
  }

  #recordPids(): void {
    if (!this.#directory) return;
    const pids = [this.#etcd?.pid, this.#apiServer?.pid].filter((pid) => pid && pid > 0);
    writeFileSync(join(this.#directory, "pids"), pids.join("\n") + "\n");
  }

  async #writeCertificates(dir: string): Promise<GeneratedCertificates> {
    const certDir = join(dir, "pki");
    mkdirSync(certDir, { mode: 0o700 });
    const ca = await createCertificateAuthority("rudder-envtest-ca");
    const serving = await ca.issueServing({
      commonName: "localhost",
      dnsNames: ["localhost"],
      ips: ["127.0.0.1"],
    });
    const admin = await ca.issueClient({ commonName: "admin", organizations: ["system:masters"] });
    const serviceAccount = await generateSigningKeyPair();
    const files = {
      ca: join(certDir, "ca.crt"),
      servingCert: join(certDir, "apiserver.crt"),
      servingKey: join(certDir, "apiserver.key"),
      saPublic: join(certDir, "sa.pub"),
      saPrivate: join(certDir, "sa.key"),
    };
    writeFileSync(files.ca, ca.cert);
    writeFileSync(files.servingCert, serving.cert);
    writeFileSync(files.servingKey, serving.key, { mode: 0o600 });
    writeFileSync(files.saPublic, serviceAccount.publicKey);
    writeFileSync(files.saPrivate, serviceAccount.privateKey, { mode: 0o600 });
    this.#ca = ca;
    return { ca, admin, files };
  }

  async #startEtcd(binary: string, dir: string, deadline: number): Promise<string> {
    const port = await this.#launch("etcd", binary, dir, deadline, undefined, (port) => {
      const url = `http://127.0.0.1:${port}`;
      return {
        args: flagArgs({
          "--name": "envtest",
          "--data-dir": join(dir, "etcd"),
          "--listen-client-urls": url,
          "--advertise-client-urls": url,
          "--listen-peer-urls": "http://127.0.0.1:0",
          "--unsafe-no-fsync": true,
          "--log-level": "warn",
        }, this.#options.etcdFlags),
        probe: async () => {
          const response = await fetch(`${url}/health`, {
            signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
          });
          const body = await response.json() as { health?: string };
          return body.health === "true";
        },
      };
    });
    return `http://127.0.0.1:${port}`;
  }

  async #startAPIServer(
    binary: string,
    dir: string,
    etcdURL: string,
    certs: GeneratedCertificates,
    deadline: number,
    fixedPort?: number,
  ): Promise<KubeConfig> {
    this.#apiServerLaunch = { binary, dir, etcdURL, certs };
    const configFor = (port: number): KubeConfig => ({
      server: `https://127.0.0.1:${port}`,
      namespace: "default",
      caData: certs.ca.cert,
      auth: staticClientCertificate(certs.admin.cert, certs.admin.key),
      contextName: "envtest",
      source: `envtest ${dir}`,
    });
    const port = await this.#launch("kube-apiserver", binary, dir, deadline, fixedPort, (port) => {
      const rest = new RestClient(configFor(port), {
        timeout: PROBE_TIMEOUT_MS,
        maxRetries: 0,
      });
      return {
        args: flagArgs({
          "--bind-address": "127.0.0.1",
          "--advertise-address": "127.0.0.1",
          "--secure-port": String(port),
          "--cert-dir": join(dir, "pki"),
          "--tls-cert-file": certs.files.servingCert,
          "--tls-private-key-file": certs.files.servingKey,
          "--client-ca-file": certs.files.ca,
          "--etcd-servers": etcdURL,
          "--service-cluster-ip-range": "10.0.0.0/24",
          "--service-account-issuer": `https://127.0.0.1:${port}`,
          "--service-account-key-file": certs.files.saPublic,
          "--service-account-signing-key-file": certs.files.saPrivate,
          "--authorization-mode": "RBAC",
          // No controller-manager creates the default ServiceAccount, so pods could not be made.
          "--disable-admission-plugins": "ServiceAccount",
          // The kubernetes Service's endpoints cannot point at a loopback address.
          "--endpoint-reconciler-type": "none",
          "--allow-privileged": "true",
        }, this.#options.kubeAPIServerFlags),
        probe: async () => (await rest.requestText({ path: "/readyz" })).trim() === "ok",
        close: () => rest.close(),
      };
    });
    return configFor(port);
  }

  /**
   * Starts `name` on a free port and waits until its probe passes. A port another process takes
   * between being chosen and being bound is retried on a new one.
   */
  async #launch(
    name: "etcd" | "kube-apiserver",
    binary: string,
    dir: string,
    deadline: number,
    fixedPort: number | undefined,
    launchOn: (port: number) => {
      args: string[];
      probe: () => Promise<boolean>;
      close?: () => void;
    },
  ): Promise<number> {
    const attach = this.#options.attachControlPlaneOutput ?? false;
    const stopTimeout = this.#options.controlPlaneStopTimeout ?? defaultStopTimeout();
    for (let attempt = 1;; attempt++) {
      const port = fixedPort ?? await freePort();
      const { args, probe, close } = launchOn(port);
      const proc = new ControlPlaneProcess(name, binary, args, join(dir, `${name}.log`), attach);
      if (name === "etcd") this.#etcd = proc;
      else this.#apiServer = proc;
      this.#recordPids();
      try {
        if (await this.#waitFor(proc, deadline, probe)) return port;
      } finally {
        close?.();
      }
      if (
        fixedPort === undefined && attempt < PORT_ATTEMPTS &&
        proc.tail().includes("address already in use")
      ) {
        await proc.stop(stopTimeout);
        continue;
      }
      throw this.#startError(proc);
    }
  }

  /** Polls `probe` until it is true (→ true), the process exits or the deadline passes (→ false). */
  async #waitFor(
    proc: ControlPlaneProcess,
    deadline: number,
    probe: () => Promise<boolean>,
  ): Promise<boolean> {
    while (Date.now() < deadline) {
      if (proc.exit) return false;
      try {
        if (await probe()) return true;
      } catch {
        // Not up yet.
      }
      if (proc.exit) return false;
      await Promise.race([sleep(100), proc.exited]);
    }
    return false;
  }

  #startError(proc: ControlPlaneProcess): Error {
    const timeout = this.#options.controlPlaneStartTimeout ?? defaultStartTimeout();
    const what = proc.exit
      ? `${proc.name} ${proc.describeExit()} before it was ready`
      : `${proc.name} was not ready within ${timeout} ms`;
    return new Error(`${what}; its last log lines (${proc.logFile}):\n${proc.tail()}`);
  }

  #kubeconfigYAML(config: KubeConfig, admin: { cert: string; key: string }): string {
    return stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{
        name: "envtest",
        cluster: { server: config.server, "certificate-authority-data": toBase64(config.caData!) },
      }],
      users: [{
        name: "envtest-admin",
        user: {
          "client-certificate-data": toBase64(admin.cert),
          "client-key-data": toBase64(admin.key),
        },
      }],
      contexts: [{
        name: "envtest",
        context: { cluster: "envtest", user: "envtest-admin", namespace: "default" },
      }],
      "current-context": "envtest",
    });
  }

  /**
   * Stops kube-apiserver and leaves etcd, with all objects, running. With
   * {@linkcode Environment.startAPIServer} it tests how clients and informers live through an
   * API server restart. kube-apiserver drains open watches for up to a minute after SIGTERM;
   * after `timeout` milliseconds (default `controlPlaneStopTimeout`) it is killed, and
   * `timeout: 0` kills it at once, like a crash.
   */
  async stopAPIServer(options: { timeout?: number } = {}): Promise<void> {
    if (!this.#config) throw new Error("Environment is not started: call start() first");
    await this.#apiServer?.stop(
      options.timeout ?? this.#options.controlPlaneStopTimeout ?? defaultStopTimeout(),
    );
  }

  /** Starts kube-apiserver again after {@linkcode Environment.stopAPIServer}, on the same port. */
  async startAPIServer(): Promise<void> {
    const launch = this.#apiServerLaunch;
    if (!this.#config || !launch) throw new Error("Environment is not started: call start() first");
    if (this.#apiServer && !this.#apiServer.exit) return;
    const port = Number(new URL(this.#config.server).port);
    const deadline = Date.now() +
      (this.#options.controlPlaneStartTimeout ?? defaultStartTimeout());
    await this.#startAPIServer(
      launch.binary,
      launch.dir,
      launch.etcdURL,
      launch.certs,
      deadline,
      port,
    );
  }

  /**
   * Adds a user authenticated by a new client certificate with the given groups, and returns
   * its configuration. RBAC applies to it as to any user (the admin is in `system:masters`).
   */
  async addUser(user: { name: string; groups?: string[] }): Promise<KubeConfig> {
    if (!this.#ca || !this.#config) {
      throw new Error("Environment is not started: call start() first");
    }
    const pair = await this.#ca.issueClient({ commonName: user.name, organizations: user.groups });
    return { ...this.#config, auth: staticClientCertificate(pair.cert, pair.key) };
  }

  /**
   * Creates (or updates) CRDs and waits until each is established and every served version
   * appears in discovery.
   */
  async installCRDs(crds: CRDSource[]): Promise<void> {
    const serving = this.#webhookServing;
    const objects = crds.map(crdObject);
    await installCRDs(
      this.config,
      serving ? objects.map((crd) => withLocalConversion(crd, serving)) : objects,
      {
        timeout: this.#options.crdInstallTimeout ?? DEFAULT_CRD_TIMEOUT_MS,
      },
    );
  }

  /**
   * Writes a new serving certificate, from the same CA, into the webhook certificate directory
   * (key first, each file replaced atomically), as a certificate rotation would.
   */
  async renewWebhookCertificate(): Promise<void> {
    this.webhookInstallOptions;
    await this.#renewWebhookCertificate!();
  }

  /**
   * Installs (or replaces) webhook configurations with each webhook's `clientConfig` pointed at
   * the local webhook server; needs `webhookInstallOptions`. For webhooks registered after
   * `start()`, e.g. from `webhookConfigurations(mgr.getWebhookServer().webhooks(), …)`.
   */
  async installWebhooks(configurations: {
    mutatingWebhooks?: MutatingWebhookConfiguration[];
    validatingWebhooks?: ValidatingWebhookConfiguration[];
  }): Promise<void> {
    const serving = this.webhookInstallOptions;
    const rest = new RestClient(this.config);
    try {
      await installWebhookConfigurations(rest, serving, configurations);
    } finally {
      rest.close();
    }
  }

  /**
   * Stops kube-apiserver, then etcd (SIGTERM, then SIGKILL after `controlPlaneStopTimeout`),
   * and removes the temporary directory. Safe to call twice or before `start()`.
   */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      await this.#starting?.catch(() => {});
      await this.#teardown();
    })().finally(() => {
      this.#stopping = undefined;
    });
    return this.#stopping;
  }

  async #teardown(): Promise<void> {
    const timeout = this.#options.controlPlaneStopTimeout ?? defaultStopTimeout();
    await this.#apiServer?.stop(timeout);
    await this.#etcd?.stop(timeout);
    this.#watchdog?.kill("SIGTERM");
    if (this.#directory) rmSync(this.#directory, { recursive: true, force: true });
    Environment.#running.delete(this);
    this.#apiServer = undefined;
    this.#etcd = undefined;
    this.#watchdog = undefined;
    this.#directory = undefined;
    this.#config = undefined;
    this.#ca = undefined;
    this.#webhookServing = undefined;
    this.#renewWebhookCertificate = undefined;
  }

  /** Kills both processes at once and removes the directory; for the exit hook. */
  #killSync(): void {
    this.#apiServer?.killSync();
    this.#etcd?.killSync();
    try {
      this.#watchdog?.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    if (this.#directory) rmSync(this.#directory, { recursive: true, force: true });
  }

  /** Stops the environment; for `await using env = new Environment()`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}
