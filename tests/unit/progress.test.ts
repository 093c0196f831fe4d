// Progress of long work (the control-plane build, rudder build and dev): a line at the start, a
// heartbeat with the elapsed time at every interval, a line at the end; plain lines only.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { formatDuration, Progress } from "../../lib/util/progress.ts";

const T = { timeout: 10_000 };

function recorder(intervalMs?: number) {
  const clock = new FakeClock();
  const lines: string[] = [];
  const progress = new Progress({
    write: (line) => lines.push(line),
    prefix: "envtest: ",
    clock,
    ...(intervalMs ? { intervalMs } : {}),
  });
  return { clock, lines, progress };
}

describe("Progress", () => {
  it("writes what it starts, a heartbeat every interval, and how long it took", T, () => {
    const { clock, lines, progress } = recorder(10_000);
    const step = progress.start("building kube-apiserver", {
      usually: "the first build usually takes about 3 min",
    });
    clock.advance(25_000);
    assert.equal(step.done(), 25_000);
    assert.deepEqual(lines, [
      "envtest: building kube-apiserver (the first build usually takes about 3 min)",
      "envtest: still building kube-apiserver: 10 s so far; the first build usually takes about 3 min",
      "envtest: still building kube-apiserver: 20 s so far; the first build usually takes about 3 min",
      "envtest: building kube-apiserver: done in 25 s",
    ]);
  });

  it("never stays silent for longer than 10 s by default", T, () => {
    const { clock, lines, progress } = recorder();
    progress.start("building etcd");
    let lastLine = 0;
    let count = lines.length;
    for (let t = 0; t < 200_000; t += 500) {
      clock.advance(500);
      if (lines.length > count) {
        count = lines.length;
        lastLine = clock.now();
      }
      assert.ok(clock.now() - lastLine <= 10_000, `a line within 10 s at ${clock.now()} ms`);
    }
  });

  it("stops the heartbeat when the step fails, and says so", T, () => {
    const { clock, lines, progress } = recorder(10_000);
    const step = progress.start("compiling main.ts");
    clock.advance(3_000);
    step.fail("bun exited with 1");
    clock.advance(60_000);
    assert.deepEqual(lines, [
      "envtest: compiling main.ts",
      "envtest: compiling main.ts: failed after 3 s: bun exited with 1",
    ]);
  });

  it("writes no escape codes", T, () => {
    const { clock, lines, progress } = recorder(1_000);
    const step = progress.start("working");
    clock.advance(5_000);
    step.done("cached");
    for (const line of lines) assert.ok(!line.includes("\u001b"), line);
    assert.equal(lines.at(-1), "envtest: working: done in 5 s (cached)");
  });
});

describe("formatDuration", () => {
  it("reads as seconds, then minutes and seconds", T, () => {
    assert.equal(formatDuration(400), "0 s");
    assert.equal(formatDuration(42_000), "42 s");
    assert.equal(formatDuration(185_000), "3 min 05 s");
  });
});
