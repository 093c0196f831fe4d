/**
 * Helpers for cancellation with AbortSignal.
 *
 * @module
 */

import { type Clock, realClock } from "./clock.ts";

/**
 * Resolves like `promise`, or rejects with the signal's reason as soon as `signal` aborts; the
 * work behind `promise` goes on (others may share it). The abort listener is removed once the
 * promise settles: racing many promises against one long-lived promise instead would pile a
 * reaction per race on that promise, each holding its value, for as long as it lives.
 */
export function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    // The work may be shared; its failure is for its other waiters to see, not an unhandled one.
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}

/**
 * Resolves after `ms` milliseconds on `clock` (default the process's), or rejects with the
 * signal's reason as soon as `signal` aborts (the timer is cleared then).
 */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = realClock): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
