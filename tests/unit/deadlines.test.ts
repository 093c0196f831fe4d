// lib/util/deadlines.ts: many deadlines on one timer, with a fake clock for the order and real
// timers for the firing.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Deadlines } from "../../lib/util/deadlines.ts";

const T = { timeout: 30_000 };
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check` holds, polling every 5 ms, for at most 10 s. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !check(); waited += 5) {
    if (waited > 10_000) throw new Error(`timed out waiting until ${what}`);
    await wait(5);
  }
}

describe("Deadlines", () => {
  it("runs a deadline once its time has come, and only then", T, async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    const started = performance.now();
    deadlines.add(40, () => fired.push("a"));
    assert.equal(deadlines.pending, 1);
    await until(() => fired.length === 1, "a fires");
    assert.ok(performance.now() - started >= 39, "not before its time");
    assert.deepEqual(fired, ["a"]);
    assert.equal(deadlines.pending, 0);
  });

  it("never runs a cancelled deadline, and counts it out at once", T, async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    const a = deadlines.add(20, () => fired.push("a"));
    deadlines.add(30, () => fired.push("b"));
    a.cancel();
    a.cancel();
    assert.equal(deadlines.pending, 1, "a second cancel changes nothing");
    await until(() => fired.length === 1, "b fires");
    await wait(30);
    assert.deepEqual(fired, ["b"]);
    assert.equal(deadlines.pending, 0);
  });

  it("serves several durations in time order, a short one added after a long one", T, async () => {
    const deadlines = new Deadlines();
    const fired: string[] = [];
    deadlines.add(200, () => fired.push("long"));
    deadlines.add(20, () => fired.push("short"));
    deadlines.add(100, () => fired.push("middle"));
    await until(() => fired.length === 3, "all fire");
    assert.deepEqual(fired, ["short", "middle", "long"]);
  });

  it("drops cancelled deadlines as new ones come, long before the timer fires", T, () => {
    const deadlines = new Deadlines();
    for (let i = 0; i < 5000; i++) deadlines.add(30_000, () => {}).cancel();
    assert.equal(deadlines.pending, 0);
    assert.ok(deadlines.queued <= 1, `${deadlines.queued} entries kept for 30 s`);
    // A live one in the middle stays, and so does everything behind it until it is done.
    const live = deadlines.add(30_000, () => {});
    for (let i = 0; i < 10; i++) deadlines.add(30_000, () => {}).cancel();
    assert.equal(deadlines.queued, 11);
    live.cancel();
    deadlines.add(30_000, () => {}).cancel();
    assert.ok(deadlines.queued <= 1);
  });

  it("lets go of a deadline's callback once it is cancelled or has run", T, async () => {
    const deadlines = new Deadlines();
    const cancelled = deadlines.add(30_000, () => {}) as unknown as { onExpire?: unknown };
    (cancelled as unknown as { cancel(): void }).cancel();
    assert.equal(cancelled.onExpire, undefined, "what the callback holds can be collected");
    let ran = 0;
    const expired = deadlines.add(5, () => ran++) as unknown as { onExpire?: unknown };
    await until(() => ran === 1, "it fires");
    assert.equal(expired.onExpire, undefined);
  });

  it("keeps serving deadlines behind cancelled ones", T, async () => {
    const deadlines = new Deadlines();
    const fired: number[] = [];
    const handles = Array.from({ length: 2000 }, (_, i) => deadlines.add(10, () => fired.push(i)));
    // Everything but two cancelled: more than the 1024 the queue compacts after.
    for (const [i, handle] of handles.entries()) if (i !== 1500 && i !== 1999) handle.cancel();
    const late = deadlines.add(10, () => fired.push(-1));
    assert.equal(deadlines.pending, 3);
    await until(() => fired.length === 3, "the three live ones fire");
    assert.deepEqual(fired, [1500, 1999, -1]);
    late.cancel();
    assert.equal(deadlines.pending, 0, "cancelling an expired deadline changes nothing");
  });

  it("orders deadlines by the clock it is given", T, async () => {
    let now = 1000;
    const deadlines = new Deadlines(() => now);
    const fired: string[] = [];
    deadlines.add(50, () => fired.push("first"));
    now = 1040;
    deadlines.add(50, () => fired.push("second"));
    // Real time passes; by the fake clock only "first" is due when the timer fires.
    now = 1060;
    await wait(80);
    assert.deepEqual(fired, ["first"]);
    now = 1100;
    await until(() => fired.length === 2, "second fires once the clock says so");
    assert.deepEqual(fired, ["first", "second"]);
  });
});
