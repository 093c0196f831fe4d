/**
 * Deadlines for many short-lived operations on one timer. An API call needs a deadline, but it
 * nearly always ends long before it. On Deno, whose global timers are Node's `Timeout` objects,
 * a `setTimeout` and `clearTimeout` per call took 119 ms of 2.7 s of busy samples (4 %) in a
 * profile of 2,000 reconciles (2–3 µs each in a loop of nothing else). Here a call's deadline is
 * an entry in a queue per duration; the one timer is armed for the earliest entry still waited
 * on and only re-armed when it fires, so a busy client arms it about once per timeout rather than
 * once per call.
 *
 * @module
 */

import { unrefTimer } from "./runtime.ts";

/** A deadline that has not passed yet; cancel it once the operation is over. */
export interface Deadline {
  /** Forgets the deadline; its callback will not run. Safe to call more than once. */
  cancel(): void;
}

class Entry implements Deadline {
  done = false;
  /**
   * Dropped once the entry is done: a cancelled entry waits in its queue until the head of the
   * queue passes it, and must not keep what the callback holds (a request's AbortController)
   * alive until then.
   */
  onExpire: (() => void) | undefined;
  readonly at: number;
  readonly onCancel: () => void;

  constructor(at: number, onExpire: () => void, onCancel: () => void) {
    this.at = at;
    this.onExpire = onExpire;
    this.onCancel = onCancel;
  }

  cancel(): void {
    if (this.done) return;
    this.done = true;
    this.onExpire = undefined;
    this.onCancel();
  }
}

/** Entries of one duration, in the order they expire (the order they were added). */
interface Queue {
  entries: Entry[];
  head: number;
}

/**
 * A set of deadlines served by one timer. The timer is unreferenced: a pending deadline never
 * keeps a process alive by itself.
 *
 * @example
 * ```ts
 * import { Deadlines } from "./deadlines.ts";
 *
 * const deadlines = new Deadlines();
 * const controller = new AbortController();
 * const deadline = deadlines.add(30_000, () => controller.abort(new Error("timed out")));
 * // … the operation, with controller.signal …
 * deadline.cancel();
 * ```
 */
export class Deadlines {
  readonly #queues = new Map<number, Queue>();
  readonly #now: () => number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #armedAt = Infinity;
  #live = 0;

  /** `now` is the clock, in milliseconds (tests pass a fake one). */
  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** Deadlines neither expired nor cancelled. */
  get pending(): number {
    return this.#live;
  }

  /** Entries still queued: the pending ones and cancelled ones not yet dropped. */
  get queued(): number {
    let count = 0;
    for (const queue of this.#queues.values()) count += queue.entries.length - queue.head;
    return count;
  }

  /** Runs `onExpire` once `ms` milliseconds have passed, unless cancelled first. */
  add(ms: number, onExpire: () => void): Deadline {
    const entry = new Entry(this.#now() + ms, onExpire, this.#cancelled);
    let queue = this.#queues.get(ms);
    if (!queue) this.#queues.set(ms, queue = { entries: [], head: 0 });
    // Calls end about in the order they start: the cancelled ones at the head go now rather
    // than when the timer next fires, a whole timeout later.
    while (queue.head < queue.entries.length && queue.entries[queue.head].done) queue.head++;
    compact(queue);
    queue.entries.push(entry);
    this.#live++;
    if (entry.at < this.#armedAt) this.#arm(entry.at);
    return entry;
  }

  #cancelled = (): void => {
    this.#live--;
  };

  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedAt = at;
    this.#timer = setTimeout(this.#fire, Math.max(0, at - this.#now()));
    unrefTimer(this.#timer);
  }

  #fire = (): void => {
    this.#timer = undefined;
    this.#armedAt = Infinity;
    const now = this.#now();
    const expired: Entry[] = [];
    let next = Infinity;
    for (const [ms, queue] of this.#queues) {
      const { entries } = queue;
      let head = queue.head;
      // Cancelled entries go whatever their time; live ones once their time has come.
      while (head < entries.length && (entries[head].done || entries[head].at <= now)) {
        const entry = entries[head++];
        if (!entry.done) {
          entry.done = true;
          this.#live--;
          expired.push(entry);
        }
      }
      if (head === entries.length) {
        this.#queues.delete(ms);
        continue;
      }
      queue.head = head;
      compact(queue);
      next = Math.min(next, queue.entries[queue.head].at);
    }
    if (next < Infinity) this.#arm(next);
    for (const entry of expired) {
      const onExpire = entry.onExpire!;
      entry.onExpire = undefined;
      try {
        onExpire();
      } catch (err) {
        // As a timer's callback would: reported, and the other deadlines still served.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  };
}

/** Drops what was served once it is all of the array, or the larger part of a long one. */
function compact(queue: Queue): void {
  if (queue.head === queue.entries.length) {
    queue.entries.length = 0;
    queue.head = 0;
  } else if (queue.head > 1024 && queue.head * 2 > queue.entries.length) {
    queue.entries = queue.entries.slice(queue.head);
    queue.head = 0;
  }
}
