// Conditions: apimachinery's meta.SetStatusCondition semantics, with a clock the test moves.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Condition } from "../../lib/api/generated/meta_v1.ts";
import { deepFreeze } from "../../lib/api/readonly.ts";
import {
  findStatusCondition,
  isStatusConditionFalse,
  isStatusConditionPresentAndEqual,
  isStatusConditionTrue,
  removeStatusCondition,
  setStatusCondition,
} from "../../lib/conditions/conditions.ts";

/** A clock at 2025-01-02T03:04:05.678Z that the test moves forward. */
function testClock() {
  let now = Date.parse("2025-01-02T03:04:05.678Z");
  return {
    clock: () => new Date(now),
    advance(ms: number) {
      now += ms;
    },
  };
}

describe("setStatusCondition", () => {
  it("appends a new condition, stamped now to the second, with an empty message by default", () => {
    const { clock } = testClock();
    const conditions: Condition[] = [];
    const changed = setStatusCondition(
      conditions,
      { type: "Ready", status: "False", reason: "Starting" },
      { clock },
    );
    assert.equal(changed, true);
    assert.deepEqual(conditions, [{
      type: "Ready",
      status: "False",
      reason: "Starting",
      message: "",
      lastTransitionTime: "2025-01-02T03:04:05Z",
    }]);
  });

  it("keeps a given lastTransitionTime and observedGeneration of a new condition", () => {
    const conditions: Condition[] = [];
    setStatusCondition(conditions, {
      type: "Ready",
      status: "True",
      reason: "Running",
      message: "all good",
      observedGeneration: 3,
      lastTransitionTime: "2020-01-01T00:00:00Z",
    });
    assert.deepEqual(conditions[0], {
      type: "Ready",
      status: "True",
      reason: "Running",
      message: "all good",
      observedGeneration: 3,
      lastTransitionTime: "2020-01-01T00:00:00Z",
    });
  });

  it("moves lastTransitionTime only when the status changes", () => {
    const time = testClock();
    const conditions: Condition[] = [];
    const set = (status: "True" | "False", reason: string, message = "") =>
      setStatusCondition(conditions, { type: "Ready", status, reason, message }, {
        clock: time.clock,
      });

    set("False", "Starting");
    time.advance(60_000);
    assert.equal(set("False", "StillStarting", "pulling the image"), true);
    assert.equal(conditions[0].lastTransitionTime, "2025-01-02T03:04:05Z");
    assert.equal(conditions[0].reason, "StillStarting");
    assert.equal(conditions[0].message, "pulling the image");

    time.advance(60_000);
    assert.equal(set("True", "Running"), true);
    assert.equal(conditions[0].lastTransitionTime, "2025-01-02T03:06:05Z");
    assert.equal(conditions[0].message, "", "the message is replaced, here by an empty one");

    time.advance(60_000);
    assert.equal(set("True", "Running"), false, "nothing changed");
    assert.equal(conditions[0].lastTransitionTime, "2025-01-02T03:06:05Z");
    assert.equal(conditions.length, 1);
  });

  it("uses a given lastTransitionTime on a status change, and ignores it otherwise", () => {
    const conditions: Condition[] = [{
      type: "Ready",
      status: "False",
      reason: "Starting",
      message: "",
      lastTransitionTime: "2020-01-01T00:00:00Z",
    }];
    setStatusCondition(conditions, {
      type: "Ready",
      status: "False",
      reason: "Waiting",
      lastTransitionTime: "2021-01-01T00:00:00Z",
    });
    assert.equal(conditions[0].lastTransitionTime, "2020-01-01T00:00:00Z");
    setStatusCondition(conditions, {
      type: "Ready",
      status: "True",
      reason: "Running",
      lastTransitionTime: "2022-01-01T00:00:00Z",
    });
    assert.equal(conditions[0].lastTransitionTime, "2022-01-01T00:00:00Z");
  });

  it("updates observedGeneration, an absent one counting as 0", () => {
    const conditions: Condition[] = [];
    const base = { type: "Ready", status: "True", reason: "Running" } as const;
    setStatusCondition(conditions, base);
    assert.equal(setStatusCondition(conditions, { ...base, observedGeneration: 0 }), false);
    assert.equal(setStatusCondition(conditions, { ...base, observedGeneration: 2 }), true);
    assert.equal(conditions[0].observedGeneration, 2);
    assert.equal(setStatusCondition(conditions, base), true);
    assert.equal("observedGeneration" in conditions[0], false);
  });

  it("changes only the condition of its type, in place", () => {
    const { clock } = testClock();
    const conditions: Condition[] = [];
    setStatusCondition(conditions, { type: "Ready", status: "False", reason: "A" }, { clock });
    setStatusCondition(conditions, { type: "Degraded", status: "False", reason: "B" }, { clock });
    const ready = conditions[0];
    setStatusCondition(conditions, { type: "Ready", status: "True", reason: "C" }, { clock });
    assert.equal(conditions[0], ready, "the same object, changed in place");
    assert.deepEqual(conditions.map((c) => [c.type, c.status]), [
      ["Ready", "True"],
      ["Degraded", "False"],
    ]);
  });

  it("refuses a frozen list, and replaces a frozen condition in a mutable list", () => {
    const frozen = deepFreeze([{
      type: "Ready",
      status: "False",
      reason: "A",
      message: "",
      lastTransitionTime: "2020-01-01T00:00:00Z",
    }]) as unknown as Condition[];
    assert.throws(
      () => setStatusCondition(frozen, { type: "Ready", status: "True", reason: "B" }),
      TypeError,
    );
    const copy = [...frozen];
    assert.equal(setStatusCondition(copy, { type: "Ready", status: "True", reason: "B" }), true);
    assert.equal(copy[0].status, "True");
    assert.equal(frozen[0].status, "False");
  });
});

describe("removeStatusCondition", () => {
  it("removes the condition of a type in place and says whether there was one", () => {
    const conditions: Condition[] = [];
    for (const type of ["A", "B", "C"]) {
      setStatusCondition(conditions, { type, status: "True", reason: "R" });
    }
    assert.equal(removeStatusCondition(conditions, "B"), true);
    assert.deepEqual(conditions.map((c) => c.type), ["A", "C"]);
    assert.equal(removeStatusCondition(conditions, "B"), false);
    assert.equal(removeStatusCondition([], "A"), false);
  });
});

describe("reading conditions", () => {
  const conditions = deepFreeze<Condition[]>([
    { type: "Ready", status: "True", reason: "R", message: "", lastTransitionTime: "" },
    { type: "Degraded", status: "False", reason: "R", message: "", lastTransitionTime: "" },
    { type: "Progressing", status: "Unknown", reason: "R", message: "", lastTransitionTime: "" },
  ]);

  it("findStatusCondition finds by type in frozen or absent lists", () => {
    assert.equal(findStatusCondition(conditions, "Degraded")?.status, "False");
    assert.equal(findStatusCondition(conditions, "Missing"), undefined);
    assert.equal(findStatusCondition(undefined, "Ready"), undefined);
  });

  it("isStatusConditionTrue, isStatusConditionFalse and isStatusConditionPresentAndEqual", () => {
    assert.equal(isStatusConditionTrue(conditions, "Ready"), true);
    assert.equal(isStatusConditionTrue(conditions, "Degraded"), false);
    assert.equal(isStatusConditionFalse(conditions, "Degraded"), true);
    assert.equal(isStatusConditionFalse(conditions, "Progressing"), false);
    assert.equal(isStatusConditionFalse(conditions, "Missing"), false, "absent is not false");
    assert.equal(isStatusConditionTrue(undefined, "Ready"), false);
    assert.equal(isStatusConditionPresentAndEqual(conditions, "Progressing", "Unknown"), true);
    assert.equal(isStatusConditionPresentAndEqual(conditions, "Missing", "Unknown"), false);
  });
});
