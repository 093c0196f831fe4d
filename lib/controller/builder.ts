/**
 * The controller builder, like controller-runtime's `builder` package:
 *
 * ```ts ignore
 * newControllerManagedBy(mgr).for(Example).owns(Deployment)
 *   .withOptions({ maxConcurrentReconciles: 10 }).complete(new ExampleReconciler(mgr));
 * ```
 *
 * @module
 */

import type { KubeObject, ResourceType } from "../api/resource.ts";
import type { Cache } from "../cache/cache.ts";
import {
  Controller,
  type ControllerOptions,
  type ReconcileAdmission,
  type WatchedKind,
} from "./controller.ts";
import { type Logger } from "../util/logging.ts";
import { type ReconcileFunc, type Reconciler } from "../reconcile/reconcile.ts";
import { type Runnable } from "../util/runnable.ts";
import type { Request } from "../reconcile/reconcile.ts";
import {
  enqueueRequestForObject,
  enqueueRequestForOwner,
  type EventHandler,
} from "../handler/handler.ts";
import type { Predicate } from "../predicate/predicate.ts";
import { kindSource, type Source } from "../source/source.ts";

/**
 * What a controller needs from its manager: the shared cache, a place to register itself as a
 * runnable, and default options. The Manager implements it; tests can too.
 */
export interface ControllerHost {
  /** The cache that kind sources read from. */
  getCache(): Cache;
  /** Registers a runnable to start with the host. */
  add(runnable: Runnable): void;
  /** Options every controller of this host starts from (metrics hooks, …). */
  controllerDefaults?(): ControllerOptions;
  /** Sharding, when the host shards (a Manager with `sharding`); what `sharded()` needs. */
  sharding?(): ShardingHost | undefined;
}

/**
 * What a sharded controller needs from its host: its kinds cached by shard, the gate its
 * requests pass, and a place to run while this replica holds its shard.
 */
export interface ShardingHost {
  /**
   * Shards `forType` and has each of `owns` follow its controlling owner; called before the
   * controller's sources are made. Returns the gate of the controller's requests.
   */
  shardKinds(
    forType: ResourceType<KubeObject>,
    owns: readonly ResourceType<KubeObject>[],
  ): ReconcileAdmission;
  /**
   * Runs `controller` on every replica, while it holds its shard Lease. The builder then still
   * calls the host's `add` (so that whoever records a host's runnables sees it); a host whose
   * sharding runs the controller leaves it out of its own runnables.
   */
  addShardedController(controller: Runnable): void;
}

/** Names taken per host: controller names must be unique, as in controller-runtime. */
const takenNames = new WeakMap<ControllerHost, Set<string>>();

/** Options of {@linkcode ControllerBuilder.for} and {@linkcode ControllerBuilder.watches}. */
export interface WatchOptions<T extends KubeObject> {
  /** Filters for this watch only. */
  predicates?: Predicate<T>[];
}

/** Options of {@linkcode ControllerBuilder.owns}. */
export interface OwnsOptions<T extends KubeObject> extends WatchOptions<T> {
  /** Only objects whose controller reference points at the `for` kind; default true. */
  onlyController?: boolean;
}

/**
 * One kind the controller watches. Its handler and predicates stay typed by the kind until
 * `source` builds the kind source, which is kind-agnostic: no watch forgets its type.
 */
interface Watch extends WatchedKind {
  /**
   * The kind source; `owner` is the `for` kind (owned objects enqueue their owner of that kind)
   * and `filters` the `withEventFilter` predicates.
   */
  source(cache: Cache, owner: ResourceType<KubeObject>, filters: Predicate<KubeObject>[]): Source;
}

/**
 * A watch of `type` through the handler that `handler` makes. Typed end to end: a predicate of
 * any object (`filters`) is a predicate of `T`'s objects too.
 */
function watchOf<T extends KubeObject>(
  type: ResourceType<T>,
  relation: WatchedKind["relation"],
  handler: (owner: ResourceType<KubeObject>) => EventHandler<T>,
  predicates: Predicate<T>[] = [],
): Watch {
  return {
    type,
    relation,
    source: (cache, owner, filters) =>
      kindSource(cache, type, handler(owner), {
        predicates: [...filters, ...predicates],
        metadataOnly: relation === "metadata",
      }),
  };
}

/** Collects what a controller watches and how it runs; see {@linkcode newControllerManagedBy}. */
export class ControllerBuilder {
  readonly #host: ControllerHost;
  #for: Watch | undefined;
  #owns: Watch[] = [];
  #watches: Watch[] = [];
  #rawSources: Source[] = [];
  #globalPredicates: Predicate<KubeObject>[] = [];
  #options: ControllerOptions = {};
  #name: string | undefined;
  #logConstructor: ((request?: Request) => Logger) | undefined;
  #sharded = false;

  /** Use {@linkcode newControllerManagedBy}. */
  constructor(host: ControllerHost) {
    this.#host = host;
  }

  /** The kind the controller reconciles: each of its events enqueues that object. Once only. */
  for<T extends KubeObject>(type: ResourceType<T>, options: WatchOptions<T> = {}): this {
    if (this.#for) throw new Error(`for() was already called with ${this.#for.type.kind}`);
    this.#for = watchOf(type, "for", () => enqueueRequestForObject(), options.predicates);
    return this;
  }

  /** A kind the reconciled objects own: its events enqueue their owner of the `for` kind. */
  owns<T extends KubeObject>(type: ResourceType<T>, options: OwnsOptions<T> = {}): this {
    const onlyController = options.onlyController ?? true;
    this.#owns.push(
      watchOf(
        type,
        "owns",
        (owner) => enqueueRequestForOwner(owner, { onlyController }),
        options.predicates,
      ),
    );
    return this;
  }

  /** Any kind, with any handler. */
  watches<T extends KubeObject>(
    type: ResourceType<T>,
    handler: EventHandler<T>,
    options: WatchOptions<T> = {},
  ): this {
    this.#watches.push(watchOf(type, "watches", () => handler, options.predicates));
    return this;
  }

  /** Like {@linkcode ControllerBuilder.watches}, through metadata-only informers. */
  watchesMetadata<T extends KubeObject>(
    type: ResourceType<T>,
    handler: EventHandler<T>,
    options: WatchOptions<T> = {},
  ): this {
    this.#watches.push(watchOf(type, "metadata", () => handler, options.predicates));
    return this;
  }

  /** A source as it is (a channel source, …); `withEventFilter` does not apply to it. */
  watchesRawSource(source: Source): this {
    this.#rawSources.push(source);
    return this;
  }

  /** Filters every `for`, `owns` and `watches` event. */
  withEventFilter(predicate: Predicate<KubeObject>): this {
    this.#globalPredicates.push(predicate);
    return this;
  }

  /** Controller options (merged over the host's defaults). */
  withOptions(options: ControllerOptions): this {
    this.#options = { ...this.#options, ...options };
    return this;
  }

  /** The controller's name; default the lower-case kind of `for`. Must be unique in the host. */
  named(name: string): this {
    this.#name = name;
    return this;
  }

  /**
   * Shards the controller across the manager's replicas (the manager needs `sharding`): each
   * replica reconciles only the `for` objects of its shard, and every `owns` kind follows its
   * controlling owner to the same shard. The controller runs on every replica that holds its
   * shard, not only on the leader.
   */
  sharded(): this {
    this.#sharded = true;
    return this;
  }

  /** Makes the logger of each reconcile. */
  withLogConstructor(logConstructor: (request?: Request) => Logger): this {
    this.#logConstructor = logConstructor;
    return this;
  }

  /** Builds the controller and registers it with the host; returns it. */
  build(reconciler: Reconciler | ReconcileFunc): Controller {
    const name = this.#name ?? this.#for?.type.kind.toLowerCase();
    if (!name) {
      throw new Error("a controller needs for(type) or named(name) before complete()");
    }
    if (!this.#for && this.#owns.length > 0) {
      throw new Error(`controller ${name}: owns() needs for() to know the owner kind`);
    }
    const taken = takenNames.get(this.#host) ?? new Set<string>();
    if (taken.has(name)) {
      throw new Error(
        `a controller named ${name} already exists; give each controller a unique name with named()`,
      );
    }
    const sharding = this.#sharded ? this.#shardingHost(name) : undefined;
    const cache = this.#host.getCache();
    const controller = new Controller(name, reconciler, {
      ...this.#host.controllerDefaults?.(),
      ...this.#options,
      ...(sharding ? { admission: sharding.admission, needLeaderElection: false } : {}),
      logConstructor: this.#logConstructor ?? this.#options.logConstructor,
      logProperties: this.#for
        ? { controllerGroup: this.#for.type.group, controllerKind: this.#for.type.kind }
        : undefined,
    });
    const owner = this.#for?.type;
    for (const watch of [...(this.#for ? [this.#for] : []), ...this.#owns, ...this.#watches]) {
      controller.watched.push({ type: watch.type, relation: watch.relation });
      // Without for(), only watches() are here, whose handlers need no owner.
      controller.watch(watch.source(cache, owner!, this.#globalPredicates));
    }
    for (const source of this.#rawSources) controller.watch(source);
    taken.add(name);
    takenNames.set(this.#host, taken);
    sharding?.host.addShardedController(controller);
    this.#host.add(controller);
    return controller;
  }

  /** The host's sharding with this controller's kinds registered, for `sharded()`. */
  #shardingHost(name: string): { host: ShardingHost; admission: ReconcileAdmission } {
    const host = this.#host.sharding?.();
    if (!host) {
      throw new Error(`controller ${name}: sharded() needs a manager with the sharding option`);
    }
    if (!this.#for) throw new Error(`controller ${name}: sharded() needs for()`);
    const admission = host.shardKinds(this.#for.type, this.#owns.map((watch) => watch.type));
    return { host, admission };
  }

  /** Builds the controller and registers it with the host, like controller-runtime's `Complete`. */
  complete(reconciler: Reconciler | ReconcileFunc): void {
    this.build(reconciler);
  }
}

/**
 * Starts building a controller that the host (the Manager) runs.
 *
 * @example
 * ```ts
 * import { ConfigMap, Deployment, newControllerManagedBy } from "@rudder/operator";
 * import { type ControllerHost } from "@rudder/operator/controller";
 *
 * declare const mgr: ControllerHost;
 * newControllerManagedBy(mgr)
 *   .for(Deployment)
 *   .owns(ConfigMap)
 *   .withOptions({ maxConcurrentReconciles: 4 })
 *   .complete(async (request, ctx) => {
 *     ctx.log.info("reconciling {name}", { name: request.name });
 *     return {};
 *   });
 * ```
 */
export function newControllerManagedBy(host: ControllerHost): ControllerBuilder {
  return new ControllerBuilder(host);
}
