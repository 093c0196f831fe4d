/**
 * Micro-benchmark of the end of a paged list without a server: what is left to do once the last
 * page's text is in (parse it, store its objects, swap the list in), with the objects of the
 * pages before it stored as they came (`Store.beginReplace`, what the reflector does) or kept
 * aside as parsed and stored all at once at the end (`Store.replace`, what it did before). Pages
 * of 5,000 ConfigMaps of 1 KiB with managedFields, as the suite's sync measure lists them.
 * Prints the median and the lowest of R runs of each, alternating.
 *
 * Usage: deno run -A --v8-flags=--max-semi-space-size=2 bench/list_replace.ts [pages=2] [runs=16]
 *        bun bench/list_replace.ts [pages] [runs]
 *
 * @module
 */

import process from "node:process";
import type { ConfigMap } from "../lib/api/builtins.ts";
import { Store } from "../lib/cache/store.ts";

const args = process.argv.slice(2).filter((arg) => !arg.endsWith(".ts"));
const pages = Math.max(2, Number(args[0] ?? 2) || 2);
const runs = Number(args[1] ?? 16) || 16;
const PAGE = 5000;

function pageText(index: number): string {
  const items = [];
  for (let i = index * PAGE; i < (index + 1) * PAGE; i++) {
    items.push({
      metadata: {
        name: `bench-${String(i).padStart(6, "0")}`,
        namespace: "sync",
        uid: crypto.randomUUID(),
        resourceVersion: String(1000 + i),
        creationTimestamp: "2026-12-02T13:00:00Z",
        managedFields: [{
          manager: "bench",
          operation: "Update",
          apiVersion: "v1",
          time: "2026-12-02T13:00:00Z",
          fieldsType: "FieldsV1",
          fieldsV1: { "f:data": { ".": {}, "f:payload": {} } },
        }],
      },
      data: { payload: "x".repeat(1024) },
    });
  }
  return JSON.stringify({ kind: "ConfigMapList", apiVersion: "v1", metadata: {}, items });
}

const texts = Array.from({ length: pages }, (_, i) => pageText(i));
const parse = (text: string) => (JSON.parse(text) as { items: ConfigMap[] }).items;

/** Milliseconds from the last page's text to the swapped-in list. */
function run(staged: boolean): number {
  const store = new Store<ConfigMap>();
  const replacement = store.beginReplace();
  const aside: ConfigMap[] = [];
  const take = (items: ConfigMap[]) => {
    for (const item of items) staged ? replacement.add(item) : aside.push(item);
  };
  for (const text of texts.slice(0, -1)) take(parse(text));
  const start = performance.now();
  take(parse(texts[texts.length - 1]));
  if (staged) replacement.commit();
  else store.replace(aside);
  const ms = performance.now() - start;
  if (store.size !== pages * PAGE) throw new Error(`stored ${store.size} objects`);
  return ms;
}

const results = { "stored as they come": [] as number[], "stored at the end": [] as number[] };
for (let i = 0; i < runs; i++) {
  results["stored as they come"].push(run(true));
  results["stored at the end"].push(run(false));
}
for (const [name, values] of Object.entries(results)) {
  values.sort((a, b) => a - b);
  console.log(
    `${name}: median ${values[values.length >> 1].toFixed(1)} ms, lowest ${
      values[0].toFixed(1)
    } ms (${pages} pages of ${PAGE}, ${runs} runs)`,
  );
}
