// The files of cli/ in layers: each imports only from the layers below it, so that no two of
// them import each other; cli/oci is a self-contained core; the template project is data, which
// no file of the CLI imports.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CLI = join(ROOT, "cli");
const TEMPLATE_PROJECT = join(CLI, "templates", "project");

// Lowest layer first: a file imports only from the layers before its own. (Within cli/oci/,
// its files import one another.)
const LAYERS = [
  [
    "args.ts",
    "kinds.ts",
    "markers.ts",
    "render.ts",
    "sizing.ts",
    "templates/embed.ts",
    "templates/embedded.ts",
  ],
  ["oci/", "project.ts", "envtest.ts", "dashboards.ts"],
  ["discover.ts", "templates.ts", "image.ts"],
  ["webhook_manifests.ts", "sharding_manifests.ts", "init.ts", "build.ts"],
  ["manifests.ts", "create_webhook.ts"],
  ["dev.ts", "create.ts"],
  ["main.ts"],
];

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (path.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** Every import and export specifier of a source file, type-only ones included. */
function specifiers(path: string): string[] {
  const source = readFileSync(path, "utf8");
  const pattern = /(?:^|\n)\s*(?:import|export)\b[^;]*?from\s*"([^"]+)"/g;
  // The embedded template project is data: its files' dynamic imports are in its strings.
  const data = path.endsWith(join("templates", "embedded.ts"));
  return [
    ...[...source.matchAll(pattern)].map((match) => match[1]),
    ...(data ? [] : [...source.matchAll(/import\(\s*"([^"]+)"\s*\)/g)].map((match) => match[1])),
  ];
}

/** The files a file imports by relative path. */
function importedFiles(path: string): string[] {
  return specifiers(path).filter((spec) => spec.startsWith(".")).map((spec) =>
    resolve(dirname(path), spec)
  );
}

const files = walk(CLI).filter((file) => !file.startsWith(`${TEMPLATE_PROJECT}/`));
const name = (file: string) => relative(CLI, file);

/** A file's layer: the index of the entry that names it or its folder. */
function layerOf(file: string): number | undefined {
  const path = name(file);
  const index = LAYERS.findIndex((layer) =>
    layer.some((entry) => entry.endsWith("/") ? path.startsWith(entry) : path === entry)
  );
  return index < 0 ? undefined : index;
}

describe("cli layers", () => {
  it("places every file of cli/ in a layer", () => {
    assert.ok(files.length > 20, `${files.length} files`);
    for (const file of files) {
      assert.notEqual(layerOf(file), undefined, `cli/${name(file)} has no layer in this test`);
    }
  });

  it("imports only from the layers below", () => {
    for (const file of files) {
      for (const target of importedFiles(file)) {
        if (!target.startsWith(`${CLI}/`)) continue; // lib/ sits below the whole CLI
        const inOci = (path: string) => name(path).startsWith("oci/");
        if (inOci(file) && inOci(target)) continue;
        assert.ok(
          layerOf(target)! < layerOf(file)!,
          `cli/${name(file)} imports cli/${name(target)}, which is not in a layer below it`,
        );
      }
    }
  });

  it("has no import cycle between files", () => {
    const graph = new Map(files.map((file) => [file, importedFiles(file)]));
    const done = new Set<string>();
    const visit = (file: string, path: string[]): void => {
      if (path.includes(file)) {
        const cycle = [...path.slice(path.indexOf(file)), file].map(name);
        assert.fail(`import cycle: ${cycle.join(" → ")}`);
      }
      if (done.has(file)) return;
      for (const target of graph.get(file) ?? []) visit(target, [...path, file]);
      done.add(file);
    };
    for (const file of files) visit(file, []);
  });

  it("keeps cli/oci to itself: it imports only its own files and node: built-ins", () => {
    const oci = files.filter((file) => name(file).startsWith("oci/"));
    assert.ok(oci.length > 0);
    for (const file of oci) {
      for (const spec of specifiers(file)) {
        const inside = spec.startsWith(".") &&
          resolve(dirname(file), spec).startsWith(join(CLI, "oci") + "/");
        assert.ok(inside || spec.startsWith("node:"), `cli/${name(file)} imports ${spec}`);
      }
    }
  });

  it("leaves the template project to the renderer: no file of the CLI imports it", () => {
    for (const file of files) {
      for (const target of importedFiles(file)) {
        assert.ok(
          !target.startsWith(`${TEMPLATE_PROJECT}/`),
          `cli/${name(file)} imports the template ${name(target)}`,
        );
      }
    }
  });

  it("is never imported by lib/", () => {
    for (const file of walk(join(ROOT, "lib"))) {
      for (const target of importedFiles(file)) {
        assert.ok(!target.startsWith(`${CLI}/`), `${relative(ROOT, file)} imports the CLI`);
      }
    }
  });
});
