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
 * import { type Clock, realClock } from "@rudder/operator";
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
 * import { realClock } from "@rudder/operator";
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

interface FakeTimer {
  readonly id: number;
  readonly dueAt: number;
  readonly fn: () => void;
}

/**
 * A clock for tests: time stands still until {@linkcode FakeClock.advance} moves it, which
 * fires the timers that fall due, in time order, synchronously.
 *
 * @example
 * ```ts
 * import { FakeClock } from "@rudder/operator";
 *
 * const clock = new FakeClock();
 * clock.setTimeout(() => console.log("fired at", clock.now()), 50);
 * console.log(clock.pending()); // 1
 * clock.advance(49); // nothing yet
 * clock.advance(1); // fired at 50
 * console.log(clock.pending()); // 0
 * ```
 */
export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  // Armed timers, by id; few enough in tests that a scan for the earliest is fine.
  #timers = new Map<number, FakeTimer>();

  /** Starts the clock at `startMs` (default 0). */
  constructor(startMs = 0) {
    this.#now = startMs;
  }

  /** The fake time in milliseconds. */
  now(): number {
    return this.#now;
  }

  /** Arms a timer that fires when the clock has been advanced by `ms` (0 for a bad `ms`). */
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#nextId++;
    this.#timers.set(id, { id, dueAt: this.#now + Math.max(0, ms || 0), fn });
    return id;
  }

  /** Disarms a timer; does nothing for one that fired or was cleared. */
  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === "number") this.#timers.delete(handle);
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way (including ones
   * those timers arm) in order of due time, then of arming, with `now()` at each timer's due
   * time while it runs.
   */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    const target = this.#now + ms;
    for (;;) {
      let next: FakeTimer | undefined;
      for (const timer of this.#timers.values()) {
        if (timer.dueAt > target) continue;
        if (
          !next || timer.dueAt < next.dueAt || (timer.dueAt === next.dueAt && timer.id < next.id)
        ) {
          next = timer;
        }
      }
      if (!next) break;
      this.#timers.delete(next.id);
      this.#now = Math.max(this.#now, next.dueAt);
      next.fn();
    }
    this.#now = target;
  }

  /** The number of armed timers. */
  pending(): number {
    return this.#timers.size;
  }

  /** When the earliest armed timer falls due, or `undefined` when none is armed. */
  nextDueAt(): number | undefined {
    let earliest: number | undefined;
    for (const timer of this.#timers.values()) {
      if (earliest === undefined || timer.dueAt < earliest) earliest = timer.dueAt;
    }
    return earliest;
  }
}
