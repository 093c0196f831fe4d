/**
 * The Website controller. Each Website owns a Deployment and a Service (children.ts), watches
 * the ConfigMap it serves without owning it (content.ts), keeps its entry in the namespace's
 * site directory with a finalizer (directory.ts), reports readiness in its status (status.ts)
 * and tells users what it did with events.
 *
 * @module
 */

import {
  ConfigMap,
  Deployment,
  ignoreNotFound,
  type Manager,
  newControllerManagedBy,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  Service,
} from "@rudder/operator";
import type { EventRecorder } from "@rudder/operator/events";
import { Website } from "../api/website.ts";
import { applyChild, type ChildClient, desiredDeployment, desiredService } from "./children.ts";
import { indexContent, websitesServing } from "./content.ts";
import { finalize, setDirectoryEntry } from "./directory.ts";
import { setReady } from "./status.ts";

/** Reconciles Website objects. */
export class WebsiteReconciler implements Reconciler {
  private readonly client: ChildClient;
  private readonly recorder?: EventRecorder;

  /**
   * Reads and writes through `client` (the manager's, or a FakeClient in unit tests) and
   * records events with `recorder` when there is one.
   */
  constructor(client: ChildClient, recorder?: EventRecorder) {
    this.client = client;
    this.recorder = recorder;
  }

  /** Drives one Website towards its spec. */
  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const site = await this.client.get(Website, req).catch(ignoreNotFound);
    if (!site) return {}; // gone: its Deployment and Service are garbage-collected

    if (await finalize(this.client, site, req, this.recorder)) return {};

    // Missing content is reported, not retried: the ConfigMap watch brings it back.
    const content = await this.client.get(ConfigMap, {
      namespace: req.namespace,
      name: site.spec.contentFrom,
    }).catch(ignoreNotFound);
    if (!content) {
      const message = `ConfigMap ${site.spec.contentFrom} not found`;
      this.recorder?.event(site, "Warning", "ContentMissing", "Reconcile", message);
      await setReady(this.client, site, { status: "False", reason: "ContentMissing", message });
      return {};
    }
    const contentVersion = content.metadata?.resourceVersion ?? "";

    const deployed = await applyChild(
      this.client,
      Deployment,
      desiredDeployment(site, contentVersion),
    );
    if (deployed !== "unchanged") {
      this.recorder?.event(site, "Normal", "Deployed", "Reconcile", `Deployment ${deployed}`);
      ctx.log.info("Deployment {name} {result}", { name: req.name, result: deployed });
    }
    await applyChild(this.client, Service, desiredService(site));
    await setDirectoryEntry(this.client, req, `http://${req.name}.${req.namespace}.svc`);

    const deployment = await this.client.get(Deployment, req);
    const available = deployment.status?.availableReplicas ?? 0;
    const ready = available >= site.spec.replicas;
    await setReady(this.client, site, {
      status: ready ? "True" : "False",
      reason: ready ? "Available" : "Progressing",
      message: `${available} of ${site.spec.replicas} replicas available`,
    }, contentVersion);
    return {};
  }
}

/**
 * Registers the Website controller: for Websites, owning Deployments and Services, and watching
 * the ConfigMaps they serve.
 */
export function setupWebsiteController(mgr: Manager): void {
  indexContent(mgr);
  newControllerManagedBy(mgr)
    .for(Website)
    .owns(Deployment)
    .owns(Service)
    .watches(ConfigMap, websitesServing(mgr))
    .complete(
      new WebsiteReconciler(mgr.getClient(), mgr.getEventRecorderFor("website-controller")),
    );
}
