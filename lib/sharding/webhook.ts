/**
 * The mutating webhook `/shard-<ring>` that assigns objects as they are created, so that they
 * are born on their shard: a sharded object gets its ring shard, an owned object its owner's
 * shard. Every replica serves it from the ring it watches; anything it misses (the ring not yet
 * known, a name still to be generated, the webhook not called) the sharder labels moments later.
 *
 * @module
 */

import type { MutatingWebhookConfiguration } from "../api/builtins.ts";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import type { Client } from "../client/client.ts";
import { isNotFound } from "../kube/errors.ts";
import { type AdmissionHandlerFunc, allowed } from "../webhook/admission.ts";
import { controllingOwner, objectRingKey, ringKey, shardLabel } from "./labels.ts";
import type { RingMembers } from "./membership.ts";
import { ownedTarget } from "./writer.ts";
import { labelPath } from "./patches.ts";

/** The path of a ring's webhook: `/shard-<ring>`. */
export function shardWebhookPath(ring: string): string {
  return `/shard-${ring}`;
}

/** Options of {@linkcode shardAssigner}. */
export interface ShardAssignerOptions {
  /** The ring's name. */
  ring: string;
  /** The ring's members. */
  members: RingMembers;
  /** The sharded kinds (`for` of sharded controllers). */
  sharded: () => readonly ResourceType<KubeObject>[];
  /** An uncached client, to read an owned object's owner. */
  client: Client;
}

/** The admission handler of `/shard-<ring>`: labels a CREATE with its shard; never denies. */
export function shardAssigner(options: ShardAssignerOptions): AdmissionHandlerFunc<KubeObject> {
  const key = shardLabel(options.ring);
  return async (request) => {
    const obj = request.object;
    if (request.operation !== "CREATE" || !obj?.metadata?.name) return allowed();
    const labels = obj.metadata.labels;
    if (labels?.[key] !== undefined) return allowed();
    const ring = options.members.ring;
    if (ring.empty) return allowed();
    const forTypes = options.sharded();
    const withNamespace = {
      ...obj,
      metadata: { ...obj.metadata, namespace: obj.metadata.namespace ?? request.namespace },
    };
    const owner = controllingOwner(withNamespace, forTypes);
    let target: string | undefined;
    if (owner) {
      const type = forTypes.find((t) => t.group === owner.group && t.kind === owner.kind)!;
      let ownerLabels: Readonly<Record<string, string>> | undefined;
      try {
        ownerLabels = (await options.client.get(type, owner)).metadata?.labels;
      } catch (err) {
        // Never deny a create over sharding: the sharder labels what is left unassigned.
        if (!isNotFound(err)) return allowed();
      }
      target = ownedTarget(ringKey(owner), ownerLabels, ring, options.ring);
    } else if (
      forTypes.some((t) => t.group === request.kind.group && t.kind === request.kind.kind)
    ) {
      target = ring.shardFor(objectRingKey(withNamespace, forTypes));
    }
    if (!target) return allowed();
    return {
      allowed: true,
      patch: labels
        ? [{ op: "add", path: labelPath(key), value: target }]
        : [{ op: "add", path: "/metadata/labels", value: { [key]: target } }],
    };
  };
}

/** Options of {@linkcode shardWebhook}. */
export interface ShardWebhookOptions {
  /** The ring's name. */
  ring: string;
  /** The sharded kinds and the kinds they own: CREATE of each is sent. */
  kinds: readonly Pick<ResourceType<KubeObject>, "group" | "version" | "plural" | "scope">[];
  /** Where the API server calls the webhook (a Service or a URL, with the CA bundle). */
  clientConfig: NonNullable<MutatingWebhookConfiguration["webhooks"]>[number]["clientConfig"];
  /** Seconds the API server waits; default 5 (a missed assignment is made by the sharder). */
  timeoutSeconds?: number;
}

/**
 * The entry of a MutatingWebhookConfiguration that sends CREATE of the sharded kinds (and the
 * kinds they own) without a shard label to `/shard-<ring>`: failure policy `Ignore` (the sweep
 * labels what it misses), no side effects.
 *
 * @example
 * ```ts
 * import { ConfigMap } from "@rudder/operator";
 * import { shardWebhook } from "./webhook.ts";
 *
 * const webhook = shardWebhook({
 *   ring: "example",
 *   kinds: [ConfigMap],
 *   clientConfig: { service: { namespace: "example-system", name: "example-webhook" } },
 * });
 * console.log(webhook.clientConfig.service?.path); // /shard-example
 * ```
 */
export function shardWebhook(
  options: ShardWebhookOptions,
): NonNullable<MutatingWebhookConfiguration["webhooks"]>[number] {
  const path = shardWebhookPath(options.ring);
  const clientConfig = options.clientConfig.service
    ? { ...options.clientConfig, service: { ...options.clientConfig.service, path } }
    : options.clientConfig;
  return {
    name: `shard-${options.ring}.sharding.rudder.dev`,
    admissionReviewVersions: ["v1"],
    clientConfig,
    failurePolicy: "Ignore",
    matchPolicy: "Equivalent",
    sideEffects: "None",
    timeoutSeconds: options.timeoutSeconds ?? 5,
    objectSelector: {
      matchExpressions: [{ key: shardLabel(options.ring), operator: "DoesNotExist" }],
    },
    rules: options.kinds.map((kind) => ({
      apiGroups: [kind.group],
      apiVersions: [kind.version],
      operations: ["CREATE"],
      resources: [kind.plural],
      scope: kind.scope === "Cluster" ? "Cluster" : "Namespaced",
    })),
  };
}
