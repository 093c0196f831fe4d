/**
 * Maps an `apiVersion` and `kind` to its resource (plural, scope, subresources) — the
 * counterpart of controller-runtime's RESTMapper. Built-in and registered types answer at
 * once; anything else is looked up in API discovery, cached per group-version, and looked up
 * again on a miss, so a CRD installed after start is found.
 *
 * @module
 */

import type { RestClient } from "../kube/rest.ts";
import { isNotFound } from "../kube/errors.ts";
import { builtinResourceType } from "./builtins.ts";
import {
  type GroupVersionKind,
  gvkKey,
  type KubeObject,
  parseApiVersion,
  type ResourceType,
  resourceType,
} from "./resource.ts";

/**
 * No resource serves this kind: the group-version does not exist or does not list the kind.
 * Controller-runtime calls it a "no kind match" error.
 */
export class NoKindMatchError extends Error {
  /** The apiVersion asked for. */
  readonly apiVersion: string;
  /** The kind asked for. */
  readonly kind: string;

  /** Builds the error for `gvk`. */
  constructor(gvk: GroupVersionKind, detail?: string) {
    super(
      `no matches for kind "${gvk.kind}" in version "${gvk.apiVersion}"` +
        (detail ? `: ${detail}` : ""),
    );
    this.name = "NoKindMatchError";
    this.apiVersion = gvk.apiVersion;
    this.kind = gvk.kind;
  }
}

/** True when `err` is a {@linkcode NoKindMatchError}. */
export function isNoKindMatch(err: unknown): err is NoKindMatchError {
  return err instanceof NoKindMatchError;
}

interface APIResource {
  name: string;
  namespaced: boolean;
  kind: string;
  verbs?: string[];
}

/** One group-version's discovery: its kinds by name; `undefined` when it is not served. */
type GroupVersionResources = Map<string, ResourceType<KubeObject>> | undefined;

/** Resolves kinds to resource types. */
export class RESTMapper {
  readonly #rest: RestClient | undefined;
  readonly #registered = new Map<string, ResourceType<KubeObject>>();
  readonly #discovered = new Map<string, Promise<GroupVersionResources>>();

  /**
   * A mapper that asks `rest` for discovery documents when it must. Without `rest` it knows only
   * built-in and registered types (an in-memory fake has no discovery).
   */
  constructor(rest?: RestClient) {
    this.#rest = rest;
  }

  /** Makes `type` known without discovery (custom resources defined in code). */
  register(type: ResourceType<KubeObject>): void {
    this.#registered.set(gvkKey(type), type);
  }

  /**
   * The resource type of `gvk`: a registered or built-in type, else from discovery. A kind
   * missing from the cached discovery makes the group-version be read again once.
   */
  async resourceTypeFor(
    gvk: GroupVersionKind,
    signal?: AbortSignal,
  ): Promise<ResourceType<KubeObject>> {
    if (!gvk.apiVersion || !gvk.kind) {
      throw new Error(
        `an object needs apiVersion and kind to be written or read (got apiVersion ` +
          `${JSON.stringify(gvk.apiVersion)}, kind ${JSON.stringify(gvk.kind)})`,
      );
    }
    const known = this.#registered.get(gvkKey(gvk)) ?? builtinResourceType(gvk);
    if (known) return known;
    if (!this.#rest) {
      throw new NoKindMatchError(
        gvk,
        "it is not a built-in kind, and no type is registered for it",
      );
    }
    const cached = this.#discovered.get(gvk.apiVersion);
    if (cached) {
      const found = (await cached.catch(() => undefined))?.get(gvk.kind);
      if (found) return found;
    }
    const fresh = this.#discover(gvk.apiVersion, signal);
    this.#discovered.set(gvk.apiVersion, fresh);
    fresh.catch(() => this.#discovered.delete(gvk.apiVersion));
    const resources = await fresh;
    if (!resources) {
      throw new NoKindMatchError(gvk, `the API server does not serve ${gvk.apiVersion}`);
    }
    const found = resources.get(gvk.kind);
    if (!found) {
      throw new NoKindMatchError(gvk, `${gvk.apiVersion} serves no kind ${gvk.kind}`);
    }
    return found;
  }

  /** Forgets all discovered group-versions. */
  invalidate(): void {
    this.#discovered.clear();
  }

  async #discover(apiVersion: string, signal?: AbortSignal): Promise<GroupVersionResources> {
    if (!this.#rest) return undefined;
    const { group, version } = parseApiVersion(apiVersion);
    const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
    let list: { resources?: APIResource[] };
    try {
      list = await this.#rest.request({ path, signal });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
    const resources = list.resources ?? [];
    const byKind = new Map<string, ResourceType<KubeObject>>();
    for (const resource of resources) {
      if (resource.name.includes("/")) continue;
      const subresources = resources
        .filter((r) => r.name.startsWith(`${resource.name}/`))
        .map((r) => r.name.slice(resource.name.length + 1));
      // The first resource of a kind wins: kinds served twice (events) are listed primary first.
      if (byKind.has(resource.kind)) continue;
      byKind.set(
        resource.kind,
        resourceType({
          group,
          version,
          kind: resource.kind,
          plural: resource.name,
          scope: resource.namespaced ? "Namespaced" : "Cluster",
          subresources,
        }),
      );
    }
    return byKind;
  }
}
