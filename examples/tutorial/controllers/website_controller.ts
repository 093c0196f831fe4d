/**
 * The Website controller of the tutorial (docs/tutorial.md). Each Website owns a Deployment and
 * a Service; it watches the ConfigMap it serves, which it does not own; a finalizer removes its
 * entry from the namespace's shared site directory; events tell users what happened.
 *
 * @module
 */

import {
  addFinalizer,
  clone,
  ConfigMap,
  containsFinalizer,
  createOrUpdate,
  type DeepReadonly,
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
  Service,
  setControllerReference,
  setStatusCondition,
} from "@rudder/operator";
import type { ObjectClient } from "@rudder/operator/controllerutil";
import type { EventRecorder } from "@rudder/operator/events";
import { enqueueRequestsFromMapFunc } from "@rudder/operator/handler";
import { Website } from "../api/website.ts";

/** The finalizer that makes a Website's deletion wait until its directory entry is gone. */
export const FINALIZER = "tutorial.rudder.dev/directory";

/** The ConfigMap, one per namespace, that lists every Website's address. No Website owns it. */
export const DIRECTORY = "website-directory";

/** The index of Websites by the ConfigMap they serve, for the ConfigMap watch's map function. */
export const CONTENT_INDEX = "spec.contentFrom";

/** Reconciles Website objects. */
export class WebsiteReconciler implements Reconciler {
  constructor(
    private readonly client: ObjectClient,
    private readonly recorder?: EventRecorder,
  ) {}

  /** Drives one Website towards its spec. */
  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const site = await this.client.get(Website, req).catch(ignoreNotFound);
    if (!site) return {}; // gone: its Deployment and Service are garbage-collected

    // Step 5: finalizers. Deleting: clean up what owner references cannot, then let it go.
    if (site.metadata?.deletionTimestamp) {
      if (!containsFinalizer(site, FINALIZER)) return {};
      await this.#updateDirectory(req, undefined);
      const released = clone(site);
      removeFinalizer(released, FINALIZER);
      await this.client.patch(released, mergeFrom(site));
      ctx.log.info("removed {name} from the directory", { name: req.name });
      return {};
    }
    if (!containsFinalizer(site, FINALIZER)) {
      const withFinalizer = clone(site);
      addFinalizer(withFinalizer, FINALIZER);
      await this.client.patch(withFinalizer, mergeFrom(site));
      return {}; // the update of the Website triggers the next reconcile
    }

    // The content: a ConfigMap the user manages. Missing content is reported, not retried:
    // the ConfigMap watch enqueues this Website when it appears.
    const content = await this.client.get(ConfigMap, {
      namespace: req.namespace,
      name: site.spec.contentFrom,
    }).catch(ignoreNotFound);
    if (!content) {
      this.recorder?.event(
        site,
        "Warning",
        "ContentMissing",
        "Reconcile",
        `ConfigMap ${site.spec.contentFrom} not found`,
      );
      await this.#setStatus(site, {
        status: "False",
        reason: "ContentMissing",
        message: `ConfigMap ${site.spec.contentFrom} does not exist`,
      });
      return {};
    }
    const contentVersion = content.metadata?.resourceVersion ?? "";

    // Step 3: children it owns. createOrUpdate reads, changes and writes only on a difference.
    const labels = { "app.kubernetes.io/name": "website", "tutorial.rudder.dev/site": req.name };
    const { result } = await createOrUpdate<Deployment>(
      this.client,
      {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: req.name, namespace: req.namespace },
      },
      (deployment) => {
        deployment.spec ??= { selector: { matchLabels: labels }, template: {} };
        deployment.spec.replicas = site.spec.replicas;
        const template = deployment.spec.template;
        template.metadata = {
          labels,
          // A new content version rolls the pods.
          annotations: { "tutorial.rudder.dev/content-version": contentVersion },
        };
        template.spec = {
          containers: [{
            name: "web",
            image: site.spec.image,
            ports: [{ containerPort: 80 }],
            volumeMounts: [{ name: "content", mountPath: "/usr/share/nginx/html" }],
          }],
          volumes: [{ name: "content", configMap: { name: site.spec.contentFrom } }],
        };
        setControllerReference(site, deployment);
      },
    );
    if (result !== "unchanged") {
      this.recorder?.event(site, "Normal", "Deployed", "Reconcile", `Deployment ${result}`);
    }
    await createOrUpdate<Service>(
      this.client,
      { apiVersion: "v1", kind: "Service", metadata: { name: req.name, namespace: req.namespace } },
      (service) => {
        service.spec = { ...service.spec, selector: labels, ports: [{ port: 80 }] };
        setControllerReference(site, service);
      },
    );
    await this.#updateDirectory(req, `http://${req.name}.${req.namespace}.svc`);

    // Step 2: status and conditions.
    const deployment = await this.client.get(Deployment, req);
    const available = deployment.status?.availableReplicas ?? 0;
    const ready = available >= site.spec.replicas;
    await this.#setStatus(site, {
      status: ready ? "True" : "False",
      reason: ready ? "Available" : "Progressing",
      message: `${available} of ${site.spec.replicas} replicas available`,
    }, contentVersion);
    return {};
  }

  /** Patches the status when it differs: the Ready condition, observedGeneration, content. */
  async #setStatus(
    site: Website | DeepReadonly<Website>,
    ready: { status: "True" | "False"; reason: string; message: string },
    contentVersion?: string,
  ): Promise<void> {
    const updated = clone(site);
    const status = (updated.status ??= {});
    status.observedGeneration = site.metadata?.generation;
    if (contentVersion !== undefined) status.contentVersion = contentVersion;
    setStatusCondition(status.conditions ??= [], {
      type: "Ready",
      ...ready,
      observedGeneration: site.metadata?.generation,
    });
    if (JSON.stringify(updated.status) !== JSON.stringify(site.status)) {
      await this.client.status().patch(updated, mergeFrom(site));
    }
  }

  /** Sets (or, with `address` undefined, removes) this Website's entry in the directory. */
  async #updateDirectory(req: Request, address: string | undefined): Promise<void> {
    await createOrUpdate<ConfigMap>(
      this.client,
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: DIRECTORY, namespace: req.namespace },
      },
      (directory) => {
        const data = { ...directory.data };
        if (address === undefined) delete data[req.name];
        else data[req.name] = address;
        directory.data = data;
      },
    );
  }
}

/**
 * Registers the Website controller: for Websites, owning Deployments and Services, and watching
 * the ConfigMaps they serve (step 4), mapped back to the Websites through an index.
 */
export function setupWebsiteController(mgr: Manager): void {
  mgr.getCache().indexField(Website, CONTENT_INDEX, (site) => [site.spec.contentFrom]);
  const client = mgr.getClient();
  newControllerManagedBy(mgr)
    .for(Website)
    .owns(Deployment)
    .owns(Service)
    .watches(
      ConfigMap,
      enqueueRequestsFromMapFunc<ConfigMap>(async (configMap) => {
        const namespace = configMap.metadata?.namespace;
        const sites = await client.list(Website, {
          namespace,
          fieldSelector: { [CONTENT_INDEX]: configMap.metadata?.name ?? "" },
        });
        return sites.items.map((site) => ({
          namespace: namespace ?? "",
          name: site.metadata!.name!,
        }));
      }),
    )
    .complete(new WebsiteReconciler(client, mgr.getEventRecorderFor("website-controller")));
}
