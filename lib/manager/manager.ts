/**
 * The Manager: owns the cache, the clients, the HTTP servers and every runnable (controllers
 * above all), held in groups that start in controller-runtime's order and stop in reverse
 * (see runnable_group.ts):
 *
 * ```
 * start: HTTP servers (metrics, probes) → webhooks (certificate rotator, webhook server)
 *        → caches (synced) → other runnables (event recorders) → leader election (elected)
 *        → runnables that need leadership (controllers)
 * stop:  the same, backwards, within gracefulShutdownTimeout
 * ```
 *
 * `start()` resolves after a graceful stop (its signal aborted, or SIGTERM/SIGINT) and rejects
 * when a runnable fails or leadership is lost ({@linkcode LeaderElectionLostError}).
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { readTextFileSync } from "../util/files.ts";
import { RESTMapper } from "../api/discovery.ts";
import { type ByObject, type Cache, type CacheOptions, newCache } from "../cache/cache.ts";
import {
  type CachedClient,
  type CachedClientOptions,
  newCachedClient,
} from "../cache/cached_client.ts";
import { type Client, newClient } from "../client/client.ts";
import type { ControllerHost } from "../controller/builder.ts";
import type { ControllerOptions } from "../controller/controller.ts";
import type { Runnable } from "../util/runnable.ts";
import type { AuthProvider, KubeConfig } from "../kube/config/types.ts";
import { loadConfig } from "../kube/config/load.ts";
import { RestClient } from "../kube/rest.ts";
import { controllerMetrics } from "../metrics/controller.ts";
import { informerMetrics } from "../metrics/informer.ts";
import { leaderElectionMetrics } from "../metrics/leader_election.ts";
import { registerProcessMetrics } from "../metrics/process.ts";
import { type Registry, registry as defaultRegistry } from "../metrics/registry.ts";
import { restClientMetrics } from "../metrics/rest_client.ts";
import { metricsApp } from "../metrics/server.ts";
import { EventRecorder } from "../events/recorder.ts";
import { type Checker, Checks, healthApp, informersReady } from "../healthz/healthz.ts";
import { LeaderElectionLostError, LeaderElector } from "../leaderelection/leader_election.ts";
import { parseAddress } from "../server/address.ts";
import { CertWatcher } from "../server/certwatcher.ts";
import { HTTPServer } from "../server/http_server.ts";
import { type GroupName, isCache, Runnables } from "./runnable_group.ts";
import { listenForSignals, signalHandler } from "./signals.ts";
import { hostname } from "../util/runtime.ts";
import type { WebhookHost } from "../webhook/builder.ts";
import { type ManagerSharding, Sharding } from "../sharding/sharding.ts";
import { resolveShardingOptions, type ShardingOptions } from "../sharding/options.ts";
import { CertificateRotator, type CertificateRotatorOptions } from "../webhook/rotation.ts";
import { WebhookServer, type WebhookServerOptions } from "../webhook/server.ts";

export { LeaderElectionLostError };

const IN_CLUSTER_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** Options of {@linkcode Manager}, named as in controller-runtime's `manager.Options`. */
export interface ManagerOptions {
  /** Where the API server is; default `loadConfig()` (loaded when first needed). */
  config?: KubeConfig;
  /**
   * Address of the Prometheus metrics server, e.g. `":8443"`; default `":8443"`; `"0"`
   * disables it.
   */
  metricsBindAddress?: string;
  /**
   * How metrics are served; default `"secure"`: HTTPS, and every scrape needs a bearer token
   * the API server authenticates (TokenReview) for a user it authorises to `get` the path
   * (SubjectAccessReview), as kubebuilder's scaffold serves them. The manager's own identity then
   * needs `create` on `tokenreviews` and `subjectaccessreviews`. `"insecure-http"` serves plain
   * HTTP to anyone: for local development only.
   */
  metricsServing?: MetricsServing;
  /**
   * Directory with the metrics server's certificate (`metricsCertName`) and key
   * (`metricsKeyName`), e.g. a mounted Secret; read again when they change. Without it (and
   * without `metricsTLS`) the manager makes a self-signed certificate at start.
   */
  metricsCertDir?: string;
  /** File name of the certificate in `metricsCertDir`; default `tls.crt`. */
  metricsCertName?: string;
  /** File name of the key in `metricsCertDir`; default `tls.key`. */
  metricsKeyName?: string;
  /** PEM certificate and key for the metrics server, fixed for its life. */
  metricsTLS?: { cert: string; key: string };
  /** Address of the `/healthz` and `/readyz` server, e.g. `":8081"`; default none. */
  healthProbeBindAddress?: string;
  /** Run leader-election runnables (controllers) only on the elected replica; default false. */
  leaderElection?: boolean;
  /** Name of the Lease; required with `leaderElection`. */
  leaderElectionID?: string;
  /** Namespace of the Lease; default the pod's own namespace (in-cluster). */
  leaderElectionNamespace?: string;
  /** Milliseconds a lease is valid without renewal; default 15 000. */
  leaseDuration?: number;
  /** Milliseconds the leader keeps trying to renew before giving up; default 10 000. */
  renewDeadline?: number;
  /** Milliseconds between tries; default 2 000. */
  retryPeriod?: number;
  /** Empty the lease on a graceful stop so the next replica leads at once; default false. */
  leaderElectionReleaseOnCancel?: boolean;
  /** Milliseconds a graceful stop may take before `start()` rejects; default 30 000. */
  gracefulShutdownTimeout?: number;
  /** Options of the manager's cache. */
  cache?: CacheOptions;
  /** Options of the manager's client. */
  client?: CachedClientOptions;
  /**
   * The webhook server, or its options (default: port 9443, certificates from
   * `<tmpdir>/k8s-webhook-server/serving-certs`). It starts only when webhooks are registered.
   */
  webhookServer?: WebhookServer | WebhookServerOptions;
  /**
   * Provision the webhook server's certificate without cert-manager: a CA and serving
   * certificate kept in a Secret, written to the server's `certDir`, injected into the named
   * webhook configurations and CRDs, renewed by the leader before expiry (`CertificateRotator`).
   */
  webhookCertificates?: Omit<CertificateRotatorOptions, "client" | "certDir" | "isLeader">;
  /** The registry metrics are served from; default the global `registry`. */
  metricsRegistry?: Registry;
  /**
   * Shard the controllers built with `.sharded()` across this manager's replicas: each replica
   * holds a shard Lease and caches and reconciles only its shard's objects. Default: off.
   */
  sharding?: ShardingOptions;
}

/**
 * How the metrics server serves: `"secure"` (HTTPS with TokenReview and SubjectAccessReview) or
 * `"insecure-http"` (plain HTTP, no authentication, for local development).
 *
 * @example
 * ```ts
 * import { Manager } from "@rudder/operator";
 * import { type MetricsServing } from "@rudder/operator/manager";
 *
 * const metricsServing: MetricsServing = "insecure-http"; // a laptop, not a cluster
 * const mgr = new Manager({ metricsBindAddress: "127.0.0.1:8080", metricsServing });
 * ```
 */
export type MetricsServing = "secure" | "insecure-http";

const DEFAULT_GRACEFUL_SHUTDOWN_MS = 30_000;
/** Metrics on HTTPS, as kubebuilder's scaffold serves them. */
const DEFAULT_METRICS_BIND_ADDRESS = ":8443";
const METRICS_SERVING: readonly MetricsServing[] = ["secure", "insecure-http"];

/**
 * Checks the metrics options before anything starts: an unknown `metricsServing`, TLS material
 * for plain HTTP, or two sources of certificates are errors.
 */
function validateMetricsOptions(options: ManagerOptions): void {
  const serving = options.metricsServing ?? "secure";
  if (!METRICS_SERVING.includes(serving)) {
    throw new Error(
      `metricsServing must be "secure" or "insecure-http", not ${JSON.stringify(serving)}`,
    );
  }
  const tlsGiven = options.metricsTLS
    ? "metricsTLS"
    : options.metricsCertDir
    ? "metricsCertDir"
    : "";
  if (serving === "insecure-http" && tlsGiven) {
    throw new Error(
      `${tlsGiven} is set but metricsServing is "insecure-http": drop one (secure serving is the ` +
        "default)",
    );
  }
  if (options.metricsTLS && options.metricsCertDir) {
    throw new Error("metricsTLS and metricsCertDir are both set: give the certificate once");
  }
  if (options.metricsTLS && (!options.metricsTLS.cert || !options.metricsTLS.key)) {
    throw new Error("metricsTLS needs both cert and key (PEM)");
  }
}

/** The in-cluster namespace, when running in a pod. */
function inClusterNamespace(): string | undefined {
  try {
    return readTextFileSync(IN_CLUSTER_NAMESPACE_FILE).trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * A configuration loaded on first use: the Manager's constructor is synchronous, so its clients
 * share this object, and `load()` (at start, or at the first request) fills it in. Its
 * credentials come from the loaded configuration's own provider.
 */
class DeferredConfig implements KubeConfig {
  server = "";
  namespace = "default";
  source = "not loaded yet";
  caData?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  proxyURL?: string;
  contextName?: string;
  readonly auth: AuthProvider = {
    credentials: async (signal) => (await this.load()).credentials(signal),
    invalidate: async () => (await (await this.load()).invalidate?.()) ?? false,
  };
  readonly #load: () => Promise<KubeConfig>;
  #loading: Promise<AuthProvider> | undefined;

  constructor(load: () => Promise<KubeConfig>) {
    this.#load = load;
  }

  /** Loads the configuration once; resolves with its credentials' provider. */
  load(): Promise<AuthProvider> {
    this.#loading ??= this.#load().then(({ auth, ...loaded }) => {
      Object.assign(this, loaded);
      return auth;
    });
    return this.#loading;
  }
}

/**
 * Runs an operator: controllers, the shared cache, clients, leader election, metrics and health
 * probes. Metrics are served on `:8443` over HTTPS to scrapers the API server authenticates and
 * authorises (see `metricsServing`); health probes on plain HTTP.
 *
 * @example
 * ```ts ignore
 * import { ConfigMap, Manager, newControllerManagedBy } from "@rudder/operator";
 *
 * const mgr = new Manager({
 *   metricsBindAddress: "127.0.0.1:8080",
 *   healthProbeBindAddress: ":8081",
 *   leaderElection: true,
 *   leaderElectionID: "example-leader",
 * });
 * newControllerManagedBy(mgr).for(ConfigMap).complete(async (request, ctx) => {
 *   const cm = await mgr.getClient().get(ConfigMap, request);
 *   ctx.log.info("seen {name}", { name: cm.metadata?.name });
 * });
 * await mgr.start(); // until SIGTERM or SIGINT
 * ```
 */
export class Manager implements ControllerHost, WebhookHost {
  readonly #options: ManagerOptions;
  readonly #config: KubeConfig;
  readonly #loadConfig: () => Promise<unknown>;
  readonly #rest: RestClient;
  readonly #apiReader: Client;
  readonly #cache: Cache;
  readonly #client: CachedClient;
  readonly #registry: Registry;
  /** Stops serving this manager's informers in `rudder_informer_*` (a later manager may). */
  #stopInformerMetrics: () => void = () => {};
  readonly #healthz = new Checks("healthz");
  readonly #readyz = new Checks("readyz");
  readonly #runnables = new Runnables();
  readonly #recorders = new Map<string, EventRecorder>();
  readonly #identity = `${hostname()}_${crypto.randomUUID()}`;
  readonly #log = getLogger(["rudder", "manager"]);
  readonly #elected = Promise.withResolvers<void>();
  #started = false;
  #metricsServer: HTTPServer | undefined;
  #probeServer: HTTPServer | undefined;
  #webhookServer: WebhookServer | undefined;
  #rotator: CertificateRotator | undefined;
  #elector: LeaderElector | undefined;
  readonly #sharding: Sharding | undefined;

  /** Creates a manager; nothing runs until {@linkcode Manager.start}. */
  constructor(options: ManagerOptions = {}) {
    validateMetricsOptions(options);
    this.#options = options;
    if (options.config) {
      this.#config = options.config;
      this.#loadConfig = () => Promise.resolve();
    } else {
      const deferred = new DeferredConfig(() => loadConfig());
      this.#config = deferred;
      this.#loadConfig = () => deferred.load();
    }
    this.#registry = options.metricsRegistry ?? defaultRegistry;
    this.#rest = new RestClient(this.#config, { onRequest: restClientMetrics(this.#registry) });
    const mapper = new RESTMapper(this.#rest);
    this.#apiReader = newClient(this.#config, { rest: this.#rest, mapper });
    // A list of our own: sharding adds its selectors to it as sharded controllers are built.
    const byObject = [...(options.cache?.byObject ?? [])];
    this.#cache = newCache(this.#config, { ...options.cache, byObject, rest: this.#rest, mapper });
    this.#client = newCachedClient(this.#cache, this.#apiReader, options.client);
    this.#elected.promise.catch(() => {});
    this.#readyz.add("informers", informersReady(() => this.#cache.health()));
    this.#addOwn(this.#cache);
    this.#addOwn({
      name: "event recorders",
      needLeaderElection: () => false,
      start: async (signal) => {
        await untilAborted(signal);
        await Promise.all([...this.#recorders.values()].map((r) => r.flush().catch(() => {})));
      },
    });
    if (options.sharding) {
      this.#sharding = this.#newSharding(options.sharding, byObject);
      this.#addOwn(this.#sharding);
      this.#readyz.add("shard", this.#sharding.readyCheck());
    }
    // First of the leader runnables: what becoming the leader means to the manager itself.
    this.#addOwn({ name: "leadership", start: () => this.#startLeading() });
  }

  /** The client reconcilers use: reads from the cache, writes to the API server. */
  getClient(): CachedClient {
    return this.#client;
  }

  /** A client that always reads from the API server. */
  getAPIReader(): Client {
    return this.#apiReader;
  }

  /** The shared cache. */
  getCache(): Cache {
    return this.#cache;
  }

  /** The configuration (filled in once loaded; see {@linkcode Manager.start}). */
  getConfig(): KubeConfig {
    return this.#config;
  }

  /** The metrics registry served on `/metrics`; register your own metrics here. */
  getMetricsRegistry(): Registry {
    return this.#registry;
  }

  /** This replica's identity in leader election: `hostname_uuid`. */
  get identity(): string {
    return this.#identity;
  }

  /** URL of the metrics server while it runs. */
  get metricsURL(): string | undefined {
    return this.#metricsServer?.url;
  }

  /** URL of the health-probe server while it runs. */
  get healthProbeURL(): string | undefined {
    return this.#probeServer?.url;
  }

  /** The webhook server, made on first use; it starts with the manager if anything is registered. */
  getWebhookServer(): WebhookServer {
    if (!this.#webhookServer) {
      const option = this.#options.webhookServer;
      this.#webhookServer = option instanceof WebhookServer
        ? option
        : new WebhookServer({ metricsRegistry: this.#registry, ...option });
    }
    return this.#webhookServer;
  }

  /** The sharding of this manager's sharded controllers, with the `sharding` option. */
  sharding(): ManagerSharding | undefined {
    return this.#sharding;
  }

  /** Options every controller of this manager starts from: its metrics. */
  controllerDefaults(): ControllerOptions {
    return { metrics: controllerMetrics(this.#registry) };
  }

  /**
   * An event recorder that reports as `name` (events.k8s.io/v1 `reportingController`), this
   * replica being the `reportingInstance`.
   */
  getEventRecorderFor(name: string): EventRecorder {
    let recorder = this.#recorders.get(name);
    if (!recorder) {
      recorder = new EventRecorder(this.#apiReader, {
        reportingController: name,
        reportingInstance: this.#identity,
      });
      this.#recorders.set(name, recorder);
    }
    return recorder;
  }

  /** Adds a liveness check served on `/healthz`. */
  addHealthzCheck(name: string, check: Checker): void {
    this.#healthz.add(name, check);
  }

  /** Adds a readiness check served on `/readyz`. Informer sync and watch health are built in. */
  addReadyzCheck(name: string, check: Checker): void {
    this.#readyz.add(name, check);
  }

  /**
   * Adds a runnable to the group of what it is, as controller-runtime's manager does: a cache
   * (anything with `waitForCacheSync`) to the caches, a webhook server or certificate rotator to
   * the webhooks, a leader elector to leader election; others by `needLeaderElection()`: `false`
   * to the runnables of every replica (started once the caches have synced), else (the default,
   * controllers) to those that run only on the leader. Added after start, it starts at once if
   * its group runs.
   */
  add(runnable: Runnable): void {
    this.#addOwn(runnable);
  }

  /** Adds one of the manager's own runnables: not through add(), which a subclass may override. */
  #addOwn(runnable: Runnable): void {
    if (this.#sharding?.runs(runnable)) return; // a sharded controller: its shard runs it
    this.#runnables.add(runnable, groupOf(runnable));
  }

  /** Resolves when this replica leads (at once without leader election). */
  elected(): Promise<void> {
    return this.#elected.promise;
  }

  /**
   * Runs everything until `signal` aborts — or, without a signal, until SIGTERM or SIGINT (a
   * second signal exits at once; one repeated within a second, as a task runner forwards it, is
   * the same): the groups of runnables start in order, each once the one before is ready, and
   * stop in reverse. Resolves after a graceful stop; rejects when a runnable
   * fails, when leadership is lost, or when the stop takes longer than `gracefulShutdownTimeout`.
   * A second `start` is an error.
   */
  async start(signal?: AbortSignal): Promise<void> {
    if (this.#started) throw new Error("the manager was already started");
    this.#started = true;
    const stopping = new AbortController();
    let failure: unknown;
    const fail = (err: unknown) => {
      failure ??= err;
      stopping.abort();
    };
    const stopListening = signal
      ? forwardAbort(signal, stopping)
      : listenForSignals(signalHandler({ stop: stopping }));
    try {
      await this.#loadConfig();
      await this.#addServingRunnables();
      await this.#runnables.start(stopping.signal, fail);
      await untilAborted(stopping.signal);
    } catch (err) {
      fail(err);
    }
    this.#log.info("Stopping the manager");
    const gracePeriod = this.#options.gracefulShutdownTimeout ?? DEFAULT_GRACEFUL_SHUTDOWN_MS;
    // After losing the lease another replica may lead soon: the leader runnables are aborted
    // and not waited for, as controller-runtime exits at once.
    const abandonLeaders = failure instanceof LeaderElectionLostError;
    const { stillRunning } = await this.#runnables.stop({ gracePeriod, abandonLeaders });
    stopListening();
    this.#stopInformerMetrics();
    this.#rest.close();
    this.#elected.reject(new Error("the manager stopped"));
    if (stillRunning.length > 0) {
      failure ??= new Error(
        `failed waiting for all runnables to end within the grace period of ${gracePeriod} ms: ` +
          `still running: ${stillRunning.join(", ")}`,
      );
    }
    if (failure !== undefined) throw failure;
  }

  /**
   * The runnables known only once the configuration is loaded: the metrics and health-probe
   * servers, the webhook server (with its certificate rotator) when webhooks are registered, and
   * the leader elector.
   */
  async #addServingRunnables(): Promise<void> {
    const shardWebhook = this.#options.sharding?.webhook;
    if (this.#sharding && (shardWebhook ?? this.#webhookServer?.hasHandlers() ?? false)) {
      this.#sharding.registerWebhook(this.getWebhookServer());
    }
    this.#metricsServer = await this.#newMetricsServer();
    const probeAddress = this.#options.healthProbeBindAddress;
    if (probeAddress && probeAddress !== "0") {
      const app = healthApp(this.#healthz, this.#readyz);
      this.#probeServer = new HTTPServer({
        name: "health",
        address: probeAddress,
        handler: app.fetch,
      });
    }
    for (const server of [this.#metricsServer, this.#probeServer]) if (server) this.#addOwn(server);
    const webhooks = this.#webhookServer;
    if (webhooks?.hasHandlers()) {
      if (this.#options.webhookCertificates) {
        this.#rotator = new CertificateRotator({
          ...this.#options.webhookCertificates,
          client: this.#apiReader,
          certDir: webhooks.certDir,
          isLeader: () => this.#elector?.isLeader() ?? true,
        });
        this.#addOwn(this.#rotator); // before the server, which needs its certificate
      }
      this.#readyz.add("webhook", webhooks.startedChecker());
      this.#addOwn(webhooks);
    }
    if (this.#options.leaderElection) {
      this.#elector = this.#newElector();
      this.#addOwn(this.#elector);
    }
  }

  /** On becoming the leader: say so, and renew the webhook certificate if due and inject its CA. */
  #startLeading(): Promise<void> {
    if (this.#elector) this.#log.info("Elected leader as {identity}", { identity: this.#identity });
    this.#elected.resolve();
    this.#rotator?.ensure().catch((err) => {
      this.#log.error("Injecting the webhook CA failed (retried hourly): {error}", {
        error: (err as Error).message,
      });
    });
    return Promise.resolve();
  }

  #newSharding(options: ShardingOptions, byObject: ByObject[]): Sharding {
    const cacheOptions = this.#options.cache ?? {};
    return new Sharding({
      options: resolveShardingOptions(
        options,
        () => this.#options.leaderElectionNamespace ?? inClusterNamespace(),
      ),
      cache: this.#cache,
      byObject,
      cacheDefaults: {
        labelSelector: cacheOptions.defaultLabelSelector,
        namespaces: cacheOptions.defaultNamespaces,
      },
      rest: this.#rest,
      client: this.#apiReader,
      registry: this.#registry,
    });
  }

  #newElector(): LeaderElector {
    const id = this.#options.leaderElectionID;
    if (!id) throw new Error("leaderElection needs leaderElectionID: the name of the Lease");
    const namespace = this.#options.leaderElectionNamespace ?? inClusterNamespace();
    if (!namespace) {
      throw new Error(
        "leaderElection needs leaderElectionNamespace when not running in a cluster " +
          `(no ${IN_CLUSTER_NAMESPACE_FILE})`,
      );
    }
    return new LeaderElector({
      client: this.#apiReader,
      namespace,
      name: id,
      identity: this.#identity,
      leaseDuration: this.#options.leaseDuration,
      renewDeadline: this.#options.renewDeadline,
      retryPeriod: this.#options.retryPeriod,
      releaseOnCancel: this.#options.leaderElectionReleaseOnCancel,
      metrics: leaderElectionMetrics(this.#registry),
    });
  }

  /**
   * The metrics server, unless disabled: plain HTTP only when `metricsServing` says so; else
   * HTTPS with the certificate of `metricsTLS`, of `metricsCertDir` (reloaded), or a
   * self-signed one.
   */
  async #newMetricsServer(): Promise<HTTPServer | undefined> {
    const options = this.#options;
    const address = options.metricsBindAddress ?? DEFAULT_METRICS_BIND_ADDRESS;
    if (address === "0") return undefined;
    registerProcessMetrics(this.#registry);
    this.#stopInformerMetrics = informerMetrics(() => this.#cache.health(), this.#registry);
    const name = "metrics";
    if (options.metricsServing === "insecure-http") {
      this.#log.warn(
        "Serving metrics over plain HTTP without authentication (metricsServing: insecure-http)",
      );
      return new HTTPServer({ name, address, handler: metricsApp(this.#registry).fetch });
    }
    const handler = metricsApp(this.#registry, { secure: { rest: this.#rest } }).fetch;
    if (options.metricsCertDir) {
      const tls = new CertWatcher({
        certDir: options.metricsCertDir,
        certName: options.metricsCertName,
        keyName: options.metricsKeyName,
      });
      return new HTTPServer({ name, address, handler, tls });
    }
    let tls = options.metricsTLS;
    if (!tls) {
      const { selfSignedServingCertificate } = await import("../util/certs.ts");
      const { hostname: bound } = parseAddress(address);
      const hosts = ["localhost", hostname(), "127.0.0.1", "::1"];
      if (bound !== "0.0.0.0" && bound !== "::") hosts.push(bound);
      tls = await selfSignedServingCertificate([...new Set(hosts)]);
      this.#log.info("Serving metrics with a self-signed certificate (no metricsCertDir given)");
    }
    return new HTTPServer({ name, address, handler, tls });
  }
}

/** The group a runnable belongs to, by what it is (controller-runtime's `runnables.Add`). */
function groupOf(runnable: Runnable): GroupName {
  if (runnable instanceof HTTPServer) return "HTTP servers";
  if (runnable instanceof WebhookServer || runnable instanceof CertificateRotator) {
    return "webhooks";
  }
  if (isCache(runnable)) return "caches";
  if (runnable instanceof LeaderElector) return "leader election";
  return (runnable.needLeaderElection?.() ?? true) ? "leader runnables" : "others";
}

/** Resolves when `signal` aborts. */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

/** Aborts `target` when `signal` does; returns what stops listening. */
function forwardAbort(signal: AbortSignal, target: AbortController): () => void {
  const onAbort = () => target.abort();
  if (signal.aborted) target.abort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return () => signal.removeEventListener("abort", onAbort);
}
