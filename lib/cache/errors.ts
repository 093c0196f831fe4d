/**
 * The cache's refusals, as typed errors: controller-runtime's `ErrCacheNotStarted` and
 * `ErrResourceNotCached`.
 *
 * @module
 */

/**
 * A read from a cache that has not been started: start it (or the manager that owns it) first.
 *
 * @example
 * ```ts
 * import { CacheNotStartedError } from "@rudder/operator/cache";
 *
 * function explain(err: unknown): string {
 *   return err instanceof CacheNotStartedError ? `start the cache before reading ${err.kind}` : String(err);
 * }
 * console.log(explain(new CacheNotStartedError("ConfigMap")));
 * ```
 */
export class CacheNotStartedError extends Error {
  /** The kind the read asked for. */
  readonly kind: string;

  /** A refusal to read `kind` before the cache started. */
  constructor(kind: string) {
    super(`the cache is not started, cannot read ${kind} objects`);
    this.name = "CacheNotStartedError";
    this.kind = kind;
  }
}

/**
 * A read of a kind the cache has no informer for while `readerFailOnMissingInformer` is set:
 * call `getInformer` for the kind first, or read it with an uncached client.
 *
 * @example
 * ```ts
 * import { ResourceNotCachedError } from "@rudder/operator/cache";
 *
 * const err = new ResourceNotCachedError("Secret");
 * console.log(err.kind, err.message);
 * ```
 */
export class ResourceNotCachedError extends Error {
  /** The kind the read asked for. */
  readonly kind: string;

  /** A refusal to read `kind`, which has no informer. */
  constructor(kind: string) {
    super(
      `the cache has no informer for ${kind} and readerFailOnMissingInformer is set; ` +
        "call getInformer first",
    );
    this.name = "ResourceNotCachedError";
    this.kind = kind;
  }
}
