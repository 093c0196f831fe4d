/**
 * What a Website owns: a Deployment of web servers and a Service in front of them. Each is
 * written with server-side apply: the operator sends only the fields it owns, and the API server
 * merges them into the object and keeps every field it defaulted. When the cached child already
 * has them all, nothing is sent.
 *
 * @module
 */

import {
  type Client,
  type DeepReadonly,
  Deployment,
  ignoreNotFound,
  type KubeObject,
  Service,
  setControllerReference,
} from "@rudder/operator";
import type { ResourceType } from "@rudder/operator/api";
import type { ObjectClient } from "@rudder/operator/controllerutil";
import type { Website } from "../api/website.ts";

/** The field manager the operator applies as: the owner of the fields it sets. */
export const FIELD_MANAGER = "website-controller";

/** The client the children need: reads, and server-side apply. */
export type ChildClient = ObjectClient & Pick<Client, "apply">;

/** The labels of a Website's pods, which its Service selects. */
export function podLabels(site: DeepReadonly<Website>): Record<string, string> {
  return { "app.kubernetes.io/name": "website", "tutorial.rudder.dev/site": site.metadata!.name! };
}

/** The Deployment a Website asks for: its fields, and none the API server defaults. */
export function desiredDeployment(site: DeepReadonly<Website>, contentVersion: string): Deployment {
  const labels = podLabels(site);
  const deployment: Deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: site.metadata!.name, namespace: site.metadata!.namespace },
    spec: {
      replicas: site.spec.replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: {
          labels,
          // A new content version rolls the pods.
          annotations: { "tutorial.rudder.dev/content-version": contentVersion },
        },
        spec: {
          containers: [{
            name: "web",
            image: site.spec.image,
            ports: [{ containerPort: 80 }],
            volumeMounts: [{ name: "content", mountPath: "/usr/share/nginx/html" }],
          }],
          volumes: [{ name: "content", configMap: { name: site.spec.contentFrom } }],
        },
      },
    },
  };
  return setControllerReference(site, deployment);
}

/** The Service in front of a Website's pods. */
export function desiredService(site: DeepReadonly<Website>): Service {
  const service: Service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: site.metadata!.name, namespace: site.metadata!.namespace },
    spec: { selector: podLabels(site), ports: [{ name: "http", port: 80 }] },
  };
  return setControllerReference(site, service);
}

/** Whether `have` holds every field of `want` with the same value (lists item by item). */
export function holds(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) {
    return Array.isArray(have) && have.length === want.length &&
      want.every((item, i) => holds(have[i], item));
  }
  if (want !== null && typeof want === "object") {
    if (have === null || typeof have !== "object") return false;
    return Object.entries(want).every(([key, value]) => holds(Reflect.get(have, key), value));
  }
  return have === want;
}

/**
 * Applies `child` as {@linkcode FIELD_MANAGER}, taking over fields another manager set, unless
 * the child as cached already holds all of them: then it sends nothing. Says what it did.
 */
export async function applyChild<T extends KubeObject>(
  client: ChildClient,
  type: ResourceType<T>,
  child: T,
): Promise<"created" | "updated" | "unchanged"> {
  const key = { namespace: child.metadata?.namespace, name: child.metadata!.name! };
  const current = await client.get(type, key).catch(ignoreNotFound);
  if (current && holds(current, child)) return "unchanged";
  await client.apply(child, { fieldManager: FIELD_MANAGER, force: true });
  return current ? "updated" : "created";
}
