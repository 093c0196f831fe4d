// JSON helpers: structural equality as serialisation sees it, and deep copies.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { jsonClone, jsonEqual } from "../../lib/util/json.ts";

describe("jsonEqual", () => {
  it("compares objects and arrays by content, in any key order", () => {
    assert.equal(jsonEqual({ a: 1, b: [1, { c: "x" }] }, { b: [1, { c: "x" }], a: 1 }), true);
    assert.equal(jsonEqual({ a: 1, b: [1, { c: "x" }] }, { a: 1, b: [1, { c: "y" }] }), false);
    assert.equal(jsonEqual([1, 2], [2, 1]), false);
    assert.equal(jsonEqual([1, 2], [1, 2, 3]), false);
    assert.equal(jsonEqual({}, []), false);
    assert.equal(jsonEqual(null, {}), false);
    assert.equal(jsonEqual("1", 1), false);
  });

  it("tells apart objects with a key more or less on either side", () => {
    assert.equal(jsonEqual({ a: 1 }, { a: 1, b: 2 }), false);
    assert.equal(jsonEqual({ a: 1, b: 2 }, { a: 1 }), false);
    assert.equal(jsonEqual({ a: 1, b: 2 }, { a: 1, c: 2 }), false);
    assert.equal(jsonEqual({ a: null }, {}), false, "null is a value");
  });

  it("counts a key whose value is undefined as absent, on either side", () => {
    assert.equal(jsonEqual({ a: 1, b: undefined }, { a: 1 }), true);
    assert.equal(jsonEqual({ a: 1 }, { a: 1, b: undefined }), true);
    assert.equal(jsonEqual({ b: undefined }, { c: undefined }), true);
    assert.equal(jsonEqual({ a: 1, b: undefined }, { a: 1, c: 2 }), false);
  });
});

describe("jsonClone", () => {
  it("copies deeply and drops undefined keys", () => {
    const original = { a: { b: [1, { c: 2 }] }, d: undefined };
    const copy = jsonClone(original);
    assert.deepEqual(copy, { a: { b: [1, { c: 2 }] } });
    assert.notEqual(copy.a, original.a);
    assert.equal("d" in copy, false);
  });
});
