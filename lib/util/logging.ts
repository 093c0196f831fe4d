/**
 * Logging set-up for operators. The library itself only logs (LogTape, under the category
 * `rudder`) and never configures sinks; an operator's `main` calls
 * {@linkcode configureLogging} once.
 *
 * @module
 */

import process from "node:process";
import {
  ansiColorFormatter,
  configure,
  jsonLinesFormatter,
  type LogRecord,
} from "@logtape/logtape";

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
  const sink = dev
    ? (record: LogRecord) => process.stderr.write(ansiColorFormatter(record))
    : (record: LogRecord) => process.stdout.write(jsonLinesFormatter(record));
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
