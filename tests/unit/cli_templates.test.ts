// The scaffold's templates: cli/templates/project/ is ordinary code for Memcached (deno check
// type-checks it with the rest of cli/), the CLI renders the texts embedded from it, and what it
// renders is laid out as deno fmt lays it out, for short and long names alike.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { spawnSync } from "node:child_process";
import { DEPENDENCY_VERSIONS } from "../../cli/init.ts";
import { runtimeExecutable } from "../../cli/project.ts";
import { renderTemplate, type TemplateFlags } from "../../cli/render.ts";
import { TEMPLATE_FILES } from "../../cli/templates/embedded.ts";
import { templateFiles } from "../../cli/templates/embed.ts";
import { apiFiles, scaffold, webhookFiles } from "../../cli/templates.ts";
import { MEMCACHED, useScratch } from "../support/cli_main.ts";

const T = { timeout: 60_000 };
const scratch = useScratch("rudder-templates-test-");

function render(template: string, flags: TemplateFlags = {}, replacements = {}): string {
  return renderTemplate(template, { replacements, flags });
}

describe("the template project", () => {
  it("is what the CLI embeds", () => {
    assert.deepEqual(
      Object.entries(TEMPLATE_FILES),
      [...templateFiles()],
      "cli/templates/embedded.ts differs from cli/templates/project/; run " +
        "deno run -A cli/templates/embed.ts",
    );
  });

  it("is rendered into the scaffold as a whole, with no template marker left", () => {
    const files = scaffold({ ...MEMCACHED, webhooks: true }, DEPENDENCY_VERSIONS);
    for (const path of Object.keys(TEMPLATE_FILES)) {
      assert.ok(files.has(path), `the scaffold has no ${path}`);
    }
    for (const [path, text] of files) assert.doesNotMatch(text, /\+rudder:template:/, path);
  });

  it("renders as itself for Memcached with everything on, but for its template markers", () => {
    const files = scaffold({ ...MEMCACHED, webhooks: true }, DEPENDENCY_VERSIONS);
    const unmarked = (text: string) => text.replace(/^.*\+rudder:template:.*\n/gm, "");
    // These two also hold the lines of other choices: without webhooks, or with only one.
    const alternatives = ["main.ts", "webhooks/memcached_webhook.ts"];
    const differing = Object.entries(TEMPLATE_FILES).filter(([path, text]) =>
      !alternatives.includes(path) && unmarked(text) !== files.get(path)
    );
    assert.deepEqual(differing.map(([path]) => path), []);
  });
});

describe("renderTemplate", () => {
  it("keeps the lines of a block whose condition holds, and drops the markers", () => {
    const template = [
      "a",
      "// +rudder:template:if one && !two",
      "b",
      "  // +rudder:template:if two",
      "c",
      "  // +rudder:template:end",
      "// +rudder:template:end",
      " * +rudder:template:if two",
      " * d",
      " * +rudder:template:end",
      "e",
      "",
    ].join("\n");
    assert.equal(render(template, { one: true, two: false }), "a\nb\ne\n");
    assert.equal(render(template, { one: true, two: true }), "a\n * d\ne\n");
    assert.equal(render(template, { one: false, two: false }), "a\ne\n");
  });

  it("puts the line of a `without` marker in place of the next when the flag is off", () => {
    const template = "{\n  // +rudder:template:without extra: run(a);\n  run(a, extra);\n}\n";
    assert.equal(render(template, { extra: false }), "{\n  run(a);\n}\n");
    assert.equal(render(template, { extra: true }), "{\n  run(a, extra);\n}\n");
  });

  it("refuses an unknown flag or marker and an unbalanced block", () => {
    assert.throws(() => render("// +rudder:template:if nope\n// +rudder:template:end\n"), /nope/);
    assert.throws(() => render("// +rudder:template:iff x\n", { x: true }), /unknown marker/);
    assert.throws(() => render("// +rudder:template:if x\n", { x: true }), /without end/);
    assert.throws(() => render("// +rudder:template:end\n"), /end without if/);
  });

  it("replaces the placeholders in one pass, the longest first", () => {
    const replacements = { Memcached: "Cache", memcached: "cache", "memcached-operator": "op" };
    assert.equal(
      render("Memcached memcached memcached-operator MemcachedList\n", {}, replacements),
      "Cache cache op CacheList\n",
    );
    assert.equal(render("ab\n", {}, { a: "b", b: "c" }), "bc\n");
  });

  it("keeps the imported names still used, sorted, and drops an import left empty", () => {
    const template = [
      'import { Zed, alpha, type Beta, unused } from "./x.ts";',
      'import { gone } from "./y.ts";',
      'import type { T } from "./t.ts";',
      "",
      "export const v: Beta & T = alpha(Zed);",
      "",
    ].join("\n");
    assert.equal(
      render(template),
      [
        'import { alpha, type Beta, Zed } from "./x.ts";',
        'import type { T } from "./t.ts";',
        "",
        "export const v: Beta & T = alpha(Zed);",
        "",
      ].join("\n"),
    );
  });

  it("breaks the lines that outgrow the line width as deno fmt does, and no comment", () => {
    const long = "A".repeat(60);
    const comment = `// ${long} ${long}\n`;
    assert.equal(render(comment), comment);
    assert.equal(
      render(`    const x = await get(${long}, req).catch(ignoreNotFound);\n`),
      `    const x = await get(${long}, req).catch(\n      ignoreNotFound,\n    );\n`,
    );
    assert.equal(
      render(`      validateCreate: (x) => validate${long}(x, "a, (b)"),\n`),
      `      validateCreate: (x) =>\n        validate${long}(x, "a, (b)"),\n`,
    );
    assert.equal(
      render(`export type ${long} = ObjectOf<typeof ${long}>;\n`),
      `export type ${long} = ObjectOf<\n  typeof ${long}\n>;\n`,
    );
    assert.equal(
      render(`type ${long} = Make<(a: A) => B, typeof ${long}>;\n`),
      `type ${long} = Make<\n  (a: A) => B,\n  typeof ${long}\n>;\n`,
    );
    assert.equal(
      render(`import { ${long}, b${long} } from "./x.ts";\nuse(${long});\nuse(b${long});\n`),
      `import {\n  ${long},\n  b${long},\n} from "./x.ts";\nuse(${long});\nuse(b${long});\n`,
    );
  });

  it("removes the blank lines a dropped block leaves where deno fmt has none", () => {
    const template = [
      "f({",
      "// +rudder:template:if x",
      "  a,",
      "// +rudder:template:end",
      "",
      "  b,",
      "",
      "// +rudder:template:if x",
      "  c,",
      "// +rudder:template:end",
      "",
      "});",
      "",
    ].join("\n");
    assert.equal(render(template, { x: false }), "f({\n  b,\n});\n");
    assert.equal(render(template, { x: true }), "f({\n  a,\n\n  b,\n\n  c,\n});\n");
  });
});

describe("the rendered scaffold", () => {
  it("is as deno fmt lays it out, for kinds and groups of up to 40 characters", T, () => {
    const dir = scratch();
    writeFileSync(join(dir, "deno.json"), '{ "fmt": { "lineWidth": 100 } }\n');
    const parts = [
      { defaulting: true, validation: true },
      { defaulting: true, validation: false },
      { defaulting: false, validation: true },
    ];
    let n = 0;
    for (const kind of ["Memcached", "CertificateSigningRequestPolicy", "V".repeat(40)]) {
      const group = kind === "Memcached" ? "cache.example.com" : "k".repeat(28) + ".example.com";
      const options = { ...MEMCACHED, kind, group, webhooks: true };
      const files = [
        ...scaffold(options, DEPENDENCY_VERSIONS),
        ...apiFiles({ ...options, kind: `${kind}B` }, [{ kind, file: "api/a.ts" }]),
        ...parts.flatMap((p) => [...webhookFiles(options, p, "api/v1/types.ts")]),
      ];
      for (const [path, content] of files) {
        if (!path.endsWith(".ts")) continue;
        const target = join(dir, `${n++}`, path);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, content);
      }
    }
    const deno = runtimeExecutable("deno", process.env);
    const result = spawnSync(deno, ["fmt", "--check", "."], { cwd: dir, encoding: "utf8" });
    assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
  });
});
