/**
 * The options of sharding (`ManagerOptions.sharding`) and their defaults, applied in one place.
 *
 * @module
 */

import { validateRingName } from "./labels.ts";
import { DEFAULT_VIRTUAL_NODES } from "./ring.ts";
import { envObject, hostname } from "../util/runtime.ts";

/**
 * Sharding of a manager's sharded controllers across its replicas (`ManagerOptions.sharding`).
 * Durations are milliseconds, as in leader election.
 *
 * @example
 * ```ts
 * import { Manager } from "@rudder/operator";
 * import type { ShardingOptions } from "@rudder/operator/sharding";
 *
 * const sharding: ShardingOptions = { ring: "example" };
 * const mgr = new Manager({ sharding, metricsBindAddress: "0" });
 * ```
 */
export interface ShardingOptions {
  /** The ring's name: a DNS label of at most 40 characters, part of the labels' keys. */
  ring: string;
  /**
   * This replica's shard: the name of its Lease and the value of the shard label. Default the
   * environment variable `POD_NAME`, else the host name (a pod's name), so that a container
   * restarted in the same pod takes its Lease back at once.
   */
  shardName?: string;
  /**
   * The namespace of the shard Leases and of the sharder's Lease. Default `POD_NAMESPACE`, else
   * the manager's `leaderElectionNamespace`, else the pod's own namespace (in-cluster).
   */
  namespace?: string;
  /** How long a shard Lease is valid without renewal; default 15 000. */
  leaseDuration?: number;
  /** How long a shard keeps trying to renew before it stops its sharded controllers; default 10 000. */
  renewDeadline?: number;
  /** Time between renewals and between attempts; default 2 000. */
  retryPeriod?: number;
  /** Points per shard on the hash ring; default 512. */
  virtualNodes?: number;
  /**
   * Assign objects as they are created, through the mutating webhook `/shard-<ring>` on the
   * manager's webhook server. Default: on when the manager serves webhooks anyway. Without it
   * the sharder labels new objects within moments of their creation.
   */
  webhook?: boolean;
}

/** {@linkcode ShardingOptions} with every default applied. */
export interface ResolvedShardingOptions extends Required<Omit<ShardingOptions, "webhook">> {
  /** Whether to serve the assigning webhook; `undefined`: when the manager serves webhooks. */
  webhook: boolean | undefined;
}

const LABEL_VALUE = /^(?=.{1,63}$)[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DEFAULT_LEASE_DURATION = 15_000;
const DEFAULT_RENEW_DEADLINE = 10_000;
const DEFAULT_RETRY_PERIOD = 2_000;

/**
 * Applies the defaults; `fallbackNamespace` is the manager's choice (leader election namespace,
 * in-cluster namespace). Throws when the ring name is invalid or no namespace is known.
 */
export function resolveShardingOptions(
  options: ShardingOptions,
  fallbackNamespace: () => string | undefined,
  env: Record<string, string | undefined> = envObject(),
): ResolvedShardingOptions {
  validateRingName(options.ring);
  const shardName = options.shardName ?? (env.POD_NAME || hostname());
  if (!LABEL_VALUE.test(shardName)) {
    throw new Error(
      `shard name ${
        JSON.stringify(shardName)
      } must be a label value (at most 63 letters, digits, ` +
        "'-', '_' or '.', starting and ending with a letter or digit): set sharding.shardName",
    );
  }
  const namespace = options.namespace ?? (env.POD_NAMESPACE || fallbackNamespace());
  if (!namespace) {
    throw new Error(
      "sharding needs a namespace for its Leases: set sharding.namespace, POD_NAMESPACE or " +
        "leaderElectionNamespace when not running in a cluster",
    );
  }
  return {
    ring: options.ring,
    shardName,
    namespace,
    leaseDuration: options.leaseDuration ?? DEFAULT_LEASE_DURATION,
    renewDeadline: options.renewDeadline ?? DEFAULT_RENEW_DEADLINE,
    retryPeriod: options.retryPeriod ?? DEFAULT_RETRY_PERIOD,
    virtualNodes: options.virtualNodes ?? DEFAULT_VIRTUAL_NODES,
    webhook: options.webhook,
  };
}
