/**
 * Progress of long work for people watching a terminal or a CI log: a line when a step starts,
 * a line at least every `intervalMs` while it runs (what it is doing, how long it has taken and,
 * when known, how long it usually takes), and a line when it ends. Output is plain lines with no
 * escape codes, so it reads the same in a pipe, a CI log and a terminal, and `NO_COLOR` holds
 * by construction.
 *
 * @module
 */

import { type Clock, realClock, type TimerHandle } from "./clock.ts";

/** How a {@linkcode Progress} writes and keeps time. */
export interface ProgressOptions {
  /** Writes one line (without its newline). */
  write(line: string): void;
  /** Prefix of every line, e.g. `envtest: `. */
  prefix?: string;
  /** The longest silence while a step runs; default 8 s (under the 10 s promised, with slack). */
  intervalMs?: number;
  /** Time source; a FakeClock in tests. */
  clock?: Clock;
}

/** One running step: {@linkcode ProgressStep.done} or {@linkcode ProgressStep.fail} ends it. */
export interface ProgressStep {
  /** Ends the step and writes how long it took; resolves nothing, returns the milliseconds. */
  done(note?: string): number;
  /** Ends the step as failed and writes how long it ran. */
  fail(reason: string): number;
}

/** What a step is and how long it usually takes. */
export interface StepOptions {
  /** Words on the "usually" part of the heartbeat, e.g. `the first build usually takes about 3 min`. */
  usually?: string;
}

/** `1 s`, `42 s`, `3 min 05 s`: durations as people read them. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${String(seconds % 60).padStart(2, "0")} s`;
}

/** Writes progress lines for steps of long work. */
export class Progress {
  readonly #write: (line: string) => void;
  readonly #prefix: string;
  readonly #interval: number;
  readonly #clock: Clock;

  /** Progress written through `options.write`. */
  constructor(options: ProgressOptions) {
    this.#write = options.write;
    this.#prefix = options.prefix ?? "";
    this.#interval = options.intervalMs ?? 8_000;
    this.#clock = options.clock ?? realClock;
  }

  /** Writes one line now. */
  note(message: string): void {
    this.#write(`${this.#prefix}${message}`);
  }

  /** Starts a step: writes `what`, then a heartbeat every interval until it ends. */
  start(what: string, options: StepOptions = {}): ProgressStep {
    const started = this.#clock.now();
    let timer: TimerHandle | undefined;
    let ended = false;
    const usually = options.usually ? `; ${options.usually}` : "";
    const beat = () => {
      const elapsed = formatDuration(this.#clock.now() - started);
      this.note(`still ${what}: ${elapsed} so far${usually}`);
      timer = this.#clock.setTimeout(beat, this.#interval);
      (timer as { unref?: () => void } | undefined)?.unref?.();
    };
    this.note(`${what}${options.usually ? ` (${options.usually})` : ""}`);
    timer = this.#clock.setTimeout(beat, this.#interval);
    (timer as { unref?: () => void } | undefined)?.unref?.();
    const end = (line: (elapsed: string) => string) => {
      const ms = this.#clock.now() - started;
      if (ended) return ms;
      ended = true;
      if (timer !== undefined) this.#clock.clearTimeout(timer);
      this.note(line(formatDuration(ms)));
      return ms;
    };
    return {
      done: (note) => end((elapsed) => `${what}: done in ${elapsed}${note ? ` (${note})` : ""}`),
      fail: (reason) => end((elapsed) => `${what}: failed after ${elapsed}: ${reason}`),
    };
  }
}
