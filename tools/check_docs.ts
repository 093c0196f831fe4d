/**
 * Checks the documentation: every ```ts block of README.md and docs/**\/*.md type-checks, and
 * the API reference builds with no broken relative link.
 *
 * - A ```ts block is written to a file under `.docs-check/` and checked with `deno check`; it
 *   imports Rudder as users do (`@rudder/operator`, `@rudder/operator/client`, …), which resolves
 *   to this checkout through deno.json's `name` and `exports`.
 * - A ```ts block whose info string has `from=<path>` is an excerpt of that file: its lines must
 *   appear in it, in order and together. The file itself is type-checked (and run by the tests).
 * - A block whose info string has `file=<path>` (any language) is a whole file of the project a
 *   step-by-step page builds (docs/tutorial.md; tools/tutorial.ts follows it). The page names
 *   the finished project's copy, `<!-- tutorial-project: <dir> -->`, and the last block for each
 *   path must be that file of the copy, byte for byte; the copy's TypeScript is type-checked.
 * - A ```ts ignore block is skipped: it shows code that cannot compile yet (say, an API that is
 *   still to land) and says so in the prose around it.
 * - `--api` also builds the reference with `deno doc --html` into docs/api/ and checks that
 *   every relative link and asset in it exists.
 *
 * Usage: deno run -A tools/check_docs.ts [--api]; exits 1 naming each problem.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { runtimeExecutable } from "../cli/project.ts";

/** The repository root. */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SCRATCH = join(ROOT, ".docs-check");
const API_DIR = join(ROOT, "docs", "api");

/** Deno, which does the checking even when this module runs on Bun. */
function deno(): string {
  return "Deno" in globalThis ? process.execPath : runtimeExecutable("deno", process.env);
}

/** A fenced code block of a Markdown file. */
export interface CodeBlock {
  /** The Markdown file, relative to the root. */
  file: string;
  /** The line of the opening fence (1-based). */
  line: number;
  /** The fence's language word, e.g. `ts`. */
  lang: string;
  /** The rest of the info string, e.g. `ignore` or `from=examples/x.ts`. */
  info: string;
  /** The block's text. */
  code: string;
}

/** Every fenced block of `markdown`. */
export function codeBlocks(file: string, markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^(\s*)(`{3,})(\S*)\s*(.*)$/);
    if (!open) continue;
    const [, indent, fence, lang, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      if (lines[j].trimStart().startsWith(fence) && lines[j].trim() === fence) break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j]);
    }
    blocks.push({ file, line: i + 1, lang, info: info.trim(), code: body.join("\n") });
    i = j;
  }
  return blocks;
}

/** README.md and every Markdown file under docs/ (the generated reference left out). */
export function markdownFiles(root = ROOT): string[] {
  const files = ["README.md"];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (path !== join(root, "docs", "api")) walk(path);
      } else if (entry.name.endsWith(".md")) files.push(relative(root, path));
    }
  };
  walk(join(root, "docs"));
  return files.sort();
}

/** The `from=` path of a block, if any. */
function excerptSource(block: CodeBlock): string | undefined {
  return block.info.match(/(?:^|\s)from=(\S+)/)?.[1];
}

/** The `file=` path of a block, if any: the block is that whole file of a tutorial's project. */
export function fileTarget(block: Pick<CodeBlock, "info">): string | undefined {
  return block.info.match(/(?:^|\s)file=(\S+)/)?.[1];
}

/** The directory of the finished project's copy that a page names, if it names one. */
export function tutorialProject(markdown: string): string | undefined {
  return markdown.match(/<!--\s*tutorial-project:\s*(\S+)\s*-->/)?.[1];
}

/** Problems of a page's `file=` blocks: the last block for each path must be the copy's file. */
function checkFileBlocks(
  file: string,
  markdown: string,
  blocks: CodeBlock[],
  sources: Set<string>,
  root: string,
): string[] {
  const last = new Map<string, CodeBlock>();
  for (const block of blocks) {
    const path = fileTarget(block);
    if (path !== undefined) last.set(path, block);
  }
  if (last.size === 0) return [];
  const project = tutorialProject(markdown);
  if (!project) {
    return [`${file}: file= blocks need <!-- tutorial-project: <dir> --> naming the project`];
  }
  const problems: string[] = [];
  for (const [path, block] of last) {
    const copy = join(root, project, path);
    if (!existsSync(copy)) {
      problems.push(`${file}:${block.line}: ${project}/${path} does not exist`);
    } else if (readFileSync(copy, "utf8") !== `${block.code}\n`) {
      problems.push(
        `${file}:${block.line}: the block is not ${project}/${path} (tools/tutorial.ts)`,
      );
    } else if (path.endsWith(".ts")) sources.add(join(project, path));
  }
  return problems;
}

/** Whether `excerpt`'s lines appear in `source`, together and in order (indentation kept). */
export function isExcerpt(excerpt: string, source: string): boolean {
  const want = excerpt.replace(/\n+$/, "").split("\n");
  const have = source.split("\n");
  for (let start = 0; start + want.length <= have.length; start++) {
    if (want.every((line, k) => have[start + k] === line)) return true;
  }
  return false;
}

/** Problems with the code blocks of `files`: excerpts that drifted, blocks that do not check. */
export function checkCodeBlocks(files: string[], root = ROOT): string[] {
  const problems: string[] = [];
  rmSync(SCRATCH, { recursive: true, force: true });
  mkdirSync(SCRATCH, { recursive: true });
  const toCheck = new Map<string, CodeBlock>(); // scratch file → its block
  const sources = new Set<string>();
  try {
    for (const file of files) {
      const markdown = readFileSync(join(root, file), "utf8");
      const blocks = codeBlocks(file, markdown);
      problems.push(...checkFileBlocks(file, markdown, blocks, sources, root));
      for (const block of blocks) {
        if (fileTarget(block) !== undefined) continue;
        if (!["ts", "typescript"].includes(block.lang)) continue;
        if (/(^|\s)ignore(\s|$)/.test(block.info)) continue;
        const from = excerptSource(block);
        if (from) {
          const path = join(root, from);
          if (!existsSync(path)) {
            problems.push(`${file}:${block.line}: from=${from} does not exist`);
          } else if (!isExcerpt(block.code, readFileSync(path, "utf8"))) {
            problems.push(`${file}:${block.line}: the block is no longer an excerpt of ${from}`);
          } else sources.add(from);
          continue;
        }
        const name = `${file.replace(/[^A-Za-z0-9]+/g, "_")}_L${block.line}.ts`;
        writeFileSync(join(SCRATCH, name), `${block.code}\n`);
        toCheck.set(name, block);
      }
    }
    const targets = [...[...toCheck.keys()].map((name) => join(SCRATCH, name)), ...sources];
    if (targets.length > 0) {
      const result = spawnSync(deno(), ["check", "--quiet", ...targets], {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, NO_COLOR: "1" },
      });
      if (result.status !== 0) {
        // Name the Markdown line of each failing block rather than the scratch file.
        let output = `${result.stdout}${result.stderr}`;
        for (const [name, block] of toCheck) {
          output = output.replaceAll(
            `file://${join(SCRATCH, name)}`,
            `${block.file} (block at line ${block.line}), line`,
          );
        }
        problems.push(`deno check failed:\n${output.trim()}`);
      }
    }
  } finally {
    rmSync(SCRATCH, { recursive: true, force: true });
  }
  return problems;
}

/** The files `deno doc` documents: every export of deno.json. */
export function exportFiles(root = ROOT): string[] {
  const config = JSON.parse(readFileSync(join(root, "deno.json"), "utf8"));
  return Object.values(config.exports as Record<string, string>);
}

/** Builds docs/api/ with `deno doc --html`; returns deno's output when it fails. */
export function buildApiReference(root = ROOT): string | undefined {
  rmSync(API_DIR, { recursive: true, force: true });
  mkdirSync(API_DIR, { recursive: true });
  const result = spawnSync(
    deno(),
    ["doc", "--html", "--name=@rudder/operator", `--output=${API_DIR}`, ...exportFiles(root)],
    { cwd: root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } },
  );
  return result.status === 0 ? undefined : `${result.stdout}${result.stderr}`;
}

/** The text of an HTML attribute value: numeric and the common named entities decoded. */
export function decodeEntities(value: string): string {
  const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
  return value.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, entity: string) => {
    if (entity[0] !== "#") return named[entity.toLowerCase()] ?? whole;
    const code = entity[1].toLowerCase() === "x"
      ? parseInt(entity.slice(2), 16)
      : parseInt(entity.slice(1), 10);
    return String.fromCodePoint(code);
  });
}

/** Relative links and assets of the generated HTML under `dir` that point at nothing. */
export function brokenLinks(dir = API_DIR): string[] {
  const broken: string[] = [];
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) {
        walk(path);
        continue;
      }
      if (!entry.name.endsWith(".html")) continue;
      const html = readFileSync(path, "utf8");
      for (const match of html.matchAll(/\b(?:href|src)="([^"]*)"/g)) {
        const link = decodeEntities(match[1]);
        if (link === "" || /^([a-z][a-z0-9+.-]*:|#|\/\/)/i.test(link)) continue;
        const target = decodeURIComponent(link.split("#")[0].split("?")[0]);
        if (target === "") continue;
        if (!existsSync(resolve(dirname(path), target))) {
          broken.push(`${relative(dir, path)}: ${link}`);
        }
      }
    }
  };
  if (existsSync(dir)) walk(dir);
  return [...new Set(broken)];
}

/** Relative links of the Markdown `files` whose target does not exist. */
export function brokenMarkdownLinks(files: string[], root = ROOT): string[] {
  const broken: string[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), "utf8").replace(/```[^]*?```/g, "");
    for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = match[1];
      if (/^([a-z][a-z0-9+.-]*:|#)/i.test(link)) continue;
      const target = decodeURIComponent(link.split("#")[0]);
      if (!existsSync(resolve(root, dirname(file), target))) broken.push(`${file}: ${link}`);
    }
  }
  return broken;
}

/** Runs every check; returns the problems found. */
export function checkDocs(options: { api?: boolean } = {}): string[] {
  const files = markdownFiles();
  const problems = [
    ...brokenMarkdownLinks(files).map((link) => `broken link in ${link}`),
    ...checkCodeBlocks(files),
  ];
  if (options.api) {
    const failed = buildApiReference();
    if (failed) problems.push(`deno doc --html failed:\n${failed}`);
    else problems.push(...brokenLinks().map((link) => `docs/api: broken link ${link}`));
  }
  return problems;
}

if (import.meta.main) {
  const api = process.argv.includes("--api");
  const problems = checkDocs({ api });
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) process.exit(1);
  console.log(
    `docs: every code block checks${api ? "; docs/api/ built with no broken link" : ""}`,
  );
}
