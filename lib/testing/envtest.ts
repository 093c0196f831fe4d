/**
 * A real, local Kubernetes control plane for tests: etcd and kube-apiserver on free loopback
 * ports, secure serving with a CA made for the run, RBAC on, and an admin user authenticated
 * by a client certificate. The counterpart of controller-runtime's envtest.
 *
 * No process outlives the test run: `stop()` ends both processes, an exit hook kills them when
 * the test process exits without stopping, and a watchdog process kills them and removes the
 * temporary directory when the test process is killed outright.
 *
 * This file is the environment itself (start, stop, users, kubeconfig); its parts are
 * `envtest_process.ts` (the processes, ports, watchdog and timeouts), `envtest_crds.ts`
 * (reading and installing CRDs), `certs.ts` and `webhook_install.ts`.
 *
 * @module
 */

import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { stringify } from "yaml";
import type {
  MutatingWebhookConfiguration,
  ValidatingWebhookConfiguration,
} from "../api/builtins.ts";
import type { AuthProvider, KubeConfig } from "../kube/config/types.ts";
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
import {
  crdObject,
  type CRDSource,
  DEFAULT_CRD_TIMEOUT_MS,
  installCRDs,
  readCRDFiles,
} from "./envtest_crds.ts";
import {
  ControlPlaneProcess,
  defaultStartTimeout,
  defaultStopTimeout,
  flagArgs,
  freePort,
  PORT_ATTEMPTS,
  PROBE_TIMEOUT_MS,
  type ProcessFlags,
  WATCHDOG_SCRIPT,
} from "./envtest_process.ts";

// The control plane's parts live in envtest_process.ts and envtest_crds.ts; these names are
// reached through this file, the environment's entry point.
export {
  type CRDSource,
  type CustomResourceDefinitionObject,
  installCRDs,
} from "./envtest_crds.ts";
export { parseDuration, type ProcessFlags } from "./envtest_process.ts";

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

function staticClientCertificate(cert: string, key: string): AuthProvider {
  return { credentials: () => Promise.resolve({ clientCertificate: { cert, key } }) };
}

function toBase64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
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
