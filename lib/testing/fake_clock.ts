/**
 * A clock that moves only when a test moves it.
 *
 * @module
 */

import type { Clock, TimerHandle } from "../util/clock.ts";

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
 * import { FakeClock } from "@rudder/operator/testing";
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
