/**
 * Ring membership: the shards of a ring are the Leases labelled with the ring whose holder is
 * set and whose `renewTime + leaseDurationSeconds` lies in the future. {@linkcode RingMembers}
 * keeps that set current from a watch of those Leases, and re-evaluates when the first of them
 * would expire, so a shard that stops renewing leaves the ring without any write.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { Lease } from "../api/builtins.ts";
import type { DeepReadonly } from "../api/readonly.ts";
import { type Clock, realClock, type TimerHandle } from "../util/clock.ts";
import { HashRing } from "./ring.ts";

const logger = getLogger(["rudder", "sharding"]);

/** When a Lease stops counting as live (wall-clock ms), or `undefined` when it is not live. */
export function leaseExpiry(lease: DeepReadonly<Lease>): number | undefined {
  const spec = lease.spec;
  if (!spec?.holderIdentity || !spec.renewTime) return undefined;
  const renewed = Date.parse(spec.renewTime);
  if (Number.isNaN(renewed)) return undefined;
  return renewed + (spec.leaseDurationSeconds ?? 0) * 1000;
}

/**
 * The live shards among `leases` at wall-clock time `now` (the Lease names, sorted), and when
 * the first of them expires.
 *
 * @example
 * ```ts
 * import type { Lease } from "@rudder/operator/api";
 * import { liveShards } from "@rudder/operator/sharding";
 *
 * const now = Date.parse("2026-01-01T00:00:10Z");
 * const lease = (name: string, renewTime: string): Lease => ({
 *   apiVersion: "coordination.k8s.io/v1",
 *   kind: "Lease",
 *   metadata: { name },
 *   spec: { holderIdentity: name, renewTime, leaseDurationSeconds: 15 },
 * });
 * const { members } = liveShards(
 *   [lease("a", "2026-01-01T00:00:00.000000Z"), lease("b", "2025-12-31T23:59:00.000000Z")],
 *   now,
 * );
 * console.log(members); // ["a"]
 * ```
 */
export function liveShards(
  leases: Iterable<DeepReadonly<Lease>>,
  now: number,
): { members: string[]; nextExpiry: number | undefined } {
  const members: string[] = [];
  let nextExpiry: number | undefined;
  for (const lease of leases) {
    const expiry = leaseExpiry(lease);
    const name = lease.metadata?.name;
    if (expiry === undefined || !name || expiry <= now) continue;
    members.push(name);
    if (nextExpiry === undefined || expiry < nextExpiry) nextExpiry = expiry;
  }
  return { members: members.sort(), nextExpiry };
}

/** Options of {@linkcode RingMembers}. */
export interface RingMembersOptions {
  /** The ring's name, for logs. */
  ring: string;
  /** Points per shard on the ring. */
  virtualNodes?: number;
  /** Timers; default the real clock. */
  clock?: Clock;
  /** Wall-clock milliseconds, compared with the Leases' renewTime; default `Date.now`. */
  wallClock?: () => number;
}

/**
 * The ring as the Leases say it is. Feed it the Leases (`update`, from a watch); it calls its
 * listeners when the set of live shards changes, and re-evaluates by itself when a Lease would
 * expire.
 */
export class RingMembers {
  readonly #options: RingMembersOptions;
  readonly #clock: Clock;
  readonly #wallClock: () => number;
  readonly #listeners = new Set<(ring: HashRing, previous: HashRing) => void>();
  #leases: Iterable<DeepReadonly<Lease>> = [];
  #ring: HashRing;
  #timer: TimerHandle | undefined;
  #stopped = false;
  #known = false;
  readonly #firstKnown = Promise.withResolvers<void>();

  /** An empty ring until the first {@linkcode RingMembers.update}. */
  constructor(options: RingMembersOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#wallClock = options.wallClock ?? Date.now;
    this.#ring = new HashRing([], { virtualNodes: options.virtualNodes });
  }

  /** The current ring. */
  get ring(): HashRing {
    return this.#ring;
  }

  /** Whether the Leases have been read once. */
  get known(): boolean {
    return this.#known;
  }

  /** Resolves once the Leases have been read once. */
  whenKnown(): Promise<void> {
    return this.#firstKnown.promise;
  }

  /** Calls `listener` on each change of members; returns what removes it. */
  onChange(listener: (ring: HashRing, previous: HashRing) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The Leases of the ring as they are now (e.g. an informer's store after any change). */
  update(leases: Iterable<DeepReadonly<Lease>>): void {
    this.#leases = leases;
    this.#known = true;
    this.#evaluate();
    this.#firstKnown.resolve();
  }

  /** Stops the expiry timer. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #evaluate(): void {
    if (this.#stopped) return;
    const now = this.#wallClock();
    const { members, nextExpiry } = liveShards(this.#leases, now);
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (nextExpiry !== undefined) {
      // A little after the expiry, so that the Lease is past it when we look again.
      this.#timer = this.#clock.setTimeout(() => this.#evaluate(), nextExpiry - now + 10);
    }
    const previous = this.#ring;
    if (sameMembers(previous.members, members)) return;
    this.#ring = new HashRing(members, { virtualNodes: this.#options.virtualNodes });
    logger.info("Ring {ring} has {count} shards: {members}", {
      ring: this.#options.ring,
      count: members.length,
      members: members.join(", ") || "(none)",
    });
    for (const listener of this.#listeners) {
      try {
        listener(this.#ring, previous);
      } catch (err) {
        logger.error("A ring listener threw: {error}", { error: err });
      }
    }
  }
}

function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((member, i) => member === b[i]);
}
