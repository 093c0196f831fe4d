// The public API's shape: a small root, one home per name, no internals, subpaths as deno.json
// declares them, layers used forwards only, and user-facing code without casts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SUBPATH_FILES } from "../../cli/templates.ts";
import { scaffold } from "../../cli/templates.ts";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
const exportsMap: Record<string, string> = JSON.parse(read("deno.json")).exports;

/** The names a module file exports: its `export { … } from`, `export type * as` and declarations. */
export function exportedNames(source: string): string[] {
  const names: string[] = [];
  for (const match of source.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}/g)) {
    for (const item of match[1].split(",")) {
      const name = item.trim().replace(/^type\s+/, "").split(/\s+as\s+/).pop()?.trim();
      if (name) names.push(name);
    }
  }
  for (const match of source.matchAll(/export\s+type\s+\*\s+as\s+(\w+)/g)) names.push(match[1]);
  const declaration =
    /^export\s+(?:declare\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\*?|class|interface|type|const|let|enum)\s+(\w+)/gm;
  for (const match of source.matchAll(declaration)) names.push(match[1]);
  return [...new Set(names)];
}

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** Relative import and export specifiers of a source file, type-only ones included. */
function relativeImports(source: string): string[] {
  const specs: string[] = [];
  const pattern = /(?:^|\n)\s*(?:import|export)\b[^;]*?from\s*"(\.{1,2}\/[^"]+)"/g;
  for (const match of source.matchAll(pattern)) specs.push(match[1]);
  for (const match of source.matchAll(/import\(\s*"(\.{1,2}\/[^"]+)"\s*\)/g)) specs.push(match[1]);
  return specs;
}

describe("public API", () => {
  it("exports exactly the subpaths the scaffold maps, each a documented mod.ts", () => {
    const subpaths = Object.keys(exportsMap).filter((key) => key !== ".").map((key) =>
      key.slice(2)
    );
    assert.deepEqual(subpaths.sort(), Object.keys(SUBPATH_FILES).sort());
    for (const [key, file] of Object.entries(exportsMap)) {
      if (key !== ".") assert.equal(`./${SUBPATH_FILES[key.slice(2)]}`, file);
      const source = read(file);
      assert.match(
        source,
        /^\/\*\*[\s\S]*?@example[\s\S]*?@module\s*\*\//,
        `${file} has a module doc with an example`,
      );
      const firstBlock = source.slice(source.indexOf("@example")).match(/```[^\n]*\n/);
      assert.equal(firstBlock?.[0], "```ts\n", `${file}: its first example is type-checked`);
    }
  });

  it("keeps the root to at most 40 names, each re-exported from a subpath", () => {
    const source = read("mod.ts").replace(/\/\*[\s\S]*?\*\//g, "");
    const names = exportedNames(source);
    assert.ok(names.length > 20 && names.length <= 40, `root exports ${names.length} names`);
    for (const match of source.matchAll(/from\s+"([^"]+)"/g)) {
      assert.match(
        match[1],
        /^\.\/(lib\/[a-z]+\/mod\.ts|cli\/main\.ts)$/,
        "the root only re-exports subpaths",
      );
    }
    assert.doesNotMatch(source, /^export\s+(?:const|function|class|interface|type\s+\w+\s*=)/m);
  });

  it("gives every name one home: no name is exported by two subpaths", () => {
    const home = new Map<string, string>();
    for (const [key, file] of Object.entries(exportsMap)) {
      if (key === ".") continue;
      for (const name of exportedNames(read(file))) {
        assert.ok(!home.has(name), `${name} is exported by both ${home.get(name)} and ${key}`);
        home.set(name, key);
      }
    }
    for (const name of exportedNames(read("mod.ts"))) {
      assert.ok(home.has(name), `root name ${name} is re-exported from its subpath`);
    }
  });

  it("exports none of the internals", () => {
    const internals = [
      "serve",
      "parseAddress",
      "NO_ANSWER_CODE",
      "TEXT_CONTENT_TYPE",
      "defaultKeyOf",
      "encodeWatchEvent",
      "metricsApp",
      "healthApp",
      "requestKey",
      "requestFor",
      "jsonClone",
      "sleep",
      "abortable",
      "installCRDs",
      "passesCreate",
      // The machinery the manager wires for `sharding`: its users configure, not assemble.
      "Sharding",
      "Sharder",
      "ShardGate",
      "ShardWriter",
      "Fallback",
      "RingMembers",
      "shardingMetrics",
      "resolveShardingOptions",
    ];
    for (const [key, file] of Object.entries(exportsMap)) {
      const names = exportedNames(read(file));
      for (const internal of internals) {
        assert.ok(!names.includes(internal), `${key} exports the internal ${internal}`);
      }
    }
    assert.ok(!exportedNames(read("lib/workqueue/mod.ts")).includes("FakeClock"));
    assert.ok(exportedNames(read("lib/testing/mod.ts")).includes("FakeClock"));
  });

  it("names the informer's handler ResourceEventHandler and the controller's EventHandler", () => {
    assert.ok(exportedNames(read("lib/cache/mod.ts")).includes("ResourceEventHandler"));
    assert.ok(!exportedNames(read("lib/cache/mod.ts")).includes("EventHandler"));
    assert.ok(exportedNames(read("lib/handler/mod.ts")).includes("EventHandler"));
  });
});

// Lowest layer first: a folder of lib/ imports only from itself and the folders before it.
const LAYERS = [
  ["util"],
  ["server"],
  ["kube"],
  ["api"],
  ["conditions"],
  ["client"],
  ["cache"],
  ["workqueue"],
  ["reconcile"],
  ["event"],
  ["handler"],
  ["predicate"],
  ["source"],
  ["controller"],
  ["events", "controllerutil", "metrics", "healthz", "leaderelection"],
  ["webhook"],
  ["sharding"],
  ["manager"],
  ["testing"],
];

describe("layers", () => {
  const rank = new Map<string, number>();
  LAYERS.forEach((folders, i) => folders.forEach((folder) => rank.set(folder, i)));
  const files = walk(join(ROOT, "lib")).filter((file) => !file.includes("/generated/"));
  const folderOf = (file: string) => relative(join(ROOT, "lib"), file).split("/")[0];

  it("places every folder of lib/ in a layer", () => {
    for (const file of files) {
      const folder = folderOf(file);
      if (folder.endsWith(".ts")) continue; // lib/version.ts: a leaf
      assert.ok(rank.has(folder), `lib/${folder}/ has no layer in this test`);
    }
  });

  it("imports only from the same layer or the ones below, and never a mod.ts", () => {
    for (const file of files) {
      const from = folderOf(file);
      // A folder's mod.ts is a facade for users: it may re-export from any folder.
      if (from.endsWith(".ts") || file.endsWith("/mod.ts")) continue;
      for (const spec of relativeImports(read(relative(ROOT, file)))) {
        assert.ok(!spec.endsWith("mod.ts"), `${relative(ROOT, file)} imports the facade ${spec}`);
      }
      for (const spec of relativeImports(read(relative(ROOT, file)))) {
        const target = resolve(dirname(file), spec);
        const to = folderOf(target);
        if (to.endsWith(".ts") || !target.startsWith(join(ROOT, "lib"))) continue;
        assert.ok(
          rank.get(to)! <= rank.get(from)!,
          `${relative(ROOT, file)} imports ${spec}: lib/${from} must not depend on lib/${to}`,
        );
        if (rank.get(to) === rank.get(from) && to !== from) {
          assert.fail(`${relative(ROOT, file)} imports the sibling layer lib/${to}`);
        }
      }
    }
  });

  it("has no import cycle between files", () => {
    const graph = new Map<string, string[]>();
    for (const file of files) {
      graph.set(
        file,
        relativeImports(read(relative(ROOT, file))).map((spec) => resolve(dirname(file), spec)),
      );
    }
    const state = new Map<string, "visiting" | "done">();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "visiting") {
        const cycle = path.slice(path.indexOf(file)).concat(file).map((f) => relative(ROOT, f));
        cycles.push(cycle.join(" → "));
        return;
      }
      state.set(file, "visiting");
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, "done");
    };
    for (const file of files) visit(file, []);
    assert.deepEqual(cycles, []);
  });
});

describe("user-facing code", () => {
  const casts = /\bas\s+(?!const\b)[A-Za-z_{[(]/;
  // Comments and string contents go first: "read it as v1beta1" in a message is not a cast.
  const stripComments = (source: string) =>
    source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")
      .replace(/"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`/g, '""');

  it("the example operator has no `as` casts and no `any`", () => {
    for (const file of walk(join(ROOT, "examples"))) {
      const code = stripComments(read(relative(ROOT, file)));
      assert.doesNotMatch(code, casts, `${relative(ROOT, file)} casts`);
      assert.doesNotMatch(code, /:\s*any\b|<any>/, `${relative(ROOT, file)} uses any`);
    }
  });

  it("a fresh scaffold has no `as` casts and no `any`", () => {
    const plain = { name: "demo", group: "demo.example.com", version: "v1", kind: "Demo" };
    for (const options of [plain, { ...plain, webhooks: true }]) {
      for (const [path, text] of scaffold(options, DEPENDENCY_VERSIONS)) {
        if (!path.endsWith(".ts")) continue;
        const code = stripComments(text);
        assert.doesNotMatch(code, casts, `${path} casts`);
        assert.doesNotMatch(code, /:\s*any\b|<any>/, `${path} uses any`);
      }
    }
  });
});

describe("published documentation", () => {
  // deno.json publishes mod.ts, lib/, cli/ and README.md; the project's design notes are not in
  // the package, so a doc that sends a user to them points nowhere.
  it("cites no design note a user does not have (DESIGN.md, STYLE.md)", () => {
    const files = [
      "mod.ts",
      "README.md",
      ...walk(join(ROOT, "lib")).map((file) => relative(ROOT, file)),
      ...walk(join(ROOT, "cli")).map((file) => relative(ROOT, file)),
    ];
    const citations: string[] = [];
    for (const file of files) {
      read(file).split("\n").forEach((line, index) => {
        if (/\bDESIGN\b|\bSTYLE\.md\b/.test(line)) citations.push(`${file}:${index + 1}`);
      });
    }
    assert.deepEqual(citations, [], "these lines cite DESIGN or STYLE.md");
  });
});
