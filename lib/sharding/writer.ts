/**
 * The writes and reads that the sharder and the fallback share: an owner's labels read once for
 * both of an owned object's targets, tested label patches whose lost races are not errors, the
 * claim of a gone shard's Lease (so that one writer moves its objects and the shard waits
 * meanwhile), and paged metadata lists of a shard's objects.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { DeepReadonly } from "../api/readonly.ts";
import { Lease } from "../api/builtins.ts";
import { type KubeObject, resourcePath, type ResourceType } from "../api/resource.ts";
import type { Client } from "../client/client.ts";
import type { JsonPatchOperation } from "../client/json_patch.ts";
import { jsonPatch } from "../client/patch.ts";
import { isConflict, isInvalid, isNotFound } from "../kube/errors.ts";
import type { RestClient } from "../kube/rest.ts";
import { errorMessage } from "../util/logging.ts";
import {
  controllingOwner,
  drainLabel,
  type ObjectReferenceForRing,
  objectRingKey,
  ringKey,
  shardLabel,
} from "./labels.ts";
import type { RingMembers } from "./membership.ts";
import { assignPatch } from "./patches.ts";
import type { HashRing } from "./ring.ts";

const logger = getLogger(["rudder", "sharding"]);

const METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const DEFAULT_PAGE_SIZE = 500;

/** A sharded kind and the kinds that follow it. */
export interface ShardedKind {
  /** The kind a sharded controller reconciles (`for`). */
  type: ResourceType<KubeObject>;
  /** The kinds it owns (`owns`): each object follows its controlling owner. */
  owns: readonly ResourceType<KubeObject>[];
}

/**
 * The shard of an owned object: its owner's shard when the owner is assigned to a live shard and
 * not draining; else the ring shard of the owner's key, where the owner is going.
 */
export function ownedTarget(
  ownerKey: string,
  ownerLabels: Readonly<Record<string, string>> | undefined,
  ring: HashRing,
  ringName: string,
): string | undefined {
  const ownerShard = ownerLabels?.[shardLabel(ringName)];
  if (ownerShard && ring.has(ownerShard) && ownerLabels?.[drainLabel(ringName)] !== "true") {
    return ownerShard;
  }
  return ring.shardFor(ownerKey);
}

/** One page of a metadata list. */
export interface MetadataPage {
  /** The objects (metadata only). */
  items: KubeObject[];
  /** The token of the next page, if any. */
  continue?: string;
}

/** Reads one page of `type`'s objects matching `labelSelector` (metadata only). */
export type ListPage = (
  type: ResourceType<KubeObject>,
  query: { namespace?: string; labelSelector: string; limit: number; continue?: string },
  signal: AbortSignal,
) => Promise<MetadataPage>;

/** A {@linkcode ListPage} that asks the API server for `PartialObjectMetadataList`s. */
export function metadataPages(rest: RestClient): ListPage {
  return async (type, query, signal) => {
    const page = await rest.request<
      { metadata?: { continue?: string }; items?: KubeObject[] }
    >({
      path: resourcePath(type, { namespace: query.namespace }),
      accept: METADATA_LIST_ACCEPT,
      query: {
        labelSelector: query.labelSelector,
        limit: query.limit,
        ...(query.continue ? { continue: query.continue } : {}),
      },
      signal,
    });
    return {
      items: (page.items ?? []).map((item) => ({
        ...item,
        apiVersion: type.apiVersion,
        kind: type.kind,
      })),
      continue: page.metadata?.continue || undefined,
    };
  };
}

/** Options of {@linkcode ShardWriter}. */
export interface ShardWriterOptions {
  /** The ring's name. */
  ring: string;
  /** The ring's live members, and the Leases as last seen. */
  members: RingMembers;
  /** An uncached client for the patches, the owners' reads and the Lease claims. */
  client: Client;
  /** Reads a page of a list; {@linkcode metadataPages} in a manager. */
  listPage: ListPage;
  /** Objects per page; default 500. */
  pageSize?: number;
  /** The namespace of the shard Leases. */
  leaseNamespace: string;
  /** Who writes, set as the holder of the gone shards' Leases it claims. */
  identity: string;
  /** Seconds a claim lasts if the claimer dies before releasing it. */
  claimSeconds: number;
  /** The namespaces the sharded kinds live in; default all. */
  namespaces?: readonly string[];
  /** Wall-clock milliseconds, compared with Lease times; default `Date.now`. */
  wallClock?: () => number;
}

/** The shared writes of the sharder and the fallback; see the module doc. */
export class ShardWriter {
  /** The shard label's key. */
  readonly shardKey: string;
  /** The drain label's key. */
  readonly drainKey: string;
  readonly #options: ShardWriterOptions;
  readonly #now: () => number;

  /** A writer for `options.ring`. */
  constructor(options: ShardWriterOptions) {
    this.#options = options;
    this.shardKey = shardLabel(options.ring);
    this.drainKey = drainLabel(options.ring);
    this.#now = options.wallClock ?? Date.now;
  }

  /** Who this writer claims Leases as. */
  get identity(): string {
    return this.#options.identity;
  }

  /** The labels of `owner` as the API server has them now; `undefined` when it is gone. */
  async ownerLabels(
    owner: ObjectReferenceForRing,
    forTypes: readonly ResourceType<KubeObject>[],
  ): Promise<Readonly<Record<string, string>> | undefined> {
    const type = forTypes.find((t) => t.group === owner.group && t.kind === owner.kind)!;
    try {
      return (await this.#options.client.get(type, owner)).metadata?.labels ?? {};
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Where an object owned by `owner` goes on `ring` (see {@linkcode ownedTarget}). */
  async ownerShard(
    owner: ObjectReferenceForRing,
    forTypes: readonly ResourceType<KubeObject>[],
    ring: HashRing,
  ): Promise<string | undefined> {
    const labels = await this.ownerLabels(owner, forTypes);
    return ownedTarget(ringKey(owner), labels, ring, this.#options.ring);
  }

  /** The shard `owner` is settled on (assigned and not draining), if any. */
  async settledShard(
    owner: ObjectReferenceForRing,
    forTypes: readonly ResourceType<KubeObject>[],
  ): Promise<string | undefined> {
    const labels = await this.ownerLabels(owner, forTypes);
    return labels?.[this.drainKey] === "true" ? undefined : labels?.[this.shardKey];
  }

  /**
   * Where an object that has no shard (or a gone one) goes on `ring`: an owned object follows its
   * owner, a sharded one its ring key; `undefined` for an object of an owned kind that no sharded
   * object owns (not sharding's), or when the ring is empty.
   */
  async targetOf(
    obj: DeepReadonly<KubeObject>,
    type: ResourceType<KubeObject>,
    forTypes: readonly ResourceType<KubeObject>[],
    ring: HashRing,
  ): Promise<string | undefined> {
    if (ring.empty) return undefined;
    const owner = controllingOwner(obj, forTypes);
    if (owner) return await this.ownerShard(owner, forTypes, ring);
    if (!forTypes.includes(type)) return undefined;
    return ring.shardFor(objectRingKey(obj, forTypes));
  }

  /** Assigns `obj` (as read) to `shard`; false when it changed under us (a lost race). */
  assign(obj: DeepReadonly<KubeObject>, shard: string): Promise<boolean> {
    return this.patch(
      obj,
      assignPatch(
        obj.metadata?.labels,
        this.shardKey,
        this.drainKey,
        shard,
        obj.metadata?.resourceVersion,
      ),
    );
  }

  /**
   * Patches `obj`; false when its labels changed under us (the patch's test failed: 409 or 422),
   * true when it is done or the object is gone.
   */
  async patch(obj: DeepReadonly<KubeObject>, ops: JsonPatchOperation[]): Promise<boolean> {
    try {
      await this.#options.client.patch(obj, jsonPatch(ops));
      return true;
    } catch (err) {
      if (isNotFound(err)) return true; // gone: nothing left to do
      if (isInvalid(err) || isConflict(err)) return false;
      throw err;
    }
  }

  /** When another writer's live claim on the Lease of `shard` ends, if it has one. */
  claimedUntil(shard: string): number | undefined {
    const spec = this.#options.members.lease(shard)?.spec;
    const holder = spec?.holderIdentity;
    if (!holder || holder === shard || holder === this.#options.identity) return undefined;
    const renewed = Date.parse(spec?.renewTime ?? "");
    if (Number.isNaN(renewed)) return undefined;
    const until = renewed + (spec?.leaseDurationSeconds ?? 0) * 1000;
    return until > this.#now() ? until : undefined;
  }

  /**
   * Takes the Lease of a shard the ring counts as gone, as the version the ring saw (so a shard
   * that renewed or came back meanwhile wins, and of two writers one wins). True when this writer
   * holds it, or when there is none (nothing to come back into); false when the shard is back or
   * another writer holds a live claim.
   */
  async claim(shard: string): Promise<boolean> {
    const lease = this.#options.members.lease(shard);
    if (!lease) return true;
    const spec = lease.spec;
    if (spec?.holderIdentity === shard) {
      const renewed = Date.parse(spec.renewTime ?? "");
      const until = renewed + (spec.leaseDurationSeconds ?? 0) * 1000;
      if (!Number.isNaN(renewed) && until > this.#now()) return false; // it came back
    }
    if (this.claimedUntil(shard) !== undefined) return false;
    const now = new Date(this.#now()).toISOString().replace("Z", "000Z");
    try {
      await this.#options.client.update({
        ...structuredClone(lease) as Lease,
        spec: {
          ...structuredClone(lease.spec),
          holderIdentity: this.#options.identity,
          leaseDurationSeconds: this.#options.claimSeconds,
          acquireTime: now,
          renewTime: now,
        },
      });
      logger.debug("{identity} claimed the Lease of gone shard {shard}", {
        identity: this.#options.identity,
        shard,
      });
      return true;
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return false; // it changed: decided later
      throw err;
    }
  }

  /** Releases a claimed Lease once the shard's objects have moved, so the shard may come back. */
  async unclaim(shard: string): Promise<void> {
    try {
      const lease = await this.#options.client.get(Lease, {
        namespace: this.#options.leaseNamespace,
        name: shard,
      });
      if (lease.spec?.holderIdentity !== this.#options.identity) return;
      await this.#options.client.update({
        ...lease,
        spec: { ...lease.spec, holderIdentity: "", leaseDurationSeconds: 1 },
      });
    } catch (err) {
      // It expires by itself within claimSeconds.
      logger.warn("Releasing the Lease of gone shard {shard} failed: {error}", {
        shard,
        error: errorMessage(err),
      });
    }
  }

  /** The namespaces to list `type` in (`undefined`: all of them). */
  namespacesOf(type: ResourceType<KubeObject>): (string | undefined)[] {
    const namespaces = this.#options.namespaces;
    return type.scope === "Cluster" || !namespaces ? [undefined] : [...namespaces];
  }

  /**
   * The objects of `type` matching `labelSelector` (default: every assigned one), page by page
   * (metadata only), namespace by namespace; `limit` stops after that many.
   */
  async *list(
    type: ResourceType<KubeObject>,
    signal: AbortSignal,
    labelSelector: string = this.shardKey,
    limit?: number,
  ): AsyncGenerator<KubeObject> {
    let left = limit ?? Infinity;
    for (const namespace of this.namespacesOf(type)) {
      let token: string | undefined;
      do {
        const page = await this.#options.listPage(type, {
          namespace,
          labelSelector,
          limit: Math.min(this.#options.pageSize ?? DEFAULT_PAGE_SIZE, left),
          continue: token,
        }, signal);
        for (const item of page.items) {
          yield item;
          if (--left <= 0) return;
        }
        token = page.continue;
      } while (token && !signal.aborted);
    }
  }
}

/** Every kind sharding assigns: the sharded ones and their owned ones, each once. */
export function uniqueKinds(kinds: readonly ShardedKind[]): ResourceType<KubeObject>[] {
  const all: ResourceType<KubeObject>[] = [];
  for (const kind of kinds) {
    for (const type of [kind.type, ...kind.owns]) {
      if (!all.some((t) => t.group === type.group && t.kind === type.kind)) all.push(type);
    }
  }
  return all;
}

/** Runs at most `limit` tasks at once; the first failure is rethrown by `run` or `drain`. */
export class Pool {
  readonly #limit: number;
  readonly #running = new Set<Promise<void>>();
  #failure: { error: unknown } | undefined;

  /** A pool of `limit` slots. */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Starts `task` once a slot is free. */
  async run(task: () => Promise<void>): Promise<void> {
    while (this.#running.size >= this.#limit) await Promise.race(this.#running);
    if (this.#failure) throw this.#failure.error;
    const running: Promise<void> = task().catch((error) => {
      this.#failure ??= { error };
    }).finally(() => this.#running.delete(running));
    this.#running.add(running);
  }

  /** Waits for every task started. */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.race(this.#running);
    if (this.#failure) throw this.#failure.error;
  }
}
