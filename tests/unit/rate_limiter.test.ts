import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { FakeClock } from "../../lib/testing/fake_clock.ts";
import {
  bucket,
  defaultControllerRateLimiter,
  defaultKeyOf,
  itemExponentialFailure,
  itemFastSlow,
  legacyControllerRateLimiter,
  maxOf,
  type RateLimiter,
  withMaxWait,
} from "../../lib/workqueue/rate_limiter.ts";

function waits<K>(limiter: RateLimiter<K>, item: K, times: number): number[] {
  return Array.from({ length: times }, () => limiter.when(item));
}

/** A limiter that records what it was asked and answers a fixed wait. */
function recording(waitMs: number, requeues = 0) {
  const calls: string[] = [];
  const limiter: RateLimiter<string> = {
    when: (item) => {
      calls.push(`when ${item}`);
      return waitMs;
    },
    forget: (item) => void calls.push(`forget ${item}`),
    numRequeues: () => requeues,
  };
  return { limiter, calls };
}

describe("itemExponentialFailure", () => {
  it("doubles from the base delay per failure and caps at the maximum", () => {
    const limiter = itemExponentialFailure<string>(5, 100);
    assert.deepEqual(waits(limiter, "a", 7), [5, 10, 20, 40, 80, 100, 100]);
    assert.equal(limiter.numRequeues("a"), 7);
  });

  it("defaults to 5 ms doubling up to 1000 s", () => {
    const limiter = itemExponentialFailure<string>();
    assert.deepEqual(waits(limiter, "a", 4), [5, 10, 20, 40]);
    const later = waits(limiter, "a", 30);
    assert.equal(later.at(-1), 1_000_000);
    assert.ok(later.every((ms) => ms <= 1_000_000));
  });

  it("keeps counting items apart", () => {
    const limiter = itemExponentialFailure<string>(5, 1_000);
    limiter.when("a");
    limiter.when("a");
    assert.equal(limiter.when("b"), 5);
    assert.equal(limiter.when("a"), 20);
    assert.equal(limiter.numRequeues("a"), 3);
    assert.equal(limiter.numRequeues("b"), 1);
    assert.equal(limiter.numRequeues("never-failed"), 0);
  });

  it("starts an item over after forget", () => {
    const limiter = itemExponentialFailure<string>(5, 1_000);
    waits(limiter, "a", 3);
    limiter.forget("a");
    assert.equal(limiter.numRequeues("a"), 0);
    assert.deepEqual(waits(limiter, "a", 2), [5, 10]);
  });

  it("stays at the cap however many failures pile up", () => {
    const limiter = itemExponentialFailure<string>(5, 1_000_000);
    const all = waits(limiter, "a", 3000);
    assert.equal(all.at(-1), 1_000_000);
    assert.ok(all.every(Number.isFinite));
  });

  it("identifies object items by content, whatever the key order", () => {
    const limiter = itemExponentialFailure<{ namespace: string; name: string }>(5, 1_000);
    limiter.when({ namespace: "ns", name: "a" });
    assert.equal(limiter.when({ name: "a", namespace: "ns" }), 10);
    assert.equal(limiter.numRequeues({ namespace: "ns", name: "b" }), 0);
  });

  it("uses a given keyOf", () => {
    const limiter = itemExponentialFailure<{ id: number; attempt: number }>(
      5,
      1_000,
      (item) => String(item.id),
    );
    limiter.when({ id: 1, attempt: 1 });
    assert.equal(limiter.when({ id: 1, attempt: 2 }), 10);
  });
});

describe("defaultKeyOf", () => {
  it("sorts object keys at every level", () => {
    assert.equal(
      defaultKeyOf({ b: 1, a: { d: 2, c: [3, { f: 4, e: 5 }] } }),
      defaultKeyOf({
        a: { c: [3, { e: 5, f: 4 }], d: 2 },
        b: 1,
      }),
    );
    assert.notEqual(defaultKeyOf({ a: 1 }), defaultKeyOf({ a: 2 }));
  });

  it("keeps strings and numbers apart", () => {
    assert.notEqual(defaultKeyOf("1"), defaultKeyOf(1));
    assert.equal(defaultKeyOf("web"), '"web"');
  });

  it("gives the JSON of the item with its object keys in order", () => {
    const when = new Date(0);
    assert.equal(defaultKeyOf({ namespace: "ns", name: "a" }), '{"name":"a","namespace":"ns"}');
    assert.equal(
      defaultKeyOf({ z: [1, undefined, 'x"y'], a: { skip: undefined, at: when }, m: null }),
      `{"a":{"at":${JSON.stringify(when)}},"m":null,"z":[1,null,"x\\"y"]}`,
    );
    assert.equal(defaultKeyOf([]), "[]");
    assert.equal(defaultKeyOf({}), "{}");
    assert.equal(defaultKeyOf(undefined), "undefined");
  });

  it("keys a request without sorting arrays, on every call of a limiter", () => {
    // Before: a JSON.stringify replacer copied and sorted every object on each when/forget.
    const sort = Array.prototype.sort;
    let sorts = 0;
    Array.prototype.sort = function (this: unknown[], ...args) {
      sorts++;
      return sort.apply(this, args as [never]);
    };
    try {
      const limiter = itemExponentialFailure<{ namespace: string; name: string }>(5, 1_000);
      for (let i = 0; i < 100; i++) {
        limiter.when({ namespace: "ns", name: `a${i % 3}` });
        limiter.forget({ name: `a${i % 3}`, namespace: "ns" });
      }
    } finally {
      Array.prototype.sort = sort;
    }
    assert.equal(sorts, 0);
  });
});

describe("bucket", () => {
  it("lets a burst through, then spaces retries at 1/qps", () => {
    const clock = new FakeClock();
    const limiter = bucket<string>(10, 100, clock);
    const first = Array.from({ length: 100 }, (_, i) => limiter.when(`item-${i}`));
    assert.ok(first.every((ms) => ms === 0));
    assert.equal(limiter.when("x"), 100);
    assert.equal(limiter.when("y"), 200);
    assert.equal(limiter.when("z"), 300);
  });

  it("refills at qps tokens per second while time passes", () => {
    const clock = new FakeClock();
    const limiter = bucket<string>(10, 100, clock);
    waits(limiter, "a", 102); // two tokens in debt
    clock.advance(1_000); // +10 tokens: 8 left
    assert.deepEqual(waits(limiter, "a", 8), [0, 0, 0, 0, 0, 0, 0, 0]);
    assert.equal(limiter.when("a"), 100);
    clock.advance(50); // half a token
    assert.equal(limiter.when("a"), 150);
  });

  it("never holds more than the burst", () => {
    const clock = new FakeClock();
    const limiter = bucket<string>(1, 3, clock);
    clock.advance(3_600_000);
    assert.deepEqual(waits(limiter, "a", 5), [0, 0, 0, 1_000, 2_000]);
  });

  it("refills nothing when the clock goes back", () => {
    let now = 10_000;
    const clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} };
    const limiter = bucket<string>(1, 1, clock);
    assert.equal(limiter.when("a"), 0);
    now = 5_000;
    assert.equal(limiter.when("a"), 1_000);
    now = 6_000; // one second after the last reading, not before 10 000
    assert.equal(limiter.when("a"), 1_000);
  });

  it("tracks no items", () => {
    const limiter = bucket<string>(10, 1, new FakeClock());
    limiter.when("a");
    limiter.when("a");
    assert.equal(limiter.numRequeues("a"), 0);
    limiter.forget("a");
    assert.equal(limiter.when("a"), 200); // forget gives no token back
  });

  it("never waits at an infinite rate", () => {
    const limiter = bucket<string>(Infinity, 1, new FakeClock());
    assert.deepEqual(waits(limiter, "a", 3), [0, 0, 0]);
  });

  it("rejects a rate or burst that could never hand out a token", () => {
    assert.throws(() => bucket(0, 10), RangeError);
    assert.throws(() => bucket(-1, 10), RangeError);
    assert.throws(() => bucket(Number.NaN, 10), RangeError);
    assert.throws(() => bucket(10, 0), RangeError);
  });
});

describe("maxOf", () => {
  it("waits the longest of its limiters and asks every one", () => {
    const short = recording(5, 1);
    const long = recording(50, 3);
    const limiter = maxOf(short.limiter, long.limiter);
    assert.equal(limiter.when("a"), 50);
    assert.deepEqual(short.calls, ["when a"]);
    assert.deepEqual(long.calls, ["when a"]);
    assert.equal(limiter.numRequeues("a"), 3);
    limiter.forget("a");
    assert.deepEqual(short.calls, ["when a", "forget a"]);
    assert.deepEqual(long.calls, ["when a", "forget a"]);
  });

  it("combines exponential backoff with a bucket", () => {
    const clock = new FakeClock();
    const limiter = maxOf<string>(itemExponentialFailure(5, 1_000_000), bucket(10, 2, clock));
    assert.equal(limiter.when("a"), 5);
    assert.equal(limiter.when("b"), 5);
    assert.equal(limiter.when("c"), 100); // the bucket is empty
    assert.equal(limiter.when("a"), 200); // bucket again, above a's 10 ms
  });

  it("waits nothing with no limiters", () => {
    assert.equal(maxOf<string>().when("a"), 0);
    assert.equal(maxOf<string>().numRequeues("a"), 0);
  });
});

describe("itemFastSlow", () => {
  it("retries fast a number of times, then slowly, per item", () => {
    const limiter = itemFastSlow<string>(10, 1_000, 3);
    assert.deepEqual(waits(limiter, "a", 5), [10, 10, 10, 1_000, 1_000]);
    assert.equal(limiter.when("b"), 10);
    assert.equal(limiter.numRequeues("a"), 5);
  });

  it("starts over after forget", () => {
    const limiter = itemFastSlow<string>(10, 1_000, 1);
    waits(limiter, "a", 2);
    limiter.forget("a");
    assert.equal(limiter.numRequeues("a"), 0);
    assert.equal(limiter.when("a"), 10);
  });
});

describe("withMaxWait", () => {
  it("caps the wait and passes the rest through", () => {
    const limiter = withMaxWait(itemExponentialFailure<string>(5, 1_000_000), 15);
    assert.deepEqual(waits(limiter, "a", 4), [5, 10, 15, 15]);
    assert.equal(limiter.numRequeues("a"), 4);
    limiter.forget("a");
    assert.equal(limiter.when("a"), 5);
  });
});

describe("controller defaults", () => {
  it("defaultControllerRateLimiter is per-item exponential with no overall bucket", () => {
    const limiter = defaultControllerRateLimiter<string>();
    // 200 first failures at once: a 10 qps / 100 burst bucket would make the last wait 10 s.
    const first = Array.from({ length: 200 }, (_, i) => limiter.when(`item-${i}`));
    assert.ok(first.every((ms) => ms === 5));
    assert.deepEqual(waits(limiter, "item-0", 3), [10, 20, 40]);
    const capped = waits(limiter, "item-1", 40);
    assert.equal(capped.at(-1), 1_000_000);
  });

  it("defaultControllerRateLimiter keys items with a given keyOf", () => {
    const keys: string[] = [];
    const limiter = defaultControllerRateLimiter<{ namespace: string; name: string }>((item) => {
      keys.push(`${item.namespace}/${item.name}`);
      return `${item.namespace}/${item.name}`;
    });
    limiter.when({ namespace: "ns", name: "a" });
    assert.equal(limiter.when({ name: "a", namespace: "ns" }), 10);
    limiter.forget({ namespace: "ns", name: "a" });
    assert.equal(limiter.numRequeues({ namespace: "ns", name: "a" }), 0);
    assert.deepEqual(keys, ["ns/a", "ns/a", "ns/a", "ns/a"]);
  });

  it("legacyControllerRateLimiter adds client-go's 10 qps / 100 burst bucket", () => {
    const clock = new FakeClock();
    const limiter = legacyControllerRateLimiter<string>(clock);
    const first = Array.from({ length: 100 }, (_, i) => limiter.when(`item-${i}`));
    assert.ok(first.every((ms) => ms === 5));
    assert.equal(limiter.when("item-100"), 100);
    assert.equal(limiter.numRequeues("item-0"), 1);
  });
});
