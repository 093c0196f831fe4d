// Predicates at their edges: a hook a predicate leaves out lets that kind of event through, in
// each combinator and for each of the four kinds of event; the change predicates compare absent
// metadata with empty metadata; newPredicateFuncs filters the right object of each event.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeObject } from "../../lib/api/resource.ts";
import { deepFreeze, type DeepReadonly } from "../../lib/api/readonly.ts";
import {
  and,
  annotationChangedPredicate,
  generationChangedPredicate,
  labelChangedPredicate,
  labelSelectorPredicate,
  newPredicateFuncs,
  not,
  or,
  passesCreate,
  passesDelete,
  passesGeneric,
  passesUpdate,
  type Predicate,
  resourceVersionChangedPredicate,
} from "../../lib/predicate/predicate.ts";

function obj(name: string, meta: Record<string, unknown> = {}): DeepReadonly<KubeObject> {
  return deepFreeze({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "ns", ...meta },
  } as KubeObject);
}

type Kind = "create" | "update" | "delete" | "generic";
const KINDS: Kind[] = ["create", "update", "delete", "generic"];

const a = obj("a");
const b = obj("b");

/** Runs `predicate`'s combinator-made hook of `kind` on a fixed event. */
function decide(predicate: Predicate, kind: Kind): boolean {
  switch (kind) {
    case "create":
      return predicate.create!({ object: a, isInInitialList: false });
    case "update":
      return predicate.update!({ objectOld: a, objectNew: b });
    case "delete":
      return predicate.delete!({ object: a, deleteStateUnknown: false });
    case "generic":
      return predicate.generic!({ object: a });
  }
}

/** Whether every predicate in `predicates` lets the event of `kind` through. */
function passes(predicates: Predicate[], kind: Kind): boolean {
  switch (kind) {
    case "create":
      return passesCreate(predicates, { object: a, isInInitialList: false });
    case "update":
      return passesUpdate(predicates, { objectOld: a, objectNew: b });
    case "delete":
      return passesDelete(predicates, { object: a, deleteStateUnknown: false });
    case "generic":
      return passesGeneric(predicates, { object: a });
  }
}

/** A predicate with only the hook of `kind`, answering `answer`. */
function only(kind: Kind, answer: boolean): Predicate {
  return { [kind]: () => answer };
}

const always: Predicate = {
  create: () => true,
  update: () => true,
  delete: () => true,
  generic: () => true,
};
const never: Predicate = {
  create: () => false,
  update: () => false,
  delete: () => false,
  generic: () => false,
};
const silent: Predicate = {};

describe("passesCreate, passesUpdate, passesDelete and passesGeneric", () => {
  for (const kind of KINDS) {
    it(`${kind}: no predicate and a predicate without the hook let it through`, () => {
      assert.equal(passes([], kind), true);
      assert.equal(passes([silent], kind), true);
      assert.equal(passes([silent, always], kind), true);
      assert.equal(passes([always, never], kind), false, "one refusal is enough");
      assert.equal(passes([never, silent], kind), false);
    });

    it(`${kind}: only the hook of its own kind decides`, () => {
      for (const other of KINDS) {
        assert.equal(
          passes([only(other, false)], kind),
          other !== kind,
          `a ${other} hook refusing, for a ${kind} event`,
        );
      }
    });
  }
});

describe("and, or and not", () => {
  for (const kind of KINDS) {
    it(`${kind}: and needs every predicate, a missing hook passes`, () => {
      assert.equal(decide(and(), kind), true);
      assert.equal(decide(and(silent), kind), true);
      assert.equal(decide(and(always, silent), kind), true);
      assert.equal(decide(and(always, never), kind), false);
      assert.equal(decide(and(only(kind, false), always), kind), false);
    });

    it(`${kind}: or needs one predicate, a missing hook passes`, () => {
      assert.equal(decide(or(), kind), false, "an empty or passes nothing");
      assert.equal(decide(or(silent), kind), true);
      assert.equal(decide(or(never), kind), false);
      assert.equal(decide(or(never, silent), kind), true);
      assert.equal(decide(or(never, always), kind), true);
      assert.equal(decide(or(never, only(kind, true)), kind), true);
      for (const other of KINDS.filter((k) => k !== kind)) {
        assert.equal(decide(or(only(other, false)), kind), true, `a ${other} hook does not count`);
      }
    });

    it(`${kind}: not inverts, and a missing hook (which passes) becomes a refusal`, () => {
      assert.equal(decide(not(always), kind), false);
      assert.equal(decide(not(never), kind), true);
      assert.equal(decide(not(silent), kind), false);
      assert.equal(decide(not(only(kind, false)), kind), true);
      assert.equal(decide(not(not(only(kind, false))), kind), false);
    });
  }
});

describe("newPredicateFuncs", () => {
  it("filters the object of each kind of event, and the new object of an update", () => {
    const seen: string[] = [];
    const p = newPredicateFuncs((o) => {
      seen.push(o.metadata?.name ?? "");
      return o.metadata?.name === "b";
    });
    assert.equal(p.create!({ object: a, isInInitialList: true }), false);
    assert.equal(p.create!({ object: b, isInInitialList: false }), true);
    assert.equal(p.update!({ objectOld: a, objectNew: b }), true);
    assert.equal(p.update!({ objectOld: b, objectNew: a }), false);
    assert.equal(p.delete!({ object: a, deleteStateUnknown: false }), false);
    assert.equal(p.delete!({ object: b, deleteStateUnknown: true }), true);
    assert.equal(p.generic!({ object: a }), false);
    assert.equal(p.generic!({ object: b }), true);
    assert.deepEqual(seen, ["a", "b", "b", "a", "a", "b", "a", "b"]);
  });
});

describe("the change predicates", () => {
  const update = (oldMeta: Record<string, unknown>, newMeta: Record<string, unknown>) => ({
    objectOld: obj("x", oldMeta),
    objectNew: obj("x", newMeta),
  });
  const bare = (): DeepReadonly<KubeObject> => deepFreeze({ apiVersion: "v1", kind: "ConfigMap" });

  it("define only update: creates, deletes and generic events pass through them", () => {
    for (
      const p of [
        generationChangedPredicate,
        labelChangedPredicate,
        annotationChangedPredicate,
        resourceVersionChangedPredicate,
      ]
    ) {
      assert.equal(p.create, undefined);
      assert.equal(p.delete, undefined);
      assert.equal(p.generic, undefined);
      assert.equal(passesCreate([p], { object: a, isInInitialList: false }), true);
    }
  });

  it("compare objects without metadata as unchanged", () => {
    const e = { objectOld: bare(), objectNew: bare() };
    assert.equal(generationChangedPredicate.update!(e), false);
    assert.equal(labelChangedPredicate.update!(e), false);
    assert.equal(annotationChangedPredicate.update!(e), false);
    assert.equal(resourceVersionChangedPredicate.update!(e), false);
  });

  it("generation: a generation appearing is a change", () => {
    assert.equal(generationChangedPredicate.update!(update({}, { generation: 1 })), true);
    assert.equal(generationChangedPredicate.update!(update({ generation: 3 }, {})), true);
    assert.equal(
      generationChangedPredicate.update!(update({ generation: 3, labels: { a: "1" } }, {
        generation: 3,
        labels: { a: "2" },
      })),
      false,
      "a label change alone is not a generation change",
    );
  });

  it("labels: absent and empty are the same, a removed label is a change", () => {
    assert.equal(labelChangedPredicate.update!(update({}, { labels: {} })), false);
    assert.equal(labelChangedPredicate.update!(update({ labels: {} }, {})), false);
    assert.equal(labelChangedPredicate.update!(update({ labels: { a: "1" } }, {})), true);
    assert.equal(labelChangedPredicate.update!(update({}, { labels: { a: "1" } })), true);
    assert.equal(
      labelChangedPredicate.update!(
        update({ labels: { a: "1", b: "2" } }, { labels: { b: "2", a: "1" } }),
      ),
      false,
      "the order of the keys does not matter",
    );
    assert.equal(
      labelChangedPredicate.update!(update({ annotations: { a: "1" } }, {})),
      false,
      "annotations are not labels",
    );
    assert.equal(
      labelChangedPredicate.update!(
        update({ labels: { a: "1" } }, { labels: { a: "1" }, annotations: { b: "2" } }),
      ),
      false,
      "an annotation change alone is not a label change",
    );
  });

  it("annotations: absent and empty are the same, a changed value is a change", () => {
    assert.equal(annotationChangedPredicate.update!(update({}, { annotations: {} })), false);
    assert.equal(annotationChangedPredicate.update!(update({ annotations: {} }, {})), false);
    assert.equal(
      annotationChangedPredicate.update!(
        update({ annotations: { a: "1" } }, { annotations: { a: "2" } }),
      ),
      true,
    );
    assert.equal(
      annotationChangedPredicate.update!(update({ annotations: { a: "1" } }, {})),
      true,
    );
    assert.equal(
      annotationChangedPredicate.update!(update({ labels: { a: "1" } }, {})),
      false,
      "labels are not annotations",
    );
    assert.equal(
      annotationChangedPredicate.update!(
        update({ annotations: { a: "1" } }, { annotations: { a: "1" }, labels: { b: "2" } }),
      ),
      false,
      "a label change alone is not an annotation change",
    );
  });

  it("resourceVersion: a resync (same version) is dropped, any other version passes", () => {
    assert.equal(
      resourceVersionChangedPredicate.update!(
        update({ resourceVersion: "7" }, { resourceVersion: "7" }),
      ),
      false,
    );
    assert.equal(
      resourceVersionChangedPredicate.update!(
        update({ resourceVersion: "8" }, { resourceVersion: "7" }),
      ),
      true,
    );
    assert.equal(
      resourceVersionChangedPredicate.update!(update({ resourceVersion: "7" }, {})),
      true,
    );
  });
});

describe("labelSelectorPredicate", () => {
  const labelled = obj("l", { labels: { tier: "web", env: "prod" } });
  const unlabelled = obj("u");

  it("takes a structured selector and applies it to each kind of event", () => {
    const p = labelSelectorPredicate({
      matchLabels: { tier: "web" },
      matchExpressions: [{ key: "env", operator: "In", values: ["prod", "staging"] }],
    });
    assert.equal(p.create!({ object: labelled, isInInitialList: false }), true);
    assert.equal(p.create!({ object: unlabelled, isInInitialList: false }), false);
    assert.equal(p.update!({ objectOld: unlabelled, objectNew: labelled }), true);
    assert.equal(p.update!({ objectOld: labelled, objectNew: unlabelled }), false);
    assert.equal(p.delete!({ object: labelled, deleteStateUnknown: true }), true);
    assert.equal(p.generic!({ object: unlabelled }), false);
  });

  it("matches an object without labels only against selectors that need no label", () => {
    assert.equal(labelSelectorPredicate("!tier").generic!({ object: unlabelled }), true);
    assert.equal(labelSelectorPredicate("tier").generic!({ object: unlabelled }), false);
    assert.equal(labelSelectorPredicate("tier!=web").generic!({ object: unlabelled }), true);
    assert.equal(labelSelectorPredicate("").generic!({ object: unlabelled }), true, "empty: all");
  });

  it("refuses a malformed selector when it is made, not at the first event", () => {
    assert.throws(() => labelSelectorPredicate("tier in (web"));
    assert.throws(() =>
      labelSelectorPredicate({ matchExpressions: [{ key: "tier", operator: "In", values: [] }] })
    );
  });
});
