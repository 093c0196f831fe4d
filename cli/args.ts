/**
 * What every command shares: its declaration (flags, positionals, help text), strict parsing
 * with `node:util`'s `parseArgs`, usage errors (exit code 2) and the I/O a command writes to.
 *
 * @module
 */

import process from "node:process";
import { parseArgs } from "node:util";

/** Exit code of a usage error (unknown command or flag, missing argument), as in most CLIs. */
export const USAGE_EXIT_CODE = 2;

/** A mistake in how the command was called: reported with the command's usage, exit code 2. */
export class UsageError extends Error {
  /** The command the mistake belongs to, for the hint that follows. */
  readonly command?: string;

  /** `command` is the command the mistake belongs to, for the hint that follows. */
  constructor(message: string, command?: string) {
    super(message);
    this.command = command;
    this.name = "UsageError";
  }
}

/** Where a command writes and what it runs in; tests pass their own. */
export interface CommandIO {
  /** Writes to standard output (a line per call, newline added). */
  out(line: string): void;
  /** Writes to standard error (a line per call, newline added). */
  err(line: string): void;
  /** The directory relative paths start from. */
  cwd: string;
  /** Environment variables. */
  env: Record<string, string | undefined>;
}

/** The process's own I/O. */
export function processIO(): CommandIO {
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    cwd: process.cwd(),
    env: process.env,
  };
}

/** One flag of a command. */
export interface FlagSpec {
  /** `string` takes a value; `boolean` does not. */
  type: "string" | "boolean";
  /** May be given more than once (values collect in an array). */
  multiple?: boolean;
  /** One-letter alias. */
  short?: string;
  /** The value's placeholder in help, e.g. `<path>`. */
  value?: string;
  /** One line of help. */
  description: string;
}

/** A command: its name, help and flags, and what it does. */
export interface CommandSpec {
  /** The word after `rudder`. */
  name: string;
  /** One line saying what it does. */
  summary: string;
  /** Positional arguments, e.g. `["<dir>"]`; a leading `[` marks an optional one. */
  positionals: string[];
  /** Flags by long name (without `--`); `help` is added to every command. */
  flags: Record<string, FlagSpec>;
  /** Lines of extra explanation after the flags. */
  details?: string[];
  /** Example invocations (shown under "Examples:"). */
  examples: string[];
}

/** Flags and positionals as `parseArgs` gives them. */
export interface ParsedArgs {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

const HELP_FLAG: FlagSpec = { type: "boolean", short: "h", description: "Show this help." };

/** The help text of a command. */
export function helpText(spec: CommandSpec): string {
  const flags = { ...spec.flags, help: HELP_FLAG };
  const rows = Object.entries(flags).map(([name, flag]) => {
    const short = flag.short ? `-${flag.short}, ` : "    ";
    const value = flag.type === "string" ? ` ${flag.value ?? "<value>"}` : "";
    const repeat = flag.multiple ? " (repeatable)" : "";
    return [`  ${short}--${name}${value}`, `${flag.description}${repeat}`];
  });
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  const usage = [`rudder ${spec.name}`, ...spec.positionals, "[flags]"].join(" ");
  return [
    `rudder ${spec.name}: ${spec.summary}`,
    "",
    `Usage: ${usage}`,
    "",
    "Flags:",
    ...rows.map(([left, right]) => `${left.padEnd(width)}${right}`),
    ...(spec.details ? ["", ...spec.details] : []),
    "",
    "Examples:",
    ...spec.examples.map((example) => `  ${example}`),
  ].join("\n");
}

/**
 * Parses a command's arguments strictly: an unknown flag, a missing value or a stray
 * positional is a {@linkcode UsageError} naming it. `undefined` means `--help` was asked.
 */
export function parseCommandArgs(spec: CommandSpec, args: string[]): ParsedArgs | undefined {
  const options: Record<
    string,
    { type: "string" | "boolean"; multiple?: boolean; short?: string }
  > = {};
  for (const [name, flag] of Object.entries({ ...spec.flags, help: HELP_FLAG })) {
    options[name] = {
      type: flag.type,
      ...(flag.multiple ? { multiple: true } : {}),
      ...(flag.short ? { short: flag.short } : {}),
    };
  }
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: true }) as ParsedArgs;
  } catch (err) {
    throw new UsageError(describeParseError(err, spec), spec.name);
  }
  if (parsed.values.help) return undefined;
  const required = spec.positionals.filter((p) => !p.startsWith("[")).length;
  const allowed = spec.positionals.length;
  if (parsed.positionals.length < required) {
    const missing = spec.positionals[parsed.positionals.length];
    throw new UsageError(`missing argument ${missing}`, spec.name);
  }
  if (parsed.positionals.length > allowed) {
    throw new UsageError(`unexpected argument "${parsed.positionals[allowed]}"`, spec.name);
  }
  return parsed;
}

/** Turns `parseArgs`' errors, which differ slightly between runtimes, into short messages. */
function describeParseError(err: unknown, spec: CommandSpec): string {
  const message = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: string }).code;
  const quoted = message.match(/'([^']+)'/)?.[1];
  const flag = quoted?.split(" ")[0];
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `unknown flag ${flag ?? message} for "rudder ${spec.name}"`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      return flag && message.includes("argument missing")
        ? `flag ${flag} needs a value`
        : `invalid value: ${message}`;
    case "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL":
      return `unexpected argument ${quoted ? `"${quoted}"` : message}`;
    default:
      return message;
  }
}

/** The value of a string flag, or `fallback`. */
export function stringFlag(parsed: ParsedArgs, name: string, fallback: string): string;
/** The value of a string flag, or undefined. */
export function stringFlag(parsed: ParsedArgs, name: string): string | undefined;
export function stringFlag(
  parsed: ParsedArgs,
  name: string,
  fallback?: string,
): string | undefined {
  const value = parsed.values[name];
  return typeof value === "string" ? value : fallback;
}

/** The values of a repeatable string flag (comma-separated lists are split too). */
export function listFlag(parsed: ParsedArgs, name: string): string[] {
  const value = parsed.values[name];
  const values = Array.isArray(value) ? value : typeof value === "string" ? [value] : [];
  return values.flatMap((v) => String(v).split(",")).map((v) => v.trim()).filter(Boolean);
}

/** Whether a boolean flag was given. */
export function booleanFlag(parsed: ParsedArgs, name: string): boolean {
  return parsed.values[name] === true;
}

/** The value of a flag that must be one of `choices`. */
export function choiceFlag<C extends string>(
  parsed: ParsedArgs,
  name: string,
  choices: readonly C[],
  fallback: C,
  command: string,
): C {
  const value = stringFlag(parsed, name, fallback);
  if (!(choices as readonly string[]).includes(value)) {
    throw new UsageError(
      `--${name} must be one of ${choices.join(", ")} (got "${value}")`,
      command,
    );
  }
  return value as C;
}
