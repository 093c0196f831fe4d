// The documentation is checked like code: every ```ts block of README.md and docs/ type-checks
// (or is still an excerpt of the example it quotes, or the tutorial project's file it writes),
// the API reference builds with no broken link, and README's first lines tell a user how to
// install Rudder.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  brokenLinks,
  checkDocs,
  codeBlocks,
  decodeEntities,
  isExcerpt,
  markdownFiles,
  ROOT,
  tutorialProject,
} from "../../tools/check_docs.ts";
import { TUTORIAL, tutorialActions } from "../../tools/tutorial.ts";

const T = { timeout: 10_000 };
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

describe("check_docs", () => {
  it("finds fenced blocks with their language, info string and line", T, () => {
    const blocks = codeBlocks("x.md", "# x\n\n```ts ignore\nlet a = 1;\n```\n\n```sh\nls\n```\n");
    assert.deepEqual(blocks.map((b) => [b.lang, b.info, b.line, b.code]), [
      ["ts", "ignore", 3, "let a = 1;"],
      ["sh", "", 7, "ls"],
    ]);
  });

  it("accepts an excerpt only when its lines appear together and in order", T, () => {
    const source = "a\n  b\nc\nd\n";
    assert.ok(isExcerpt("  b\nc", source));
    assert.ok(!isExcerpt("b\nc", source)); // indentation counts
    assert.ok(!isExcerpt("a\nc", source));
  });

  it("reports relative links that lead nowhere, and decodes entities first", T, () => {
    const dir = mkdtempSync(join(tmpdir(), "rudder-links-"));
    try {
      mkdirSync(join(dir, "sub"));
      writeFileSync(join(dir, "style.css"), "");
      writeFileSync(
        join(dir, "sub", "page.html"),
        '<a href="..&#x2F;style.css"></a><a href="../missing.html#x"></a>' +
          '<a href="https://example.com/"></a><a href="#top"></a>',
      );
      assert.deepEqual(brokenLinks(dir), ["sub/page.html: ../missing.html#x"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.equal(decodeEntities("a&amp;b&#47;&#x2F;"), "a&b//");
  });

  it("covers README.md and every guide under docs/", T, () => {
    const files = markdownFiles();
    assert.ok(files.includes("README.md"));
    assert.ok(files.includes("docs/tutorial.md"));
    assert.ok(files.includes("docs/coming-from-controller-runtime.md"));
  });
});

describe("the documentation", () => {
  it("has code blocks that type-check and an API reference with no broken link", {
    timeout: 600_000,
  }, () => {
    assert.deepEqual(checkDocs({ api: true }), []);
  });

  it("opens README with what Rudder is and how to install it", T, () => {
    const readme = read("README.md");
    const firstCode = readme.indexOf("```");
    for (const line of ["deno add jsr:@rudder/operator", "bunx jsr add @rudder/operator"]) {
      assert.ok(
        readme.indexOf(line) > 0 && readme.indexOf(line) < readme.indexOf("## Quick start"),
        line,
      );
    }
    assert.ok(firstCode > 0);
  });

  it("links every guide from README", T, () => {
    const readme = read("README.md");
    for (const file of markdownFiles().filter((f) => f.startsWith("docs/"))) {
      assert.ok(readme.includes(`(${file})`), `README links ${file}`);
    }
  });

  it(
    "keeps package.json's exports equal to deno.json's, so Bun resolves the same subpaths",
    T,
    () => {
      assert.deepEqual(
        JSON.parse(read("package.json")).exports,
        JSON.parse(read("deno.json")).exports,
      );
    },
  );
});

describe("tools/tutorial.ts", () => {
  const page = (body: string) => `<!-- tutorial-project: examples/x -->\n${body}`;
  const init = "```sh init\nrudder init demo \\\n  --kind Site # the scaffold\ncd demo\n```\n";

  it("reads init, whole-file blocks and CLI commands, in order", T, () => {
    const actions = tutorialActions(page(
      `${init}\n**\`api/site.ts\`**\n\n\`\`\`ts file=api/site.ts\nexport {};\n\`\`\`\n\n` +
        "```sh run\ndeno task rudder create webhook --kind Site\ndeno task manifests\n```\n\n" +
        "```sh\ndeno task test\n```\n",
    ));
    assert.deepEqual(actions.map(({ line: _, ...action }) => action), [
      { kind: "init", args: ["init", "demo", "--kind", "Site"] },
      { kind: "write", path: "api/site.ts", content: "export {};\n" },
      { kind: "rudder", args: ["create", "webhook", "--kind", "Site"] },
      { kind: "rudder", args: ["manifests"] },
    ]);
  });

  it(
    "refuses a command it cannot run, and a file block whose file the prose does not name",
    T,
    () => {
      assert.throws(() => tutorialActions(page(`${init}\n\`\`\`sh run\nnpm install\n\`\`\`\n`)), {
        message: /cannot run "npm install"/,
      });
      assert.throws(
        () =>
          tutorialActions(page(`${init}\nWrite this:\n\n\`\`\`ts file=a.ts\nexport {};\n\`\`\`\n`)),
        { message: /must name `a.ts`/ },
      );
    },
  );

  it(
    "follows docs/tutorial.md from rudder init, and its file blocks are examples/tutorial's",
    T,
    () => {
      const markdown = read(TUTORIAL);
      const actions = tutorialActions(markdown);
      assert.deepEqual(actions[0].kind === "init" && actions[0].args.slice(0, 2), [
        "init",
        "website-operator",
      ]);
      assert.equal(tutorialProject(markdown), "examples/tutorial");
      const written = new Map<string, string>();
      for (const action of actions) {
        if (action.kind === "write") {
          written.set(action.path, action.content);
        }
      }
      assert.ok(written.has("controllers/website_controller.ts"));
      for (const [path, content] of written) {
        assert.equal(content, read(`examples/tutorial/${path}`), path);
      }
    },
  );
});
