// Which runtime lib/util/runtime.ts says this is, checked against what the runtime itself offers
// (each runtime runs this file, so each answer is checked where it is true), the order in which
// its globals decide, and how a timer is released on each kind of timer.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import {
  bun,
  deno,
  node,
  runtimeName,
  shrinkAfterBurst,
  unrefTimer,
} from "../../lib/util/runtime.ts";
import { Reflector } from "../../lib/cache/reflector.ts";
import { Store } from "../../lib/cache/store.ts";
import type { ConfigMap } from "../../lib/api/mod.ts";

const globals = globalThis as { Deno?: { version?: { deno?: string } }; Bun?: unknown };
/** What this runtime is, told by its own globals rather than by the module under test. */
const actual = globals.Deno ? "deno" : globals.Bun ? "bun" : "node";

/** Runs `fn` with a stand-in `Bun` global, on a runtime that has none of its own. */
function withFakeBun(fake: { version: string }, fn: () => void): void {
  assert.equal(globals.Bun, undefined);
  Object.defineProperty(globalThis, "Bun", { value: fake, configurable: true, writable: true });
  try {
    fn();
  } finally {
    delete globals.Bun;
  }
  assert.equal(globals.Bun, undefined);
}

/**
 * Runs `fn` with `Bun.shrink` counted: Bun's own replaced for the while on Bun, a stand-in Bun
 * global elsewhere (whose `shrink` is what `shrinkAfterBurst` must call).
 */
async function countingShrinks(fn: (count: () => number) => Promise<void>): Promise<void> {
  let shrinks = 0;
  const count = () => shrinks;
  if (actual === "bun") {
    const own = globals.Bun as { shrink(): void };
    const original = own.shrink;
    own.shrink = () => shrinks++;
    try {
      await fn(count);
    } finally {
      own.shrink = original;
    }
    return;
  }
  Object.defineProperty(globalThis, "Bun", {
    value: { version: "0.0.1", shrink: () => shrinks++ },
    configurable: true,
    writable: true,
  });
  try {
    await fn(count);
  } finally {
    delete globals.Bun;
  }
}

/** Lets every timer of 0 ms that is already due run (timers of equal delay run in order). */
const timersRun = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("runtime detection", () => {
  it(`names this runtime (${actual})`, () => {
    assert.equal(runtimeName(), actual);
  });

  it("gives the global of this runtime and nothing for the others", () => {
    assert.equal(deno(), actual === "deno" ? globals.Deno : undefined);
    assert.equal(bun(), actual === "bun" ? globals.Bun : undefined);
    assert.equal(node(), actual === "node" ? process.versions.node : undefined);
    if (actual === "deno") assert.match(deno()!.version.deno, /^\d+\.\d+\.\d+/);
    if (actual === "bun") assert.match(bun()!.version, /^\d+\.\d+\.\d+/);
    if (actual === "node") assert.match(node()!, /^\d+\.\d+\.\d+/);
  });

  it("does not take Node's version that Deno and Bun claim for Node", () => {
    // Both offer process.versions.node for compatibility; only the absence of their globals
    // makes this Node.
    assert.equal(typeof process.versions.node, "string");
    assert.equal(node() !== undefined, actual === "node");
  });

  it("reads the globals at each call: a Bun global makes Node Bun, but Deno stays Deno", {
    skip: actual === "bun" ? "Bun's own global cannot be replaced" : false,
  }, () => {
    const fake = { version: "0.0.1" };
    withFakeBun(fake, () => {
      assert.equal(bun(), fake);
      assert.equal(node(), undefined, "with a Bun global this is not Node");
      assert.equal(runtimeName(), actual === "deno" ? "deno" : "bun", "Deno is asked first");
    });
    assert.equal(runtimeName(), actual);
    assert.equal(bun(), undefined);
  });
});

describe("unrefTimer", () => {
  it("releases this runtime's own timers", () => {
    // Deno 2.9, Bun and Node all give timer objects with hasRef() and unref().
    const timer = setTimeout(() => assert.fail("cleared before it fires"), 60_000);
    try {
      const handle = timer as unknown as { hasRef(): boolean };
      assert.equal(handle.hasRef(), true);
      unrefTimer(timer);
      assert.equal(handle.hasRef(), false);
    } finally {
      clearTimeout(timer);
    }
  });

  it("calls unref on a timer object, and leaves one without unref alone", () => {
    let unrefs = 0;
    const withUnref = { unref: () => unrefs++ } as unknown as ReturnType<typeof setTimeout>;
    unrefTimer(withUnref);
    assert.equal(unrefs, 1);
    unrefTimer({} as unknown as ReturnType<typeof setTimeout>);
  });

  it("hands a numeric timer id to Deno.unrefTimer on Deno, and ignores it elsewhere", () => {
    const id = 12345 as unknown as ReturnType<typeof setTimeout>;
    if (actual !== "deno") {
      unrefTimer(id);
      return;
    }
    const denoNs = globals.Deno as { unrefTimer(id: number): void };
    const original = denoNs.unrefTimer;
    const released: number[] = [];
    denoNs.unrefTimer = (timer: number) => released.push(timer);
    try {
      unrefTimer(id);
    } finally {
      denoNs.unrefTimer = original;
    }
    assert.deepEqual(released, [12345]);
  });
});

describe("shrinkAfterBurst", () => {
  it("asks Bun to shrink once after the current task, however often it is called in it", async () => {
    await countingShrinks(async (count) => {
      shrinkAfterBurst();
      shrinkAfterBurst();
      shrinkAfterBurst();
      assert.equal(count(), 0, "not while the burst's task runs");
      await timersRun();
      assert.equal(count(), 1);
      shrinkAfterBurst();
      await timersRun();
      assert.equal(count(), 2, "a later burst shrinks again");
    });
  });

  it("does nothing where there is no Bun.shrink", {
    skip: actual === "bun" ? "Bun has its own" : false,
  }, async () => {
    withFakeBun({ version: "0.0.1" }, () => shrinkAfterBurst());
    shrinkAfterBurst();
    await timersRun();
  });

  it("is called by a reflector after a list of 1,000 objects or more, not after a small one", async () => {
    const configMap = (name: string): ConfigMap => ({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { namespace: "ns", name, resourceVersion: "1" },
    });
    const list = (reflector: Reflector<ConfigMap>, size: number) => {
      reflector.apply({ type: "Init" });
      for (let i = 0; i < size; i++) {
        reflector.apply({ type: "InitApply", object: configMap(`cm-${i}`) });
      }
      reflector.apply({ type: "InitDone", resourceVersion: "1" });
    };
    await countingShrinks(async (count) => {
      list(new Reflector(new Store<ConfigMap>()), 999);
      await timersRun();
      assert.equal(count(), 0, "999 objects are no burst");
      const reflector = new Reflector(new Store<ConfigMap>());
      list(reflector, 1000);
      await timersRun();
      assert.equal(count(), 1, "after the first list");
      list(reflector, 1000);
      await timersRun();
      assert.equal(count(), 2, "after a relist");
    });
  });
});
