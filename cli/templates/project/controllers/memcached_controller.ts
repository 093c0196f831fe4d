/**
 * The Memcached reconciler: each Memcached owns a Deployment with `spec.replicas` pods; its status
 * reports the phase and a Ready condition; a finalizer lets it clean up before it goes away.
 *
 * @module
 */

import {
  addFinalizer,
  clone,
  containsFinalizer,
  createOrUpdate,
  Deployment,
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
  setStatusCondition,
} from "@rudder/operator";
import type { appsv1, corev1 } from "@rudder/operator/api";
import type { ObjectClient } from "@rudder/operator/controllerutil";
import type { EventRecorder } from "@rudder/operator/events";
import { Memcached } from "../api/memcached.ts";

type DeploymentSpec = appsv1.DeploymentSpec;
type PodTemplateSpec = corev1.PodTemplateSpec;

/** The finalizer that makes deletion wait for the reconciler's clean-up. */
export const FINALIZER = "cache.example.com/cleanup";

/** How long a healthy Memcached waits before it is looked at again. */
export const RESYNC_MS = 5 * 60_000;

/** Reconciles Memcached objects. */
export class MemcachedReconciler implements Reconciler {
  readonly #client: ObjectClient;
  readonly #recorder: EventRecorder | undefined;

  /**
   * Reads and writes through `client` (the manager's, or a FakeClient in unit tests) and
   * records Events with `recorder` when there is one.
   */
  constructor(client: ObjectClient, recorder?: EventRecorder) {
    this.#client = client;
    this.#recorder = recorder;
  }

  /** Drives one Memcached towards its spec. */
  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const instance = await this.#client.get(Memcached, req).catch(ignoreNotFound);
    if (!instance) return {}; // deleted: nothing to do

    // Objects from the cache are frozen: change a copy (clone), then patch the difference.
    if (instance.metadata?.deletionTimestamp) {
      if (!containsFinalizer(instance, FINALIZER)) return {};
      // The Deployment goes with its owner (garbage collection); here the clean-up is a log and
      // an event, then the finalizer is removed and the Memcached disappears.
      ctx.log.info("Cleaning up Memcached {name}", { name: req.name });
      this.#recorder?.event(instance, "Normal", "CleanedUp", "Delete", "finalizer ran");
      const done = clone(instance);
      removeFinalizer(done, FINALIZER);
      await this.#client.patch(done, mergeFrom(instance));
      return {};
    }

    if (!containsFinalizer(instance, FINALIZER)) {
      const withFinalizer = clone(instance);
      addFinalizer(withFinalizer, FINALIZER);
      await this.#client.patch(withFinalizer, mergeFrom(instance));
      // The patch's own event brings the Memcached back with its finalizer.
      return {};
    }

    const labels = {
      "app.kubernetes.io/name": "memcached",
      "cache.example.com/instance": req.name,
    };
    const { result } = await createOrUpdate<Deployment>(
      this.#client,
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: req.name, namespace: req.namespace },
      },
      (deployment) => {
        // Set only the fields this operator owns: the API server defaults the rest, and
        // replacing the whole spec would undo its defaults and update on every pass.
        const spec: DeploymentSpec = deployment.spec ??= {
          selector: { matchLabels: labels },
          template: {},
        };
        spec.replicas = instance.spec.replicas;
        spec.selector ??= { matchLabels: labels }; // immutable once created
        const template: PodTemplateSpec = spec.template ??= {};
        template.metadata = {
          ...template.metadata,
          labels: { ...template.metadata?.labels, ...labels },
        };
        const pod = template.spec ??= { containers: [] };
        const app = pod.containers.find((c) => c.name === "app");
        if (app) app.image = instance.spec.image;
        else pod.containers.push({ name: "app", image: instance.spec.image });
        setControllerReference(instance, deployment);
      },
    );
    if (result !== "unchanged") {
      ctx.log.info("Deployment {name} {result}", { name: req.name, result });
      this.#recorder?.event(instance, "Normal", "Deployed", "Reconcile", `Deployment ${result}`);
    }

    const updated = clone(instance);
    const status = (updated.status ??= {});
    status.phase = "Running";
    status.observedGeneration = instance.metadata?.generation;
    status.conditions ??= [];
    setStatusCondition(status.conditions, {
      type: "Ready",
      status: "True",
      reason: "DeploymentUpToDate",
      message: `Deployment ${req.name} asks for ${instance.spec.replicas} replicas`,
      observedGeneration: instance.metadata?.generation,
    });
    if (JSON.stringify(updated.status) !== JSON.stringify(instance.status)) {
      await this.#client.status().patch(updated, mergeFrom(instance));
      ctx.log.info("Memcached {name} is {phase}", {
        name: req.name,
        phase: status.phase,
      });
    }
    return { requeueAfter: RESYNC_MS };
  }
}

/** Registers the Memcached controller with the manager: for Memcacheds, owning Deployments. */
export function setupMemcachedController(mgr: Manager): void {
  const recorder = mgr.getEventRecorderFor("memcached-controller");
  newControllerManagedBy(mgr)
    .for(Memcached)
    .owns(Deployment)
    .withOptions({ maxConcurrentReconciles: 10 })
    .complete(new MemcachedReconciler(mgr.getClient(), recorder));
}
