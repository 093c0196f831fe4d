/**
 * Rudder: a controller-runtime for Deno and Bun. Write Kubernetes operators in TypeScript and
 * ship them as one self-contained executable.
 *
 * This entry point holds the typed client ({@linkcode newClient}) with its patches
 * ({@linkcode mergeFrom}, {@linkcode strategicMergeFrom}, {@linkcode jsonPatch}) and wrappers,
 * the resource types of the built-in kinds (`ConfigMap`, `Deployment`, …, each both a value
 * and the type of its objects) and the Kubernetes connection layer under them: where the API
 * server is ({@linkcode loadConfig}), how requests reach it ({@linkcode createTransport}), the
 * REST client with typed errors ({@linkcode RestClient}, {@linkcode ApiError}) and watch
 * streams ({@linkcode decodeWatchStream}). The types of every built-in group-version are
 * exported as namespaces named like Go's packages (`corev1.Container`, `appsv1.DeploymentSpec`).
 * The local control plane and the fake client for tests are in `@rudder/operator/testing`.
 *
 * @example Read, change and patch a Deployment
 * ```ts
 * import { Deployment, loadConfig, mergeFrom, newClient } from "@rudder/operator";
 *
 * const client = newClient(await loadConfig());
 * const web = await client.get(Deployment, { namespace: "default", name: "web" });
 * const scaled = structuredClone(web);
 * scaled.spec!.replicas = (web.spec?.replicas ?? 1) + 1;
 * await client.patch(scaled, mergeFrom(web));
 * ```
 *
 * @module
 */

export { VERSION } from "./lib/version.ts";

export {
  type GroupVersionKind,
  guessPlural,
  type KubeObject,
  type ResourceType,
  resourceType,
  type ResourceTypeOptions,
  type Scope,
  type Unstructured,
} from "./lib/api/resource.ts";

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
} from "./lib/api/builtins.ts";

export { isNoKindMatch, NoKindMatchError, RESTMapper } from "./lib/api/discovery.ts";

export {
  type CustomObject,
  type DefinedResource,
  defineResource,
  formatFieldPath,
  isDefinedResource,
  type ObjectOf,
  type ResourceDefinition,
  type SafeParseResult,
  ValidationError,
  type ValidationIssue,
} from "./lib/api/resource.ts";

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
} from "./lib/api/crd.ts";

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
} from "./lib/api/schema.ts";

export {
  conditionSchema,
  conditionsSchema,
  labelSelectorSchema,
  objectMetaSchema,
  ownerReferenceSchema,
  phaseSchema,
} from "./lib/api/meta.ts";

export type * as admissionregistrationv1 from "./lib/api/generated/admissionregistration_v1.ts";
export type * as apiextensionsv1 from "./lib/api/generated/apiextensions_v1.ts";
export type * as appsv1 from "./lib/api/generated/apps_v1.ts";
export type * as authenticationv1 from "./lib/api/generated/authentication_v1.ts";
export type * as authorizationv1 from "./lib/api/generated/authorization_v1.ts";
export type * as autoscalingv1 from "./lib/api/generated/autoscaling_v1.ts";
export type * as autoscalingv2 from "./lib/api/generated/autoscaling_v2.ts";
export type * as batchv1 from "./lib/api/generated/batch_v1.ts";
export type * as certificatesv1 from "./lib/api/generated/certificates_v1.ts";
export type * as coordinationv1 from "./lib/api/generated/coordination_v1.ts";
export type * as corev1 from "./lib/api/generated/core_v1.ts";
export type * as discoveryv1 from "./lib/api/generated/discovery_v1.ts";
export type * as eventsv1 from "./lib/api/generated/events_v1.ts";
export type * as metav1 from "./lib/api/generated/meta_v1.ts";
export type * as networkingv1 from "./lib/api/generated/networking_v1.ts";
export type * as nodev1 from "./lib/api/generated/node_v1.ts";
export type * as policyv1 from "./lib/api/generated/policy_v1.ts";
export type * as rbacv1 from "./lib/api/generated/rbac_v1.ts";
export type * as schedulingv1 from "./lib/api/generated/scheduling_v1.ts";
export type * as storagev1 from "./lib/api/generated/storage_v1.ts";
export type {
  IntOrString,
  MicroTime,
  Quantity,
  RawExtension,
  Time,
} from "./lib/api/generated/primitives.ts";
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
} from "./lib/api/generated/meta_v1.ts";

export {
  type Client,
  type ClientOptions,
  type ListAllOptions,
  newClient,
  type ObjectKey,
  type ObjectList,
  type Reader,
  type ResourceRef,
  type SubResourceClient,
  type SubResourceWriteOptions,
  type Writer,
} from "./lib/client/client.ts";

export type {
  ApplyOptions,
  CallOptions,
  CreateOptions,
  DeleteAllOfOptions,
  DeleteOptions,
  FieldSelectorInput,
  FieldValidation,
  GetOptions,
  LabelSelectorInput,
  LabelSelectorObject,
  ListOptions,
  PatchOptions,
  PropagationPolicy,
  UpdateOptions,
  WriteOptions,
} from "./lib/client/options.ts";

export {
  jsonPatch,
  type JsonPatchOperation,
  mergeFrom,
  type MergeFromOptions,
  type Patch,
  type PatchType,
  rawPatch,
  strategicMergeFrom,
} from "./lib/client/patch.ts";

export { dryRunClient, namespacedClient, withFieldOwner } from "./lib/client/wrappers.ts";

export {
  type CreateEvent,
  type DeleteEvent,
  type GenericEvent,
  type UpdateEvent,
} from "./lib/event/event.ts";
export { LOW_PRIORITY } from "./lib/workqueue/workqueue.ts";
export {
  type Request,
  requestFor,
  requestKey,
  type RequestQueue,
} from "./lib/reconcile/reconcile.ts";

export {
  and,
  annotationChangedPredicate,
  generationChangedPredicate,
  labelChangedPredicate,
  labelSelectorPredicate,
  newPredicateFuncs,
  not,
  or,
  type Predicate,
  resourceVersionChangedPredicate,
} from "./lib/predicate/predicate.ts";

export {
  enqueueRequestForObject,
  enqueueRequestForOwner,
  enqueueRequestsFromMapFunc,
  type EventHandler as ControllerEventHandler,
  type MapFunc,
  type OwnerHandlerOptions,
} from "./lib/handler/handler.ts";

export {
  channelSource,
  kindSource,
  type KindSourceOptions,
  type Source,
} from "./lib/source/source.ts";

export {
  Controller,
  type ControllerMetrics,
  type ControllerOptions,
  type ScrapedQueue,
  type WatchedKind,
} from "./lib/controller/controller.ts";
export {
  isTerminalError,
  type ReconcileContext,
  type ReconcileFunc,
  type Reconciler,
  type Result,
  TerminalError,
} from "./lib/reconcile/reconcile.ts";
export { type Logger } from "./lib/util/logging.ts";
export { type Runnable } from "./lib/util/runnable.ts";

export {
  ControllerBuilder,
  type ControllerHost,
  newControllerManagedBy,
  type OwnsOptions,
  type WatchOptions,
} from "./lib/controller/builder.ts";

export {
  type AddOptions,
  type GetResult,
  WorkQueue,
  type WorkQueueMetrics,
  type WorkQueueOptions,
} from "./lib/workqueue/workqueue.ts";

export {
  bucket,
  defaultControllerRateLimiter,
  defaultKeyOf,
  itemExponentialFailure,
  itemFastSlow,
  legacyControllerRateLimiter,
  maxOf,
  type RateLimiter,
  withMaxWait,
} from "./lib/workqueue/rate_limiter.ts";

export { type Clock, realClock, type TimerHandle } from "./lib/util/clock.ts";
export { FakeClock } from "./lib/testing/fake_clock.ts";

export {
  type AuthenticationAndAuthorizationOptions,
  controllerMetrics,
  type ControllerRuntimeMetrics,
  Counter,
  DEFAULT_AUTH_CACHE_TTL_MS,
  DEFAULT_BUCKETS,
  exponentialBuckets,
  type FetchHandler,
  Gauge,
  Histogram,
  type HistogramOptions,
  leaderElectionMetrics,
  linearBuckets,
  Metric,
  type MetricLabels,
  type MetricOptions,
  type MetricsApp,
  metricsApp,
  type MetricsAppOptions,
  type MetricType,
  NO_ANSWER_CODE,
  type ProcessMetricsOptions,
  RECONCILE_RESULTS,
  RECONCILE_TIME_BUCKETS,
  registerProcessMetrics,
  Registry,
  registry,
  type RequestFilter,
  restClientMetrics,
  ScalarMetric,
  TEXT_CONTENT_TYPE,
  withAuthenticationAndAuthorization,
  WORKQUEUE_DURATION_BUCKETS,
} from "./lib/metrics/mod.ts";
/** Prometheus metrics with controller-runtime's names; `metrics.registry` is the global registry. */
export * as metrics from "./lib/metrics/mod.ts";

export {
  addFinalizer,
  AlreadyOwnedError,
  containsFinalizer,
  createOrPatch,
  type CreateOrPatchResult,
  createOrUpdate,
  type CreateOrUpdateResult,
  getControllerOf,
  hasControllerReference,
  hasOwnerReference,
  type MutateFn,
  type ObjectClient,
  type OperationResult,
  type OwnerReferenceOptions,
  removeFinalizer,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from "./lib/controllerutil/controllerutil.ts";

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
} from "./lib/conditions/conditions.ts";

export {
  type EventOptions,
  EventRecorder,
  type EventRecorderClient,
  type EventRecorderOptions,
  type EventType,
} from "./lib/events/recorder.ts";

export {
  type CachedClient,
  type CachedClientOptions,
  type CachedReader,
  newCachedClient,
} from "./lib/client/cached_client.ts";

export {
  ALL_NAMESPACES,
  type ByObject,
  Cache,
  type CacheGetOptions,
  type CacheListOptions,
  type CacheOptions,
  type GetInformerOptions,
  type NamespaceConfig,
  newCache,
  type NewCacheOptions,
  type SharedInformer,
} from "./lib/cache/cache.ts";

export {
  type HandlerRegistration,
  Informer,
  type InformerHealth,
  type InformerOptions,
  type InformerState,
  type ResourceEventHandler,
} from "./lib/cache/informer.ts";

export {
  isResourceVersionTooLarge,
  type Watcher,
  watcher,
  type WatcherEvent,
  type WatcherOptions,
  type WatcherState,
  type WatcherStatus,
} from "./lib/cache/watcher.ts";

export {
  Reflector,
  reflector,
  type ReflectorOptions,
  type StoreChange,
} from "./lib/cache/reflector.ts";

export { Dispatcher } from "./lib/cache/dispatcher.ts";

export {
  type IndexFunc,
  objectKey,
  type ObjectRef,
  type ObjectWithMetadata,
  type ReplaceResult,
  Store,
  type StoreListOptions,
  type StoreOptions,
  stripManagedFields,
} from "./lib/cache/store.ts";
export { deepFreeze, type DeepReadonly } from "./lib/api/readonly.ts";

export {
  type FieldRequirement,
  type FieldSelector,
  type FieldSelectorOperator,
  type LabelRequirement,
  type LabelSelector as LabelSelectorMatcher,
  type LabelSelectorOperator,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from "./lib/cache/selector.ts";

export {
  type AuthProvider,
  type Credentials,
  DEFAULT_SERVICE_ACCOUNT_DIR,
  type ExecClusterInfo,
  type ExecCredentialOptions,
  ExecCredentialProvider,
  FileTokenSource,
  type FileTokenSourceOptions,
  inClusterConfig,
  type KubeConfig,
  KubeconfigError,
  kubeconfigFromObject,
  loadConfig,
  type LoadConfigOptions,
  loadKubeconfigFile,
} from "./lib/kube/config.ts";

export {
  ApiError,
  type ApiErrorOptions,
  ignoreAlreadyExists,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  isTooManyRequests,
  isUnauthorized,
  type Status,
  type StatusCause,
  type StatusDetails,
  type StatusReason,
} from "./lib/kube/errors.ts";

export {
  createTransport,
  defaultUserAgent,
  type Transport,
  type TransportOptions,
} from "./lib/kube/transport.ts";

export {
  type QueryValue,
  type RequestInfo,
  RestClient,
  type RestClientOptions,
  type RestRequest,
} from "./lib/kube/rest.ts";

export {
  decodeWatchStream,
  type DecodeWatchStreamOptions,
  encodeWatchEvent,
  WatchDecodeError,
  type WatchEvent,
  type WatchEventType,
} from "./lib/kube/watch.ts";

export { type Checker, Checks, healthApp, informersReady, ping } from "./lib/healthz/healthz.ts";

export {
  LeaderElectionLostError,
  type LeaderElectionMetrics,
  type LeaderElectionOptions,
  LeaderElector,
  type LeaseKey,
} from "./lib/leaderelection/leader_election.ts";

export { Manager, type ManagerOptions } from "./lib/manager/manager.ts";

export {
  type Handler,
  parseAddress,
  type RunningServer,
  serve,
  type ServeOptions,
} from "./lib/manager/server.ts";

export { configureLogging, type LoggingOptions } from "./lib/util/logging.ts";
