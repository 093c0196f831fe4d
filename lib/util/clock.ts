/**
 * The clock the work queue and the rate limiters read time from and set timers on, so that
 * tests can drive them with a {@linkcode FakeClock} instead of waiting for real time to pass.
 *
 * @module
 */

/** An opaque handle for a timer set with {@linkcode Clock.setTimeout}. */
export type TimerHandle = unknown;

/**
 * A source of time and timers. Times are milliseconds on a monotonic scale: only differences
 * between two readings mean anything.
 *
 * @example
 * ```ts
 * import { realClock } from "./clock.ts";
 * import { type Clock } from "@rudder/operator/testing";
 *
 * function elapsedSince(clock: Clock, start: number): number {
 *   return clock.now() - start;
 * }
 * console.log(elapsedSince(realClock, realClock.now()) >= 0); // true
 * ```
 */
export interface Clock {
  /** Milliseconds on a monotonic scale. */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now (at once if `ms` is not positive). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer that has not fired yet; does nothing otherwise. */
  clearTimeout(handle: TimerHandle): void;
}

// setTimeout takes a signed 32-bit delay; a longer one fires at once (with a warning).
const MAX_NATIVE_DELAY_MS = 2 ** 31 - 1;

/** A timer longer than the runtime's limit, kept going in steps. */
class LongTimer {
  native: ReturnType<typeof setTimeout> | undefined;
  constructor(fn: () => void, dueAt: number) {
    const step = () => {
      const left = dueAt - performance.now();
      if (left > MAX_NATIVE_DELAY_MS) this.native = setTimeout(step, MAX_NATIVE_DELAY_MS);
      else this.native = setTimeout(fn, Math.max(0, left));
    };
    step();
  }
}

/**
 * The process's clock: `performance.now()` and the runtime's own timers. Its timers are
 * ordinary (referenced) ones, so a pending timer keeps the process alive until it fires; the
 * work queue holds a timer only while a delayed item is waiting, never when idle. Delays longer
 * than the runtime's 2³¹−1 ms limit are honoured.
 *
 * @example
 * ```ts
 * import { realClock } from "./clock.ts";
 *
 * const start = realClock.now();
 * realClock.setTimeout(() => console.log(`after ${realClock.now() - start} ms`), 10);
 * ```
 */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimeout(fn: () => void, ms: number): TimerHandle {
    if (ms > MAX_NATIVE_DELAY_MS) return new LongTimer(fn, performance.now() + ms);
    return setTimeout(fn, Math.max(0, ms || 0));
  },
  clearTimeout(handle: TimerHandle): void {
    if (handle instanceof LongTimer) clearTimeout(handle.native);
    else clearTimeout(handle as ReturnType<typeof setTimeout>);
  },
};
