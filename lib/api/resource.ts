/**
 * Resource types: what the client, the cache and the controller builder need to know about a
 * kind — its group, version, plural, list kind, scope and subresources — carrying the
 * TypeScript type of its objects, so `client.get(Deployment, key)` returns a typed Deployment.
 *
 * @module
 */

import type { ObjectMeta } from "./generated/meta_v1.ts";
import type { DeepReadonly } from "../cache/store.ts";

/** Whether objects of a kind live in a namespace or in the whole cluster. */
export type Scope = "Namespaced" | "Cluster";

/** The least every Kubernetes object has. */
export interface KubeObject {
  /** `group/version`, or `v1` for the core group. */
  apiVersion: string;
  /** The kind, e.g. `ConfigMap`. */
  kind: string;
  /**
   * Standard object metadata. Read-only here so that frozen objects from the cache are
   * KubeObjects too; a mutable `ObjectMeta` fits as well.
   */
  metadata?: DeepReadonly<ObjectMeta>;
}

/** An object of any kind, with its fields untyped: the counterpart of Go's `Unstructured`. */
export type Unstructured = KubeObject & { [field: string]: unknown };

/** A group, version and kind, e.g. `{ apiVersion: "apps/v1", kind: "Deployment" }`. */
export interface GroupVersionKind {
  /** `group/version`, or `v1` for the core group. */
  apiVersion: string;
  /** The kind. */
  kind: string;
}

/**
 * Describes one kind of the Kubernetes API. `T` is the type of its objects; it exists only for
 * the compiler, so that every call taking a resource type returns objects of that type.
 */
export interface ResourceType<T extends KubeObject = Unstructured> {
  /** `group/version`, or `v1` for the core group. */
  readonly apiVersion: string;
  /** API group; `""` for the core group. */
  readonly group: string;
  /** API version, e.g. `v1`. */
  readonly version: string;
  /** Kind, e.g. `Deployment`. */
  readonly kind: string;
  /** Lower-case plural used in URLs, e.g. `deployments`. */
  readonly plural: string;
  /** Kind of the list, e.g. `DeploymentList`. */
  readonly listKind: string;
  /** Namespaced or cluster-scoped. */
  readonly scope: Scope;
  /** Subresources the kind is known to have, e.g. `["status", "scale"]`. */
  readonly subresources: readonly string[];
  /** Never set at run time: carries `T`, the type of the kind's objects, for inference. */
  readonly __objectType?: T;
}

/** Options of {@linkcode resourceType}. */
export interface ResourceTypeOptions {
  /** API group; `""` for the core group. */
  group: string;
  /** API version. */
  version: string;
  /** Kind. */
  kind: string;
  /** Lower-case plural; default: the kind pluralised by Kubernetes' rules. */
  plural?: string;
  /** Kind of the list; default `<kind>List`. */
  listKind?: string;
  /** Namespaced or cluster-scoped. */
  scope: Scope;
  /** Known subresources, e.g. `["status"]`. */
  subresources?: readonly string[];
}

/**
 * Pluralises a kind the way Kubernetes' tools do when no plural is given
 * (`k8s.io/apimachinery/pkg/api/meta.UnsafeGuessKindToResource`).
 */
export function guessPlural(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower === "endpoints") return lower;
  if (
    lower.endsWith("s") || lower.endsWith("x") || lower.endsWith("z") || lower.endsWith("ch") ||
    lower.endsWith("sh")
  ) {
    return `${lower}es`;
  }
  if (lower.endsWith("y") && lower.length > 1 && !"aeiou".includes(lower[lower.length - 2])) {
    return `${lower.slice(0, -1)}ies`;
  }
  return `${lower}s`;
}

/**
 * Declares a resource type. Built-in kinds are already declared (`ConfigMap`, `Deployment`,
 * …); custom resources usually come from `defineResource`, which calls this.
 *
 * @example
 * ```ts
 * import { resourceType, type Unstructured } from "@rudder/operator";
 *
 * const Widget = resourceType<Unstructured>({
 *   group: "example.com",
 *   version: "v1",
 *   kind: "Widget",
 *   scope: "Namespaced",
 * });
 * console.log(Widget.apiVersion, Widget.plural); // example.com/v1 widgets
 * ```
 */
export function resourceType<T extends KubeObject = Unstructured>(
  options: ResourceTypeOptions,
): ResourceType<T> {
  return Object.freeze({
    apiVersion: options.group ? `${options.group}/${options.version}` : options.version,
    group: options.group,
    version: options.version,
    kind: options.kind,
    plural: options.plural ?? guessPlural(options.kind),
    listKind: options.listKind ?? `${options.kind}List`,
    scope: options.scope,
    subresources: Object.freeze([...(options.subresources ?? [])]),
  });
}

/** Splits `apps/v1` into `{ group: "apps", version: "v1" }` and `v1` into `{ group: "", version: "v1" }`. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf("/");
  return slash === -1
    ? { group: "", version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** `"apps/v1/Deployment"`: the key under which a kind is registered. */
export function gvkKey(gvk: GroupVersionKind): string {
  return `${gvk.apiVersion}/${gvk.kind}`;
}

/** True for a resource type (as opposed to a bare group-version-kind). */
export function isResourceType(value: unknown): value is ResourceType<KubeObject> {
  return typeof value === "object" && value !== null && "plural" in value && "scope" in value &&
    "apiVersion" in value && "kind" in value;
}

/**
 * The API path of a collection or object: `/api/v1/namespaces/ns/configmaps/name`, or
 * `/apis/apps/v1/deployments` for all namespaces. A subresource is appended after the name.
 */
export function resourcePath(
  type: ResourceType<KubeObject>,
  location: { namespace?: string; name?: string; subresource?: string } = {},
): string {
  const base = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  const namespace = type.scope === "Namespaced" && location.namespace
    ? `/namespaces/${encodeURIComponent(location.namespace)}`
    : "";
  let path = `${base}${namespace}/${type.plural}`;
  if (location.name !== undefined) path += `/${encodeURIComponent(location.name)}`;
  if (location.subresource) path += `/${location.subresource}`;
  return path;
}
