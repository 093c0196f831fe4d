import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseListPage, splitListPage } from "../../lib/cache/list_page.ts";

function items(text: string): unknown[] {
  const page = parseListPage(text);
  return Array.from({ length: page.count }, (_, i) => page.item(i));
}

describe("list pages split into their items", () => {
  it("splits a page as the API server writes it, items parsed one by one", () => {
    const list = {
      kind: "ConfigMapList",
      apiVersion: "v1",
      metadata: { resourceVersion: "42", continue: "tok" },
      items: [
        { metadata: { name: "a", annotations: { "x": 'a "quoted" } { [ value \\' } }, data: {} },
        { metadata: { name: "b" }, data: { k: "\\\\" }, list: [1, [2, { c: null }], true] },
      ],
    };
    const page = splitListPage(JSON.stringify(list));
    assert.ok(page);
    assert.deepEqual(page.metadata, list.metadata);
    assert.equal(page.count, 2);
    assert.deepEqual([page.item(0), page.item(1)], list.items);
  });

  it("follows keys in any order, white space and an empty or missing items", () => {
    const text = ' {\n "items" : [ {"n":1} ,\t{"n":2} ] , "metadata" : {"resourceVersion":"7"} }\n';
    const page = splitListPage(text);
    assert.equal(page?.metadata?.resourceVersion, "7");
    assert.deepEqual(items(text), [{ n: 1 }, { n: 2 }]);
    assert.deepEqual(items('{"kind":"L","items":[]}'), []);
    assert.deepEqual(items('{"kind":"L"}'), []);
    assert.deepEqual(items('{"items":null}'), []);
    assert.deepEqual(items(""), []);
  });

  it("parses whole what it does not follow, and says what is wrong", () => {
    assert.throws(() => parseListPage('{"items":[{"a":1},'), SyntaxError);
    assert.throws(() => parseListPage('{"kind":nope,"items":[]}'), SyntaxError);
    assert.throws(() => parseListPage("[1,2]"), TypeError);
    assert.throws(() => parseListPage('{"items":[]} x'), SyntaxError);
    // A malformed item is found when it is parsed.
    const page = parseListPage('{"items":[{"a":1},{"b":tru}]}');
    assert.deepEqual(page.item(0), { a: 1 });
    assert.throws(() => page.item(1), SyntaxError);
  });

  it("parses the page whole when asked, with the same result", () => {
    const text = '{"metadata":{"resourceVersion":"3"},"items":[{"a":1},{"b":[2]}]}';
    const page = parseListPage(text, false);
    assert.equal(page.metadata?.resourceVersion, "3");
    assert.deepEqual([page.item(0), page.item(1)], items(text));
  });

  it("keeps the last items when the key repeats, as JSON.parse does", () => {
    assert.deepEqual(items('{"items":[{"a":1}],"items":[{"b":2},{"c":3}]}'), [{ b: 2 }, { c: 3 }]);
  });
});
