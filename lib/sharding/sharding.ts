/**
 * Sharding as a Manager runs it: one runnable that, on every replica,
 *
 * 1. watches the ring's Leases ({@linkcode RingMembers});
 * 2. holds this replica's shard Lease (a {@linkcode LeaderElector} on a Lease named after the
 *    shard, labelled with the ring), and runs the sharded controllers only while it holds it:
 *    a replica that cannot renew within `renewDeadline` stops them and fails, as on losing
 *    leadership; a graceful stop stops them first and then releases the Lease;
 * 3. competes for the `<ring>-sharder` Lease and, while it holds it, runs the
 *    {@linkcode Sharder};
 * 4. runs the {@linkcode Fallback}: while the sharder's replica is gone and its Lease not yet
 *    expired, this member assigns objects left unassigned past a short grace and moves the
 *    objects of shards that left the ring, so that no object waits for the next election.
 *
 * The sharded kinds (and the kinds they own) are cached with the selector
 * `shard.rudder.dev/<ring>=<shard>`, and an object that leaves it is dropped without a delete.
 * A burst of hand-overs (objects leaving this shard, objects its sharder moved) ends with one full
 * garbage collection where the runtime offers one ({@linkcode BurstCollector}).
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { Lease } from "../api/builtins.ts";
import { gvkKey, type KubeObject, type ResourceType } from "../api/resource.ts";
import type { ByObject, Cache, NamespaceConfig } from "../cache/cache.ts";
import { Informer } from "../cache/informer.ts";
import type { Client } from "../client/client.ts";
import { formatLabelSelector, type LabelSelectorInput } from "../client/options.ts";
import type { ShardingHost } from "../controller/builder.ts";
import type { ReconcileAdmission } from "../controller/controller.ts";
import type { RestClient } from "../kube/rest.ts";
import { LeaderElectionLostError, LeaderElector } from "../leaderelection/leader_election.ts";
import type { Registry } from "../metrics/registry.ts";
import type { Runnable } from "../util/runnable.ts";
import { type Clock, realClock, type TimerHandle } from "../util/clock.ts";
import { collectGarbage } from "../util/runtime.ts";
import { errorMessage } from "../util/logging.ts";
import { admissionHandler } from "../webhook/admission.ts";
import type { WebhookServer } from "../webhook/server.ts";
import { RING_LABEL, sharderLeaseName, shardLabel } from "./labels.ts";
import { RingMembers } from "./membership.ts";
import { type ShardingMetrics, shardingMetrics } from "./metrics.ts";
import type { ResolvedShardingOptions } from "./options.ts";
import { CONTROLLER_UID_FIELD, controllerUID, Departures, ShardGate } from "./shard.ts";
import { Fallback } from "./fallback.ts";
import { Sharder } from "./sharder.ts";
import { shardAssigner, shardWebhookPath } from "./webhook.ts";
import { metadataPages, type ShardedKind, ShardWriter } from "./writer.ts";

const logger = getLogger(["rudder", "sharding"]);

/**
 * Objects that must have left this shard's cache, or been moved by its sharder, in one burst
 * before the burst ends with a full garbage collection; and the quiet, in milliseconds, that
 * ends a burst. A large hand-over leaves the decoded objects, patches and list pages of the
 * burst behind as garbage; Bun keeps the pages that peak took until a full collection gives
 * them back, so a replica that once held far more than its share would stay that large.
 */
const BURST_COLLECT_MIN = 100;
const BURST_QUIET_MS = 2_000;

/** What {@linkcode Sharding} needs from its manager. */
export interface ShardingDeps {
  /** The options, defaults applied. */
  options: ResolvedShardingOptions;
  /** The manager's cache. */
  cache: Cache;
  /**
   * The cache's `byObject` list, which the cache reads when it makes a kind's informers:
   * sharding adds the shard selector of each sharded kind to it before that happens.
   */
  byObject: ByObject[];
  /** The cache's default selectors, which a kind's own settings would otherwise replace. */
  cacheDefaults: {
    labelSelector?: LabelSelectorInput;
    namespaces?: Record<string, NamespaceConfig>;
  };
  /** The manager's REST client. */
  rest: RestClient;
  /** An uncached client. */
  client: Client;
  /** The manager's metrics registry. */
  registry: Registry;
}

/**
 * What a manager with the `sharding` option tells about this replica's shard
 * (`mgr.sharding()`); the builder's `sharded()` uses the rest.
 *
 * @example Label this replica's records with its shard
 * ```ts
 * import { Manager } from "@rudder/operator";
 *
 * const mgr = new Manager({ sharding: { ring: "example", namespace: "operators" } });
 * const sharding = mgr.sharding();
 * if (sharding) {
 *   console.log(`${sharding.ring}/${sharding.shardName}`, sharding.isMember(), sharding.shards());
 * }
 * ```
 */
export interface ManagerSharding extends ShardingHost {
  /** The ring's name. */
  readonly ring: string;
  /** This replica's shard name (its pod's name by default). */
  readonly shardName: string;
  /** Whether this replica holds its shard Lease, and so works on its shard's objects. */
  isMember(): boolean;
  /** The ring's live shards as this replica sees them, sorted. */
  shards(): readonly string[];
}

/** The sharding of one manager; see the module doc. */
export class Sharding implements ManagerSharding, Runnable {
  /** Its name among the manager's runnables. */
  readonly name = "sharding";
  /** The ring's members as this replica sees them. */
  readonly members: RingMembers;
  readonly #deps: ShardingDeps;
  readonly #options: ResolvedShardingOptions;
  readonly #metrics: ShardingMetrics;
  readonly #kinds: ShardedKind[] = [];
  readonly #gates: ShardGate[] = [];
  readonly #departures: Departures;
  /** The owned kinds indexed by their controller's uid. */
  readonly #indexed = new Set<string>();
  /** The kinds whose cache settings carry the shard selector. */
  readonly #selected = new Set<string>();
  readonly #controllers: Runnable[] = [];
  readonly #burst: BurstCollector;
  #holding = false;
  /** Whether this replica runs the sharder now. */
  #sharder = false;
  #started = false;

  /** Sharding for a manager; it runs as one of the manager's runnables. */
  constructor(deps: ShardingDeps) {
    this.#deps = deps;
    this.#options = deps.options;
    this.#metrics = shardingMetrics(deps.registry);
    this.#departures = new Departures(deps.options.ring);
    this.members = new RingMembers({
      ring: this.#options.ring,
      virtualNodes: this.#options.virtualNodes,
    });
    this.members.onChange((ring) =>
      this.#metrics.ringMembers(this.#options.ring, ring.members.length)
    );
    this.#burst = new BurstCollector({ min: BURST_COLLECT_MIN, quietMs: BURST_QUIET_MS });
  }

  /** This replica's shard name. */
  get shardName(): string {
    return this.#options.shardName;
  }

  /** The ring's name. */
  get ring(): string {
    return this.#options.ring;
  }

  /** Whether this replica holds its shard Lease. */
  isMember(): boolean {
    return this.#holding;
  }

  /** The ring's live shards as this replica sees them, sorted. */
  shards(): readonly string[] {
    return this.members.ring.members;
  }

  /** The sharded kinds and the kinds that follow them, as registered so far. */
  kinds(): readonly ShardedKind[] {
    return this.#kinds;
  }

  /** Runs on every replica: each holds its own shard. */
  needLeaderElection(): boolean {
    return false;
  }

  shardKinds(
    forType: ResourceType<KubeObject>,
    owns: readonly ResourceType<KubeObject>[],
  ): ReconcileAdmission {
    if (this.#started) {
      throw new Error("sharded controllers must be built before the manager starts");
    }
    this.#kinds.push({ type: forType, owns: [...owns] });
    const selector = `${shardLabel(this.#options.ring)}=${this.#options.shardName}`;
    for (const type of [forType, ...owns]) this.#selectShard(type, selector);
    for (const type of owns) {
      if (this.#indexed.has(gvkKey(type))) continue;
      this.#indexed.add(gvkKey(type));
      this.#deps.cache.indexField(type, CONTROLLER_UID_FIELD, controllerUID);
    }
    const gate = new ShardGate({
      ring: this.#options.ring,
      shard: this.#options.shardName,
      type: forType,
      owns,
      cache: this.#deps.cache,
      client: this.#deps.client,
      departures: this.#departures,
      indexedOwners: true,
      metrics: this.#metrics,
    });
    this.#gates.push(gate);
    return gate;
  }

  addShardedController(controller: Runnable): void {
    if (this.#started) {
      throw new Error("sharded controllers must be added before the manager starts");
    }
    this.#controllers.push(controller);
  }

  /** Whether `runnable` is a sharded controller, which this sharding runs. */
  runs(runnable: Runnable): boolean {
    return this.#controllers.includes(runnable);
  }

  /** Registers the assigning webhook `/shard-<ring>` on `server`. */
  registerWebhook(server: WebhookServer): void {
    const handler = shardAssigner({
      ring: this.#options.ring,
      members: this.members,
      sharded: () => this.#kinds.map((k) => k.type),
      client: this.#deps.client,
    });
    server.register(shardWebhookPath(this.#options.ring), admissionHandler(handler));
  }

  /** Readiness: this replica holds its shard Lease and its caches have synced. */
  readyCheck(): () => void {
    return () => {
      if (!this.#holding) throw new Error(`not holding shard Lease ${this.#options.shardName}`);
      const unsynced = this.#deps.cache.unsynced();
      if (unsynced.length > 0) throw new Error(`caches not synced: ${unsynced.join(", ")}`);
    };
  }

  /**
   * Runs until `signal` aborts: watches the ring, holds the shard Lease and runs the sharded
   * controllers while it does, and the sharder while elected. Rejects with a
   * {@linkcode LeaderElectionLostError} when the shard Lease is lost (the controllers are
   * stopped first), or when a sharded controller fails.
   */
  async start(signal: AbortSignal): Promise<void> {
    this.#started = true;
    const { ring, shardName, namespace } = this.#options;
    const background = new AbortController();
    const stopCounting = this.#metrics.countObjects(() => this.#countObjects());
    const stopNoting = this.#departures.onDeparture(() => this.#burst.note());
    const leases = new Informer(this.#deps.rest, Lease, {
      namespace,
      labelSelector: `${RING_LABEL}=${ring}`,
      resyncPeriod: 0,
    });
    const refresh = () => this.members.update(leases.store.list());
    leases.addEventHandler({ onAdd: refresh, onUpdate: refresh, onDelete: refresh });
    const watching = leases.run(background.signal);
    leases.waitForSync(background.signal).then(refresh, () => {});
    const sharding = this.#runSharderElection(background.signal);
    const fallback = this.#runFallback(background.signal);
    try {
      await this.#holdShard(signal);
    } finally {
      background.abort();
      this.members.stop();
      stopCounting();
      stopNoting();
      this.#burst.stop();
      await Promise.allSettled([watching, sharding, fallback]);
      logger.info("Stopped sharding as {shard} in ring {ring}", { shard: shardName, ring });
    }
  }

  /** Holds the shard Lease and runs the sharded controllers while it does. */
  async #holdShard(signal: AbortSignal): Promise<void> {
    const { ring, shardName } = this.#options;
    const electorStop = new AbortController();
    const elector = this.#elector(shardName, { [RING_LABEL]: ring });
    const holding = elector.run(electorStop.signal);
    const aborted = untilAborted(signal);
    const first = await Promise.race([
      elector.elected().then(() => "elected" as const, () => "stopped" as const),
      holding.then(() => "stopped" as const),
      aborted.then(() => "stopped" as const),
    ]);
    if (first !== "elected") {
      electorStop.abort();
      await holding;
      return;
    }
    this.#holding = true;
    this.#metrics.member(ring, shardName, true);
    logger.info("Holding shard {shard} of ring {ring}", { shard: shardName, ring });
    const controllersStop = new AbortController();
    let controllers: Promise<unknown> = Promise.resolve();
    try {
      for (const gate of this.#gates) await gate.start(controllersStop.signal);
      controllers = Promise.all(this.#controllers.map((c) => c.start(controllersStop.signal)));
      const outcome = await Promise.race([
        aborted.then(() => ({ kind: "stop" as const })),
        holding.then(
          () => ({ kind: "stop" as const }),
          (err: unknown) => ({ kind: "lost" as const, err }),
        ),
        controllers.then(
          () => ({ kind: "stop" as const }),
          (err: unknown) => ({ kind: "failed" as const, err }),
        ),
      ]);
      if (outcome.kind === "lost") {
        // Another replica may get our objects once the Lease expires: stop now, wait for nothing.
        controllersStop.abort();
        this.#left();
        logger.error("Lost shard Lease {shard}: stopped the sharded controllers", {
          shard: shardName,
          error: errorMessage(outcome.err),
        });
        throw outcome.err;
      }
      controllersStop.abort();
      await controllers.catch(() => {});
      this.#left();
      electorStop.abort();
      await holding.catch(() => {});
      if (outcome.kind === "failed") throw outcome.err;
    } finally {
      controllersStop.abort();
      electorStop.abort();
      this.#left();
    }
  }

  #left(): void {
    if (!this.#holding) return;
    this.#holding = false;
    this.#metrics.member(this.#options.ring, this.#options.shardName, false);
  }

  /** Competes for the sharder's Lease and runs the sharder while it holds it, round after round. */
  async #runSharderElection(signal: AbortSignal): Promise<void> {
    const name = sharderLeaseName(this.#options.ring);
    while (!signal.aborted) {
      const elector = this.#elector(name);
      const stop = new AbortController();
      const onAbort = () => stop.abort();
      signal.addEventListener("abort", onAbort, { once: true });
      const holding = elector.run(stop.signal);
      let sharder: Promise<void> | undefined;
      const sharderStop = new AbortController();
      try {
        await elector.elected();
        this.#sharder = true;
        sharder = new Sharder({
          ring: this.#options.ring,
          kinds: () => this.#kinds,
          members: this.members,
          rest: this.#deps.rest,
          client: this.#deps.client,
          metrics: {
            ...this.#metrics,
            moved: (ring, kind) => {
              this.#metrics.moved(ring, kind);
              this.#burst.note();
            },
          },
          namespaces: this.#namespaces(),
          leaseNamespace: this.#options.namespace,
          identity: `${sharderLeaseName(this.#options.ring)}/${this.#options.shardName}`,
          claimSeconds: Math.ceil(this.#options.leaseDuration / 1000),
        }).run(sharderStop.signal);
        await holding;
      } catch (err) {
        if (!(err instanceof LeaderElectionLostError) && !signal.aborted) {
          logger.warn("Sharder election of {ring} failed: {error}", {
            ring: this.#options.ring,
            error: errorMessage(err),
          });
        }
      } finally {
        sharderStop.abort();
        await sharder?.catch(() => {});
        this.#sharder = false;
        stop.abort();
        await holding.catch(() => {});
        signal.removeEventListener("abort", onAbort);
      }
      if (!signal.aborted) await sleep(this.#options.retryPeriod, signal);
    }
  }

  /** Runs the fallback until `signal` aborts. */
  async #runFallback(signal: AbortSignal): Promise<void> {
    const { ring, shardName } = this.#options;
    const namespaces = this.#namespaces();
    const fallback = new Fallback({
      ring,
      kinds: () => this.#kinds,
      members: this.members,
      writer: new ShardWriter({
        ring,
        members: this.members,
        client: this.#deps.client,
        listPage: metadataPages(this.#deps.rest),
        namespaces,
        leaseNamespace: this.#options.namespace,
        identity: `${ring}-fallback/${shardName}`,
        claimSeconds: Math.ceil(this.#options.leaseDuration / 1000),
      }),
      member: () => this.#holding,
      sharder: () => this.#sharder,
      metrics: this.#metrics,
    });
    try {
      await fallback.run(this.#deps.rest, namespaces, signal);
    } catch (err) {
      if (!signal.aborted) {
        logger.warn("The sharding fallback of {ring} stopped: {error}", {
          ring,
          error: errorMessage(err),
        });
      }
    }
  }

  /** The namespaces the manager's cache holds, unless it holds all of them. */
  #namespaces(): string[] | undefined {
    const namespaces = Object.keys(this.#deps.cacheDefaults.namespaces ?? {});
    return namespaces.length === 0 || namespaces.includes("") ? undefined : namespaces;
  }

  #elector(name: string, labels?: Record<string, string>): LeaderElector {
    return new LeaderElector({
      client: this.#deps.client,
      namespace: this.#options.namespace,
      name,
      identity: this.#options.shardName,
      leaseDuration: this.#options.leaseDuration,
      renewDeadline: this.#options.renewDeadline,
      retryPeriod: this.#options.retryPeriod,
      releaseOnCancel: true,
      labels,
    });
  }

  /** Adds the shard selector to how the cache holds `type`, keeping the user's selectors. */
  #selectShard(type: ResourceType<KubeObject>, selector: string): void {
    const byObject = this.#deps.byObject;
    const index = byObject.findIndex((b) => gvkKey(b.type) === gvkKey(type));
    const existing = index >= 0 ? byObject[index] : undefined;
    if (this.#selected.has(gvkKey(type))) return; // another sharded controller did it already
    this.#selected.add(gvkKey(type));
    const defaults = this.#deps.cacheDefaults;
    const combine = (s: LabelSelectorInput | undefined) =>
      s === undefined ? selector : `${formatLabelSelector(s)},${selector}`;
    const namespaces = existing?.namespaces ?? defaults.namespaces;
    const entry: ByObject = {
      ...existing,
      type,
      labelSelector: combine(existing?.labelSelector ?? defaults.labelSelector),
      isDeparture: (obj) => this.#departures.isDeparture(type, obj),
      ...(namespaces
        ? {
          namespaces: Object.fromEntries(
            Object.entries(namespaces).map(([ns, config]) => [
              ns,
              config.labelSelector === undefined
                ? config
                : { ...config, labelSelector: combine(config.labelSelector) },
            ]),
          ),
        }
        : {}),
    };
    if (index >= 0) byObject[index] = entry;
    else byObject.push(entry);
  }

  /** This shard's cached objects per kind, for `rudder_shard_objects`. */
  async #countObjects(): Promise<{ ring: string; shard: string; kind: string; count: number }[]> {
    if (!this.#holding) return [];
    const counts: { ring: string; shard: string; kind: string; count: number }[] = [];
    const seen = new Set<string>();
    for (const kind of this.#kinds) {
      for (const type of [kind.type, ...kind.owns]) {
        if (seen.has(gvkKey(type))) continue;
        seen.add(gvkKey(type));
        const informer = await this.#deps.cache.getInformer(type);
        if (!informer.hasSynced()) continue;
        const list = await this.#deps.cache.list(type);
        counts.push({
          ring: this.#options.ring,
          shard: this.#options.shardName,
          kind: type.kind,
          count: list.items.length,
        });
      }
    }
    return counts;
  }
}

/** Options of {@linkcode BurstCollector}. */
export interface BurstCollectorOptions {
  /** Events a burst must have had to be worth a collection. */
  min: number;
  /** Milliseconds without an event that end a burst. */
  quietMs: number;
  /** Runs the collection; default the runtime's, if it offers one ({@linkcode collectGarbage}). */
  collect?: () => boolean;
  /** Timers; default the real clock. */
  clock?: Clock;
}

/**
 * Counts the events of a burst (objects leaving, objects moved) and, once `quietMs` pass without
 * one after at least `min` of them, runs one full garbage collection: never on the hot path of
 * a hand-over, at most once per burst.
 */
export class BurstCollector {
  readonly #options: BurstCollectorOptions;
  readonly #clock: Clock;
  #count = 0;
  #timer: TimerHandle | undefined;

  /** A collector of bursts as `options` define them. */
  constructor(options: BurstCollectorOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
  }

  /** One more event of the current burst. */
  note(): void {
    this.#count++;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = this.#clock.setTimeout(() => this.#end(), this.#options.quietMs);
  }

  /** Forgets the current burst without collecting. */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#count = 0;
  }

  #end(): void {
    const events = this.#count;
    this.#timer = undefined;
    this.#count = 0;
    if (events < this.#options.min) return;
    const started = performance.now();
    if ((this.#options.collect ?? collectGarbage)()) {
      logger.debug("Collected garbage after a burst of {events} hand-overs in {ms} ms", {
        events,
        ms: Math.round(performance.now() - started),
      });
    }
  }
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
