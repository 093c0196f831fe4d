// The example operator and the project `rudder init` writes are one source: the example's
// controller is generated from the scaffold's template (tools/example_operator.ts), and its
// Example resource is the scaffold's plus what only the example shows (a short name, a second
// version and its conversion).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";
import { scaffold } from "../../cli/templates.ts";
import {
  EXAMPLE_DIR,
  EXAMPLE_OPTIONS,
  exampleFiles,
  toCheckoutImports,
} from "../../tools/example_operator.ts";

const ROOT = join(import.meta.dirname!, "..", "..");

function read(path: string): string {
  return readFileSync(join(ROOT, EXAMPLE_DIR, path), "utf8");
}

/** The `export const <name> = defineResource({ … });` declaration in `source`. */
function resourceDeclaration(source: string, name: string): string {
  const match = source.match(
    new RegExp(`^export const ${name} = defineResource\\(\\{\\n[^]*?\\n\\}\\);$`, "m"),
  );
  assert.ok(match, `no defineResource declaration of ${name}`);
  return match[0];
}

describe("the example operator and the scaffold", () => {
  it("has the controller rudder init writes for its kind", () => {
    const generated = exampleFiles();
    assert.ok(generated.size > 0);
    for (const [path, text] of generated) {
      assert.equal(
        read(path),
        text,
        `${EXAMPLE_DIR}/${path} differs from the scaffold's; run deno run -A tools/example_operator.ts`,
      );
    }
  });

  it("declares the scaffold's resource, plus a short name and a second version", () => {
    const files = scaffold(EXAMPLE_OPTIONS, DEPENDENCY_VERSIONS);
    const scaffolded = resourceDeclaration(files.get("api/example.ts")!, "Example");
    const example = resourceDeclaration(read("api/example.ts"), "Example");
    const extras = /^ {2}(shortNames|versions): .*\n/gm;
    assert.deepEqual(
      [...example.matchAll(extras)].map((m) => m[1]),
      ["shortNames", "versions"],
    );
    assert.equal(example.replace(extras, ""), scaffolded);
  });

  it("maps every subpath import to the checkout's file", () => {
    const source = [
      'import { Manager } from "@rudder/operator";',
      'import type { appsv1 } from "@rudder/operator/api";',
      'import { main } from "@rudder/operator/cli";',
    ].join("\n");
    assert.equal(
      toCheckoutImports(source, 1),
      [
        'import { Manager } from "../../../mod.ts";',
        'import type { appsv1 } from "../../../lib/api/mod.ts";',
        'import { main } from "../../../cli/main.ts";',
      ].join("\n"),
    );
    assert.throws(
      () => toCheckoutImports('import { x } from "@rudder/operator/nope";', 0),
      /no subpath nope/,
    );
  });
});
