// README's benchmark section is made from a results file of the suite (bench/readme.ts): it must
// be what the script renders from the file it names, so no figure in it is typed by hand.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  currentSection,
  normalize,
  README,
  readResults,
  renderSection,
} from "../../bench/readme.ts";

describe("README's benchmark section", () => {
  it("is what bench/readme.ts renders from the results file it names", () => {
    const { section, file } = currentSection(readFileSync(README, "utf8"));
    assert.match(file, /^bench\/results\/.+\.json$/);
    assert.equal(normalize(section), normalize(renderSection(readResults(file), file)));
  });

  it("would differ after a change of one figure, of the date or of the file named", () => {
    const { file } = currentSection(readFileSync(README, "utf8"));
    const results = readResults(file);
    const rendered = normalize(renderSection(results, file));
    const changed = structuredClone(results);
    const syncMs = changed.summaries.sync["rudder-bun"].syncMs as { ratioMedian: number };
    syncMs.ratioMedian += 0.01;
    assert.notEqual(normalize(renderSection(changed, file)), rendered);
    assert.notEqual(
      normalize(renderSection({ ...results, date: "2027-01-01T00:00" }, file)),
      rendered,
    );
    assert.notEqual(normalize(renderSection(results, "bench/results/other.json")), rendered);
  });

  it("shows the ratio against Go for every contender and Go's own value", () => {
    const { file } = currentSection(readFileSync(README, "utf8"));
    const results = readResults(file);
    const text = renderSection(results, file);
    const row = text.split("\n").find((line) => line.startsWith("| cache sync: RSS per object"));
    assert.ok(row, "a row for RSS per object");
    const go = results.summaries.sync["go-protobuf"].rssPerObject as { median: number };
    const deno = results.summaries.sync["rudder-deno"].rssPerObject as { ratioMedian: number };
    assert.ok(row.includes(`${go.median.toFixed(0)} B`), row);
    assert.ok(row.includes(`${deno.ratioMedian.toFixed(2)}×`), row);
  });
});
