/**
 * Rate limiters: how long the work queue waits before handing a failed item out again. The
 * same limiters, with the same arithmetic, as client-go's `workqueue` package (which
 * controller-runtime uses), with durations in milliseconds.
 *
 * @module
 */

import { type Clock, realClock } from "../util/clock.ts";

/**
 * Decides how long an item waits before it is retried.
 *
 * @example
 * ```ts
 * import { itemExponentialFailure, type RateLimiter } from "@rudder/operator/workqueue";
 *
 * const limiter: RateLimiter<string> = itemExponentialFailure(5, 1_000);
 * console.log(limiter.when("a"), limiter.when("a"), limiter.numRequeues("a")); // 5 10 2
 * limiter.forget("a");
 * console.log(limiter.when("a")); // 5
 * ```
 */
export interface RateLimiter<K> {
  /** Records one more failure of `item` and returns how many ms it should wait. */
  when(item: K): number;
  /** Stops tracking `item`: its next failure counts as the first. */
  forget(item: K): void;
  /** How many failures of `item` are being tracked. */
  numRequeues(item: K): number;
}

/**
 * The identity of an item as a string: its JSON with the keys of every object in ascending
 * order, so that `{ namespace, name }` and `{ name, namespace }` are the same item.
 *
 * Called on every `when`, `forget` and `numRequeues`, i.e. at least once per reconcile, so it
 * builds the string directly: no replacer, no sorted copy of each object, and a sort only of
 * the fresh key list, in place (an insertion sort: items have a handful of keys).
 *
 * @example
 * ```ts
 * import { defaultKeyOf } from "./rate_limiter.ts";
 *
 * console.log(defaultKeyOf({ namespace: "ns", name: "a" }) === defaultKeyOf({ name: "a", namespace: "ns" })); // true
 * console.log(defaultKeyOf("web")); // "web" (quoted)
 * ```
 */
export function defaultKeyOf(item: unknown): string {
  if (typeof item === "string") return JSON.stringify(item);
  return canonicalJSON(item) ?? String(item);
}

/** JSON with sorted object keys; `undefined` where `JSON.stringify` gives `undefined`. */
function canonicalJSON(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  const withToJSON = value as { toJSON?: () => unknown };
  if (typeof withToJSON.toJSON === "function") return canonicalJSON(withToJSON.toJSON());
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      out += (i > 0 ? "," : "") + (canonicalJSON(value[i]) ?? "null");
    }
    return out + "]";
  }
  const keys = Object.keys(value);
  sortInPlace(keys);
  let out = "{";
  let first = true;
  for (const key of keys) {
    const text = canonicalJSON((value as Record<string, unknown>)[key]);
    if (text === undefined) continue; // undefined, functions and symbols are left out, as in JSON
    out += (first ? "" : ",") + JSON.stringify(key) + ":" + text;
    first = false;
  }
  return out + "}";
}

/**
 * Insertion sort: items have a handful of keys (a Request has two), where it beats
 * `Array.prototype.sort` and does nothing at all to keys already in order.
 */
function sortInPlace(keys: string[]): void {
  if (keys.length > 16) {
    keys.sort();
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i];
    let j = i - 1;
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j];
      j--;
    }
    keys[j + 1] = key;
  }
}

/**
 * Per item: waits `baseMs · 2^(failures so far)`, never more than `maxMs` — 5, 10, 20, 40 ms …
 * with the defaults, capped at 1000 s. `forget` starts an item over. client-go's
 * `ItemExponentialFailureRateLimiter`.
 *
 * @param keyOf the identity of an item (default {@linkcode defaultKeyOf})
 *
 * @example
 * ```ts
 * import { itemExponentialFailure } from "@rudder/operator/workqueue";
 *
 * const limiter = itemExponentialFailure<string>(5, 30);
 * console.log([1, 2, 3, 4, 5].map(() => limiter.when("x"))); // [5, 10, 20, 30, 30]
 * ```
 */
export function itemExponentialFailure<K>(
  baseMs = 5,
  maxMs = 1_000_000,
  keyOf: (item: K) => string = defaultKeyOf,
): RateLimiter<K> {
  const failures = new Map<string, number>();
  return {
    when(item: K): number {
      const key = keyOf(item);
      const exponent = failures.get(key) ?? 0;
      failures.set(key, exponent + 1);
      const backoff = baseMs * 2 ** exponent;
      // Past 2^1023 the power is Infinity: capped like any other large value.
      return backoff > maxMs || !Number.isFinite(backoff) ? maxMs : backoff;
    },
    forget(item: K): void {
      failures.delete(keyOf(item));
    },
    numRequeues(item: K): number {
      return failures.get(keyOf(item)) ?? 0;
    },
  };
}

/**
 * One token bucket for all items: `burst` tokens, refilled at `qps` per second. `when` takes a
 * token even when none is left and returns how long until the bucket would have held it — so
 * the 101st retry within an instant waits 100 ms at 10 qps, the 102nd 200 ms, and so on.
 * client-go's `BucketRateLimiter` over `rate.NewLimiter(qps, burst)` (`Reserve().Delay()`).
 * It tracks no items: `numRequeues` is 0 and `forget` does nothing.
 *
 * @throws {RangeError} when `qps` is not positive or `burst` is below 1 (such a limiter
 * would never hand out a token)
 *
 * @example
 * ```ts
 * import { FakeClock } from "@rudder/operator/testing";
 * import { bucket } from "@rudder/operator/workqueue";
 *
 * const limiter = bucket<string>(10, 2, new FakeClock()); // time stands still
 * console.log(limiter.when("a"), limiter.when("b"), limiter.when("c")); // 0 0 100
 * ```
 */
export function bucket<K>(qps = 10, burst = 100, clock: Clock = realClock): RateLimiter<K> {
  if (!(qps > 0)) throw new RangeError(`bucket: qps must be > 0, got ${qps}`);
  if (!(burst >= 1)) throw new RangeError(`bucket: burst must be >= 1, got ${burst}`);
  let tokens = burst;
  let last = clock.now();
  return {
    when(): number {
      if (qps === Infinity) return 0;
      const now = clock.now();
      // A clock that went back refills nothing (as golang.org/x/time/rate does).
      const elapsed = Math.max(0, now - last);
      tokens = Math.min(burst, tokens + (elapsed * qps) / 1000);
      last = now;
      tokens -= 1;
      return tokens < 0 ? (-tokens * 1000) / qps : 0;
    },
    forget(): void {},
    numRequeues(): number {
      return 0;
    },
  };
}

/**
 * The longest wait of all `limiters`; every one of them sees every failure. `numRequeues` is
 * the largest count, and `forget` forgets in all. client-go's `MaxOfRateLimiter`.
 *
 * @example
 * ```ts
 * import { bucket, itemExponentialFailure, maxOf } from "@rudder/operator/workqueue";
 *
 * const limiter = maxOf<string>(itemExponentialFailure(5, 1_000_000), bucket(10, 100));
 * console.log(limiter.when("a")); // 5
 * ```
 */
export function maxOf<K>(...limiters: RateLimiter<K>[]): RateLimiter<K> {
  return {
    when(item: K): number {
      let longest = 0;
      for (const limiter of limiters) longest = Math.max(longest, limiter.when(item));
      return longest;
    },
    forget(item: K): void {
      for (const limiter of limiters) limiter.forget(item);
    },
    numRequeues(item: K): number {
      let most = 0;
      for (const limiter of limiters) most = Math.max(most, limiter.numRequeues(item));
      return most;
    },
  };
}

/**
 * Per item: the first `maxFastAttempts` failures wait `fastMs`, later ones `slowMs`, until
 * `forget`. client-go's `ItemFastSlowRateLimiter`.
 *
 * @param keyOf the identity of an item (default {@linkcode defaultKeyOf})
 *
 * @example
 * ```ts
 * import { itemFastSlow } from "@rudder/operator/workqueue";
 *
 * const limiter = itemFastSlow<string>(10, 1_000, 2);
 * console.log(limiter.when("a"), limiter.when("a"), limiter.when("a")); // 10 10 1000
 * ```
 */
export function itemFastSlow<K>(
  fastMs: number,
  slowMs: number,
  maxFastAttempts: number,
  keyOf: (item: K) => string = defaultKeyOf,
): RateLimiter<K> {
  const failures = new Map<string, number>();
  return {
    when(item: K): number {
      const key = keyOf(item);
      const count = (failures.get(key) ?? 0) + 1;
      failures.set(key, count);
      return count <= maxFastAttempts ? fastMs : slowMs;
    },
    forget(item: K): void {
      failures.delete(keyOf(item));
    },
    numRequeues(item: K): number {
      return failures.get(keyOf(item)) ?? 0;
    },
  };
}

/**
 * Caps the wait of `limiter` at `maxMs`. client-go's `WithMaxWaitRateLimiter`.
 *
 * @example
 * ```ts
 * import { itemExponentialFailure, withMaxWait } from "@rudder/operator/workqueue";
 *
 * const limiter = withMaxWait(itemExponentialFailure<string>(5, 1_000_000), 8);
 * console.log(limiter.when("a"), limiter.when("a")); // 5 8
 * ```
 */
export function withMaxWait<K>(limiter: RateLimiter<K>, maxMs: number): RateLimiter<K> {
  return {
    when: (item: K) => Math.min(limiter.when(item), maxMs),
    forget: (item: K) => limiter.forget(item),
    numRequeues: (item: K) => limiter.numRequeues(item),
  };
}

/**
 * The rate limiter a controller uses unless told otherwise: per-item exponential backoff from
 * 5 ms to 1000 s, with no overall bucket.
 *
 * This is controller-runtime's default for its priority queue, which is what
 * `WorkQueue` is: `NewTypedItemExponentialFailureRateLimiter(5ms, 1000s)` in
 * `priorityqueue.New`, and in `controller.NewTypedUnmanaged` whenever `UsePriorityQueue` is on
 * (opt-in from v0.20, the default since v0.23). The classic queue's default, which adds a
 * 10 qps / 100 burst bucket shared by all items, is {@linkcode legacyControllerRateLimiter}.
 *
 * @param keyOf the identity of an item (default {@linkcode defaultKeyOf}); a queue that has a
 * cheaper key of its own (a controller's `namespace/name`) should pass it, since the limiter
 * keys the item on every `forget`, i.e. on every reconcile
 *
 * @example
 * ```ts
 * import { defaultControllerRateLimiter } from "@rudder/operator/workqueue";
 *
 * const limiter = defaultControllerRateLimiter<string>();
 * console.log(limiter.when("a"), limiter.when("a"), limiter.when("a")); // 5 10 20
 * ```
 */
export function defaultControllerRateLimiter<K>(
  keyOf: (item: K) => string = defaultKeyOf,
): RateLimiter<K> {
  return itemExponentialFailure<K>(5, 1_000_000, keyOf);
}

/**
 * client-go's `DefaultTypedControllerRateLimiter`: the longer of per-item exponential backoff
 * (5 ms to 1000 s) and one 10 qps / 100 burst token bucket for all items. controller-runtime
 * uses it only when `UsePriorityQueue` is off; pass it as a controller's `rateLimiter` to get
 * that behaviour.
 *
 * @example
 * ```ts
 * import { legacyControllerRateLimiter } from "@rudder/operator/workqueue";
 *
 * const limiter = legacyControllerRateLimiter<string>();
 * console.log(limiter.when("a")); // 5
 * ```
 */
export function legacyControllerRateLimiter<K>(clock: Clock = realClock): RateLimiter<K> {
  return maxOf<K>(itemExponentialFailure<K>(5, 1_000_000), bucket<K>(10, 100, clock));
}
