/**
 * The Shardling reconciler: each Shardling owns a ConfigMap with the data of its spec, and a
 * finalizer that runs when the Shardling is deleted (never when it only moves to another shard).
 * The controller is `.sharded()`: every replica reconciles the Shardlings of its own shard, and
 * each ConfigMap follows its Shardling there.
 *
 * @module
 */

import {
  addFinalizer,
  clone,
  ConfigMap,
  containsFinalizer,
  createOrUpdate,
  ignoreNotFound,
  type Manager,
  mergeFrom,
  newControllerManagedBy,
  type ReconcileContext,
  type Reconciler,
  removeFinalizer,
  type Request,
  type Result,
  setControllerReference,
} from "@rudder/operator";
import type { ObjectClient } from "@rudder/operator/controllerutil";
import { Shardling } from "../api/shardling.ts";
import { record, recording } from "./record.ts";

/** The finalizer that makes a deletion wait for the clean-up. */
export const FINALIZER = "shard.example.com/cleanup";

/** Reconciles Shardlings. */
export class ShardlingReconciler implements Reconciler {
  readonly #client: ObjectClient;
  readonly #shard: string;
  readonly #recordFile: string | undefined;

  /**
   * Reads and writes through `client`; `shard` is this replica's shard name (written to each
   * status); finalizer runs are recorded to `recordFile` when given.
   */
  constructor(client: ObjectClient, shard: string, recordFile?: string) {
    this.#client = client;
    this.#shard = shard;
    this.#recordFile = recordFile;
  }

  /** Drives one Shardling's ConfigMap towards its spec. */
  async reconcile(req: Request, _ctx: ReconcileContext): Promise<Result> {
    const instance = await this.#client.get(Shardling, req).catch(ignoreNotFound);
    if (!instance) return {}; // deleted, or moved to another shard: nothing to do here

    if (instance.metadata?.deletionTimestamp) {
      if (!containsFinalizer(instance, FINALIZER)) return {};
      // The ConfigMap goes with its owner (garbage collection); the record is the clean-up.
      record(this.#recordFile, "finalize", req);
      const done = clone(instance);
      removeFinalizer(done, FINALIZER);
      await this.#client.patch(done, mergeFrom(instance));
      return {};
    }
    if (!containsFinalizer(instance, FINALIZER)) {
      const withFinalizer = clone(instance);
      addFinalizer(withFinalizer, FINALIZER);
      await this.#client.patch(withFinalizer, mergeFrom(instance));
      return {}; // the patch's own event brings it back
    }

    await createOrUpdate<ConfigMap>(
      this.#client,
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: req.name, namespace: req.namespace },
      },
      (configMap) => {
        configMap.data = { ...instance.spec.data };
        setControllerReference(instance, configMap);
      },
    );

    const generation = instance.metadata?.generation;
    if (
      instance.status?.observedGeneration !== generation || instance.status?.shard !== this.#shard
    ) {
      const updated = clone(instance);
      updated.status = { observedGeneration: generation, shard: this.#shard };
      await this.#client.status().patch(updated, mergeFrom(instance));
    }
    return {};
  }
}

/**
 * Registers the Shardling controller: sharded, for Shardlings, owning ConfigMaps. With
 * `recordFile`, every reconcile's start and end is recorded there (controllers/record.ts).
 */
export function setupShardlingController(
  mgr: Manager,
  options: { shard: string; recordFile?: string },
): void {
  const reconciler = new ShardlingReconciler(mgr.getClient(), options.shard, options.recordFile);
  newControllerManagedBy(mgr)
    .for(Shardling)
    .owns(ConfigMap)
    .sharded()
    .withOptions({ maxConcurrentReconciles: 4 })
    .complete(recording(reconciler, options.recordFile));
}
