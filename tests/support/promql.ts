// Prometheus's own PromQL parser, as tools/promql builds it (`deno task setup`, which the test
// runner runs first): each expression either parses, giving the metric names it selects, or
// fails with the parser's message.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { PROMQL_CHECK_ENV, promqlCheckerPath } from "../../tools/promql/build.ts";

/** What the parser said about one expression. */
export type PromqlCheck = { expr: string; error?: string; metrics: string[] };

/**
 * Parses every expression with the checker; throws, saying how to build it, when it is missing
 * (a test that needs it fails rather than skips).
 */
export function checkPromql(exprs: string[]): PromqlCheck[] {
  const binary = promqlCheckerPath();
  if (!existsSync(binary)) {
    throw new Error(
      `the PromQL checker is not at ${binary}: run \`deno task setup\` (or ` +
        `\`deno run -A tools/promql/build.ts\`), or set ${PROMQL_CHECK_ENV} to a built one`,
    );
  }
  const run = spawnSync(binary, [], {
    input: exprs.map((expr) => JSON.stringify(expr)).join("\n") + "\n",
    encoding: "utf8",
    timeout: 60_000,
  });
  if (run.error || run.status !== 0) {
    throw new Error(`${binary} failed (${run.error?.message ?? run.status}): ${run.stderr}`);
  }
  const lines = run.stdout.trim().split("\n").filter(Boolean);
  if (lines.length !== exprs.length) {
    throw new Error(`${binary} answered ${lines.length} lines for ${exprs.length} expressions`);
  }
  return lines.map((line, i) => {
    const answer = JSON.parse(line) as { error?: string; metrics?: string[] };
    return { expr: exprs[i], error: answer.error, metrics: answer.metrics ?? [] };
  });
}
