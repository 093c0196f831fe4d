/**
 * The sharding part of `rudder manifests`, for an operator whose replicas split its objects
 * between them (the Manager's `sharding` option, controllers built with `.sharded()`). The
 * project declares its ring in `rudder.json`, with the same name as in its code:
 *
 * ```json
 * { "sharding": { "ring": "shardlings", "replicas": 3 } }
 * ```
 *
 * and the manifests then add:
 *
 * - `replicas` on the Deployment, `POD_NAME` and `POD_NAMESPACE` from the downward API (the
 *   shard's name and its Lease's namespace), and a topology spread over nodes;
 * - a PodDisruptionBudget with `maxUnavailable: 1`, so a drain of nodes hands shards over one
 *   at a time;
 * - a Role and RoleBinding in the operator's namespace for the shard Leases (every replica
 *   holds its own, reads the others' and the elected sharder's);
 * - `get`, `list`, `watch` and `patch` on the sharded kinds and the kinds they own (the shard
 *   labels are patched);
 * - with webhooks, mutating webhooks on `/shard-<ring>` that label each sharded or owned object
 *   as it is created: only objects without the shard label, `failurePolicy: Ignore` (the
 *   sharder's sweep labels whatever a webhook call missed), `sideEffects: None`.
 *
 * Which kinds are sharded comes from the code: the `for` kind of every controller built with
 * `.sharded()`, and what those controllers own.
 *
 * @module
 */

import { shardWebhook, shardWebhookPath } from "../lib/sharding/webhook.ts";
import type { DiscoveredKind, DiscoveredWebhook, Discovery } from "./discover.ts";
import type { PolicyRule, ShardingSettings } from "./project.ts";

/** Replicas of a sharded operator's Deployment when `rudder.json` does not say. */
export const DEFAULT_SHARD_REPLICAS = 3;

/**
 * The Lease verbs of a shard member, in the operator's namespace: it creates, renews and
 * releases its own Lease, lists and watches the ring's, and the elected sharder takes over the
 * sharder Lease and clears a dead member's.
 */
export const SHARD_LEASE_RULES: readonly PolicyRule[] = [{
  apiGroups: ["coordination.k8s.io"],
  resources: ["leases"],
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
}];

/** The verbs a replica needs on a sharded or owned kind: read it, and patch its shard labels. */
const SHARDED_KIND_VERBS = ["get", "list", "patch", "watch"];

/** What the manifests of a sharded operator are made from. */
export interface ShardingPlan {
  /** The ring's name. */
  ring: string;
  /** Replicas of the Deployment. */
  replicas: number;
  /** Whether objects are labelled on create by the operator's mutating webhook. */
  webhook: boolean;
  /** The `for` kinds of the sharded controllers, sorted. */
  sharded: DiscoveredKind[];
  /** The kinds those controllers own (they follow their owner's shard), sorted. */
  owned: DiscoveredKind[];
}

/** The names and labels the sharding objects share with the rest of the manifests. */
export interface ShardingNames {
  /** The operator's name, the prefix of its objects. */
  name: string;
  /** Its namespace. */
  namespace: string;
  /** The labels its pods carry. */
  selector: Record<string, string>;
  /** The labels of every object. */
  labels: Record<string, string>;
  /** Its ServiceAccount. */
  serviceAccount: string;
}

/** A manifest: its path under the output directory and its object. */
export type Manifest = [path: string, object: unknown];

const RBAC_GROUP = "rbac.authorization.k8s.io";

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const kindKey = (kind: DiscoveredKind) => `${kind.group}/${kind.plural}`;

/**
 * The sharding plan of a project: undefined when it neither declares a ring nor shards a
 * controller. Throws when the two disagree, naming the fix: a ring without a sharded
 * controller, or a sharded controller without a ring in `rudder.json`.
 */
export function shardingPlan(
  settings: ShardingSettings | undefined,
  discovery: Discovery,
): ShardingPlan | undefined {
  const controllers = discovery.controllers.filter((controller) => controller.sharded);
  if (!settings) {
    if (controllers.length === 0) return undefined;
    throw new Error(
      `the controllers ${controllers.map((c) => c.name).join(", ")} are sharded (.sharded()), ` +
        'but rudder.json declares no ring: add "sharding": { "ring": "<the Manager\'s ' +
        'sharding.ring>", "replicas": 3 }',
    );
  }
  if (controllers.length === 0) {
    throw new Error(
      `rudder.json declares the shard ring "${settings.ring}", but no controller registered ` +
        "by setup(mgr) is sharded: build the controllers whose objects the replicas split with " +
        ".sharded(), or remove sharding from rudder.json",
    );
  }
  const sharded = new Map<string, DiscoveredKind>();
  const owned = new Map<string, DiscoveredKind>();
  for (const controller of controllers) {
    for (const { role, ...kind } of controller.watched) {
      if (role === "for") sharded.set(kindKey(kind), kind);
      if (role === "owns") owned.set(kindKey(kind), kind);
    }
  }
  const sortedKinds = (kinds: Map<string, DiscoveredKind>) =>
    [...kinds.keys()].sort(compare).map((key) => kinds.get(key)!);
  return {
    ring: settings.ring,
    replicas: settings.replicas ?? DEFAULT_SHARD_REPLICAS,
    webhook: settings.webhook ?? discovery.webhooks,
    sharded: sortedKinds(sharded),
    owned: sortedKinds(owned),
  };
}

/**
 * `discovery` with a stand-in for the ring's mutating webhook (CREATE of the first sharded kind
 * on `/shard-<ring>`) when the plan labels on create, so that the webhook part of the manifests
 * writes the mutating configuration, the Service and the certificate as for the operator's own
 * webhooks; {@linkcode finishShardWebhooks} then puts the real entry in its place.
 */
export function withShardWebhooks(discovery: Discovery, plan: ShardingPlan): Discovery {
  if (!plan.webhook) return discovery;
  const standIn: DiscoveredWebhook = {
    ...plan.sharded[0],
    type: "mutating",
    path: shardWebhookPath(plan.ring),
    operations: ["CREATE"],
  };
  return {
    ...discovery,
    webhooks: true,
    admissionWebhooks: [...discovery.admissionWebhooks ?? [], standIn],
  };
}

interface WebhookEntry {
  clientConfig: { service?: { name: string; namespace: string; path?: string } };
}

/**
 * Replaces the stand-in of {@linkcode withShardWebhooks} in the mutating webhook configuration
 * of `files` with the ring's webhook: CREATE of every sharded and owned kind, for objects
 * without the shard label only, ignored when the operator cannot answer (the sharder's sweep
 * labels those objects instead), answered in at most 5 s.
 */
export function finishShardWebhooks(files: Map<string, unknown>, plan: ShardingPlan): void {
  const path = shardWebhookPath(plan.ring);
  const configuration = files.get("webhook/mutating_webhook_configuration.yaml") as
    | { webhooks?: WebhookEntry[] }
    | undefined;
  const webhooks = configuration?.webhooks ?? [];
  const standIn = webhooks.findIndex((webhook) => webhook.clientConfig.service?.path === path);
  if (standIn < 0) return;
  const { service } = webhooks[standIn].clientConfig;
  webhooks.splice(
    standIn,
    1,
    shardWebhook({
      ring: plan.ring,
      kinds: [...plan.sharded, ...plan.owned],
      clientConfig: { service: { name: service!.name, namespace: service!.namespace, path } },
    }) as WebhookEntry,
  );
}

/** The ClusterRole rules of the sharded and owned kinds: read them and patch their labels. */
export function shardingClusterRules(plan: ShardingPlan): PolicyRule[] {
  return [...plan.sharded, ...plan.owned].map((kind) => ({
    apiGroups: [kind.group],
    resources: [kind.plural],
    verbs: [...SHARDED_KIND_VERBS],
  }));
}

/** The shard Lease Role and its binding, and the PodDisruptionBudget. */
export function shardingManifests(names: ShardingNames): Manifest[] {
  const { name, namespace, labels, selector, serviceAccount } = names;
  const role = `${name}-shard-role`;
  return [
    ["rbac/shard_role.yaml", {
      apiVersion: `${RBAC_GROUP}/v1`,
      kind: "Role",
      metadata: { name: role, namespace, labels },
      rules: SHARD_LEASE_RULES,
    }],
    ["rbac/shard_role_binding.yaml", {
      apiVersion: `${RBAC_GROUP}/v1`,
      kind: "RoleBinding",
      metadata: { name: `${name}-shard-rolebinding`, namespace, labels },
      roleRef: { apiGroup: RBAC_GROUP, kind: "Role", name: role },
      subjects: [{ kind: "ServiceAccount", name: serviceAccount, namespace }],
    }],
    ["manager/pod_disruption_budget.yaml", {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: { name: `${name}-controller-manager`, namespace, labels },
      // One replica at a time: each one that goes hands its shard over before the next.
      spec: { maxUnavailable: 1, selector: { matchLabels: selector } },
    }],
  ];
}

/** The environment a shard member reads: its pod's name (its shard) and namespace. */
export const SHARD_ENV: readonly Record<string, unknown>[] = [
  { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
  { name: "POD_NAMESPACE", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
];

interface DeploymentShape {
  spec: {
    replicas?: number;
    template: {
      spec: {
        containers: { env?: Record<string, unknown>[] }[];
        topologySpreadConstraints?: unknown[];
      };
    };
  };
}

/**
 * The Deployment manifest of a sharded operator: `plan.replicas`, the shard environment on its
 * first container, and its pods spread over nodes (preferred, so a small cluster still
 * schedules them all).
 */
export function shardedDeployment(
  [path, deployment]: Manifest,
  plan: ShardingPlan,
  names: ShardingNames,
): Manifest {
  const copy = structuredClone(deployment) as DeploymentShape;
  copy.spec.replicas = plan.replicas;
  const pod = copy.spec.template.spec;
  const [container] = pod.containers;
  container.env = [...container.env ?? [], ...SHARD_ENV];
  pod.topologySpreadConstraints = [{
    maxSkew: 1,
    topologyKey: "kubernetes.io/hostname",
    whenUnsatisfiable: "ScheduleAnyway",
    labelSelector: { matchLabels: names.selector },
  }];
  return [path, copy];
}
