/**
 * Kubernetes kinds as TypeScript values and types: the built-in kinds (`ConfigMap`,
 * `Deployment`, …, each both a resource type and the type of its objects), custom resources
 * declared with {@linkcode defineResource} from one zod schema (type, validation and structural
 * CRD), the meta schemas and status-condition helpers, read-only objects
 * ({@linkcode DeepReadonly}, {@linkcode clone}), discovery ({@linkcode RESTMapper}), and the
 * generated types of every built-in group-version as namespaces named like Go's packages
 * (`corev1.Container`, `appsv1.DeploymentSpec`).
 *
 * @example A custom resource with status conditions
 * ```ts
 * import { z } from "zod";
 * import { conditionsSchema, defineResource, type ObjectOf, setStatusCondition } from "@rudder/operator";
 *
 * export const Widget = defineResource({
 *   group: "example.com",
 *   version: "v1",
 *   kind: "Widget",
 *   scope: "Namespaced",
 *   spec: z.object({ size: z.number().int().min(1).default(1) }),
 *   status: z.object({ conditions: conditionsSchema.optional() }),
 * });
 * export type Widget = ObjectOf<typeof Widget>;
 *
 * const widget: Widget = {
 *   apiVersion: "example.com/v1",
 *   kind: "Widget",
 *   metadata: { name: "w" },
 *   spec: { size: 2 },
 * };
 * const conditions = [...(widget.status?.conditions ?? [])];
 * setStatusCondition(conditions, { type: "Ready", status: "True", reason: "Sized", message: "" });
 * console.log(Widget.crd().spec.names.plural); // "widgets"
 * ```
 *
 * @module
 */

export { clone, deepFreeze, type DeepReadonly, type DeepReadonlyValue } from "./readonly.ts";

export {
  type GroupVersionKind,
  type KubeObject,
  type ResourceType,
  resourceType,
  type ResourceTypeOptions,
  type Scope,
  type Unstructured,
} from "./resource.ts";

export {
  builtinResourceTypes,
  ClusterRole,
  ClusterRoleBinding,
  ConfigMap,
  CronJob,
  CustomResourceDefinition,
  DaemonSet,
  Deployment,
  Endpoints,
  Event,
  EventsV1Event,
  HorizontalPodAutoscaler,
  Ingress,
  Job,
  Lease,
  MutatingWebhookConfiguration,
  Namespace,
  NetworkPolicy,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  PodDisruptionBudget,
  ReplicaSet,
  Role,
  RoleBinding,
  Secret,
  Service,
  ServiceAccount,
  StatefulSet,
  ValidatingWebhookConfiguration,
} from "./builtins.ts";

export { isNoKindMatch, NoKindMatchError, RESTMapper } from "./discovery.ts";

export {
  type CustomObject,
  type DefinedResource,
  defineResource,
  type ObjectOf,
  type ResourceDefinition,
  type SafeParseResult,
  ValidationError,
  type ValidationIssue,
} from "./resource.ts";

export type {
  CELValidation,
  CustomResourceDefinitionManifest,
  CustomResourceDefinitionSpec,
  PrinterColumn,
  PrinterColumnType,
  ScaleSubresource,
  SelectableField,
  SubresourceOptions,
  VersionDefinition,
  VersionOptions,
} from "./crd.ts";

export {
  celRule,
  embeddedResource,
  intOrString,
  type JSONSchemaProps,
  type KubernetesSchemaMeta,
  listType,
  mapType,
  StructuralSchemaError,
  toStructuralSchema,
  type ValidationRule,
} from "./schema.ts";

export {
  conditionSchema,
  conditionsSchema,
  labelSelectorSchema,
  objectMetaSchema,
  ownerReferenceSchema,
  phaseSchema,
} from "./meta.ts";

export type * as admissionregistrationv1 from "./generated/admissionregistration_v1.ts";
export type * as apiextensionsv1 from "./generated/apiextensions_v1.ts";
export type * as appsv1 from "./generated/apps_v1.ts";
export type * as authenticationv1 from "./generated/authentication_v1.ts";
export type * as authorizationv1 from "./generated/authorization_v1.ts";
export type * as autoscalingv1 from "./generated/autoscaling_v1.ts";
export type * as autoscalingv2 from "./generated/autoscaling_v2.ts";
export type * as batchv1 from "./generated/batch_v1.ts";
export type * as certificatesv1 from "./generated/certificates_v1.ts";
export type * as coordinationv1 from "./generated/coordination_v1.ts";
export type * as corev1 from "./generated/core_v1.ts";
export type * as discoveryv1 from "./generated/discovery_v1.ts";
export type * as eventsv1 from "./generated/events_v1.ts";
export type * as metav1 from "./generated/meta_v1.ts";
export type * as networkingv1 from "./generated/networking_v1.ts";
export type * as nodev1 from "./generated/node_v1.ts";
export type * as policyv1 from "./generated/policy_v1.ts";
export type * as rbacv1 from "./generated/rbac_v1.ts";
export type * as schedulingv1 from "./generated/scheduling_v1.ts";
export type * as storagev1 from "./generated/storage_v1.ts";
export type {
  IntOrString,
  MicroTime,
  Quantity,
  RawExtension,
  Time,
} from "./generated/primitives.ts";
export type {
  Condition,
  FieldsV1,
  LabelSelector,
  LabelSelectorRequirement,
  ListMeta,
  ManagedFieldsEntry,
  ObjectMeta,
  OwnerReference,
  ShardInfo,
} from "./generated/meta_v1.ts";

export {
  type ConditionStatus,
  findStatusCondition,
  isStatusConditionFalse,
  isStatusConditionPresentAndEqual,
  isStatusConditionTrue,
  type NewCondition,
  removeStatusCondition,
  setStatusCondition,
  type SetStatusConditionOptions,
} from "../conditions/conditions.ts";
