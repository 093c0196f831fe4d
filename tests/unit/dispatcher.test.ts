// lib/cache/dispatcher.ts: each handler's own queue, drained off the stream reader's turn.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Dispatcher } from "../../lib/cache/dispatcher.ts";

const T = { timeout: 30_000 };

type Obj = { metadata: { name: string } };
const obj = (name: string): Obj => ({ metadata: { name } });

/** Resolves once `check` holds, polling on timers, for at most 10 s. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !check(); waited += 2) {
    if (waited > 10_000) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe("Dispatcher", () => {
  it("returns from dispatch at once and delivers in order afterwards", T, async () => {
    const dispatcher = new Dispatcher<Obj>("test");
    const heard: string[] = [];
    dispatcher.add({
      onAdd: (o) => heard.push(`add ${o.metadata.name}`),
      onUpdate: (_, o) => heard.push(`update ${o.metadata.name}`),
      onDelete: (o) => heard.push(`delete ${o.metadata.name}`),
    });
    dispatcher.dispatch({ type: "add", obj: obj("a"), initial: false });
    dispatcher.dispatch({ type: "update", old: obj("a"), obj: obj("a") });
    dispatcher.dispatch({ type: "delete", obj: obj("a") });
    assert.deepEqual(heard, [], "no handler runs inside dispatch");
    await until(() => heard.length === 3, "all three are heard");
    assert.deepEqual(heard, ["add a", "update a", "delete a"]);
  });

  it("yields to the event loop while it drains a long queue", T, async () => {
    const dispatcher = new Dispatcher<Obj>("test");
    let delivered = 0;
    dispatcher.add({
      onAdd: () => {
        // About 20 µs a call: 2,000 take 40 ms, far longer than a timer's 1 ms.
        const end = performance.now() + 0.02;
        while (performance.now() < end) { /* busy */ }
        delivered++;
      },
    });
    for (let i = 0; i < 2000; i++) {
      dispatcher.dispatch({ type: "add", obj: obj(`o${i}`), initial: false });
    }
    let seenByTimer = -1;
    setTimeout(() => (seenByTimer = delivered), 1);
    await until(() => delivered === 2000, "everything is delivered");
    assert.ok(seenByTimer >= 0, "the timer ran");
    assert.ok(seenByTimer < 2000, `a timer ran in the middle of the drain (at ${seenByTimer})`);
  });

  it("goes on delivering after a handler throws", T, async () => {
    const dispatcher = new Dispatcher<Obj>("test");
    const heard: string[] = [];
    dispatcher.add({
      onAdd: (o) => {
        heard.push(o.metadata.name);
        if (o.metadata.name === "a") throw new Error("handler bug");
      },
    });
    dispatcher.dispatch({ type: "add", obj: obj("a"), initial: false });
    dispatcher.dispatch({ type: "add", obj: obj("b"), initial: false });
    await until(() => heard.length === 2, "both are heard");
    assert.deepEqual(heard, ["a", "b"]);
  });
});
