/**
 * SIGTERM and SIGINT as the Manager takes them: the first starts a graceful stop, and a second
 * one exits at once — unless it comes within {@linkcode REPEAT_WINDOW_MS} of the first, because a
 * task runner (`deno task`, `bun run`, npm scripts) forwards the terminal's Ctrl-C to its child,
 * which the terminal has already sent it: one key press arrives twice.
 *
 * @module
 */

import { exit as exitProcess, onSignal } from "../util/runtime.ts";
import { getLogger } from "@logtape/logtape";
import { type Clock, realClock } from "../util/clock.ts";

/** Milliseconds within which a repeated signal is taken as the same one. */
export const REPEAT_WINDOW_MS = 1_000;

const log = getLogger(["rudder", "manager"]);

/** What {@linkcode signalHandler} acts on. */
export interface SignalHandlerOptions {
  /** Aborted by the first signal. */
  stop: AbortController;
  /** Called by a second signal past the repeat window; default `process.exit`. */
  exit?: (code: number) => void;
  /** The clock the repeat window is measured on; default the real one. */
  clock?: Clock;
}

/** The function to call with each signal's name. */
export function signalHandler(options: SignalHandlerOptions): (signal: string) => void {
  const clock = options.clock ?? realClock;
  const exit = options.exit ?? ((code: number) => exitProcess(code));
  let firstAt = 0;
  return (signal) => {
    if (!options.stop.signal.aborted) {
      firstAt = clock.now();
      log.info("{signal} received: stopping gracefully", { signal });
      options.stop.abort();
      return;
    }
    if (clock.now() - firstAt < REPEAT_WINDOW_MS) {
      log.debug("{signal} again at once: taken as the same (a task runner forwards it)", {
        signal,
      });
      return;
    }
    log.warn("Second {signal}: exiting at once", { signal });
    exit(1);
  };
}

/** Sends SIGTERM and SIGINT to `handle` until the returned function is called. */
export function listenForSignals(handle: (signal: string) => void): () => void {
  const offTerm = onSignal("SIGTERM", () => handle("SIGTERM"));
  const offInt = onSignal("SIGINT", () => handle("SIGINT"));
  return () => {
    offTerm();
    offInt();
  };
}
