/**
 * What a controller reconciles and what a reconcile returns: {@linkcode Request},
 * {@linkcode Result}, the {@linkcode Reconciler} interface and {@linkcode TerminalError}, as in
 * controller-runtime's `reconcile` package; and the queue that event handlers fill.
 *
 * @module
 */

import type { Logger } from "../util/logging.ts";

/** What a reconciler is asked to reconcile: one object, by namespace and name. */
export interface Request {
  /** Namespace; `""` for cluster-scoped objects. */
  namespace: string;
  /** Name. */
  name: string;
}

/** The key of a request in the work queue: `namespace/name`, or `name` when cluster-scoped. */
export function requestKey(request: Request): string {
  return request.namespace ? `${request.namespace}/${request.name}` : request.name;
}

/** The request for an object. */
export function requestFor(obj: { metadata?: { namespace?: string; name?: string } }): Request {
  return { namespace: obj.metadata?.namespace ?? "", name: obj.metadata?.name ?? "" };
}

/** What a reconcile returns: when, if at all, to look at the object again. */
export interface Result {
  /** Queue the request again through the rate limiter (after `requeueAfter`, if set, instead). */
  requeue?: boolean;
  /** Queue the request again after this many milliseconds. */
  requeueAfter?: number;
}

/** What a reconcile gets besides its request. */
export interface ReconcileContext {
  /** Aborts when the controller stops or `reconciliationTimeout` passes. */
  signal: AbortSignal;
  /** A logger with `controller`, `namespace`, `name` and `reconcileID` set. */
  log: Logger;
  /** A unique id of this reconcile, for correlating log lines. */
  reconcileID: string;
}

/** Drives one object towards its desired state. */
export interface Reconciler {
  /** Reconciles the object named by `request`. Throw to retry with backoff. */
  reconcile(request: Request, ctx: ReconcileContext): Promise<Result | void> | Result | void;
}

/** A reconciler written as a plain function. */
export type ReconcileFunc = (
  request: Request,
  ctx: ReconcileContext,
) => Promise<Result | void> | Result | void;

/**
 * An error that retrying will not fix (invalid spec, …): the request is not queued again.
 *
 * @example
 * ```ts
 * import { TerminalError } from "@rudder/operator";
 *
 * function check(replicas: number): void {
 *   if (replicas < 0) throw new TerminalError(`spec.replicas must not be negative, got ${replicas}`);
 * }
 * ```
 */
export class TerminalError extends Error {
  /** Wraps `cause` (an error or a message) as terminal. */
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = "TerminalError";
  }
}

/** True when `err` is, or wraps (through `cause`), a {@linkcode TerminalError}. */
export function isTerminalError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 10; depth++) {
    if (e instanceof TerminalError) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The part of a controller's work queue that event handlers use. */
export interface RequestQueue {
  /** Queues a request (once, however often it is added while waiting). */
  add(request: Request, options?: { priority?: number }): void;
  /** Queues a request after a delay. */
  addAfter(request: Request, delayMs: number, options?: { priority?: number }): void;
  /** Queues a request after the rate limiter's delay for it. */
  addRateLimited(request: Request, options?: { priority?: number }): void;
}
