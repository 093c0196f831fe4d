/**
 * Leader election with a `coordination.k8s.io/v1` Lease, with the semantics of client-go's
 * `tools/leaderelection` so that Rudder replicas and Go replicas can share one Lease:
 *
 * - A candidate takes the Lease when it does not exist, when its holder is empty, or when it
 *   has expired. Expiry is judged only by this process's clock: the Lease expires
 *   `leaseDurationSeconds` after the local time at which this elector last saw its record
 *   change. The `renewTime` written by another host is never compared with the local clock, so
 *   clock skew between hosts cannot hand the Lease to two leaders.
 * - Every write carries the resourceVersion last read, so two candidates cannot both win: the
 *   slower one gets a Conflict.
 * - The leader renews every `retryPeriod`. When it has not renewed for `renewDeadline` (API
 *   errors, a partition), counted from when its last successful write was sent (not from the
 *   start of an attempt that waited out an outage), or when it finds the Lease held by another,
 *   it stops leading and {@linkcode LeaderElector.run} rejects with a
 *   {@linkcode LeaderElectionLostError}. Others see the write land no earlier than it was sent,
 *   and `renewDeadline < leaseDuration`, so it stops before any other replica may take over.
 * - On a graceful stop with `releaseOnCancel`, the leader empties the holder (and sets
 *   `leaseDurationSeconds` to 1, as client-go does), so the next replica takes over at its next
 *   attempt instead of waiting for the Lease to expire.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import { Lease } from "../api/builtins.ts";
import type { LeaseSpec } from "../api/generated/coordination_v1.ts";
import type { Client } from "../client/client.ts";
import { type Clock, realClock } from "../util/clock.ts";
import { isConflict, isNotFound } from "../kube/errors.ts";
import { abortable } from "../util/abort.ts";
import { jsonClone, jsonEqual } from "../util/json.ts";
import { errorMessage } from "../util/logging.ts";
import { hostname } from "../util/runtime.ts";
import type { Runnable } from "../util/runnable.ts";

const logger = getLogger(["rudder", "manager", "leader-election"]);

// The defaults of client-go and controller-runtime (milliseconds).
const DEFAULT_LEASE_DURATION = 15_000;
const DEFAULT_RENEW_DEADLINE = 10_000;
const DEFAULT_RETRY_PERIOD = 2_000;

/** client-go's `JitterFactor`: acquire attempts are `retryPeriod × [1, 2.2)` apart. */
const JITTER_FACTOR = 1.2;

/** Hooks for the leader election metrics. */
export interface LeaderElectionMetrics {
  /**
   * Called with `false` when {@linkcode LeaderElector.run} starts, `true` when this elector
   * starts leading and `false` when it stops: controller-runtime's
   * `leader_election_master_status{name}` gauge. `name` is the Lease's name.
   */
  leaderStatus?(name: string, isLeader: boolean): void;
}

/** Options of {@linkcode LeaderElector}. Durations are milliseconds. */
export interface LeaderElectionOptions {
  /** An uncached client: the elector must see the Lease as the API server has it. */
  client: Client;
  /** The Lease's namespace (the manager's `leaderElectionNamespace`). */
  namespace: string;
  /** The Lease's name (the manager's `leaderElectionID`). */
  name: string;
  /** This candidate's identity in `holderIdentity`; default `<hostname>_<random UUID>`. */
  identity?: string;
  /**
   * How long the other candidates wait, after they last saw the Lease change, before they take
   * it over; written to the Lease as whole seconds (rounded up). Default 15 000.
   */
  leaseDuration?: number;
  /**
   * How long the leader keeps trying to renew, counted from the start of its last successful
   * renewal, before it gives up leading. Must be less than `leaseDuration`. Default 10 000.
   */
  renewDeadline?: number;
  /**
   * Time between renewals, and the base of the (jittered) time between attempts to acquire.
   * `renewDeadline` must exceed 1.2 × `retryPeriod`. Default 2 000.
   */
  retryPeriod?: number;
  /** Empty the Lease's holder when `run`'s signal aborts while leading. Default `false`. */
  releaseOnCancel?: boolean;
  /**
   * Labels the Lease carries, written whenever this elector creates, takes or renews it (the
   * shard Leases of a sharding ring are found by a label); default none.
   */
  labels?: Record<string, string>;
  /** The clock for timers and expiry; default {@linkcode realClock}. */
  clock?: Clock;
  /**
   * Called with the holder's identity whenever the elector sees a new holder (this elector's
   * own identity included), like client-go's `OnNewLeader`. An empty holder is not reported.
   */
  onNewLeader?(identity: string): void;
  /** Metrics hooks. */
  metrics?: LeaderElectionMetrics;
}

/** Which Lease an elector competes for. */
export interface LeaseKey {
  /** The Lease's namespace. */
  namespace: string;
  /** The Lease's name. */
  name: string;
}

/**
 * The error {@linkcode LeaderElector.run} rejects with when this elector was leading and lost
 * the Lease: it could not renew within `renewDeadline`, or it found another holder. A process
 * that gets it should stop its leader-only work at once and exit non-zero.
 *
 * @example
 * ```ts
 * import process from "node:process";
 * import { loadConfig, newClient } from "@rudder/operator";
 * import { LeaderElectionLostError, LeaderElector } from "@rudder/operator/leaderelection";
 *
 * const elector = new LeaderElector({
 *   client: newClient(await loadConfig()),
 *   namespace: "operators",
 *   name: "example-leader",
 * });
 * try {
 *   await elector.run(AbortSignal.timeout(60_000));
 * } catch (err) {
 *   if (!(err instanceof LeaderElectionLostError)) throw err;
 *   console.error(`${err.identity} lost Lease ${err.lease.namespace}/${err.lease.name}`);
 *   process.exit(1);
 * }
 * ```
 */
export class LeaderElectionLostError extends Error {
  /** Always `"LeaderElectionLostError"`. */
  override readonly name = "LeaderElectionLostError";
  /** The identity of the elector that lost. */
  readonly identity: string;
  /** The Lease it lost. */
  readonly lease: LeaseKey;

  /** `reason` says why, e.g. the renew deadline passed; `cause` is the last API error. */
  constructor(identity: string, lease: LeaseKey, reason: string, options?: ErrorOptions) {
    super(
      `leader election lost: ${identity} no longer holds Lease ${lease.namespace}/${lease.name}: ${reason}`,
      options,
    );
    this.identity = identity;
    this.lease = { ...lease };
  }
}

/** What one renewal attempt came to. */
type RenewOutcome =
  | { kind: "renewed"; sentAt: number }
  | { kind: "superseded"; holder: string }
  | { kind: "failed"; error: unknown };

function defaultIdentity(): string {
  let host: string;
  try {
    host = hostname();
  } catch {
    // Deno without --allow-sys: the UUID alone keeps the identity unique.
    host = "unknown-host";
  }
  return `${host}_${crypto.randomUUID()}`;
}

/** Resolves `true` after `ms` on `clock`, or `false` as soon as `signal` aborts. */
function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clock.clearTimeout(timer);
      resolve(false);
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * An AbortSignal that aborts with `parent`, or after `ms` on `clock` (then `expired()` is
 * true). `dispose()` removes the listener and the timer.
 */
function deadlineSignal(clock: Clock, ms: number, parent: AbortSignal) {
  const controller = new AbortController();
  let expired = false;
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener("abort", onAbort, { once: true });
  if (parent.aborted) controller.abort(parent.reason);
  const timer = clock.setTimeout(() => {
    expired = true;
    controller.abort(new Error("timed out"));
  }, ms);
  return {
    signal: controller.signal,
    expired: () => expired,
    dispose() {
      clock.clearTimeout(timer);
      parent.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * Competes for a Lease with other replicas; at most one of them leads at a time.
 *
 * {@linkcode LeaderElector.run} tries to acquire the Lease every `retryPeriod` (jittered up to
 * 2.2 × as in client-go) until it leads, then renews it every `retryPeriod`, until its signal
 * aborts (it then resolves, after releasing the Lease with `releaseOnCancel`) or it loses the
 * Lease (it then rejects with a {@linkcode LeaderElectionLostError}). API errors are logged
 * and retried; only `renewDeadline` without a renewal ends a leadership.
 *
 * The Manager runs one for `leaderElection: true`; use one directly to guard your own work.
 *
 * @example
 * ```ts
 * import { loadConfig, newClient } from "@rudder/operator";
 * import { LeaderElector } from "@rudder/operator/leaderelection";
 *
 * const elector = new LeaderElector({
 *   client: newClient(await loadConfig()),
 *   namespace: "operators",
 *   name: "example-leader",
 *   releaseOnCancel: true,
 *   onNewLeader: (identity) => console.log("leader is now", identity),
 * });
 * const stop = new AbortController();
 * Deno.addSignalListener("SIGTERM", () => stop.abort());
 * const running = elector.run(stop.signal);
 * await elector.elected();
 * console.log(elector.identity, "leads:", elector.isLeader()); // … leads: true
 * // … leader-only work, stopped when `running` settles …
 * await running; // rejects with LeaderElectionLostError if the lease was lost
 * ```
 */
export class LeaderElector implements Runnable {
  /** This candidate's `holderIdentity`. */
  readonly identity: string;

  readonly #client: Client;
  readonly #key: LeaseKey;
  readonly #leaseDuration: number;
  readonly #leaseDurationSeconds: number;
  readonly #renewDeadline: number;
  readonly #retryPeriod: number;
  readonly #releaseOnCancel: boolean;
  readonly #clock: Clock;
  readonly #onNewLeader?: (identity: string) => void;
  readonly #metrics?: LeaderElectionMetrics;
  readonly #labels?: Record<string, string>;

  /** The Lease as last read or written: its resourceVersion guards the next write. */
  #lease: Lease | undefined;
  /** The Lease's spec as last seen, and the local time at which it was seen to change. */
  #observed: { spec: LeaseSpec; at: number } | undefined;
  /** The holder last passed to `onNewLeader` ("" for none). */
  #reportedLeader = "";
  /** The other holder this candidate last said it waits for. */
  #waitingFor = "";
  #leading = false;
  /**
   * When the write of the last successful acquisition or renewal was sent (clock time): the
   * renew deadline counts from here. Not from the start of the attempt, whose reads may have
   * waited out an outage; not from the answer either, since the others may have seen the
   * write land as early as it was sent, and must not find us still leading at their expiry.
   */
  #renewedAt = 0;
  #started = false;
  /** The last MicroTime written, in µs since the epoch: each write gets a later one. */
  #lastMicros = 0;
  readonly #elected: Promise<void>;
  #resolveElected!: () => void;
  #rejectElected!: (reason: unknown) => void;

  /**
   * Checks the options as client-go does.
   *
   * @throws {RangeError} when a duration is not positive, `leaseDuration <= renewDeadline`, or
   *   `renewDeadline <= 1.2 × retryPeriod`.
   * @throws {TypeError} when the client, namespace, name or identity is missing.
   */
  constructor(options: LeaderElectionOptions) {
    if (!options.client) throw new TypeError("LeaderElector: client is required");
    if (!options.namespace) throw new TypeError("LeaderElector: namespace is required");
    if (!options.name) throw new TypeError("LeaderElector: name is required");
    if (options.identity === "") {
      throw new TypeError("LeaderElector: identity must not be empty");
    }
    const leaseDuration = options.leaseDuration ?? DEFAULT_LEASE_DURATION;
    const renewDeadline = options.renewDeadline ?? DEFAULT_RENEW_DEADLINE;
    const retryPeriod = options.retryPeriod ?? DEFAULT_RETRY_PERIOD;
    for (
      const [what, value] of [
        ["leaseDuration", leaseDuration],
        ["renewDeadline", renewDeadline],
        ["retryPeriod", retryPeriod],
      ] as const
    ) {
      if (!(Number.isFinite(value) && value > 0)) {
        throw new RangeError(`LeaderElector: ${what} must be a positive number, got ${value}`);
      }
    }
    if (leaseDuration <= renewDeadline) {
      throw new RangeError(
        `LeaderElector: leaseDuration (${leaseDuration}) must be greater than renewDeadline (${renewDeadline})`,
      );
    }
    if (renewDeadline <= JITTER_FACTOR * retryPeriod) {
      throw new RangeError(
        `LeaderElector: renewDeadline (${renewDeadline}) must be greater than retryPeriod × ${JITTER_FACTOR} (${
          JITTER_FACTOR * retryPeriod
        })`,
      );
    }
    this.identity = options.identity ?? defaultIdentity();
    this.#client = options.client;
    this.#key = { namespace: options.namespace, name: options.name };
    this.#leaseDuration = leaseDuration;
    // Rounded up: others must never wait less than we assume they do.
    this.#leaseDurationSeconds = Math.ceil(leaseDuration / 1000);
    this.#renewDeadline = renewDeadline;
    this.#retryPeriod = retryPeriod;
    this.#releaseOnCancel = options.releaseOnCancel ?? false;
    this.#clock = options.clock ?? realClock;
    this.#onNewLeader = options.onNewLeader;
    this.#metrics = options.metrics;
    this.#labels = options.labels;
    this.#elected = new Promise<void>((resolve, reject) => {
      this.#resolveElected = resolve;
      this.#rejectElected = reject;
    });
    // Nobody need wait for it: a rejection nobody awaits is not an unhandled one.
    this.#elected.catch(() => {});
  }

  /**
   * Competes for the Lease until `signal` aborts or leadership is lost; call it once.
   *
   * Resolves when `signal` aborts (after releasing the Lease, with `releaseOnCancel`, if this
   * elector was leading). Rejects with a {@linkcode LeaderElectionLostError} when this elector
   * was leading and could not renew within `renewDeadline` or found another holder.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#started) {
      throw new Error(`LeaderElector.run: already started for Lease ${this.#describe()}`);
    }
    this.#started = true;
    this.#reportStatus(false);
    const props = this.#props();
    logger.info("Attempting to acquire leader lease {lease} as {identity}", props);

    try {
      if (!(await this.#acquire(signal))) {
        logger.info("Stopped before acquiring leader lease {lease}", props);
        return;
      }
      this.#leading = true;
      this.#reportStatus(true);
      this.#reportTransition();
      logger.info("Acquired leader lease {lease} as {identity}", props);
      this.#resolveElected();

      const lost = await this.#holdLease(signal);
      this.#stopLeading();
      if (lost) {
        logger.error("Lost leader lease {lease}: {error}", { ...props, error: lost.message });
        throw lost;
      }
      if (this.#releaseOnCancel) await this.#release();
      logger.info("Stopped leading with lease {lease}", props);
    } finally {
      this.#stopLeading();
      // A no-op once elected: rejects only when run() ends without ever leading.
      this.#rejectElected(signal.reason ?? new Error("leader election stopped"));
    }
  }

  /** A Manager's runnable: {@linkcode LeaderElector.run}. */
  start(signal: AbortSignal): Promise<void> {
    return this.run(signal);
  }

  /** Runs on every replica: it is what elects the leader. */
  needLeaderElection(): boolean {
    return false;
  }

  /**
   * Resolves once this elector leads, so that a Manager starts its leader runnables then;
   * rejects when `signal` aborts first or the election stops before this elector ever led.
   */
  ready(signal: AbortSignal): Promise<void> {
    return abortable(this.#elected, signal);
  }

  /**
   * Resolves when this elector starts leading. Rejects with the signal's abort reason when
   * {@linkcode LeaderElector.run} stops before this elector ever led; leaving it unawaited is
   * fine. Once resolved it stays resolved, even after the leadership ends: watch
   * `run()` for that.
   */
  elected(): Promise<void> {
    return this.#elected;
  }

  /** Whether this elector is leading now: from acquiring the Lease until it stops or loses it. */
  isLeader(): boolean {
    return this.#leading;
  }

  /** The holder this elector last saw in the Lease; `undefined` before that, or when empty. */
  leader(): string | undefined {
    return this.#observed?.spec.holderIdentity || undefined;
  }

  // -------------------------------------------------------------------------------------------
  // Acquiring

  /** Tries until the Lease is ours (`true`) or `signal` aborts (`false`). */
  async #acquire(signal: AbortSignal): Promise<boolean> {
    for (;;) {
      if (signal.aborted) return false;
      // Each attempt is bounded, so that one hung request cannot stall the candidate.
      const attempt = deadlineSignal(this.#clock, this.#renewDeadline, signal);
      let wonAt: number | undefined;
      try {
        wonAt = await this.#tryAcquire(attempt.signal);
      } finally {
        attempt.dispose();
      }
      if (signal.aborted) {
        // Won just as the stop came: hand the Lease back rather than leave it to expire.
        if (wonAt !== undefined && this.#releaseOnCancel) await this.#release();
        return false;
      }
      if (attempt.expired()) {
        // Even a write that landed is no win: renewDeadline has already run out on it. If it
        // did land, the next attempt finds our own identity and reclaims the Lease.
        logger.warn("Attempt to acquire leader lease {lease} timed out after {timeout} ms", {
          ...this.#props(),
          timeout: this.#renewDeadline,
        });
      } else if (wonAt !== undefined) {
        this.#renewedAt = wonAt;
        return true;
      }
      this.#reportTransition();
      const wait = this.#retryPeriod * (1 + Math.random() * JITTER_FACTOR);
      if (!(await sleep(this.#clock, wait, signal))) return false;
    }
  }

  /**
   * One attempt: create the Lease, or take it when it is free, expired or already ours.
   * Returns when the winning write was sent, or `undefined` when the Lease was not won.
   */
  async #tryAcquire(signal: AbortSignal): Promise<number | undefined> {
    let current: Lease;
    try {
      current = await this.#get(signal);
    } catch (err) {
      if (!isNotFound(err)) {
        this.#logFailure("Cannot read leader lease {lease}: {error}", err, signal);
        return undefined;
      }
      try {
        const sentAt = this.#clock.now();
        this.#observe(await this.#create(signal));
        return sentAt;
      } catch (err) {
        this.#logFailure("Cannot create leader lease {lease}: {error}", err, signal);
        return undefined;
      }
    }
    this.#observe(current);
    const spec = current.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    if (holder !== "" && holder !== this.identity && this.#observedValid()) {
      // Said once per holder at info (a start that waits should say why), then at trace.
      const props = { ...this.#props(), holder, expiresInSeconds: this.#expiresInSeconds() };
      if (holder !== this.#waitingFor) {
        this.#waitingFor = holder;
        logger.info(
          "Leader lease {lease} is held by {holder}: waiting for it to be released or to expire " +
            "(in {expiresInSeconds} s unless renewed)",
          props,
        );
      } else {
        logger.trace("Leader lease {lease} is still held by {holder}", props);
      }
      return undefined;
    }
    // Our own identity in the record (a restart with a fixed identity) is no transition.
    const ours = holder === this.identity;
    const now = this.#microTime();
    const next: Lease = {
      ...current,
      metadata: this.#labelled(current.metadata),
      spec: {
        ...spec,
        holderIdentity: this.identity,
        leaseDurationSeconds: this.#leaseDurationSeconds,
        acquireTime: ours ? spec.acquireTime ?? now : now,
        renewTime: now,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (ours ? 0 : 1),
      },
    };
    try {
      const sentAt = this.#clock.now();
      this.#observe(await this.#update(next, signal));
      if (!ours) {
        logger.info("Took over leader lease {lease} from {holder}", {
          ...this.#props(),
          holder: holder || "(nobody)",
        });
      }
      return sentAt;
    } catch (err) {
      // A Conflict is another candidate winning the race: expected, not worth a warning.
      if (isConflict(err)) {
        logger.debug("Another candidate wrote leader lease {lease} first", this.#props());
      } else {
        this.#logFailure("Cannot take leader lease {lease}: {error}", err, signal);
      }
      return undefined;
    }
  }

  /** Whether the Lease as last seen has not yet expired by the local clock. */
  #observedValid(): boolean {
    return this.#observedExpiry() > this.#clock.now();
  }

  /** When the observed record expires unless renewed (clock time); 0 before any. */
  #observedExpiry(): number {
    if (!this.#observed) return 0;
    const seconds = this.#observed.spec.leaseDurationSeconds;
    // The holder's own duration, as client-go; ours when the record has none.
    const duration = seconds && seconds > 0 ? seconds * 1000 : this.#leaseDuration;
    return this.#observed.at + duration;
  }

  #expiresInSeconds(): number {
    return Math.max(0, Math.ceil((this.#observedExpiry() - this.#clock.now()) / 1000));
  }

  // -------------------------------------------------------------------------------------------
  // Leading

  /** Renews until `signal` aborts (`undefined`) or the Lease is lost (the error). */
  async #holdLease(signal: AbortSignal): Promise<LeaderElectionLostError | undefined> {
    for (;;) {
      // A slow last renewal leaves less than retryPeriod: try again before the deadline.
      const untilDeadline = this.#renewedAt + this.#renewDeadline - this.#clock.now();
      const wait = Math.max(0, Math.min(this.#retryPeriod, untilDeadline));
      if (!(await sleep(this.#clock, wait, signal))) return undefined;
      const lost = await this.#renewBeforeDeadline(signal);
      if (lost !== "renewed") return lost;
    }
  }

  /** Retries a renewal every `retryPeriod` until it succeeds, the Lease is lost or we stop. */
  async #renewBeforeDeadline(
    signal: AbortSignal,
  ): Promise<"renewed" | LeaderElectionLostError | undefined> {
    const deadlineAt = this.#renewedAt + this.#renewDeadline;
    const deadline = deadlineSignal(this.#clock, deadlineAt - this.#clock.now(), signal);
    // The timer may not have fired yet when the time is up (a fake clock, a busy loop).
    const expired = () => deadline.expired() || this.#clock.now() >= deadlineAt;
    let lastError: unknown;
    try {
      for (;;) {
        if (signal.aborted) return undefined;
        if (expired()) {
          return new LeaderElectionLostError(
            this.identity,
            this.#key,
            `not renewed within renewDeadline (${this.#renewDeadline} ms)${
              lastError === undefined ? "" : `; last error: ${errorMessage(lastError)}`
            }`,
            lastError === undefined ? undefined : { cause: lastError },
          );
        }
        const outcome = await this.#tryRenew(deadline.signal);
        this.#reportTransition();
        if (signal.aborted) return undefined;
        if (outcome.kind === "failed") lastError = outcome.error;
        if (outcome.kind === "renewed" && !expired()) {
          this.#renewedAt = outcome.sentAt;
          // Every retryPeriod: trace, so that even a debug log stays quiet while nothing happens.
          logger.trace("Renewed leader lease {lease}", this.#props());
          return "renewed";
        }
        if (outcome.kind === "superseded") {
          return new LeaderElectionLostError(
            this.identity,
            this.#key,
            outcome.holder ? `it is now held by ${outcome.holder}` : "its holder was emptied",
          );
        }
        if (outcome.kind === "failed" && !expired()) {
          logger.warn("Cannot renew leader lease {lease}, retrying: {error}", {
            ...this.#props(),
            error: errorMessage(outcome.error),
          });
          await sleep(this.#clock, this.#retryPeriod, deadline.signal);
        }
      }
    } finally {
      deadline.dispose();
    }
  }

  /**
   * One renewal: first an update of the Lease as last seen; if that fails, read the Lease and,
   * if it is still ours, update that. Another holder in the Lease means the Lease is lost.
   */
  async #tryRenew(signal: AbortSignal): Promise<RenewOutcome> {
    if (this.#lease) {
      try {
        const sentAt = this.#clock.now();
        this.#observe(await this.#update(this.#renewed(this.#lease), signal));
        return { kind: "renewed", sentAt };
      } catch (err) {
        if (signal.aborted) return { kind: "failed", error: err };
        // A Conflict: someone else wrote it; read it to see who holds it now.
        logger.debug("Renewing leader lease {lease} from the last version failed: {error}", {
          ...this.#props(),
          error: errorMessage(err),
        });
      }
    }
    let current: Lease;
    try {
      current = await this.#get(signal);
    } catch (err) {
      if (!isNotFound(err)) return { kind: "failed", error: err };
      // Deleted under us: recreating it is safe, since a create fails if another did first.
      try {
        const sentAt = this.#clock.now();
        this.#observe(await this.#create(signal));
        return { kind: "renewed", sentAt };
      } catch (err) {
        return { kind: "failed", error: err };
      }
    }
    this.#observe(current);
    const holder = current.spec?.holderIdentity ?? "";
    if (holder !== this.identity) return { kind: "superseded", holder };
    try {
      const sentAt = this.#clock.now();
      this.#observe(await this.#update(this.#renewed(current), signal));
      return { kind: "renewed", sentAt };
    } catch (err) {
      return { kind: "failed", error: err };
    }
  }

  /** `lease` with this elector's renewal written in. */
  #renewed(lease: Lease): Lease {
    return {
      ...lease,
      metadata: this.#labelled(lease.metadata),
      spec: {
        ...lease.spec,
        holderIdentity: this.identity,
        leaseDurationSeconds: this.#leaseDurationSeconds,
        renewTime: this.#microTime(),
      },
    };
  }

  /**
   * Empties the holder so the next candidate takes over at once. It reads the Lease first and
   * releases only if it is still ours; a Conflict (a renewal cut short by the stop may still
   * have landed) is retried. Bounded by `renewDeadline`; failures are logged, not thrown.
   */
  async #release(): Promise<void> {
    const deadline = deadlineSignal(this.#clock, this.#renewDeadline, new AbortController().signal);
    try {
      for (let attempt = 0; attempt < 5; attempt++) {
        const current = await this.#get(deadline.signal);
        this.#observe(current);
        const spec = current.spec ?? {};
        if (spec.holderIdentity !== this.identity) {
          logger.debug("Not releasing leader lease {lease}: held by {holder}", {
            ...this.#props(),
            holder: spec.holderIdentity || "(nobody)",
          });
          return;
        }
        const now = this.#microTime();
        const released: Lease = {
          ...current,
          spec: {
            ...spec,
            holderIdentity: "",
            leaseDurationSeconds: 1,
            acquireTime: now,
            renewTime: now,
          },
        };
        try {
          this.#observe(await this.#update(released, deadline.signal));
          this.#reportTransition();
          logger.info("Released leader lease {lease}", this.#props());
          return;
        } catch (err) {
          if (!isConflict(err)) throw err;
        }
      }
      throw new Error("the Lease kept changing");
    } catch (err) {
      if (isNotFound(err)) return;
      logger.warn("Cannot release leader lease {lease}: {error}", {
        ...this.#props(),
        error: errorMessage(err),
      });
    } finally {
      deadline.dispose();
    }
  }

  // -------------------------------------------------------------------------------------------
  // Helpers

  /** Records `lease` as seen; the observed time moves only when its spec changed. */
  #observe(lease: Lease): void {
    this.#lease = lease;
    const spec = lease.spec ?? {};
    if (!this.#observed || !jsonEqual(this.#observed.spec, spec)) {
      this.#observed = { spec: jsonClone(spec), at: this.#clock.now() };
    }
  }

  /** `metadata` with the elector's labels added. */
  #labelled(metadata: Lease["metadata"]): Lease["metadata"] {
    if (!this.#labels) return metadata;
    return { ...metadata, labels: { ...metadata?.labels, ...this.#labels } };
  }

  #stopLeading(): void {
    if (!this.#leading) return;
    this.#leading = false;
    this.#reportStatus(false);
  }

  /** Calls `onNewLeader` when the holder seen differs from the one last reported. */
  #reportTransition(): void {
    const holder = this.#observed?.spec.holderIdentity ?? "";
    if (holder === this.#reportedLeader) return;
    this.#reportedLeader = holder;
    if (holder === "" || !this.#onNewLeader) return;
    try {
      this.#onNewLeader(holder);
    } catch (err) {
      logger.error("onNewLeader threw: {error}", { ...this.#props(), error: errorMessage(err) });
    }
  }

  #reportStatus(isLeader: boolean): void {
    try {
      this.#metrics?.leaderStatus?.(this.#key.name, isLeader);
    } catch (err) {
      logger.error("Leader status metric hook threw: {error}", {
        ...this.#props(),
        error: errorMessage(err),
      });
    }
  }

  #get(signal: AbortSignal): Promise<Lease> {
    return abortable(this.#client.get(Lease, this.#key, { signal }), signal);
  }

  #update(lease: Lease, signal: AbortSignal): Promise<Lease> {
    return abortable(this.#client.update(lease, { signal }), signal);
  }

  #create(signal: AbortSignal): Promise<Lease> {
    const now = this.#microTime();
    const lease: Lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: this.#labelled({ namespace: this.#key.namespace, name: this.#key.name }),
      spec: {
        holderIdentity: this.identity,
        leaseDurationSeconds: this.#leaseDurationSeconds,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: 0,
      },
    };
    return abortable(this.#client.create(lease, { signal }), signal) as Promise<Lease>;
  }

  /**
   * The wall-clock time as a MicroTime (RFC 3339 with microseconds), later than any written
   * before: two renewals within one microsecond must still differ, or the others would not see
   * the Lease change and would let it expire.
   */
  #microTime(): string {
    const micros = Math.max(Date.now() * 1000, this.#lastMicros + 1);
    this.#lastMicros = micros;
    const seconds = new Date(Math.floor(micros / 1000)).toISOString().slice(0, 19);
    return `${seconds}.${String(micros % 1_000_000).padStart(6, "0")}Z`;
  }

  #logFailure(message: string, err: unknown, signal: AbortSignal): void {
    if (signal.aborted) return; // stopping, or the attempt's own deadline: said elsewhere
    logger.warn(message, { ...this.#props(), error: errorMessage(err) });
  }

  #describe(): string {
    return `${this.#key.namespace}/${this.#key.name}`;
  }

  #props(): Record<string, unknown> {
    return { lease: this.#describe(), identity: this.identity };
  }
}
