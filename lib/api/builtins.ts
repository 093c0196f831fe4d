/**
 * The built-in kinds as resource types, each typed with its objects' type generated from
 * Kubernetes 1.36's OpenAPI (lib/api/generated). Each name is both a value (the resource type,
 * for `client.get(Deployment, key)`) and a type (the object, for `const d: Deployment`).
 *
 * Kinds not listed here work too: the client resolves any `apiVersion` and `kind` through API
 * discovery.
 *
 * @module
 */

import {
  type GroupVersionKind,
  gvkKey,
  type KubeObject,
  type ResourceType,
  resourceType,
} from "./resource.ts";
import type * as admissionregistrationv1 from "./generated/admissionregistration_v1.ts";
import type * as apiextensionsv1 from "./generated/apiextensions_v1.ts";
import type * as appsv1 from "./generated/apps_v1.ts";
import type * as autoscalingv2 from "./generated/autoscaling_v2.ts";
import type * as batchv1 from "./generated/batch_v1.ts";
import type * as coordinationv1 from "./generated/coordination_v1.ts";
import type * as corev1 from "./generated/core_v1.ts";
import type * as eventsv1 from "./generated/events_v1.ts";
import type * as networkingv1 from "./generated/networking_v1.ts";
import type * as policyv1 from "./generated/policy_v1.ts";
import type * as rbacv1 from "./generated/rbac_v1.ts";

/** ConfigMap (v1): the object type, and its resource type for client and cache calls. */
export type ConfigMap = corev1.ConfigMap;
/** ConfigMap (v1): the object type, and its resource type for client and cache calls. */
export const ConfigMap: ResourceType<ConfigMap> = resourceType<ConfigMap>({
  group: "",
  version: "v1",
  kind: "ConfigMap",
  plural: "configmaps",
  scope: "Namespaced",
});

/** Secret (v1): the object type, and its resource type for client and cache calls. */
export type Secret = corev1.Secret;
/** Secret (v1): the object type, and its resource type for client and cache calls. */
export const Secret: ResourceType<Secret> = resourceType<Secret>({
  group: "",
  version: "v1",
  kind: "Secret",
  plural: "secrets",
  scope: "Namespaced",
});

/** Pod (v1): the object type, and its resource type for client and cache calls. */
export type Pod = corev1.Pod;
/** Pod (v1): the object type, and its resource type for client and cache calls. */
export const Pod: ResourceType<Pod> = resourceType<Pod>({
  group: "",
  version: "v1",
  kind: "Pod",
  plural: "pods",
  scope: "Namespaced",
  subresources: [
    "status",
    "eviction",
    "binding",
    "ephemeralcontainers",
    "resize",
    "log",
    "exec",
    "attach",
    "portforward",
    "proxy",
  ],
});

/** Service (v1): the object type, and its resource type for client and cache calls. */
export type Service = corev1.Service;
/** Service (v1): the object type, and its resource type for client and cache calls. */
export const Service: ResourceType<Service> = resourceType<Service>({
  group: "",
  version: "v1",
  kind: "Service",
  plural: "services",
  scope: "Namespaced",
  subresources: ["status", "proxy"],
});

/** ServiceAccount (v1): the object type, and its resource type for client and cache calls. */
export type ServiceAccount = corev1.ServiceAccount;
/** ServiceAccount (v1): the object type, and its resource type for client and cache calls. */
export const ServiceAccount: ResourceType<ServiceAccount> = resourceType<ServiceAccount>({
  group: "",
  version: "v1",
  kind: "ServiceAccount",
  plural: "serviceaccounts",
  scope: "Namespaced",
  subresources: ["token"],
});

/** Namespace (v1): the object type, and its resource type for client and cache calls. */
export type Namespace = corev1.Namespace;
/** Namespace (v1): the object type, and its resource type for client and cache calls. */
export const Namespace: ResourceType<Namespace> = resourceType<Namespace>({
  group: "",
  version: "v1",
  kind: "Namespace",
  plural: "namespaces",
  scope: "Cluster",
  subresources: ["status", "finalize"],
});

/** Node (v1): the object type, and its resource type for client and cache calls. */
export type Node = corev1.Node;
/** Node (v1): the object type, and its resource type for client and cache calls. */
export const Node: ResourceType<Node> = resourceType<Node>({
  group: "",
  version: "v1",
  kind: "Node",
  plural: "nodes",
  scope: "Cluster",
  subresources: ["status", "proxy"],
});

/** Event (v1): the object type, and its resource type for client and cache calls. */
export type Event = corev1.Event;
/** Event (v1): the object type, and its resource type for client and cache calls. */
export const Event: ResourceType<Event> = resourceType<Event>({
  group: "",
  version: "v1",
  kind: "Event",
  plural: "events",
  scope: "Namespaced",
});

/** Endpoints (v1): the object type, and its resource type for client and cache calls. */
export type Endpoints = corev1.Endpoints;
/** Endpoints (v1): the object type, and its resource type for client and cache calls. */
export const Endpoints: ResourceType<Endpoints> = resourceType<Endpoints>({
  group: "",
  version: "v1",
  kind: "Endpoints",
  plural: "endpoints",
  scope: "Namespaced",
});

/** PersistentVolumeClaim (v1): the object type, and its resource type for client and cache calls. */
export type PersistentVolumeClaim = corev1.PersistentVolumeClaim;
/** PersistentVolumeClaim (v1): the object type, and its resource type for client and cache calls. */
export const PersistentVolumeClaim: ResourceType<PersistentVolumeClaim> = resourceType<
  PersistentVolumeClaim
>({
  group: "",
  version: "v1",
  kind: "PersistentVolumeClaim",
  plural: "persistentvolumeclaims",
  scope: "Namespaced",
  subresources: ["status"],
});

/** PersistentVolume (v1): the object type, and its resource type for client and cache calls. */
export type PersistentVolume = corev1.PersistentVolume;
/** PersistentVolume (v1): the object type, and its resource type for client and cache calls. */
export const PersistentVolume: ResourceType<PersistentVolume> = resourceType<PersistentVolume>({
  group: "",
  version: "v1",
  kind: "PersistentVolume",
  plural: "persistentvolumes",
  scope: "Cluster",
  subresources: ["status"],
});

/** Deployment (apps/v1): the object type, and its resource type for client and cache calls. */
export type Deployment = appsv1.Deployment;
/** Deployment (apps/v1): the object type, and its resource type for client and cache calls. */
export const Deployment: ResourceType<Deployment> = resourceType<Deployment>({
  group: "apps",
  version: "v1",
  kind: "Deployment",
  plural: "deployments",
  scope: "Namespaced",
  subresources: ["status", "scale"],
});

/** StatefulSet (apps/v1): the object type, and its resource type for client and cache calls. */
export type StatefulSet = appsv1.StatefulSet;
/** StatefulSet (apps/v1): the object type, and its resource type for client and cache calls. */
export const StatefulSet: ResourceType<StatefulSet> = resourceType<StatefulSet>({
  group: "apps",
  version: "v1",
  kind: "StatefulSet",
  plural: "statefulsets",
  scope: "Namespaced",
  subresources: ["status", "scale"],
});

/** DaemonSet (apps/v1): the object type, and its resource type for client and cache calls. */
export type DaemonSet = appsv1.DaemonSet;
/** DaemonSet (apps/v1): the object type, and its resource type for client and cache calls. */
export const DaemonSet: ResourceType<DaemonSet> = resourceType<DaemonSet>({
  group: "apps",
  version: "v1",
  kind: "DaemonSet",
  plural: "daemonsets",
  scope: "Namespaced",
  subresources: ["status"],
});

/** ReplicaSet (apps/v1): the object type, and its resource type for client and cache calls. */
export type ReplicaSet = appsv1.ReplicaSet;
/** ReplicaSet (apps/v1): the object type, and its resource type for client and cache calls. */
export const ReplicaSet: ResourceType<ReplicaSet> = resourceType<ReplicaSet>({
  group: "apps",
  version: "v1",
  kind: "ReplicaSet",
  plural: "replicasets",
  scope: "Namespaced",
  subresources: ["status", "scale"],
});

/** Job (batch/v1): the object type, and its resource type for client and cache calls. */
export type Job = batchv1.Job;
/** Job (batch/v1): the object type, and its resource type for client and cache calls. */
export const Job: ResourceType<Job> = resourceType<Job>({
  group: "batch",
  version: "v1",
  kind: "Job",
  plural: "jobs",
  scope: "Namespaced",
  subresources: ["status"],
});

/** CronJob (batch/v1): the object type, and its resource type for client and cache calls. */
export type CronJob = batchv1.CronJob;
/** CronJob (batch/v1): the object type, and its resource type for client and cache calls. */
export const CronJob: ResourceType<CronJob> = resourceType<CronJob>({
  group: "batch",
  version: "v1",
  kind: "CronJob",
  plural: "cronjobs",
  scope: "Namespaced",
  subresources: ["status"],
});

/** Lease (coordination.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type Lease = coordinationv1.Lease;
/** Lease (coordination.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const Lease: ResourceType<Lease> = resourceType<Lease>({
  group: "coordination.k8s.io",
  version: "v1",
  kind: "Lease",
  plural: "leases",
  scope: "Namespaced",
});

/** Event (events.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type EventsV1Event = eventsv1.Event;
/** Event (events.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const EventsV1Event: ResourceType<EventsV1Event> = resourceType<EventsV1Event>({
  group: "events.k8s.io",
  version: "v1",
  kind: "Event",
  plural: "events",
  scope: "Namespaced",
});

/** Role (rbac.authorization.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type Role = rbacv1.Role;
/** Role (rbac.authorization.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const Role: ResourceType<Role> = resourceType<Role>({
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "Role",
  plural: "roles",
  scope: "Namespaced",
});

/** RoleBinding (rbac.authorization.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type RoleBinding = rbacv1.RoleBinding;
/** RoleBinding (rbac.authorization.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const RoleBinding: ResourceType<RoleBinding> = resourceType<RoleBinding>({
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "RoleBinding",
  plural: "rolebindings",
  scope: "Namespaced",
});

/** ClusterRole (rbac.authorization.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type ClusterRole = rbacv1.ClusterRole;
/** ClusterRole (rbac.authorization.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const ClusterRole: ResourceType<ClusterRole> = resourceType<ClusterRole>({
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "ClusterRole",
  plural: "clusterroles",
  scope: "Cluster",
});

/** ClusterRoleBinding (rbac.authorization.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type ClusterRoleBinding = rbacv1.ClusterRoleBinding;
/** ClusterRoleBinding (rbac.authorization.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const ClusterRoleBinding: ResourceType<ClusterRoleBinding> = resourceType<
  ClusterRoleBinding
>({
  group: "rbac.authorization.k8s.io",
  version: "v1",
  kind: "ClusterRoleBinding",
  plural: "clusterrolebindings",
  scope: "Cluster",
});

/** Ingress (networking.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type Ingress = networkingv1.Ingress;
/** Ingress (networking.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const Ingress: ResourceType<Ingress> = resourceType<Ingress>({
  group: "networking.k8s.io",
  version: "v1",
  kind: "Ingress",
  plural: "ingresses",
  scope: "Namespaced",
  subresources: ["status"],
});

/** NetworkPolicy (networking.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type NetworkPolicy = networkingv1.NetworkPolicy;
/** NetworkPolicy (networking.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const NetworkPolicy: ResourceType<NetworkPolicy> = resourceType<NetworkPolicy>({
  group: "networking.k8s.io",
  version: "v1",
  kind: "NetworkPolicy",
  plural: "networkpolicies",
  scope: "Namespaced",
});

/** PodDisruptionBudget (policy/v1): the object type, and its resource type for client and cache calls. */
export type PodDisruptionBudget = policyv1.PodDisruptionBudget;
/** PodDisruptionBudget (policy/v1): the object type, and its resource type for client and cache calls. */
export const PodDisruptionBudget: ResourceType<PodDisruptionBudget> = resourceType<
  PodDisruptionBudget
>({
  group: "policy",
  version: "v1",
  kind: "PodDisruptionBudget",
  plural: "poddisruptionbudgets",
  scope: "Namespaced",
  subresources: ["status"],
});

/** HorizontalPodAutoscaler (autoscaling/v2): the object type, and its resource type for client and cache calls. */
export type HorizontalPodAutoscaler = autoscalingv2.HorizontalPodAutoscaler;
/** HorizontalPodAutoscaler (autoscaling/v2): the object type, and its resource type for client and cache calls. */
export const HorizontalPodAutoscaler: ResourceType<HorizontalPodAutoscaler> = resourceType<
  HorizontalPodAutoscaler
>({
  group: "autoscaling",
  version: "v2",
  kind: "HorizontalPodAutoscaler",
  plural: "horizontalpodautoscalers",
  scope: "Namespaced",
  subresources: ["status"],
});

/** CustomResourceDefinition (apiextensions.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type CustomResourceDefinition = apiextensionsv1.CustomResourceDefinition;
/** CustomResourceDefinition (apiextensions.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const CustomResourceDefinition: ResourceType<CustomResourceDefinition> = resourceType<
  CustomResourceDefinition
>({
  group: "apiextensions.k8s.io",
  version: "v1",
  kind: "CustomResourceDefinition",
  plural: "customresourcedefinitions",
  scope: "Cluster",
  subresources: ["status"],
});

/** ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type ValidatingWebhookConfiguration = admissionregistrationv1.ValidatingWebhookConfiguration;
/** ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const ValidatingWebhookConfiguration: ResourceType<ValidatingWebhookConfiguration> =
  resourceType<ValidatingWebhookConfiguration>({
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "ValidatingWebhookConfiguration",
    plural: "validatingwebhookconfigurations",
    scope: "Cluster",
  });

/** MutatingWebhookConfiguration (admissionregistration.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export type MutatingWebhookConfiguration = admissionregistrationv1.MutatingWebhookConfiguration;
/** MutatingWebhookConfiguration (admissionregistration.k8s.io/v1): the object type, and its resource type for client and cache calls. */
export const MutatingWebhookConfiguration: ResourceType<MutatingWebhookConfiguration> =
  resourceType<MutatingWebhookConfiguration>({
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "MutatingWebhookConfiguration",
    plural: "mutatingwebhookconfigurations",
    scope: "Cluster",
  });

/** Every built-in resource type above, keyed by `apiVersion/kind`. */
const BUILTINS: ReadonlyMap<string, ResourceType<KubeObject>> = new Map(
  [
    ConfigMap,
    Secret,
    Pod,
    Service,
    ServiceAccount,
    Namespace,
    Node,
    Event,
    Endpoints,
    PersistentVolumeClaim,
    PersistentVolume,
    Deployment,
    StatefulSet,
    DaemonSet,
    ReplicaSet,
    Job,
    CronJob,
    Lease,
    EventsV1Event,
    Role,
    RoleBinding,
    ClusterRole,
    ClusterRoleBinding,
    Ingress,
    NetworkPolicy,
    PodDisruptionBudget,
    HorizontalPodAutoscaler,
    CustomResourceDefinition,
    ValidatingWebhookConfiguration,
    MutatingWebhookConfiguration,
  ].map((type) => [gvkKey(type), type]),
);

/** The built-in resource type of `apiVersion` and `kind`, if it is one of those declared here. */
export function builtinResourceType(gvk: GroupVersionKind): ResourceType<KubeObject> | undefined {
  return BUILTINS.get(gvkKey(gvk));
}

/** All built-in resource types declared here. */
export function builtinResourceTypes(): ResourceType<KubeObject>[] {
  return [...BUILTINS.values()];
}
