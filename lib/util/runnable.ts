/**
 * The one thing a manager knows about what it runs.
 *
 * @module
 */

/** Something a manager starts and stops. */
export interface Runnable {
  /** What it is, in logs and errors (e.g. a stop that outlasted its grace period). */
  readonly name?: string;
  /** Runs until `signal` aborts; rejects when it cannot go on. */
  start(signal: AbortSignal): Promise<void>;
  /** Whether to run only on the elected leader. */
  needLeaderElection?(): boolean;
  /**
   * Resolves once the runnable is ready for what starts after it (a server listens, a lease is
   * held); the manager waits for it before it starts the next runnable of the same group and the
   * next group. Rejects, or never settles, when `signal` aborts first.
   */
  ready?(signal: AbortSignal): Promise<void>;
}
