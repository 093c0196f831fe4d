/**
 * Follows docs/tutorial.md mechanically, as a reader would: it scaffolds the project with the
 * command of step 1, then applies the page's steps in order. The page marks what a reader does
 * in the info strings of its fenced blocks:
 *
 * - ```` ```sh init ```` — the `rudder init` command of step 1. Its arguments (after `init`, up to
 *   the end of the command) are used; `--local <checkout>` is added so the project imports this
 *   checkout instead of the published package.
 * - ```` ```ts file=<path> ```` (any language) — the block is the whole of `<path>`, relative to
 *   the project: create the file, or replace what it held. A reader does not see info strings,
 *   so the last line of prose above the block must name the file too (as `` `<path>` ``).
 * - ```` ```sh run ```` — commands to run in the project, one a line (`#` starts a comment). The
 *   follower understands `deno task rudder <args>` and `deno task manifests [args]` (the CLI)
 *   and refuses any other command, so the page cannot ask for a step the follower skips.
 *
 * Any other block is prose for the reader. The page names the finished project's copy in this
 * repository with an HTML comment, `<!-- tutorial-project: examples/tutorial -->`; the test
 * (tests/integration/tutorial_steps.test.ts) checks that following the page gives those files.
 *
 * Usage: deno run -A tools/tutorial.ts <dir> [--update-example] — follows the page into
 * `<dir>`; `--update-example` then replaces the example with the project's files (those of
 * {@linkcode EXAMPLE_PATHS}).
 *
 * @module
 */

import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import process from "node:process";
import { main } from "../cli/main.ts";
import { codeBlocks, fileTarget, ROOT, tutorialProject } from "./check_docs.ts";

/** The tutorial page, relative to the root. */
export const TUTORIAL = "docs/tutorial.md";

/** One thing a reader does. */
export type TutorialAction =
  | { kind: "init"; args: string[]; line: number }
  | { kind: "write"; path: string; content: string; line: number }
  | { kind: "rudder"; args: string[]; line: number };

/** The words of a shell line: blanks separate them; '…' and "…" group them. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]);
}

/** The commands of a shell block: continuations joined, comments and blank lines dropped. */
function commands(code: string): string[] {
  return code.replace(/\\\n\s*/g, " ").split("\n")
    .map((line) => line.replace(/(^|\s)#.*$/, "").trim())
    .filter((line) => line !== "");
}

/** What a reader of `markdown` does, in order; throws naming the line of a block it cannot follow. */
export function tutorialActions(markdown: string, file = TUTORIAL): TutorialAction[] {
  const actions: TutorialAction[] = [];
  const lines = markdown.split("\n");
  for (const block of codeBlocks(file, markdown)) {
    const where = `${file}:${block.line}`;
    const path = fileTarget(block);
    const flags = block.info.split(/\s+/);
    if (path !== undefined) {
      if (path.startsWith("/") || path.split("/").includes("..")) {
        throw new Error(`${where}: file=${path} must be a path inside the project`);
      }
      // The reader sees no info string: the line above the block must name the file too.
      const above = lines.slice(0, block.line - 1).reverse().find((line) => line.trim() !== "");
      if (!above?.includes(`\`${path}\``)) {
        throw new Error(`${where}: the line above a file=${path} block must name \`${path}\``);
      }
      actions.push({ kind: "write", path, content: `${block.code}\n`, line: block.line });
    } else if (block.lang === "sh" && flags.includes("init")) {
      const command = commands(block.code).find((line) => / init /.test(` ${line} `));
      if (!command) throw new Error(`${where}: an init block needs a rudder init command`);
      const all = words(command);
      actions.push({ kind: "init", args: all.slice(all.indexOf("init")), line: block.line });
    } else if (block.lang === "sh" && flags.includes("run")) {
      for (const command of commands(block.code)) {
        const all = words(command);
        if (all[0] === "deno" && all[1] === "task" && all[2] === "rudder") {
          actions.push({ kind: "rudder", args: all.slice(3), line: block.line });
        } else if (all[0] === "deno" && all[1] === "task" && all[2] === "manifests") {
          actions.push({ kind: "rudder", args: ["manifests", ...all.slice(3)], line: block.line });
        } else {
          throw new Error(`${where}: the follower cannot run "${command}"`);
        }
      }
    }
  }
  if (actions[0]?.kind !== "init") throw new Error(`${file}: the first step must be rudder init`);
  return actions;
}

/** Runs the CLI in-process in `cwd`; throws with its output when it fails. */
async function rudder(args: string[], cwd: string, line: number): Promise<void> {
  let output = "";
  const code = await main(args, {
    out: (text) => (output += `${text}\n`),
    err: (text) => (output += `${text}\n`),
    cwd,
    env: process.env,
  });
  if (code !== 0) {
    throw new Error(`${TUTORIAL}:${line}: rudder ${args.join(" ")} exited ${code}:\n${output}`);
  }
}

/**
 * Follows the tutorial in `dir`: scaffolds the project there (importing this checkout) and
 * applies each step. Returns the project's directory.
 */
export async function followTutorial(dir: string, markdown?: string): Promise<string> {
  const text = markdown ?? readFileSync(join(ROOT, TUTORIAL), "utf8");
  let project = "";
  for (const action of tutorialActions(text)) {
    if (action.kind === "init") {
      await rudder([...action.args, "--local", ROOT], dir, action.line);
      project = resolve(dir, action.args[1]);
    } else if (action.kind === "write") {
      const path = join(project, action.path);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, action.content);
    } else {
      await rudder(action.args, project, action.line);
    }
  }
  return project;
}

/**
 * What the example keeps of a project: the operator's own code, its samples and settings. The
 * rest of a scaffold (deno.json, package.json, Dockerfile, …) names the checkout or the
 * registry it imports, and `config/` besides the samples is what `rudder manifests` writes.
 */
export const EXAMPLE_PATHS = [
  "api/",
  "controllers/",
  "webhooks/",
  "config/samples/",
  "main.ts",
  "tracing.ts",
  "rudder.json",
];

/** The files under `dir` that the example keeps (see {@linkcode EXAMPLE_PATHS}), sorted. */
export function exampleFiles(dir: string): string[] {
  const files: string[] = [];
  const walk = (current: string) => {
    if (!existsSync(current)) return;
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const path = join(current, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(relative(dir, path));
    }
  };
  walk(dir);
  return files
    .filter((file) => EXAMPLE_PATHS.some((p) => p.endsWith("/") ? file.startsWith(p) : file === p))
    .sort();
}

if (import.meta.main) {
  const [dir] = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
  if (!dir) {
    console.error("usage: tools/tutorial.ts <dir> [--update-example]");
    process.exit(2);
  }
  mkdirSync(dir, { recursive: true });
  const project = await followTutorial(resolve(dir));
  console.log(`followed ${TUTORIAL} into ${project}`);
  if (process.argv.includes("--update-example")) {
    const markdown = readFileSync(join(ROOT, TUTORIAL), "utf8");
    const example = join(ROOT, tutorialProject(markdown) ?? "examples/tutorial");
    rmSync(example, { recursive: true, force: true });
    for (const file of exampleFiles(project)) {
      mkdirSync(dirname(join(example, file)), { recursive: true });
      cpSync(join(project, file), join(example, file));
    }
    console.log(`wrote ${relative(ROOT, example)} from the project`);
  }
}
