// The watcher's waits, driven by a fake clock: each backoff is read off the clock's armed timer
// instead of being waited out, so a broken backoff fails here at once rather than as a slow pass.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import { eventually } from "../support/eventually.ts";
import { useInformerHarness } from "../support/informer_harness.ts";

const T = { timeout: 30_000 };
/** The watcher moves each wait by up to a quarter either way. */
const JITTER = 0.25;

describe("the watcher's backoff", T, () => {
  const h = useInformerHarness(T);

  /**
   * Waits until the watcher is backing off, returns how long it waits, and lets that pass
   * (after `meanwhile`, which runs while the watcher still waits).
   */
  async function nextBackoff(clock: FakeClock, what: string, meanwhile = () => {}) {
    await eventually(what, () => clock.pending() === 1);
    const wait = clock.nextDueAt()! - clock.now();
    meanwhile();
    clock.advance(wait);
    return wait;
  }

  function assertAbout(waits: number[], nominal: number[]): void {
    assert.equal(waits.length, nominal.length);
    waits.forEach((wait, i) => {
      const [low, high] = [nominal[i] * (1 - JITTER), nominal[i] * (1 + JITTER)];
      assert.ok(
        wait >= low && wait <= high,
        `wait ${i + 1} was ${Math.round(wait)} ms, not ${nominal[i]} ms ± 25 %: ${
          waits.map(Math.round).join(", ")
        }`,
      );
    });
  }

  it(
    "doubles while lists fail, and starts again at its initial delay once a list succeeds",
    T,
    async () => {
      const clock = new FakeClock();
      h.server.put("a", { v: "1" });
      h.server.failNext = [{ code: 500 }, { code: 500 }, { code: 500 }, { code: 500 }];
      // Every watch then ends at once without an event: a failure that backs off too.
      h.server.endWatchesAtOnce = true;
      const informer = h.start({ clock, backoff: { initial: 100, max: 100_000 } });
      const waits: number[] = [];
      for (let i = 1; i <= 4; i++) waits.push(await nextBackoff(clock, `list ${i} failed`));
      await informer.waitForSync();
      waits.push(await nextBackoff(clock, "watch 1 ended at once"));
      waits.push(
        await nextBackoff(clock, "watch 2 ended at once", () => {
          h.server.endWatchesAtOnce = false;
          h.server.put("b", { v: "1" });
        }),
      );
      // Four failed lists: 100, 200, 400, 800 ms. The fifth list succeeded, so the watch after
      // it waits 100 ms again (not 1600), then 200.
      assertAbout(waits, [100, 200, 400, 800, 100, 200]);
      await eventually("the next watch delivers", () => informer.store.size === 2);
    },
  );

  it(
    "says a list answered 404 means the kind is not served: its CRD is not installed",
    T,
    async () => {
      const clock = new FakeClock();
      h.server.failNext = [{ code: 404, reason: "NotFound" }];
      const informer = h.start({ clock, backoff: { initial: 100, max: 100_000 } });
      await eventually("the list failed", () => clock.pending() === 1);
      assert.match(
        informer.health().lastError ?? "",
        /the API server does not serve \w+ \(\w+ in [\w./]+\): is its CRD installed \(rudder manifests writes it to config\/crd\)/,
      );
      clock.advance(clock.nextDueAt()! - clock.now());
      await informer.waitForSync();
    },
  );
});
