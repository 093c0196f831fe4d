/**
 * The consistent-hash ring: each shard owns `virtualNodes` points on a 32-bit circle, and a key
 * belongs to the shard of the first point at or after the key's hash. Adding or removing one of
 * N shards moves only the keys of the arcs it gains or loses, about 1/N of them.
 *
 * The hash is FNV-1a over the key's UTF-8 bytes followed by MurmurHash3's 32-bit finalizer
 * (FNV alone spreads similar short strings poorly). Pure integer arithmetic with `Math.imul`,
 * so every runtime and every replica computes the same ring.
 *
 * Why no bounded load: with bounded loads a key's shard depends on how many keys the other
 * shards hold, which only a component that sees every object can know. Here every replica
 * decides assignments alone (the webhook on any replica, the sweep on the sharder) from the
 * member list only; with 256 virtual nodes the spread is within a few percent anyway.
 *
 * @module
 */

/** Virtual nodes per shard by default: spread within ±10 % for three shards. */
export const DEFAULT_VIRTUAL_NODES = 256;

const encoder = new TextEncoder();

/**
 * The ring's 32-bit hash of a string: FNV-1a, then MurmurHash3's finalizer. The same on every
 * runtime.
 *
 * @example
 * ```ts
 * import { hashKey } from "@rudder/operator/sharding";
 *
 * console.log(hashKey("example.com/Example/ns/a") === hashKey("example.com/Example/ns/a")); // true
 * ```
 */
export function hashKey(key: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(key)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/** Options of {@linkcode HashRing}. */
export interface HashRingOptions {
  /** Points per shard on the circle; default {@linkcode DEFAULT_VIRTUAL_NODES}. */
  virtualNodes?: number;
}

/**
 * A consistent-hash ring over shard names. Immutable: a change of members is a new ring.
 *
 * @example
 * ```ts
 * import { HashRing } from "@rudder/operator/sharding";
 *
 * const ring = new HashRing(["shard-a", "shard-b", "shard-c"]);
 * console.log(ring.shardFor("example.com/Example/ns/a")); // one of the three, the same everywhere
 * ```
 */
export class HashRing {
  /** The shards, sorted. */
  readonly members: readonly string[];
  readonly #points: Uint32Array;
  readonly #owners: string[];

  /** A ring of `members` (duplicates count once). */
  constructor(members: Iterable<string>, options: HashRingOptions = {}) {
    const virtualNodes = options.virtualNodes ?? DEFAULT_VIRTUAL_NODES;
    if (!Number.isInteger(virtualNodes) || virtualNodes < 1) {
      throw new RangeError(`virtualNodes must be a positive integer, got ${virtualNodes}`);
    }
    this.members = [...new Set(members)].sort();
    const points: { hash: number; owner: string }[] = [];
    for (const member of this.members) {
      for (let i = 0; i < virtualNodes; i++) {
        points.push({ hash: hashKey(`${member}#${i}`), owner: member });
      }
    }
    // Ties (rare) go to the smaller name, so that every replica breaks them alike.
    points.sort((a, b) => a.hash - b.hash || (a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0));
    this.#points = Uint32Array.from(points, (p) => p.hash);
    this.#owners = points.map((p) => p.owner);
  }

  /** Whether the ring has no shard: nothing can be assigned. */
  get empty(): boolean {
    return this.members.length === 0;
  }

  /** Whether `shard` is a member. */
  has(shard: string): boolean {
    return this.members.includes(shard);
  }

  /** The shard a key belongs to; `undefined` when the ring is empty. */
  shardFor(key: string): string | undefined {
    const points = this.#points;
    if (points.length === 0) return undefined;
    const hash = hashKey(key);
    let low = 0;
    let high = points.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (points[mid] < hash) low = mid + 1;
      else high = mid;
    }
    return this.#owners[low === points.length ? 0 : low];
  }
}
