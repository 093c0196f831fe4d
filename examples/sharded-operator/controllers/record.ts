/**
 * A record of what each replica did, for the tests that prove a hand-over never overlaps: with
 * `RECORD_FILE` set, every reconcile appends `start <namespace/name> <pid> <ms>` before and
 * `end …` after it, and every finalizer run `finalize …`, to that file (one file per replica or
 * one shared: each line is one small append). `<ms>` is wall-clock milliseconds with
 * microseconds, comparable between processes on one machine.
 *
 * @module
 */

import { appendFileSync } from "node:fs";
import process from "node:process";
import type { ReconcileContext, Reconciler, Request, Result } from "@rudder/operator";

/** What a line records. */
export type RecordEvent = "start" | "end" | "finalize";

/** Appends one line to `file` (no-op without a file); synchronous, so a SIGKILL loses none. */
export function record(file: string | undefined, event: RecordEvent, req: Request): void {
  if (!file) return;
  const ms = (performance.timeOrigin + performance.now()).toFixed(3);
  appendFileSync(file, `${event} ${req.namespace}/${req.name} ${process.pid} ${ms}\n`);
}

/** `inner`, with its start and end recorded in `file` when there is one. */
export function recording(inner: Reconciler, file: string | undefined): Reconciler {
  if (!file) return inner;
  return {
    async reconcile(req: Request, ctx: ReconcileContext): Promise<Result | void> {
      record(file, "start", req);
      try {
        return await inner.reconcile(req, ctx);
      } finally {
        record(file, "end", req);
      }
    },
  };
}
