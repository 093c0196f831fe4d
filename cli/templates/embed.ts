/**
 * Writes `embedded.ts`: the texts of the template project (`project/`) as strings, which the
 * CLI renders. The CLI runs from a checkout, from JSR and from JSR's npm mirror (transpiled to
 * JavaScript), where the template files themselves are not there to read; their texts, embedded,
 * are. A unit test fails when `embedded.ts` differs from the template files.
 *
 * Usage: deno run -A cli/templates/embed.ts
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The template project: ordinary code for the placeholder kind, type-checked with the library. */
export const TEMPLATE_PROJECT: string = fileURLToPath(new URL("./project/", import.meta.url));

/** The module that holds the template texts. */
export const EMBEDDED_MODULE: string = fileURLToPath(new URL("./embedded.ts", import.meta.url));

/** Every file of the template project, by path relative to it, sorted. */
export function templateFiles(dir: string = TEMPLATE_PROJECT): Map<string, string> {
  const paths: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at)) {
      const path = join(at, entry);
      if (statSync(path).isDirectory()) walk(path);
      else paths.push(relative(dir, path));
    }
  };
  walk(dir);
  return new Map(paths.sort().map((path) => [path, readFileSync(join(dir, path), "utf8")]));
}

/** The source of `embedded.ts` for `files`. */
export function embeddedModule(files: Map<string, string>): string {
  return [
    "// Generated from cli/templates/project/ by `deno run -A cli/templates/embed.ts`: edit the",
    "// template files and run it again.",
    "",
    "/** The template project's files, by path relative to it. */",
    "export const TEMPLATE_FILES: Readonly<Record<string, string>> = {",
    ...[...files].map(([path, text]) => `  ${JSON.stringify(path)}: ${JSON.stringify(text)},`),
    "};",
    "",
  ].join("\n");
}

if (import.meta.main) {
  writeFileSync(EMBEDDED_MODULE, embeddedModule(templateFiles()));
  // As deno fmt lays it out, so that `deno fmt --check` passes over the checkout.
  spawnSync(process.execPath, ["fmt", "--quiet", EMBEDDED_MODULE], { stdio: "inherit" });
  console.log(`wrote ${relative(process.cwd(), EMBEDDED_MODULE)}`);
}
