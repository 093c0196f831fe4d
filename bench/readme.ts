/**
 * `deno task bench:readme [results.json]`: writes README's benchmark section, between its
 * markers, from a results file of the suite (bench/suite.ts): the date, the machine, the key
 * figures per contender as ratios against Go controller-runtime on protobuf in the same round,
 * and how to run it again. Without an argument it renders again from the file the section
 * names. `--check` writes nothing and exits 1 when the section differs from what the file gives.
 *
 * The numbers come from the file only: a unit test (tests/unit/bench_readme.test.ts) fails when
 * README's section is not what this renders from the file it names.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The repository's root. */
const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
/** README.md of the repository. */
export const README = join(ROOT, "README.md");

/** The opening marker: it names the results file, relative to the repository. */
const BEGIN = /<!-- bench:begin (\S+\.json) -->\n/;
const END = "<!-- bench:end -->";

/** A figure of one contender in one measure, as the suite summarises it. */
interface Figure {
  median?: number;
  min?: number;
  max?: number;
  ratioMedian?: number;
  ratios: number[];
}

/** What this reads of a results file. */
export interface Results {
  date: string;
  reference: string;
  options: {
    rounds: number;
    objects: number;
    reconcileObjects: number;
    latencySeconds: number;
    rate: number;
    measures: string[];
  };
  cpuCount: number;
  machine: string[];
  contenders: { name: string; label: string }[];
  summaries: Record<string, Record<string, Record<string, Figure | unknown>>>;
  runs: { loadBefore: string; loadAfter: string; ok: boolean }[];
}

/** The columns: the peers and Rudder's contenders that ship (no floors, no variants). */
const COLUMNS: [name: string, heading: string][] = [
  ["go-protobuf", "Go, protobuf"],
  ["go-json", "Go, JSON"],
  ["client-node", "client-node"],
  ["rudder-deno", "Rudder, Deno"],
  ["rudder-bun", "Rudder, Bun"],
  ["rudder-bun-binary", "Rudder, Bun binary"],
  ["rudder-node", "Rudder, Node"],
  ["rudder-node-binary", "Rudder, Node binary"],
];

/** The rows: measure, field, what it is, how to write the reference's own value. */
const ROWS: [measure: string, field: string, label: string, value: (v: number) => string][] = [
  ["sync", "syncMs", "cache sync: time to synced", (v) => `${v.toFixed(0)} ms`],
  ["sync", "rssPerObject", "cache sync: RSS per object", (v) => `${v.toFixed(0)} B`],
  ["sync", "heapPerObject", "cache sync: live heap per object", (v) => `${v.toFixed(0)} B`],
  ["reconcile-1", "objectsPerSecond", "reconcile, 1 worker: objects/s", (v) => v.toFixed(0)],
  ["reconcile-1", "cpuSeconds", "reconcile, 1 worker: CPU seconds", (v) => `${v.toFixed(2)} s`],
  ["reconcile-10", "objectsPerSecond", "reconcile, 10 workers: objects/s", (v) => v.toFixed(0)],
  ["reconcile-10", "cpuSeconds", "reconcile, 10 workers: CPU seconds", (v) => `${v.toFixed(2)} s`],
  ["reconcile-10", "rssAfterBytes", "reconcile, 10 workers: RSS after", mib],
  ["reconcile-10", "rssAnonAfterBytes", "reconcile, 10 workers: anonymous RSS after", mib],
  ["latency", "p50Ms", "event → reconcile latency, p50", (v) => `${v.toFixed(1)} ms`],
  ["latency", "p99Ms", "event → reconcile latency, p99", (v) => `${v.toFixed(1)} ms`],
  ["startup", "readyMs", "start → /readyz 200", (v) => `${v.toFixed(0)} ms`],
  ["startup", "idleRssBytes", "idle RSS", mib],
  ["startup", "idleRssAnonBytes", "idle RSS: anonymous", mib],
  ["startup", "idleRssFileBytes", "idle RSS: file-backed", mib],
];

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

function figure(results: Results, measure: string, contender: string, field: string) {
  return results.summaries[measure]?.[contender]?.[field] as Figure | undefined;
}

/** The range of the first figure of /proc/loadavg over every run. */
function loadRange(results: Results): string {
  const loads = results.runs.flatMap((run) => [run.loadBefore, run.loadAfter])
    .map((load) => Number(load.split(" ")[0])).filter(Number.isFinite);
  if (loads.length === 0) return "unknown";
  return `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`;
}

/** The section between the markers (markers included) for `results`, read from `file`. */
export function renderSection(results: Results, file: string): string {
  const present = COLUMNS.filter(([name]) => results.contenders.some((c) => c.name === name));
  const rows = ROWS.filter(([measure, field]) =>
    present.some(([name]) => figure(results, measure, name, field)?.median !== undefined)
  );
  const when = `${results.date.slice(0, 16).replace("T", " ")} UTC`;
  const machine = results.machine.map((line) => line.replace(/^- /, ""));
  const model = machine.find((line) => line.startsWith("CPU: "))?.slice(5).split(", ")[0] ?? "?";
  const cpu = `${model}, ${results.cpuCount} cores`;
  const rudder = machine.find((line) => line.startsWith("Rudder ")) ?? "Rudder";
  // A runtime whose version is "?" did not run (the client-node peer when it is left out).
  const runtimes = machine.filter((line) => /^(deno|Bun|go version|Node) /.test(line))
    .map((line) => line.split(/,| \(/)[0].replace(/^go version /, ""))
    .filter((runtime) => !runtime.endsWith(" ?"));
  const lines = [
    `<!-- bench:begin ${file} -->`,
    "",
    `The latest run, ${when}: \`${file}\` (and its \`.md\`), ${results.options.rounds} rounds, ` +
    `measures ${results.options.measures.join(", ")} (sync of ` +
    `${results.options.objects.toLocaleString("en")} ConfigMaps, reconciles of ` +
    `${results.options.reconcileObjects.toLocaleString("en")}, latency over ` +
    `${results.options.latencySeconds} s at ${results.options.rate} changes/s); ` +
    `${cpu}, machine load ${loadRange(results)} ` +
    `(1-minute average); ${rudder}; ${runtimes.join(", ")}. ` +
    `Each cell is the median of the per-round ratios against Go controller-runtime on protobuf ` +
    `in the same round (min–max in brackets); Go's column holds its median value. Below 1× is ` +
    `faster, smaller or cheaper, except objects/s, where above 1× is faster.`,
    "",
    `| measure | ${present.map(([, heading]) => heading).join(" | ")} |`,
    `| --- | ${present.map(() => "---:").join(" | ")} |`,
  ];
  for (const [measure, field, label, value] of rows) {
    const cells = present.map(([name]) => {
      const f = figure(results, measure, name, field);
      if (f?.median === undefined) return "—";
      if (name === results.reference) return value(f.median);
      if (f.ratioMedian === undefined) return "—";
      const ratio = `${f.ratioMedian.toFixed(2)}×`;
      return f.ratios.length > 1
        ? `${ratio} (${Math.min(...f.ratios).toFixed(2)}–${Math.max(...f.ratios).toFixed(2)})`
        : ratio;
    });
    lines.push(`| ${label} | ${cells.join(" | ")} |`);
  }
  lines.push(
    "",
    "Run it again with `deno task bench` (all measures, 5 rounds; `--measures sync,reconcile-10," +
      "startup --rounds 5 --name <suffix>` for a part, see `bench/README.md`), then " +
      "`deno task bench:readme bench/results/<date>[-<suffix>].json` to make this section from " +
      "the new file.",
    "",
    END,
  );
  return lines.join("\n");
}

/** README's section, markers included, and the file its opening marker names. */
export function currentSection(readme: string): { section: string; file: string } {
  const begin = readme.match(BEGIN);
  const end = readme.indexOf(END);
  if (!begin || begin.index === undefined || end < begin.index) {
    throw new Error(`README.md has no benchmark section between ${BEGIN} and ${END}`);
  }
  return { section: readme.slice(begin.index, end + END.length), file: begin[1] };
}

/**
 * Text as `deno fmt` leaves it compared equal to text as rendered: runs of white space (line
 * breaks included) are one space, and a table's dashes are three.
 */
export function normalize(text: string): string {
  return text.replace(/-{3,}/g, "---").replace(/\s+/g, " ").trim();
}

/** Reads a results file. */
export function readResults(file: string): Results {
  return JSON.parse(readFileSync(resolve(ROOT, file), "utf8"));
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const check = args.includes("--check");
  const readme = readFileSync(README, "utf8");
  const { section, file: named } = currentSection(readme);
  const given = args.find((arg) => !arg.startsWith("--"));
  const file = given ? relative(ROOT, resolve(process.cwd(), given)) : named;
  const rendered = renderSection(readResults(file), file);
  if (check) {
    const same = normalize(rendered) === normalize(section);
    process.stderr.write(
      same
        ? `bench:readme: README.md's section is ${file}'s\n`
        : `bench:readme: README.md's section differs from ${file}: run deno task bench:readme\n`,
    );
    process.exit(same ? 0 : 1);
  }
  writeFileSync(README, readme.replace(section, () => rendered));
  spawnSync(process.execPath, ["fmt", "--quiet", README], { cwd: ROOT, stdio: "inherit" });
  process.stderr.write(`bench:readme: README.md's benchmark section is made from ${file}\n`);
}
