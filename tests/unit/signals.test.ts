// SIGTERM and SIGINT as the Manager takes them: one graceful stop per key press, even when a
// task runner forwards the terminal's signal, and a real second signal exits at once.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { REPEAT_WINDOW_MS, signalHandler } from "../../lib/manager/signals.ts";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { captureLogs } from "../support/logs.ts";

function handler() {
  const clock = new FakeClock();
  const stop = new AbortController();
  const exits: number[] = [];
  const handle = signalHandler({ stop, clock, exit: (code) => exits.push(code) });
  return { clock, stop, exits, handle };
}

describe("signal handling", () => {
  it("stops gracefully on the first signal, and takes the forwarded copy as the same", () => {
    const { clock, stop, exits, handle } = handler();
    handle("SIGINT");
    assert.equal(stop.signal.aborted, true);
    clock.advance(5); // the task runner's forwarded SIGINT
    handle("SIGINT");
    clock.advance(REPEAT_WINDOW_MS - 10);
    handle("SIGTERM");
    assert.deepEqual(exits, [], "one key press is one graceful stop");
  });

  it("exits at once on a second signal past the repeat window", () => {
    const { clock, exits, handle } = handler();
    handle("SIGTERM");
    clock.advance(REPEAT_WINDOW_MS);
    handle("SIGINT");
    assert.deepEqual(exits, [1]);
  });

  it("says what it does at info and warning level, the forwarded copy at debug", async () => {
    const logs = await captureLogs();
    try {
      const { clock, handle } = handler();
      handle("SIGINT");
      handle("SIGINT");
      clock.advance(REPEAT_WINDOW_MS);
      handle("SIGINT");
      const lines = logs.records.map((r) => `${r.level} ${r.rawMessage}`);
      assert.deepEqual(lines, [
        "info {signal} received: stopping gracefully",
        "debug {signal} again at once: taken as the same (a task runner forwards it)",
        "warning Second {signal}: exiting at once",
      ]);
    } finally {
      await logs.stop();
    }
  });
});
