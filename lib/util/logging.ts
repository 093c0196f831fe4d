/**
 * Logging set-up for operators. The library itself only logs (LogTape, under the category
 * `rudder`) and never configures sinks; an operator's `main` calls
 * {@linkcode configureLogging} once.
 *
 * @module
 */

import { getEnv, stderrIsTerminal, writeStderr, writeStdout } from "./runtime.ts";
import { configure, jsonLinesFormatter, type LogRecord } from "@logtape/logtape";
import { activeTraceIds } from "./tracing.ts";

/** Options of {@linkcode configureLogging}. */
export interface LoggingOptions {
  /** Readable, coloured lines on stderr (development); default: one JSON object per line on stdout. */
  dev?: boolean;
  /** The lowest level logged; default `info` (`debug` when `dev`). */
  level?: "trace" | "debug" | "info" | "warning" | "error" | "fatal";
  /** More categories to log besides `rudder`, e.g. your operator's own `["my-operator"]`. */
  categories?: string[][];
}

/**
 * Sends Rudder's log records (and those of `categories`) to the console: dev mode writes
 * readable lines, production mode one JSON object per line, the format log collectors parse.
 * Reconcile records carry `controller`, `controllerGroup`, `controllerKind`, `namespace`,
 * `name` and `reconcileID`.
 *
 * @example
 * ```ts
 * import { configureLogging } from "@rudder/operator";
 *
 * await configureLogging({ dev: Deno.env.get("DEV") === "1", categories: [["example-operator"]] });
 * ```
 */
export async function configureLogging(options: LoggingOptions = {}): Promise<void> {
  const dev = options.dev ?? false;
  // Colour only for a terminal, and never with NO_COLOR set (https://no-color.org).
  const color = dev && stderrIsTerminal() && !getEnv("NO_COLOR");
  const sink = dev
    ? (record: LogRecord) => writeStderr(formatDevLogRecord(record, { color }))
    : (record: LogRecord) => writeStdout(formatJsonLogRecord(record));
  const lowestLevel = options.level ?? (dev ? "debug" : "info");
  await configure({
    reset: true,
    sinks: { console: sink },
    loggers: [
      ...[["rudder"], ...(options.categories ?? [])].map((category) => ({
        category,
        sinks: ["console"],
        lowestLevel,
      })),
      { category: ["logtape", "meta"], sinks: ["console"], lowestLevel: "warning" as const },
    ],
  });
}

/** How deep an error's `cause` chain is written; deeper causes are dropped. */
const MAX_CAUSE_DEPTH = 8;

/** How deep plain objects in properties are searched for errors. */
const MAX_PROPERTY_DEPTH = 6;

/** An error as a log record carries it: no stack, which is noise and may repeat secrets. */
export interface SerializedError {
  /** The error's `name`, e.g. `ConnectionError`. */
  name: string;
  /** Its message. */
  message: string;
  /** Its cause, serialised the same way (or as it is, when not an error). */
  cause?: unknown;
  /** Other own fields of primitive value, e.g. `code`, `host`, `reason`, `field`. */
  [field: string]: unknown;
}

/**
 * `err` as a plain object: `name`, `message`, its own fields of primitive value (`code`,
 * `reason`, …) and `cause`, recursively; never `stack`.
 */
export function serializeError(err: Error, depth = 0): SerializedError {
  const out: SerializedError = { name: err.name, message: err.message };
  for (const [key, value] of Object.entries(err)) {
    if (key === "stack" || key === "cause" || key in out) continue;
    const type = typeof value;
    if (value === null || type === "string" || type === "number" || type === "boolean") {
      out[key] = value;
    }
  }
  if (err.cause !== undefined && depth < MAX_CAUSE_DEPTH) {
    out.cause = err.cause instanceof Error
      ? serializeError(err.cause, depth + 1)
      : serializeValue(err.cause, depth + 1);
  }
  return out;
}

function serializeValue(value: unknown, depth: number): unknown {
  if (value instanceof Error) return serializeError(value);
  if (depth >= MAX_PROPERTY_DEPTH || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => serializeValue(item, depth + 1));
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = serializeValue(item, depth + 1);
  return out;
}

/**
 * An error as one line, `Name: message (caused by Name: message)`: what an operator that cannot
 * start prints before it exits, instead of a stack trace (or, in a compiled binary, a page of
 * bundled source). Anything thrown that is not an Error is written as a string.
 *
 * @example
 * ```ts
 * import { describeError } from "@rudder/operator/manager";
 *
 * const err = new Error("cannot reach the API server", { cause: new Error("connection refused") });
 * console.log(describeError(err));
 * // Error: cannot reach the API server (caused by Error: connection refused)
 * ```
 */
export function describeError(err: unknown): string {
  return err instanceof Error ? renderError(err) : String(err);
}

/**
 * Only the message of an error (anything else thrown, as a string): for a line or a status that
 * already says what failed, where {@linkcode describeError}'s name and causes would be noise.
 */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `Name: message (caused by Name: message)`, for an error inside a rendered message. */
function renderError(err: Error): string {
  let text = `${err.name}: ${err.message}`;
  let cause = err.cause;
  for (let depth = 0; cause !== undefined && depth < MAX_CAUSE_DEPTH; depth++) {
    text += cause instanceof Error
      ? ` (caused by ${cause.name}: ${cause.message})`
      : ` (caused by ${String(cause)})`;
    cause = cause instanceof Error ? cause.cause : undefined;
  }
  return text;
}

/**
 * The `trace_id` and `span_id` a record written inside a span carries. LogTape calls sinks
 * synchronously from the logging call, so the span active while formatting is the one the
 * record was written in; ids already in the properties (a record carried elsewhere) win.
 */
function traceIdsFor(record: LogRecord): { trace_id: string; span_id: string } | undefined {
  const { trace_id, span_id } = record.properties as Record<string, unknown>;
  if (typeof trace_id === "string") {
    return { trace_id, span_id: typeof span_id === "string" ? span_id : "" };
  }
  return activeTraceIds();
}

/**
 * One log record as a JSON line, as {@linkcode configureLogging} writes it in production: an
 * error in the properties becomes `{ name, message, …, cause }` and an error in the message
 * reads `Name: message (caused by …)`, where LogTape alone would write `{}` or a stack. A
 * record written inside an OpenTelemetry span carries its `trace_id` and `span_id`.
 */
export function formatJsonLogRecord(record: LogRecord): string {
  // LogTape quotes string values; an error's text is folded into the template text instead.
  const message: unknown[] = [];
  for (let index = 0; index < record.message.length; index++) {
    const part = record.message[index];
    if (index % 2 === 1 && part instanceof Error) {
      message[message.length - 1] = `${message[message.length - 1]}${renderError(part)}${
        record.message[index + 1] ?? ""
      }`;
      index++;
    } else {
      message.push(part);
    }
  }
  const properties = serializeValue(record.properties, 0) as Record<string, unknown>;
  const ids = traceIdsFor(record);
  return jsonLinesFormatter({
    ...record,
    message,
    properties: ids ? { ...properties, ...ids } : properties,
  });
}

const LEVELS: Record<LogRecord["level"], string> = {
  trace: "TRC",
  debug: "DBG",
  info: "INF",
  warning: "WRN",
  error: "ERR",
  fatal: "FTL",
};

const LEVEL_COLORS: Record<LogRecord["level"], string> = {
  trace: "\x1b[2m",
  debug: "\x1b[2m",
  info: "\x1b[32m",
  warning: "\x1b[33m",
  error: "\x1b[31m",
  fatal: "\x1b[35m",
};

/** A value inside a readable message: words as they are, errors as one line, the rest as JSON. */
function renderValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Error) return renderError(value);
  if (value === undefined) return "undefined";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * One log record as a readable line, as {@linkcode configureLogging} writes it in dev mode: the
 * time, the level, the key of the object a reconcile is about (`namespace/name`) first, the
 * category, and the message with its values unquoted (`Deployment hello created`, not
 * `Deployment "hello" "created"`), then `trace_id=… span_id=…` inside a span. Colours only
 * with `color`.
 *
 * @example
 * ```ts
 * import type { LogRecord } from "@logtape/logtape";
 * import { formatDevLogRecord } from "./logging.ts";
 *
 * declare const record: LogRecord;
 * process.stderr.write(formatDevLogRecord(record, { color: false }));
 * ```
 */
export function formatDevLogRecord(record: LogRecord, options: { color?: boolean } = {}): string {
  const time = new Date(record.timestamp).toISOString().slice(11, 23);
  const message = record.message.map((part, i) => i % 2 === 1 ? renderValue(part) : part).join("");
  const { namespace, name, reconcileID } = record.properties as Record<string, unknown>;
  const key = reconcileID !== undefined && typeof name === "string"
    ? `${typeof namespace === "string" && namespace ? `${namespace}/` : ""}${name} `
    : "";
  const level = LEVELS[record.level] ?? record.level;
  const category = record.category.join("·");
  const ids = traceIdsFor(record);
  const trace = ids ? ` trace_id=${ids.trace_id} span_id=${ids.span_id}` : "";
  if (!options.color) return `${time} ${level} ${key}${category}: ${message}${trace}\n`;
  const dim = "\x1b[2m", bold = "\x1b[1m", reset = "\x1b[0m";
  const paint = LEVEL_COLORS[record.level] ?? "";
  return `${dim}${time}${reset} ${paint}${level}${reset} ${bold}${key}${reset}${dim}${category}:${reset} ${message}${dim}${trace}${reset}\n`;
}

/**
 * The structured logger a reconcile gets. LogTape's `Logger` is one; messages are templates
 * whose `{placeholders}` are filled from the properties, which also travel with the record.
 */
export interface Logger {
  /** Logs at debug level. */
  debug(message: string, properties?: Record<string, unknown>): void;
  /** Logs at info level. */
  info(message: string, properties?: Record<string, unknown>): void;
  /** Logs at warning level. */
  warn(message: string, properties?: Record<string, unknown>): void;
  /** Logs at error level. */
  error(message: string, properties?: Record<string, unknown>): void;
  /** A logger whose records carry these properties too. */
  with(properties: Record<string, unknown>): Logger;
}
