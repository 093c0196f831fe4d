/**
 * Turns a template of `templates/project/` into the file a new project gets. A template is
 * ordinary TypeScript for a placeholder kind (see {@linkcode renderTemplate}), which `deno check`
 * type-checks against the library like any other file of the checkout. Rendering it:
 *
 * 1. keeps or drops the lines between `+rudder:template:if <condition>` and
 *    `+rudder:template:end` (a condition is flags joined by `&&`, each maybe negated with `!`),
 *    and puts `<line>` in place of the line after `+rudder:template:without <flag>: <line>`
 *    when the flag is off; those marker lines go;
 * 2. replaces the placeholders in one pass, so that no replacement is replaced again;
 * 3. drops the imported names the file no longer uses, sorts the others and lays each import
 *    out as deno fmt does;
 * 4. breaks the lines the replacements made longer than deno fmt's width as deno fmt breaks
 *    them, and removes the blank lines a dropped block leaves where deno fmt allows none.
 *
 * The result is what deno fmt would write, so a new project passes `deno fmt --check` (a unit
 * test checks kinds and groups of up to 40 characters).
 *
 * @module
 */

/** deno fmt's line width in a scaffold (its deno.json's `fmt.lineWidth`). */
export const LINE_WIDTH = 100;

/** The on/off switches of a template's optional parts, by name. */
export type TemplateFlags = Readonly<Record<string, boolean>>;

/** What a template is rendered with. */
export interface RenderOptions {
  /** Each placeholder of the template and its replacement. */
  replacements: Readonly<Record<string, string>>;
  /** The flags its conditions name; a condition naming another flag is an error. */
  flags: TemplateFlags;
}

/** A marker line of a template: in a `//` comment or a line of a `/** … *\/` comment. */
const DIRECTIVE = /^(\s*)(?:\/\/|\*)\s*\+rudder:template:(\w+)(?:\s+(.*?))?\s*$/;

/** A template's text rendered with `options` (see the module's documentation). */
export function renderTemplate(template: string, options: RenderOptions): string {
  const selected = selectLines(template, options.flags).join("\n");
  const replaced = replacePlaceholders(selected, options.replacements);
  return layOut(tidyImports(replaced));
}

/** Whether `condition` (`a && !b`) holds for `flags`. */
function holds(condition: string, flags: TemplateFlags): boolean {
  return condition.split("&&").every((term) => {
    const negated = term.trim().startsWith("!");
    const name = term.trim().replace(/^!/, "");
    if (!(name in flags)) throw new Error(`a template condition names an unknown flag: ${name}`);
    return flags[name] !== negated;
  });
}

/** The lines of a template that its flags keep, its markers resolved. */
function selectLines(template: string, flags: TemplateFlags): string[] {
  const kept: string[] = [];
  const open: boolean[] = []; // the conditions of the blocks around the current line
  let replacement: string | undefined;
  for (const line of template.split("\n")) {
    const directive = line.match(DIRECTIVE);
    const active = open.every((held) => held);
    if (!directive) {
      if (active) {
        kept.push(replacement ?? line);
        replacement = undefined;
      }
      continue;
    }
    const [, indent, name, argument = ""] = directive;
    if (name === "if") {
      open.push(holds(argument, flags));
    } else if (name === "end") {
      if (open.length === 0) throw new Error("a template has +rudder:template:end without if");
      open.pop();
    } else if (name === "without") {
      const [, flag, text] = argument.match(/^(\w+): (.*)$/) ?? [];
      if (flag === undefined) throw new Error(`a template has a malformed marker: ${line.trim()}`);
      if (active && !holds(flag, flags)) replacement = `${indent}${text}`;
    } else {
      throw new Error(`a template has an unknown marker: ${line.trim()}`);
    }
  }
  if (open.length > 0) throw new Error("a template has +rudder:template:if without end");
  return kept;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `text` with every placeholder replaced, longest first, in one pass. */
function replacePlaceholders(text: string, replacements: Readonly<Record<string, string>>): string {
  const placeholders = Object.keys(replacements).sort((a, b) => b.length - a.length);
  if (placeholders.length === 0) return text;
  const pattern = new RegExp(placeholders.map(escapeRegExp).join("|"), "g");
  return text.replace(pattern, (placeholder) => replacements[placeholder]);
}

/** Imported names as deno fmt orders them: by name, ignoring case and a `type` keyword. */
function compareImportNames(a: string, b: string): number {
  const key = (name: string) => name.replace(/^type\s+/, "").toLowerCase();
  return key(a).localeCompare(key(b));
}

/** An import of `names` as deno fmt writes it: on one line if it fits, else a name per line. */
export function importStatement(names: string[], from: string, typeOnly = false): string {
  const head = typeOnly ? "import type {" : "import {";
  const line = `${head} ${names.join(", ")} } from "${from}";`;
  if (line.length <= LINE_WIDTH) return line;
  return [head, ...names.map((name) => `  ${name},`), `} from "${from}";`].join("\n");
}

/** A named import (`import { … } from "…";`, on one line or several). */
const NAMED_IMPORT = /^import (type )?\{([^}]*)\} from "([^"]+)";$/gm;

/**
 * `source` with each named import reduced to the names the rest of the file mentions (an import
 * left with none goes), sorted and laid out as deno fmt does.
 */
function tidyImports(source: string): string {
  const rest = source.replace(NAMED_IMPORT, "");
  const mentioned = (name: string) =>
    new RegExp(`\\b${escapeRegExp(name.replace(/^type\s+/, ""))}\\b`).test(rest);
  const dropped = "\u0000"; // marks the line of an import that goes
  const tidied = source.replace(NAMED_IMPORT, (_, typeOnly: string | undefined, list, from) => {
    const names = list.split(",").map((name: string) => name.trim())
      .filter((name: string) => name !== "" && mentioned(name))
      .sort(compareImportNames);
    return names.length === 0 ? dropped : importStatement(names, from, typeOnly !== undefined);
  });
  return tidied.replaceAll(`${dropped}\n`, "");
}

/** Whether a line is (part of) a comment, which deno fmt leaves as it is. */
function isComment(line: string): boolean {
  return /^\s*(\/\/|\/\*|\*)/.test(line);
}

/**
 * The top-level bracketed groups of a line of code, as the offsets of their opening and closing
 * brackets: `()`, `[]`, `{}`, and the `<>` of type arguments (a `<` right after a name); brackets
 * in string literals do not count.
 */
function topLevelGroups(line: string): { open: number; close: number }[] {
  const groups: { open: number; close: number }[] = [];
  const closers: string[] = []; // the closing bracket each open group waits for
  let quote: string | undefined;
  let start = -1;
  for (let i = 0; i < line.length; i++) {
    const char = line[i];
    const opens = "([{".includes(char) || (char === "<" && /\w/.test(line[i - 1] ?? ""));
    if (quote) {
      if (char === "\\") i++;
      else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'" || char === "`") {
      quote = char;
    } else if (opens) {
      if (closers.length === 0) start = i;
      closers.push({ "(": ")", "[": "]", "{": "}", "<": ">" }[char]!);
    } else if (char === closers.at(-1) && !(char === ">" && line[i - 1] === "=")) {
      closers.pop();
      if (closers.length === 0) groups.push({ open: start, close: i });
    }
  }
  return groups;
}

/** The comma-separated items of `list` (commas in nested brackets or strings do not split). */
function splitItems(list: string): string[] {
  const items: string[] = [];
  let from = 0;
  const groups = topLevelGroups(list);
  for (let i = 0; i < list.length; i++) {
    if (list[i] === "," && !groups.some(({ open, close }) => open < i && i < close)) {
      items.push(list.slice(from, i).trim());
      from = i + 1;
    }
  }
  items.push(list.slice(from).trim());
  return items.filter((item) => item !== "");
}

/**
 * A line of code too long for deno fmt, broken as deno fmt breaks it: an arrow function's body
 * on the next line, or else the arguments (or parameters, or type arguments) of the line's last
 * call one per line.
 */
function breakLine(line: string): string {
  const indent = line.match(/^\s*/)![0];
  const groups = topLevelGroups(line);
  const outside = (at: number) => !groups.some(({ open, close }) => open < at && at < close);
  const arrow = [...line.matchAll(/ => /g)].find((match) => outside(match.index))?.index;
  if (arrow !== undefined && !line.endsWith("{")) {
    return `${line.slice(0, arrow + 3)}\n${indent}  ${line.slice(arrow + 4)}`;
  }
  const last = groups.filter(({ open }) => "(<".includes(line[open])).at(-1);
  if (!last) return line;
  const items = splitItems(line.slice(last.open + 1, last.close));
  if (items.length === 0) return line;
  // deno fmt ends a broken list of arguments with a comma, not one of type arguments.
  const comma = line[last.open] === "(" ? "," : "";
  return [
    line.slice(0, last.open + 1),
    ...items.map((item, i) => `${indent}  ${item}${i < items.length - 1 ? "," : comma}`),
    `${indent}${line.slice(last.close)}`,
  ].join("\n");
}

/**
 * `source` with the code lines longer than {@linkcode LINE_WIDTH} broken, and without the blank
 * lines deno fmt removes: repeated ones, and those after an opening or before a closing bracket.
 */
function layOut(source: string): string {
  const lines = source.split("\n").flatMap((line) =>
    line.length > LINE_WIDTH && !isComment(line) ? breakLine(line).split("\n") : [line]
  );
  const kept: string[] = [];
  lines.forEach((line, i) => {
    const before = kept.at(-1);
    const after = lines[i + 1];
    const blank = line === "";
    // The last line is the empty one after the file's final newline.
    if (blank && after !== undefined) {
      if (before === undefined || before === "" || /[([{]$/.test(before)) return;
      if (after === "" || /^\s*[)\]}]/.test(after)) return;
    }
    kept.push(line);
  });
  return kept.join("\n");
}
