/**
 * Prometheus' text exposition format 0.0.4, written the way Go's client (`expfmt`) writes it, so
 * that a scrape of a Rudder operator reads like one of a Go operator: families sorted by name,
 * series by label values, label names sorted with `le` last, and numbers in Go's shortest `%g`
 * form (`1e-08`, `1.5e+06`, `+Inf`).
 *
 * @module
 */

/**
 * The `Content-Type` of the text format.
 *
 * @example
 * ```ts
 * import { TEXT_CONTENT_TYPE } from "./exposition.ts";
 * import { Registry } from "@rudder/operator/metrics";
 *
 * const registry = new Registry();
 * const response = new Response(await registry.metrics(), {
 *   headers: { "Content-Type": TEXT_CONTENT_TYPE },
 * });
 * ```
 */
export const TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * A number as Go's `strconv.FormatFloat(v, 'g', -1, 64)` writes it, with Prometheus' `+Inf`,
 * `-Inf` and `NaN`: the shortest digits that read back as the same float, in exponent form
 * when the decimal exponent is below -4 or at least 6 (with at least two exponent digits).
 */
export function formatNumber(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  if (value === 0) return Object.is(value, -0) ? "-0" : "0";
  if (Number.isInteger(value) && value < 1e6 && value > -1e6) return String(value);
  const [mantissa, exponentText] = value.toExponential().split("e");
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 6) {
    const digits = String(Math.abs(exponent)).padStart(2, "0");
    return `${mantissa}e${exponent < 0 ? "-" : "+"}${digits}`;
  }
  // In this range JavaScript writes the same shortest digits without an exponent.
  return String(value);
}

/** A label value escaped for the text format: backslash, double quote and line feed. */
export function escapeLabelValue(value: string): string {
  return /[\\"\n]/.test(value)
    ? value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")
    : value;
}

/** A help text escaped for the text format: backslash and line feed. */
export function escapeHelp(help: string): string {
  return /[\\\n]/.test(help) ? help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n") : help;
}

/**
 * The `{…}` of a sample: `names` (already sorted) paired with `values`, then `extra` (the `le` of
 * a bucket) last; empty when there are no labels at all.
 */
export function formatLabels(
  names: readonly string[],
  values: readonly string[],
  extra?: [string, string],
): string {
  if (names.length === 0 && !extra) return "";
  const pairs = names.map((name, i) => `${name}="${escapeLabelValue(values[i])}"`);
  if (extra) pairs.push(`${extra[0]}="${escapeLabelValue(extra[1])}"`);
  return `{${pairs.join(",")}}`;
}
