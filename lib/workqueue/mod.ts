/**
 * The work queue and its rate limiters, as client-go's `util/workqueue` and controller-runtime's
 * priority queue: a key waits once however often it is added, is never handed out twice at
 * once, and comes back after a delay or by priority.
 *
 * @example A rate limiter that backs off per item and caps the overall rate
 * ```ts
 * import * as workqueue from "@rudder/operator/workqueue";
 *
 * const limiter = workqueue.maxOf(
 *   workqueue.itemExponentialFailure<string>(5, 60_000),
 *   workqueue.bucket<string>(10, 100),
 * );
 * console.log(limiter.when("a")); // 5
 * ```
 *
 * @module
 */

export {
  type AddOptions,
  type GetResult,
  LOW_PRIORITY,
  WorkQueue,
  type WorkQueueMetrics,
  type WorkQueueOptions,
} from "./workqueue.ts";
export {
  bucket,
  defaultControllerRateLimiter,
  itemExponentialFailure,
  itemFastSlow,
  legacyControllerRateLimiter,
  maxOf,
  type RateLimiter,
  withMaxWait,
} from "./rate_limiter.ts";
