/**
 * The one thing a manager knows about what it runs.
 *
 * @module
 */

/** Something a manager starts and stops. */
export interface Runnable {
  /** Runs until `signal` aborts; rejects when it cannot go on. */
  start(signal: AbortSignal): Promise<void>;
  /** Whether to run only on the elected leader. */
  needLeaderElection?(): boolean;
}
