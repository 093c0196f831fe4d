/**
 * The Manager's runnables in groups, as controller-runtime's `runnableGroup`: started one group
 * after the other and stopped in reverse.
 *
 * ```
 * start: HTTP servers → webhooks → caches → others → leader election → leader runnables
 * stop:  leader runnables → leader election → others → caches → webhooks → HTTP servers
 * ```
 *
 * A group starts its runnables in the order they were added. Where a runnable can tell when it
 * is ready (a server listening, a cache synced, a lease held), the group waits for that before it
 * starts the next one, so the next group starts once every runnable before it is ready. A
 * runnable added to a group that is already running starts at once. A stop aborts each group's
 * signal and waits for its runnables to return, last group first, all within one grace period;
 * after leadership is lost the leader runnables are aborted and not waited for, since another
 * replica may already lead.
 *
 * @module
 */

import type { Runnable } from "../util/runnable.ts";
import { abortable } from "../util/abort.ts";
import { type Clock, realClock } from "../util/clock.ts";

/** The groups, in start order. */
export const GROUPS = [
  "HTTP servers",
  "webhooks",
  "caches",
  "others",
  "leader election",
  "leader runnables",
] as const;

/** One of {@linkcode GROUPS}. */
export type GroupName = typeof GROUPS[number];

/** A cache as the manager sees it: a runnable that can say when it has synced. */
export interface CacheRunnable extends Runnable {
  /** Resolves `true` once synced, `false` when `signal` aborts first. */
  waitForCacheSync(signal?: AbortSignal): Promise<boolean>;
}

/** Whether `runnable` is a cache: the manager waits for its sync before the next group. */
export function isCache(runnable: Runnable): runnable is CacheRunnable {
  return typeof (runnable as Partial<CacheRunnable>).waitForCacheSync === "function";
}

interface Entry {
  readonly runnable: Runnable;
  readonly label: string;
  /** Settles when its `start` has returned (its failure already reported). */
  done?: Promise<void>;
  returned: boolean;
}

/** A name for messages: its `name`, else its class, else its place in the group. */
function labelOf(runnable: Runnable, group: GroupName, index: number): string {
  if (runnable.name) return runnable.name;
  const className = runnable.constructor?.name;
  if (className && className !== "Object") return className;
  return `runnable ${index + 1} of ${group}`;
}

/** A group of runnables sharing one stop signal. */
class RunnableGroup {
  readonly name: GroupName;
  readonly #entries: Entry[] = [];
  readonly #stop = new AbortController();
  #onError: ((err: unknown) => void) | undefined;

  constructor(name: GroupName) {
    this.name = name;
  }

  get size(): number {
    return this.#entries.length;
  }

  add(runnable: Runnable): void {
    const entry: Entry = {
      runnable,
      label: labelOf(runnable, this.name, this.#entries.length),
      returned: false,
    };
    this.#entries.push(entry);
    if (this.#onError) this.#run(entry);
  }

  /**
   * Starts the runnables in order, each after the one before is ready; resolves once all are,
   * or as soon as `until` aborts.
   */
  async start(until: AbortSignal, onError: (err: unknown) => void): Promise<void> {
    this.#onError = onError;
    for (const entry of this.#entries.slice()) {
      if (until.aborted) return;
      this.#run(entry);
      const ready = this.#readiness(entry.runnable, until);
      if (!ready) continue;
      try {
        // A runnable that returns or fails before it is ready ends the wait too.
        await abortable(Promise.race([ready, entry.done]), until);
      } catch (err) {
        if (!until.aborted) onError(err);
        return;
      }
    }
  }

  #readiness(runnable: Runnable, signal: AbortSignal): Promise<void> | undefined {
    if (isCache(runnable)) {
      return runnable.waitForCacheSync(signal).then((synced) => {
        if (!synced && !signal.aborted) throw new Error("the cache did not sync");
      });
    }
    return runnable.ready?.(signal);
  }

  #run(entry: Entry): void {
    let running: Promise<void>;
    try {
      running = entry.runnable.start(this.#stop.signal);
    } catch (err) {
      running = Promise.reject(err);
    }
    entry.done = running.then(() => {}, (err) => this.#onError?.(err)).finally(() => {
      entry.returned = true;
    });
  }

  /** Aborts the group's signal and resolves once every runnable has returned. */
  async stopAndWait(): Promise<void> {
    this.#stop.abort();
    // Runnables added while stopping start on an aborted signal and are waited for too.
    for (let i = 0; i < this.#entries.length; i++) await this.#entries[i].done;
  }

  /** Aborts the group's signal without waiting. */
  abort(): void {
    this.#stop.abort();
  }

  /** The runnables that were started and have not returned. */
  running(): string[] {
    return this.#entries.filter((e) => e.done && !e.returned).map((e) => e.label);
  }
}

/** How a stop ended. */
export interface StopOutcome {
  /**
   * The runnables of the group being waited for when the grace period ended, as `group: name`;
   * empty when every group returned in time.
   */
  stillRunning: string[];
}

/** The manager's table of runnable groups. */
export class Runnables {
  readonly #groups = new Map<GroupName, RunnableGroup>(
    GROUPS.map((name) => [name, new RunnableGroup(name)]),
  );

  /** Adds `runnable` to `group`; it starts at once if the group is already running. */
  add(runnable: Runnable, group: GroupName): void {
    this.#groups.get(group)!.add(runnable);
  }

  /** How many runnables `group` holds. */
  size(group: GroupName): number {
    return this.#groups.get(group)!.size;
  }

  /**
   * Starts the groups in order, each once the one before is ready. Resolves when the last group
   * has started, or as soon as `until` aborts (a stop, or a failure reported to `onError`).
   */
  async start(until: AbortSignal, onError: (err: unknown) => void): Promise<void> {
    for (const group of this.#groups.values()) {
      if (until.aborted) return;
      await group.start(until, onError);
    }
  }

  /**
   * Stops the groups in reverse order, each waited for before the next is stopped, all within
   * `gracePeriod` milliseconds; with `abandonLeaders`, the leader runnables are aborted and not
   * waited for. When the grace period ends first, every group not yet stopped is aborted and the
   * runnables that kept the stop waiting are named.
   */
  async stop(
    options: { gracePeriod: number; abandonLeaders?: boolean; clock?: Clock },
  ): Promise<StopOutcome> {
    const clock = options.clock ?? realClock;
    const groups = [...this.#groups.values()].reverse();
    let timer: unknown;
    const deadline = new Promise<"timeout">((resolve) => {
      timer = clock.setTimeout(() => resolve("timeout"), options.gracePeriod);
    });
    try {
      for (const group of groups) {
        if (options.abandonLeaders && group.name === "leader runnables") {
          group.abort();
          continue;
        }
        const outcome = await Promise.race([group.stopAndWait(), deadline]);
        if (outcome === "timeout") {
          // The groups after this one are told to stop; this one is the one that did not.
          for (const other of groups) other.abort();
          return { stillRunning: group.running().map((label) => `${group.name}: ${label}`) };
        }
      }
      return { stillRunning: [] };
    } finally {
      clock.clearTimeout(timer);
    }
  }
}
