// Label and field selectors evaluated in memory, against the API server's grammar and semantics.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  escapeFieldSelectorValue,
  isFieldSelector,
  isLabelSelector,
  type LabelRequirement,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from "../../lib/cache/selector.ts";
import type { LabelSelectorObject } from "../../lib/client/options.ts";

/** Requirements as plain data, for deepEqual. */
function plain(requirements: readonly LabelRequirement[]) {
  return requirements.map(({ key, operator, values }) => ({ key, operator, values: [...values] }));
}

describe("parseLabelSelector: string grammar", () => {
  const cases: [string, string, { key: string; operator: string; values: string[] }[]][] = [
    ["", "", []],
    ["   ", "", []],
    ["a=b", "a=b", [{ key: "a", operator: "=", values: ["b"] }]],
    ["a==b", "a=b", [{ key: "a", operator: "=", values: ["b"] }]],
    ["a!=b", "a!=b", [{ key: "a", operator: "!=", values: ["b"] }]],
    ["a in (x,y)", "a in (x,y)", [{ key: "a", operator: "in", values: ["x", "y"] }]],
    ["a notin (x)", "a notin (x)", [{ key: "a", operator: "notin", values: ["x"] }]],
    ["a", "a", [{ key: "a", operator: "exists", values: [] }]],
    ["!a", "!a", [{ key: "a", operator: "!", values: [] }]],
    ["a=", "a=", [{ key: "a", operator: "=", values: [""] }]],
    ["a!=", "a!=", [{ key: "a", operator: "!=", values: [""] }]],
    [" a = b , c ", "a=b,c", [
      { key: "a", operator: "=", values: ["b"] },
      { key: "c", operator: "exists", values: [] },
    ]],
    ["\ta\tin\t(\ty\t,\tx\t)\r\n", "a in (x,y)", [{
      key: "a",
      operator: "in",
      values: ["x", "y"],
    }]],
    ["a in (y,x,y)", "a in (x,y)", [{ key: "a", operator: "in", values: ["x", "y"] }]],
    // As the API server: `()` is the set holding "", and empty places between commas are "".
    ["a in ()", "a in ()", [{ key: "a", operator: "in", values: [""] }]],
    ["a notin ()", "a notin ()", [{ key: "a", operator: "notin", values: [""] }]],
    ["a in (x,)", "a in (,x)", [{ key: "a", operator: "in", values: ["", "x"] }]],
    ["a in (,x)", "a in (,x)", [{ key: "a", operator: "in", values: ["", "x"] }]],
    ["a in (x,,y)", "a in (,x,y)", [{ key: "a", operator: "in", values: ["", "x", "y"] }]],
    ["a in (,)", "a in ()", [{ key: "a", operator: "in", values: [""] }]],
    // `in` and `notin` are keywords only where an operator is expected.
    ["in in (notin)", "in in (notin)", [{ key: "in", operator: "in", values: ["notin"] }]],
    ["x=in", "x=in", [{ key: "x", operator: "=", values: ["in"] }]],
    ["x>1", "x>1", [{ key: "x", operator: "gt", values: ["1"] }]],
    ["x < 10", "x<10", [{ key: "x", operator: "lt", values: ["10"] }]],
    // Sorted by key, stably.
    ["b=1,a=2,!c,a", "a=2,a,b=1,!c", [
      { key: "a", operator: "=", values: ["2"] },
      { key: "a", operator: "exists", values: [] },
      { key: "b", operator: "=", values: ["1"] },
      { key: "c", operator: "!", values: [] },
    ]],
    ["app.kubernetes.io/name=web", "app.kubernetes.io/name=web", [
      { key: "app.kubernetes.io/name", operator: "=", values: ["web"] },
    ]],
    ["example.com/My_Key-1.x=V_a-l.1", "example.com/My_Key-1.x=V_a-l.1", [
      { key: "example.com/My_Key-1.x", operator: "=", values: ["V_a-l.1"] },
    ]],
  ];
  for (const [input, canonical, requirements] of cases) {
    it(`parses ${JSON.stringify(input)} as ${JSON.stringify(canonical)}`, () => {
      const selector = parseLabelSelector(input);
      assert.deepEqual(plain(selector.requirements), requirements);
      assert.equal(selector.toString(), canonical);
      assert.equal(String(selector), canonical);
      assert.equal(selector.empty, requirements.length === 0);
    });
    it(`round-trips ${JSON.stringify(input)} through toString`, () => {
      const again = parseLabelSelector(parseLabelSelector(input).toString());
      assert.deepEqual(plain(again.requirements), requirements);
      assert.equal(again.toString(), canonical);
    });
  }

  it("returns frozen requirements", () => {
    const selector = parseLabelSelector("a in (x,y)");
    assert.ok(Object.isFrozen(selector.requirements));
    assert.ok(Object.isFrozen(selector.requirements[0]));
    assert.ok(Object.isFrozen(selector.requirements[0].values));
  });
});

describe("parseLabelSelector: errors", () => {
  const cases: [string, RegExp, number][] = [
    [",", /found ',' at position 0, expected '!', a key or end of string/, 0],
    ["a,", /found end of string at position 2, expected '!' or a key after ','/, 2],
    ["a,,b", /found ',' at position 2, expected '!' or a key after ','/, 2],
    ["a=b c", /found 'c' at position 4, expected ',' or end of string/, 4],
    ["a b", /found 'b' at position 2, expected an operator \(in, notin, =, ==, !=, >, <\)/, 2],
    ["a in b", /found 'b' at position 5, expected '\('/, 5],
    ["a in (b", /found end of string at position 7, expected ',' or '\)'/, 7],
    ["a in (b c)", /found 'c' at position 8, expected ',' or '\)'/, 8],
    ["a in (b,,)", /found '\)' at position 9, expected a value or ','/, 9],
    ["a in (=)", /found '=' at position 6, expected a value, ',' or '\)'/, 6],
    ["a=)", /found '\)' at position 2, expected a value/, 2],
    ["a=b=c", /found '=' at position 3, expected ',' or end of string/, 3],
    ["!a=b", /found '=' at position 2, expected ',' or end of string/, 2],
    ["!", /found end of string at position 1, expected a key/, 1],
    ["=a", /found '=' at position 0, expected '!', a key or end of string/, 0],
    ["a||b", /key "a\|\|b" at position 0 has a name part "a\|\|b"/, 0],
    [
      "x,Foo/bar=x",
      /key "Foo\/bar" at position 2 has a prefix "Foo" that is not a lowercase DNS/,
      2,
    ],
    ["/a", /key "\/a" at position 0 has an empty prefix/, 0],
    ["a/", /key "a\/" at position 0 has an empty name part/, 0],
    [
      "a/b/c",
      /key "a\/b\/c" at position 0 must be a name with an optional DNS subdomain prefix/,
      0,
    ],
    ["-a=b", /key "-a" at position 0 has a name part "-a" that must consist of alphanumeric/, 0],
    ["a=b$", /value "b\$" of key "a" at position 2 must be empty or consist of alphanumeric/, 2],
    ["a in (x,-y)", /value "-y" of key "a" at position 8 must be empty or consist/, 8],
    ["a>b", /value "b" of key "a" at position 2 must be an integer for '>'/, 2],
    ["a<", /value "" of key "a" at position 2 must be an integer for '<'/, 2],
    ["a>-1", /value "-1" of key "a" at position 2 must be empty or consist/, 2],
    ["a>9223372036854775808", /must be an integer for '>'/, 2],
  ];
  for (const [input, message, position] of cases) {
    it(`rejects ${JSON.stringify(input)}`, () => {
      assert.throws(() => parseLabelSelector(input), (err: unknown) => {
        assert.ok(err instanceof SelectorError);
        assert.equal(err.name, "SelectorError");
        assert.match(err.message, message);
        assert.ok(
          err.message.startsWith(`invalid label selector ${JSON.stringify(input)}: `),
          err.message,
        );
        assert.equal(err.selector, input);
        assert.equal(err.position, position);
        return true;
      });
    });
  }

  it("enforces Kubernetes' length limits on keys and values", () => {
    const name63 = "n".repeat(63);
    const prefix253 = `${"p".repeat(63)}.${"p".repeat(63)}.${"p".repeat(63)}.${"p".repeat(61)}`;
    assert.equal(prefix253.length, 253);
    assert.equal(parseLabelSelector(`${prefix253}/${name63}=${"v".repeat(63)}`).empty, false);
    assert.throws(() => parseLabelSelector(`${name63}x`), /longer than 63 characters/);
    assert.throws(
      () => parseLabelSelector(`${prefix253}p/a`),
      /has a prefix longer than 253 characters/,
    );
    assert.throws(() => parseLabelSelector(`a=${"v".repeat(64)}`), /is longer than 63 characters/);
  });

  it("accepts the largest and smallest 64-bit integers for > and <", () => {
    assert.equal(parseLabelSelector("a>9223372036854775807").requirements[0].operator, "gt");
    assert.equal(parseLabelSelector("a<0").requirements[0].values[0], "0");
    // A sign is an integer but not a label value, so the API server rejects it too.
    assert.throws(() => parseLabelSelector("a<+0"), /value "\+0" of key "a"/);
  });
});

describe("parseLabelSelector: matching", () => {
  const cases: [string, Record<string, string> | undefined, boolean][] = [
    ["", undefined, true],
    ["", { a: "b" }, true],
    ["a=b", { a: "b" }, true],
    ["a=b", { a: "c" }, false],
    ["a=b", {}, false],
    ["a=b", undefined, false],
    ["a==b", { a: "b", x: "y" }, true],
    ["a=", { a: "" }, true],
    ["a=", {}, false],
    ["a!=b", { a: "c" }, true],
    ["a!=b", { a: "b" }, false],
    ["a!=b", {}, true], // missing label: != matches, as in Kubernetes
    ["a!=b", undefined, true],
    ["a in (x,y)", { a: "y" }, true],
    ["a in (x,y)", { a: "z" }, false],
    ["a in (x,y)", {}, false],
    ["a in ()", { a: "" }, true],
    ["a in ()", { a: "x" }, false],
    ["a notin (x,y)", { a: "z" }, true],
    ["a notin (x,y)", { a: "x" }, false],
    ["a notin (x,y)", {}, true], // missing label: notin matches
    ["a", { a: "" }, true],
    ["a", { b: "a" }, false],
    ["!a", { b: "a" }, true],
    ["!a", { a: "" }, false],
    ["!a", undefined, true],
    ["a,b=c", { a: "1", b: "c" }, true],
    ["a,b=c", { a: "1", b: "d" }, false],
    ["a=1,a=2", { a: "1" }, false],
    ["x>1", { x: "2" }, true],
    ["x>1", { x: "1" }, false],
    ["x>1", { x: "abc" }, false],
    ["x>1", {}, false],
    ["x<1", { x: "-5" }, true],
    ["x<1", { x: "0" }, true],
    ["x>9223372036854775806", { x: "9223372036854775807" }, true],
    ["x>9223372036854775806", { x: "9223372036854775808" }, false], // out of int64: no match
    ["k in (a,b,c,d,e,f,g,h,i,j)", { k: "j" }, true], // a large set
    ["k in (a,b,c,d,e,f,g,h,i,j)", { k: "a" }, true],
    ["k in (a,b,c,d,e,f,g,h,i,j)", { k: "z" }, false],
    ["k notin (a,b,c,d,e,f,g,h,i,j)", { k: "a" }, false],
    ["k notin (a,b,c,d,e,f,g,h,i,j)", { k: "j" }, false],
    ["k notin (a,b,c,d,e,f,g,h,i,j)", { k: "z" }, true],
    ["toString", {}, false], // keys are own properties only
    ["!constructor", {}, true],
  ];
  for (const [selector, labels, expected] of cases) {
    it(
      `${JSON.stringify(selector)} ${expected ? "matches" : "does not match"} ${
        JSON.stringify(labels)
      }`,
      () => {
        assert.equal(parseLabelSelector(selector).matches(labels), expected);
      },
    );
  }
});

describe("parseLabelSelector: structured form", () => {
  it("turns matchLabels and matchExpressions into sorted requirements", () => {
    const selector = parseLabelSelector({
      matchLabels: { tier: "web", app: "shop" },
      matchExpressions: [
        { key: "env", operator: "NotIn", values: ["dev", "ci", "dev"] },
        { key: "zone", operator: "In", values: ["b", "a"] },
        { key: "canary", operator: "DoesNotExist" },
        { key: "owner", operator: "Exists", values: [] },
      ],
    });
    assert.equal(
      selector.toString(),
      "app=shop,!canary,env notin (ci,dev),owner,tier=web,zone in (a,b)",
    );
    assert.deepEqual(plain(selector.requirements), [
      { key: "app", operator: "=", values: ["shop"] },
      { key: "canary", operator: "!", values: [] },
      { key: "env", operator: "notin", values: ["ci", "dev"] },
      { key: "owner", operator: "exists", values: [] },
      { key: "tier", operator: "=", values: ["web"] },
      { key: "zone", operator: "in", values: ["a", "b"] },
    ]);
    assert.equal(
      selector.matches({ app: "shop", tier: "web", owner: "me", zone: "a" }),
      true,
    );
    assert.equal(
      selector.matches({ app: "shop", tier: "web", owner: "me", zone: "a", env: "ci" }),
      false,
    );
    assert.equal(selector.matches({ app: "shop", tier: "web", zone: "a" }), false);
    // The canonical string parses back to the same selector.
    assert.equal(parseLabelSelector(selector.toString()).toString(), selector.toString());
  });

  it("selects everything when empty", () => {
    for (const input of [{}, { matchLabels: {} }, { matchExpressions: [] }]) {
      const selector = parseLabelSelector(input);
      assert.equal(selector.empty, true);
      assert.equal(selector.toString(), "");
      assert.equal(selector.matches(undefined), true);
    }
  });

  it("matches an empty-valued matchLabels entry only against an empty label", () => {
    const selector = parseLabelSelector({ matchLabels: { a: "" } });
    assert.equal(selector.matches({ a: "" }), true);
    assert.equal(selector.matches({}), false);
  });

  const errors: [LabelSelectorObject, RegExp][] = [
    [
      { matchExpressions: [{ key: "a", operator: "In", values: [] }] },
      /^invalid label selector: matchExpressions\[0\] \(key "a", operator In\): values must not be empty for In and NotIn$/,
    ],
    [
      { matchExpressions: [{ key: "a", operator: "NotIn" }] },
      /matchExpressions\[0\] .*values must not be empty/,
    ],
    [
      {
        matchExpressions: [{ key: "b", operator: "Exists" }, {
          key: "a",
          operator: "Exists",
          values: ["x"],
        }],
      },
      /matchExpressions\[1\] \(key "a", operator Exists\): values must be empty for Exists and DoesNotExist/,
    ],
    [
      { matchExpressions: [{ key: "a", operator: "Gt" as "In", values: ["1"] }] },
      /matchExpressions\[0\] \(key "a", operator Gt\): operator must be one of In, NotIn, Exists, DoesNotExist/,
    ],
    [
      { matchExpressions: [{ key: "a b", operator: "Exists" }] },
      /matchExpressions\[0\] \(key "a b", operator Exists\): key has a name part "a b"/,
    ],
    [
      { matchExpressions: [{ key: "a", operator: "In", values: ["ok", "not ok"] }] },
      /matchExpressions\[0\] .*value "not ok" must be empty or consist/,
    ],
    [{ matchLabels: { "Bad/key": "x" } }, /matchLabels\["Bad\/key"\]: key has a prefix "Bad"/],
    [{ matchLabels: { a: "x/y" } }, /matchLabels\["a"\]: value "x\/y" must be empty or consist/],
    [{ matchLabels: { a: 1 as unknown as string } }, /matchLabels\["a"\]: value must be a string/],
  ];
  for (const [input, message] of errors) {
    it(`rejects ${JSON.stringify(input)}`, () => {
      assert.throws(() => parseLabelSelector(input), (err: unknown) => {
        assert.ok(err instanceof SelectorError);
        assert.match(err.message, message);
        assert.equal(err.selector, JSON.stringify(input));
        assert.equal(err.position, undefined);
        return true;
      });
    });
  }

  it("tells a parsed selector from its inputs", () => {
    assert.equal(isLabelSelector(parseLabelSelector("a")), true);
    assert.equal(isLabelSelector("a"), false);
    assert.equal(isLabelSelector({ matchLabels: { a: "b" } }), false);
    assert.equal(isLabelSelector(undefined), false);
  });
});

describe("parseFieldSelector", () => {
  const cases: [string, string, { field: string; operator: string; value: string }[]][] = [
    ["", "", []],
    ["metadata.name=a", "metadata.name=a", [{ field: "metadata.name", operator: "=", value: "a" }]],
    ["metadata.name==a", "metadata.name=a", [
      { field: "metadata.name", operator: "==", value: "a" },
    ]],
    ["status.phase!=Running", "status.phase!=Running", [
      { field: "status.phase", operator: "!=", value: "Running" },
    ]],
    ["spec.nodeName=", "spec.nodeName=", [{ field: "spec.nodeName", operator: "=", value: "" }]],
    // Sorted; empty terms skipped.
    ["b=2,,a=1,", "a=1,b=2", [
      { field: "a", operator: "=", value: "1" },
      { field: "b", operator: "=", value: "2" },
    ]],
    // Escapes: \, \= \\ in values.
    [String.raw`a=x\,y`, String.raw`a=x\,y`, [{ field: "a", operator: "=", value: "x,y" }]],
    [String.raw`a=x\=y`, String.raw`a=x\=y`, [{ field: "a", operator: "=", value: "x=y" }]],
    [String.raw`a=x\\`, String.raw`a=x\\`, [{ field: "a", operator: "=", value: "x\\" }]],
    [String.raw`a=x\\,b=y`, String.raw`a=x\\,b=y`, [
      { field: "a", operator: "=", value: "x\\" },
      { field: "b", operator: "=", value: "y" },
    ]],
    [String.raw`a!=\,\=\\`, String.raw`a!=\,\=\\`, [
      { field: "a", operator: "!=", value: ",=\\" },
    ]],
    // The first operator splits the term.
    ["a=!b", "a=!b", [{ field: "a", operator: "=", value: "!b" }]],
    ["a!b=c", "a!b=c", [{ field: "a!b", operator: "=", value: "c" }]],
    ["a= b ", "a= b ", [{ field: "a", operator: "=", value: " b " }]],
  ];
  for (const [input, canonical, requirements] of cases) {
    it(`parses ${JSON.stringify(input)} as ${JSON.stringify(canonical)}`, () => {
      const selector = parseFieldSelector(input);
      assert.deepEqual(
        selector.requirements.map(({ field, operator, value }) => ({ field, operator, value })),
        requirements,
      );
      assert.equal(selector.toString(), canonical);
      assert.equal(selector.empty, requirements.length === 0);
      assert.equal(parseFieldSelector(selector.toString()).toString(), canonical);
    });
  }

  const errors: [string, RegExp, number][] = [
    ["a", /term "a" at position 0 has no operator; expected field=value/, 0],
    ["a=b,c", /term "c" at position 4 has no operator/, 4],
    ["=a", /term "=a" at position 0 has no field name/, 0],
    ["a =b", /term "a =b" at position 0 has a field name "a " with whitespace/, 0],
    [
      "a=b=c",
      /the value of "a" in term "a=b=c" has an unescaped '=' \(write it as '\\='\) at position 3/,
      3,
    ],
    ["x=1,a!==b", /the value of "a" in term "a!==b" has an unescaped '='.* at position 7/, 7],
    [
      String.raw`a=b\x`,
      /has the invalid escape sequence '\\x' \(only \\\\, \\, and \\= are allowed\) at position 3/,
      3,
    ],
    ["a=b\\", /the value of "a" in term "a=b\\" ends with a lone '\\' at position 3/, 3],
  ];
  for (const [input, message, position] of errors) {
    it(`rejects ${JSON.stringify(input)}`, () => {
      assert.throws(() => parseFieldSelector(input), (err: unknown) => {
        assert.ok(err instanceof SelectorError);
        assert.match(err.message, message);
        assert.ok(err.message.startsWith(`invalid field selector ${JSON.stringify(input)}: `));
        assert.equal(err.position, position);
        return true;
      });
    });
  }

  it("escapes values so that any string survives a round trip", () => {
    for (const value of ["", "plain", "a,b", "a=b", "a\\b", "\\,=\\\\", ",,", "trailing\\"]) {
      const text = `metadata.name=${escapeFieldSelectorValue(value)}`;
      const selector = parseFieldSelector(text);
      assert.equal(selector.requirements[0].value, value, text);
      assert.equal(selector.toString(), text);
    }
  });

  it("takes { field: value } pairs as exact matches with unescaped values", () => {
    const selector = parseFieldSelector({ "status.phase": "Running", "metadata.name": "a,b" });
    assert.deepEqual(
      selector.requirements.map(({ field, operator, value }) => ({ field, operator, value })),
      [
        { field: "metadata.name", operator: "=", value: "a,b" },
        { field: "status.phase", operator: "=", value: "Running" },
      ],
    );
    assert.equal(selector.toString(), String.raw`metadata.name=a\,b,status.phase=Running`);
    assert.equal(parseFieldSelector({}).empty, true);
    assert.throws(() => parseFieldSelector({ "": "x" }), /field "" has no field name/);
    assert.throws(
      () => parseFieldSelector({ a: 1 as unknown as string }),
      /field "a" has a value that is not a string/,
    );
  });

  describe("matching", () => {
    const pod = {
      metadata: { name: "web-1", namespace: "shop" },
      spec: { nodeName: "node-1", hostNetwork: true, priority: 10, tolerations: [] },
      status: { phase: "Running", podIP: null },
    };
    const cases: [string, boolean][] = [
      ["", true],
      ["metadata.name=web-1", true],
      ["metadata.name==web-1", true],
      ["metadata.name=web-2", false],
      ["metadata.name!=web-2", true],
      ["metadata.namespace=shop,status.phase=Running", true],
      ["metadata.namespace=shop,status.phase=Failed", false],
      ["spec.nodeName=node-1", true],
      // A missing field reads as "", like the API server's field sets.
      ["spec.schedulerName=", true],
      ["spec.schedulerName!=", false],
      ["spec.schedulerName!=x", true],
      ["spec.schedulerName=x", false],
      ["no.such.path=", true],
      ["metadata.name.deeper=", true],
      ["status.podIP=", true], // null reads as ""
      // Scalars read as their string form.
      ["spec.hostNetwork=true", true],
      ["spec.priority=10", true],
      ["spec.priority!=10", false],
      // An object or array equals no value.
      ["spec=", false],
      ["spec.tolerations=", false],
      ["spec.tolerations!=", true],
    ];
    for (const [selector, expected] of cases) {
      it(`${JSON.stringify(selector)} ${expected ? "matches" : "does not match"}`, () => {
        assert.equal(parseFieldSelector(selector).matches(pod), expected);
      });
    }

    it("reads values with escaped characters", () => {
      const obj = { metadata: { name: "a,b=c\\" } };
      assert.equal(parseFieldSelector(String.raw`metadata.name=a\,b\=c\\`).matches(obj), true);
      assert.equal(parseFieldSelector({ "metadata.name": "a,b=c\\" }).matches(obj), true);
    });

    it("matches anything but an object only with != or an empty selector", () => {
      assert.equal(parseFieldSelector("metadata.name=").matches(undefined), true);
      assert.equal(parseFieldSelector("metadata.name=x").matches("text"), false);
      assert.equal(parseFieldSelector("").matches(null), true);
    });
  });

  it("tells a parsed selector from its inputs", () => {
    assert.equal(isFieldSelector(parseFieldSelector("a=b")), true);
    assert.equal(isFieldSelector("a=b"), false);
    assert.equal(isFieldSelector({ requirements: "x", matches: "y" }), false);
  });
});
