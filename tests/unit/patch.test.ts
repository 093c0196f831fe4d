// Merge and JSON patches: computing them from two objects, and applying them as the server does.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  applyMergePatch,
  createMergePatch,
  jsonPatch,
  mergeFrom,
  rawPatch,
  strategicMergeFrom,
} from "../../lib/client/patch.ts";
import {
  applyJsonPatch,
  createJsonPatch,
  type JsonPatchOperation,
} from "../../lib/client/json_patch.ts";
import type { ConfigMap, Deployment } from "../../lib/api/builtins.ts";
import type { Unstructured } from "../../lib/api/resource.ts";

/** A small seeded generator, so the property test is the same on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomValue(next: () => number, depth: number): unknown {
  const pick = next();
  if (depth > 2 || pick < 0.3) return Math.floor(next() * 5);
  if (pick < 0.45) return ["a", "b", "c"][Math.floor(next() * 3)];
  if (pick < 0.55) return [Math.floor(next() * 3), "x"];
  const obj: Record<string, unknown> = {};
  for (const key of ["a", "b", "c", "d"]) if (next() < 0.5) obj[key] = randomValue(next, depth + 1);
  return obj;
}

describe("createMergePatch and applyMergePatch (RFC 7386)", () => {
  it("sends changed and added fields, null for removed ones, arrays whole", () => {
    const original = { a: 1, b: { c: 2, d: 3 }, list: [1, 2], gone: "x" };
    const modified = { a: 1, b: { c: 5, d: 3, e: 4 }, list: [1, 2, 3] };
    assert.deepEqual(createMergePatch(original, modified), {
      b: { c: 5, e: 4 },
      list: [1, 2, 3],
      gone: null,
    });
    assert.deepEqual(createMergePatch(original, original), {});
  });

  it("treats undefined as absent, as serialisation does", () => {
    assert.deepEqual(createMergePatch({ a: 1, b: 2 }, { a: 1, b: undefined }), { b: null });
    assert.deepEqual(createMergePatch({ a: 1 }, { a: 1, b: undefined }), {});
  });

  it("applies the examples of RFC 7386 appendix A", () => {
    const cases: [unknown, unknown, unknown][] = [
      [{ a: "b" }, { a: "c" }, { a: "c" }],
      [{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
      [{ a: "b" }, { a: null }, {}],
      [{ a: "b", b: "c" }, { a: null }, { b: "c" }],
      [{ a: ["b"] }, { a: "c" }, { a: "c" }],
      [{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
      [{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
      [{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
      [["a", "b"], ["c", "d"], ["c", "d"]],
      [{ a: "b" }, ["c"], ["c"]],
      [{ a: "foo" }, null, null],
      [{ a: "foo" }, "bar", "bar"],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [[1, 2], { a: "b", c: null }, { a: "b" }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    ];
    for (const [target, patch, result] of cases) {
      assert.deepEqual(applyMergePatch(target, patch), result, JSON.stringify({ target, patch }));
    }
  });

  it("round-trips: applying the diff of two objects gives the second (seeded random objects)", () => {
    const next = random(7);
    for (let i = 0; i < 500; i++) {
      const original = randomValue(next, 0);
      const modified = randomValue(next, 0);
      if (typeof original !== "object" || typeof modified !== "object") continue;
      const patch = createMergePatch(original, modified);
      assert.deepEqual(applyMergePatch(original, patch), modified);
    }
  });

  it("never changes its inputs", () => {
    const target = { a: { b: 1 } };
    applyMergePatch(target, { a: { b: 2 } });
    assert.deepEqual(target, { a: { b: 1 } });
  });
});

describe("mergeFrom", () => {
  const original: ConfigMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "x", resourceVersion: "42", labels: { keep: "1", drop: "2" } },
    data: { a: "1" },
  };

  it("diffs the patched object against a snapshot of the original", () => {
    const changed: ConfigMap = structuredClone(original);
    const patch = mergeFrom(original);
    // A change to the original after taking the patch does not leak into it.
    original.data!.a = "mutated";
    changed.data = { a: "1", b: "2" };
    delete changed.metadata!.labels!.drop;
    assert.equal(patch.type, "application/merge-patch+json");
    assert.deepEqual(patch.data(changed), {
      data: { b: "2" },
      metadata: { labels: { drop: null } },
    });
    original.data!.a = "1";
  });

  it("carries the original's resourceVersion with optimisticLock", () => {
    const changed = { ...structuredClone(original), data: { a: "2" } };
    assert.deepEqual(mergeFrom(original, { optimisticLock: true }).data(changed), {
      data: { a: "2" },
      metadata: { resourceVersion: "42" },
    });
    const unversioned: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "y" } };
    assert.throws(
      () => mergeFrom(unversioned, { optimisticLock: true }).data(unversioned),
      /optimisticLock needs the original's metadata.resourceVersion/,
    );
  });
});

describe("strategicMergeFrom", () => {
  it("refuses kinds that are not built in, pointing at mergeFrom", () => {
    const widget: Unstructured = {
      apiVersion: "example.com/v1",
      kind: "Widget",
      metadata: { name: "w" },
    };
    assert.throws(
      () => strategicMergeFrom(widget).data(widget),
      /example.com\/v1 Widget is not a built-in kind.*use mergeFrom/,
    );
  });

  it("merges containers by name for a Deployment", () => {
    const original: Deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web" },
      spec: {
        selector: { matchLabels: { app: "web" } },
        template: {
          spec: {
            containers: [{ name: "app", image: "app:1" }, { name: "sidecar", image: "proxy:1" }],
          },
        },
      },
    };
    const changed = structuredClone(original);
    changed.spec!.template.spec!.containers[0].image = "app:2";
    const patch = strategicMergeFrom(original);
    assert.equal(patch.type, "application/strategic-merge-patch+json");
    const body = patch.data(changed) as { spec: { template: { spec: { containers: unknown[] } } } };
    assert.deepEqual(body.spec.template.spec.containers, [{ name: "app", image: "app:2" }]);
  });
});

describe("jsonPatch and applyJsonPatch (RFC 6902)", () => {
  it("sends the operations as they are", () => {
    const patch = jsonPatch([{ op: "replace", path: "/spec/replicas", value: 3 }]);
    assert.equal(patch.type, "application/json-patch+json");
    assert.deepEqual(patch.data({ apiVersion: "v1", kind: "X" }), [
      { op: "replace", path: "/spec/replicas", value: 3 },
    ]);
    assert.deepEqual(
      rawPatch("application/merge-patch+json", { a: 1 }).data({ apiVersion: "v1", kind: "X" }),
      {
        a: 1,
      },
    );
  });

  it("applies every operation, with escaped pointers and array indexes", () => {
    const doc = {
      metadata: { labels: { "app.kubernetes.io/name": "web", "a~b": "1" } },
      list: [1, 2, 3],
    };
    const result = applyJsonPatch(doc, [
      { op: "test", path: "/metadata/labels/app.kubernetes.io~1name", value: "web" },
      { op: "remove", path: "/metadata/labels/a~0b" },
      { op: "add", path: "/list/1", value: 9 },
      { op: "add", path: "/list/-", value: 4 },
      { op: "replace", path: "/list/0", value: 0 },
      { op: "copy", from: "/list/0", path: "/first" },
      { op: "move", from: "/first", path: "/metadata/first" },
    ]);
    assert.deepEqual(result, {
      metadata: { labels: { "app.kubernetes.io/name": "web" }, first: 0 },
      list: [0, 9, 2, 3, 4],
    });
    assert.deepEqual(doc.list, [1, 2, 3], "the input is not changed");
  });

  it("fails a failing test, a missing path and an index out of range, naming the operation", () => {
    assert.throws(
      () => applyJsonPatch({ a: 1 }, [{ op: "test", path: "/a", value: 2 }]),
      /JSON patch operation 0 \(test\): test failed: \/a is not 2/,
    );
    assert.throws(
      () =>
        applyJsonPatch({ a: 1 }, [{ op: "add", path: "/a", value: 1 }, {
          op: "remove",
          path: "/b",
        }]),
      /operation 1 \(remove\): \/b does not exist/,
    );
    assert.throws(
      () => applyJsonPatch({ l: [1] }, [{ op: "replace", path: "/l/5", value: 1 }]),
      /index 5 is out of range/,
    );
    assert.throws(
      () => applyJsonPatch({}, [{ op: "add", path: "nope", value: 1 }]),
      /must start with \//,
    );
  });
});

/**
 * Applies RFC 6902 add/replace/remove strictly (an add must be new, a replace and a remove must
 * find their member), to check that a diff turns one document into the other exactly.
 */
function applyPatch(doc: unknown, ops: JsonPatchOperation[]): unknown {
  let root = structuredClone(doc);
  for (const op of ops) {
    if (op.op !== "add" && op.op !== "replace" && op.op !== "remove") {
      assert.fail(`a diff has only add, replace and remove; got ${op.op}`);
    }
    if (op.path === "") {
      root = op.op === "remove" ? undefined : structuredClone(op.value);
      continue;
    }
    const tokens = op.path.slice(1).split("/").map((t) =>
      t.replace(/~1/g, "/").replace(/~0/g, "~")
    );
    const last = tokens.pop()!;
    let parent = root as Record<string, unknown>;
    for (const token of tokens) parent = parent[token] as Record<string, unknown>;
    assert.ok(parent && typeof parent === "object", `parent of ${op.path} exists`);
    if (op.op === "add") {
      assert.ok(!(last in parent), `add ${op.path}: the member is new`);
      parent[last] = structuredClone(op.value);
    } else if (op.op === "replace") {
      assert.ok(last in parent, `replace ${op.path}: the member exists`);
      parent[last] = structuredClone(op.value);
    } else {
      assert.ok(last in parent, `remove ${op.path}: the member exists`);
      delete parent[last];
    }
  }
  return root;
}

describe("createJsonPatch (RFC 6902 diff)", () => {
  it("is empty for equal documents, key order aside", () => {
    assert.deepEqual(createJsonPatch({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }), []);
  });

  it("adds, replaces and removes members at escaped paths", () => {
    const patch = createJsonPatch(
      { metadata: { labels: { "app.kubernetes.io/name": "x", "a~b": "1" } }, spec: { n: 1 } },
      { metadata: { labels: { "app.kubernetes.io/name": "y" } }, spec: { n: 1, m: { k: true } } },
    );
    assert.deepEqual(patch, [
      { op: "remove", path: "/metadata/labels/a~0b" },
      { op: "replace", path: "/metadata/labels/app.kubernetes.io~1name", value: "y" },
      { op: "add", path: "/spec/m", value: { k: true } },
    ]);
  });

  it("replaces a changed array whole and a value that changed type", () => {
    assert.deepEqual(createJsonPatch({ a: [1, 2, 3], b: { x: 1 } }, { a: [1, 3], b: "s" }), [
      { op: "replace", path: "/a", value: [1, 3] },
      { op: "replace", path: "/b", value: "s" },
    ]);
  });

  it("drops undefined members as JSON would, and keeps null", () => {
    assert.deepEqual(createJsonPatch({ a: 1, b: 2 }, { a: undefined, b: null }), [
      { op: "remove", path: "/a" },
      { op: "replace", path: "/b", value: null },
    ]);
  });

  it("turns the original into the modified document when applied", () => {
    const cases: [unknown, unknown][] = [
      [{}, { spec: { replicas: 1 } }],
      [{ spec: { replicas: 12, list: [{ a: 1 }] } }, { spec: { replicas: 10, list: [] } }],
      [{ "": { "/": { "~": 1 } } }, { "": { "/": { "~": 2, "~1": 3 } } }],
      [{ a: { b: { c: { d: 1 } } }, z: 0 }, { a: { b: { c: {} } }, y: [null] }],
    ];
    for (const [from, to] of cases) {
      assert.deepEqual(applyPatch(from, createJsonPatch(from, to)), to);
    }
  });
});
