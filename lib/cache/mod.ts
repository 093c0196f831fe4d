/**
 * The cache: informers that list and watch each kind over raw fetch streams, recover from every
 * failure, and keep deep-frozen objects in a {@linkcode Store} with indexes; the counterpart of
 * controller-runtime's `pkg/cache` and client-go's `tools/cache`. A manager owns one cache and
 * its client reads from it; {@linkcode newCache} makes one on its own.
 *
 * @example A cache of ConfigMaps in one namespace
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 * import { ConfigMap } from "@rudder/operator";
 * import { newCache } from "@rudder/operator/cache";
 *
 * const cache = newCache(await loadConfig(), { defaultNamespaces: { web: {} } });
 * const stop = new AbortController();
 * void cache.start(stop.signal);
 * await cache.waitForCacheSync();
 * const all = await cache.list(ConfigMap, { namespace: "web" });
 * console.log(all.items.length);
 * stop.abort();
 * ```
 *
 * @module
 */

export {
  ALL_NAMESPACES,
  type ByObject,
  type Cache,
  type CacheGetOptions,
  type CacheListOptions,
  type CacheOptions,
  type GetInformerOptions,
  type NamespaceConfig,
  newCache,
  type NewCacheOptions,
  type SharedInformer,
} from "./cache.ts";
export { CacheNotStartedError, ResourceNotCachedError } from "./errors.ts";
export {
  Informer,
  type InformerHealth,
  type InformerOptions,
  type InformerState,
} from "./informer.ts";
export {
  Dispatcher,
  type HandlerRegistration,
  type ResourceEventHandler,
  type StoreChange,
} from "./dispatcher.ts";
export {
  isResourceVersionTooLarge,
  type Watcher,
  watcher,
  type WatcherEvent,
  type WatcherOptions,
  type WatcherState,
  type WatcherStatus,
} from "./watcher.ts";
export { Reflector, reflector, type ReflectorOptions } from "./reflector.ts";
export {
  type IndexFunc,
  objectKey,
  type ObjectRef,
  type ObjectWithMetadata,
  type ReplaceResult,
  Store,
  type StoreListOptions,
  type StoreOptions,
  type StoreReplacement,
  stripManagedFields,
} from "./store.ts";
export {
  type FieldRequirement,
  type FieldSelectorOperator,
  type LabelRequirement,
  type LabelSelectorOperator,
  type ParsedFieldSelector,
  type ParsedLabelSelector,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from "./selector.ts";
