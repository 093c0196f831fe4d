/**
 * The example operator's controller is the one `rudder init` writes, for its Example kind: this
 * writes `examples/example-operator/controllers/example_controller.ts` from the scaffold's
 * template, with the package's specifiers mapped to the checkout's files. A unit test
 * (`tests/unit/example_scaffold.test.ts`) fails when the two differ.
 *
 * Usage: deno run -A tools/example_operator.ts
 *
 * @module
 */

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEPENDENCY_VERSIONS } from "../cli/init.ts";
import { scaffold, type ScaffoldOptions, SUBPATH_FILES } from "../cli/templates.ts";
import { ROOT } from "./setup.ts";

/** The scaffold options the example operator corresponds to. */
export const EXAMPLE_OPTIONS: ScaffoldOptions = {
  name: "example-operator",
  group: "example.com",
  version: "v1alpha1",
  kind: "Example",
  webhooks: true,
};

/** The example operator's directory, relative to the checkout. */
export const EXAMPLE_DIR = "examples/example-operator";

/** The generated files of the example, relative to {@linkcode EXAMPLE_DIR}. */
export const GENERATED = ["controllers/example_controller.ts", "tracing.ts"];

/**
 * `source` (a scaffold file at `depth` directories below the project) with `@rudder/operator`
 * imports pointing into the checkout, as the example (three levels below it) imports them.
 */
export function toCheckoutImports(source: string, depth: number): string {
  const up = "../".repeat(depth + 2);
  return source.replace(
    /from "@rudder\/operator(?:\/([a-z]+))?";/g,
    (match, sub: string | undefined) => {
      if (sub === undefined) return `from "${up}mod.ts";`;
      const file = SUBPATH_FILES[sub];
      if (file === undefined) throw new Error(`no subpath ${sub} in: ${match}`);
      return `from "${up}${file}";`;
    },
  );
}

/** The generated files of the example, by path relative to {@linkcode EXAMPLE_DIR}. */
export function exampleFiles(): Map<string, string> {
  const files = scaffold(EXAMPLE_OPTIONS, DEPENDENCY_VERSIONS);
  return new Map(GENERATED.map((path) => {
    const text = files.get(path);
    if (text === undefined) throw new Error(`the scaffold has no ${path}`);
    return [path, toCheckoutImports(text, path.split("/").length - 1)];
  }));
}

if (import.meta.main) {
  for (const [path, text] of exampleFiles()) {
    writeFileSync(join(ROOT, EXAMPLE_DIR, path), text);
    console.log(`wrote ${EXAMPLE_DIR}/${path}`);
  }
}
