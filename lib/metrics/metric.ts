/**
 * Prometheus metrics: {@linkcode Counter}, {@linkcode Gauge} and {@linkcode Histogram}, each a
 * family of series told apart by label values, as client_golang's `*Vec` types. A series exists
 * once it is touched or {@linkcode Counter.labels} names it, and then shows in every scrape,
 * starting at 0.
 *
 * @module
 */

import { escapeHelp, formatLabels, formatNumber } from "./exposition.ts";

/**
 * Label values by label name; numbers are written as decimal strings.
 *
 * @example
 * ```ts
 * import { Counter, type MetricLabels } from "@rudder/operator/metrics";
 *
 * const requests = new Counter({ name: "x_requests_total", help: "x", labelNames: ["code"] });
 * const labels: MetricLabels<"code"> = { code: 200 };
 * requests.inc(labels);
 * ```
 */
export type MetricLabels<L extends string> = { readonly [K in L]: string | number };

/**
 * The kinds of metric the text format names in `# TYPE`.
 *
 * @example
 * ```ts
 * import { Gauge, type MetricType } from "@rudder/operator/metrics";
 *
 * const type: MetricType = new Gauge({ name: "x", help: "x" }).type; // "gauge"
 * ```
 */
export type MetricType = "counter" | "gauge" | "histogram";

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * What every metric is made with.
 *
 * @example
 * ```ts
 * import { Counter, type MetricOptions } from "@rudder/operator/metrics";
 *
 * const options: MetricOptions<"result"> = {
 *   name: "example_backups_total",
 *   help: "Backups taken, by result.",
 *   labelNames: ["result"],
 * };
 * const backups = new Counter(options);
 * ```
 */
export interface MetricOptions<L extends string, M = unknown> {
  /** The family's name, e.g. `example_backups_total`. */
  name: string;
  /** What it measures, shown in `# HELP`. */
  help: string;
  /** The names of its labels; none by default. */
  labelNames?: readonly L[];
  /**
   * Called before every scrape to bring the values up to date (for values read from elsewhere:
   * queue lengths, memory). A collector that throws or rejects fails the scrape.
   */
  collect?: (metric: M) => void | Promise<void>;
}

/**
 * The series of one metric, by label values: made on first use, removed on request, and
 * listed in the order Go's client writes them.
 */
class SeriesMap<L extends string, V> {
  readonly #entries = new Map<string, { values: readonly string[]; state: V }>();
  /** Counts removals and resets: a handle looks its series up again when this moved. */
  #generation = 0;
  /** Label positions in sorted-name order: Go's client writes label names sorted. */
  readonly #sorted: readonly number[];

  readonly metric: string;
  readonly labelNames: readonly L[];
  readonly initial: () => V;

  constructor(metric: string, labelNames: readonly L[], initial: () => V) {
    this.metric = metric;
    this.labelNames = labelNames;
    this.initial = initial;
    this.#sorted = labelNames.map((_, i) => i).sort((a, b) =>
      labelNames[a] < labelNames[b] ? -1 : 1
    );
    if (labelNames.length === 0) this.get(undefined);
  }

  /** The state of the series `labels` names, made (at zero) if it does not exist yet. */
  get(labels: MetricLabels<L> | undefined): V {
    const values = this.#values(labels);
    return this.#get(JSON.stringify(values), values);
  }

  #get(key: string, values: readonly string[]): V {
    let entry = this.#entries.get(key);
    if (!entry) this.#entries.set(key, entry = { values, state: this.initial() });
    return entry.state;
  }

  /**
   * A function that returns what `get(labels)` would, making the series now: the labels are
   * checked and keyed once, and the series looked up again only after a removal or a reset (so
   * a handle kept across them brings its series back, as a call with the labels would).
   */
  handle(labels: MetricLabels<L> | undefined): () => V {
    const values = this.#values(labels);
    const key = JSON.stringify(values);
    let state = this.#get(key, values);
    let generation = this.#generation;
    return () => {
      if (generation !== this.#generation) {
        state = this.#get(key, values);
        generation = this.#generation;
      }
      return state;
    };
  }

  /** The state of the series `labels` names, if it exists. */
  existing(labels: MetricLabels<L> | undefined): V | undefined {
    return this.#entries.get(JSON.stringify(this.#values(labels)))?.state;
  }

  remove(labels: MetricLabels<L>): boolean {
    const removed = this.#entries.delete(JSON.stringify(this.#values(labels)));
    if (removed) this.#generation++;
    return removed;
  }

  /** Removes every series; a metric without labels keeps its one series, at zero. */
  reset(): void {
    this.#entries.clear();
    this.#generation++;
    if (this.labelNames.length === 0) this.get(undefined);
  }

  #values(labels: MetricLabels<L> | undefined): string[] {
    const given = (labels ?? {}) as Record<string, string | number>;
    const names = Object.keys(given);
    if (
      names.length !== this.labelNames.length ||
      names.some((name) => !this.labelNames.includes(name as L))
    ) {
      throw new Error(
        `metric ${this.metric} has labels {${this.labelNames.join(",")}}, got {${names.join(",")}}`,
      );
    }
    return this.labelNames.map((name) => String(given[name]));
  }

  /**
   * `# HELP`, `# TYPE` and the samples `write` makes of each series (label names sorted, series
   * sorted by label values); empty when there is no series, as in Go's client.
   */
  expose(
    help: string,
    type: MetricType,
    write: (names: readonly string[], values: readonly string[], state: V) => string,
  ): string {
    if (this.#entries.size === 0) return "";
    const names = this.#sorted.map((i) => this.labelNames[i]);
    const rows = [...this.#entries.values()].map((entry) => ({
      values: this.#sorted.map((i) => entry.values[i]),
      state: entry.state,
    }));
    rows.sort((a, b) => {
      for (let i = 0; i < a.values.length; i++) {
        if (a.values[i] !== b.values[i]) return a.values[i] < b.values[i] ? -1 : 1;
      }
      return 0;
    });
    let text = `# HELP ${this.metric} ${escapeHelp(help)}\n# TYPE ${this.metric} ${type}\n`;
    for (const row of rows) text += write(names, row.values, row.state);
    return text;
  }
}

/**
 * What {@linkcode Counter}, {@linkcode Gauge} and {@linkcode Histogram} share: a name, a help
 * text, label names, a collector run before each scrape, and their part of the text format.
 *
 * @example
 * ```ts
 * import { type Metric, registry } from "@rudder/operator/metrics";
 *
 * const depth: Metric | undefined = registry.get("workqueue_depth");
 * console.log(depth?.type, depth?.labelNames); // gauge [ "name", "controller", "priority" ]
 * ```
 */
export abstract class Metric<L extends string = string> {
  /** The family's name. */
  readonly name: string;
  /** Its help text. */
  readonly help: string;
  /** Its label names, in the order they were given. */
  readonly labelNames: readonly L[];
  /** Its kind, as written in `# TYPE`. */
  abstract readonly type: MetricType;
  readonly #collect?: (metric: never) => void | Promise<void>;

  /** Checks the names; throws on one Prometheus would refuse. */
  constructor(options: MetricOptions<L, never>, reservedLabels: readonly string[] = []) {
    if (!METRIC_NAME.test(options.name)) throw new Error(`invalid metric name ${options.name}`);
    const labelNames = [...(options.labelNames ?? [])];
    for (const label of labelNames) {
      if (!LABEL_NAME.test(label) || label.startsWith("__") || reservedLabels.includes(label)) {
        throw new Error(`invalid label name ${label} of metric ${options.name}`);
      }
    }
    if (new Set(labelNames).size !== labelNames.length) {
      throw new Error(`duplicate label names of metric ${options.name}: ${labelNames.join(", ")}`);
    }
    this.name = options.name;
    this.help = options.help;
    this.labelNames = labelNames;
    this.#collect = options.collect;
  }

  /** Runs the `collect` option; a registry calls this before writing the metric. */
  async collect(): Promise<void> {
    await (this.#collect as ((metric: this) => void | Promise<void>) | undefined)?.call(this, this);
  }

  /** Removes the series `labels` names; true when there was one. */
  abstract remove(labels: MetricLabels<L>): boolean;

  /** Removes every series (a metric without labels keeps its one series, at zero). */
  abstract reset(): void;

  /**
   * The metric in the text format: `# HELP`, `# TYPE` and its samples, each line ending in a
   * line feed; empty when it has no series.
   */
  abstract expose(): string;
}

/** A single value, for counters and gauges. */
interface Value {
  value: number;
}

/** A sample line `name{labels} value`. */
function sample(name: string, names: readonly string[], values: readonly string[], v: number) {
  return `${name}${formatLabels(names, values)} ${formatNumber(v)}\n`;
}

/**
 * What counters and gauges share: one number per series.
 *
 * @example
 * ```ts
 * import { Gauge, type ScalarMetric } from "@rudder/operator/metrics";
 *
 * const metric: ScalarMetric = new Gauge({ name: "example_items", help: "Items." });
 * console.log(metric.get()); // 0
 * ```
 */
export abstract class ScalarMetric<L extends string = string> extends Metric<L> {
  readonly #series: SeriesMap<L, Value>;

  /** A metric whose series start at 0; one without labels has its one series from the start. */
  constructor(options: MetricOptions<L, never>) {
    super(options);
    this.#series = new SeriesMap(this.name, this.labelNames, () => ({ value: 0 }));
  }

  /** The value holder of the series `labels` names (`undefined`: no labels), made at 0 if new. */
  protected state(labels: MetricLabels<L> | undefined): { value: number } {
    return this.#series.get(labels);
  }

  /** What `state(labels)` returns, for repeated use (see `SeriesMap.handle`). */
  protected stateHandle(labels: MetricLabels<L> | undefined): () => { value: number } {
    return this.#series.handle(labels);
  }

  /** The value of the series `labels` names; undefined when there is none. */
  get(labels?: MetricLabels<L>): number | undefined {
    return this.#series.existing(labels)?.value;
  }

  /** Removes the series `labels` names; true when there was one. */
  remove(labels: MetricLabels<L>): boolean {
    return this.#series.remove(labels);
  }

  /** Removes every series (a metric without labels goes back to 0). */
  reset(): void {
    this.#series.reset();
  }

  /** The metric in the text format. */
  expose(): string {
    return this.#series.expose(
      this.help,
      this.type,
      (names, values, state) => sample(this.name, names, values, state.value),
    );
  }
}

/**
 * A count that only goes up (requests served, errors), per label values.
 *
 * @example
 * ```ts
 * import { Counter, registry } from "@rudder/operator/metrics";
 *
 * const backups = registry.register(new Counter({
 *   name: "example_backups_total",
 *   help: "Backups taken, by result.",
 *   labelNames: ["result"],
 * }));
 * backups.inc({ result: "success" });
 * const failed = backups.labels({ result: "failure" }); // shown as 0 until it moves
 * failed.inc();
 * ```
 */
export class Counter<L extends string = never> extends ScalarMetric<L> {
  /** `counter`. */
  readonly type = "counter";

  /** A counter; a counter without labels starts with its one series at 0. */
  constructor(options: MetricOptions<L, Counter<L>>) {
    super(options as MetricOptions<L, never>);
  }

  /** Adds `by` (default 1, never negative) to the series `labels` names. */
  inc(labels?: MetricLabels<L>, by?: number): void;
  /** Adds `by` (default 1) to the counter without labels. */
  inc(by?: number): void;
  inc(labels?: MetricLabels<L> | number, by = 1): void {
    if (typeof labels === "number") [labels, by] = [undefined, labels];
    add(this.name, this.state(labels), by);
  }

  /**
   * The series `labels` names, made at 0 if new, for repeated use (client_golang's
   * `WithLabelValues`): the labels are checked and looked up once, not on every call. After a
   * `remove` or `reset` the handle counts into the series anew, as `inc(labels)` would.
   */
  labels(labels: MetricLabels<L>): { inc(by?: number): void } {
    const state = this.stateHandle(labels);
    return { inc: (by = 1) => add(this.name, state(), by) };
  }
}

function add(name: string, state: Value, by: number): void {
  if (!(by >= 0)) throw new Error(`counter ${name} cannot be increased by ${by}`);
  state.value += by;
}

/**
 * A value that goes up and down (items queued, workers busy), per label values.
 *
 * @example A gauge read at scrape time
 * ```ts
 * import { Gauge, registry } from "@rudder/operator/metrics";
 *
 * const pending: string[] = [];
 * registry.register(new Gauge({
 *   name: "example_pending_items",
 *   help: "Items waiting to be handled.",
 *   collect: (gauge) => gauge.set(pending.length),
 * }));
 * ```
 */
export class Gauge<L extends string = never> extends ScalarMetric<L> {
  /** `gauge`. */
  readonly type = "gauge";

  /** A gauge; a gauge without labels starts with its one series at 0. */
  constructor(options: MetricOptions<L, Gauge<L>>) {
    super(options as MetricOptions<L, never>);
  }

  /** Sets the series `labels` names to `value`. */
  set(labels: MetricLabels<L>, value: number): void;
  /** Sets the gauge without labels to `value`. */
  set(value: number): void;
  set(labels: MetricLabels<L> | number, value?: number): void {
    if (typeof labels === "number") this.state(undefined).value = labels;
    else this.state(labels).value = value!;
  }

  /** Adds `by` (default 1) to the series `labels` names. */
  inc(labels?: MetricLabels<L>, by?: number): void;
  /** Adds `by` (default 1) to the gauge without labels. */
  inc(by?: number): void;
  inc(labels?: MetricLabels<L> | number, by = 1): void {
    if (typeof labels === "number") [labels, by] = [undefined, labels];
    this.state(labels).value += by;
  }

  /** Subtracts `by` (default 1) from the series `labels` names. */
  dec(labels?: MetricLabels<L>, by?: number): void;
  /** Subtracts `by` (default 1) from the gauge without labels. */
  dec(by?: number): void;
  dec(labels?: MetricLabels<L> | number, by = 1): void {
    if (typeof labels === "number") [labels, by] = [undefined, labels];
    this.state(labels).value -= by;
  }

  /**
   * The series `labels` names, made at 0 if new, for repeated use: the labels are checked and
   * looked up once. After a `remove` or `reset` the handle sets the series anew, as
   * `set(labels, value)` would.
   */
  labels(
    labels: MetricLabels<L>,
  ): { set(value: number): void; inc(by?: number): void; dec(by?: number): void } {
    const state = this.stateHandle(labels);
    return {
      set: (value) => void (state().value = value),
      inc: (by = 1) => void (state().value += by),
      dec: (by = 1) => void (state().value -= by),
    };
  }
}

/**
 * client_golang's `DefBuckets`: 5 ms to 10 s, for request latencies.
 *
 * @example
 * ```ts
 * import { DEFAULT_BUCKETS } from "@rudder/operator/metrics";
 *
 * console.log(DEFAULT_BUCKETS.length); // 11
 * ```
 */
export const DEFAULT_BUCKETS: readonly number[] = Object.freeze([
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
]);

/**
 * What a histogram is made with: a metric's options and its bucket bounds.
 *
 * @example
 * ```ts
 * import { exponentialBuckets, Histogram, type HistogramOptions } from "@rudder/operator/metrics";
 *
 * const options: HistogramOptions<"kind"> = {
 *   name: "example_backup_duration_seconds",
 *   help: "How long a backup takes.",
 *   labelNames: ["kind"],
 *   buckets: exponentialBuckets(1, 2, 10),
 * };
 * const durations = new Histogram(options);
 * ```
 */
export interface HistogramOptions<L extends string> extends MetricOptions<L, Histogram<L>> {
  /**
   * Upper bounds of the buckets, increasing; default {@linkcode DEFAULT_BUCKETS}. The `+Inf`
   * bucket is always there.
   */
  buckets?: readonly number[];
}

/** A histogram series: counts per bucket (not cumulated), sum and count. */
interface Distribution {
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * Observations counted into buckets (durations, sizes), per label values: the text format shows
 * cumulative `_bucket{le=…}` counts, `_sum` and `_count`.
 *
 * @example
 * ```ts
 * import { Histogram, registry } from "@rudder/operator/metrics";
 *
 * const durations = registry.register(new Histogram({
 *   name: "example_backup_duration_seconds",
 *   help: "How long a backup takes.",
 *   buckets: [1, 10, 60, 600],
 * }));
 * const started = performance.now();
 * // … take the backup …
 * durations.observe((performance.now() - started) / 1000);
 * ```
 */
export class Histogram<L extends string = never> extends Metric<L> {
  /** `histogram`. */
  readonly type = "histogram";
  /** The buckets' upper bounds, without `+Inf`. */
  readonly buckets: readonly number[];
  readonly #series: SeriesMap<L, Distribution>;

  /** A histogram; a histogram without labels starts with its one series empty. */
  constructor(options: HistogramOptions<L>) {
    super(options as MetricOptions<L, never>, ["le"]);
    const buckets = [...(options.buckets ?? DEFAULT_BUCKETS)];
    if (buckets[buckets.length - 1] === Infinity) buckets.pop();
    for (let i = 0; i < buckets.length; i++) {
      if (Number.isNaN(buckets[i]) || (i > 0 && !(buckets[i] > buckets[i - 1]))) {
        throw new Error(
          `buckets of histogram ${options.name} must increase: ${buckets.join(", ")}`,
        );
      }
    }
    this.buckets = Object.freeze(buckets);
    this.#series = new SeriesMap(this.name, this.labelNames, () => ({
      counts: new Float64Array(buckets.length),
      sum: 0,
      count: 0,
    }));
  }

  /** Counts `value` into the series `labels` names. */
  observe(labels: MetricLabels<L>, value: number): void;
  /** Counts `value` into the histogram without labels. */
  observe(value: number): void;
  observe(labels: MetricLabels<L> | number, value?: number): void {
    if (typeof labels === "number") this.#observe(this.#series.get(undefined), labels);
    else this.#observe(this.#series.get(labels), value!);
  }

  /**
   * The series `labels` names, made empty if new, for repeated use: the labels are checked and
   * looked up once. After a `remove` or `reset` the handle counts into the series anew, as
   * `observe(labels, value)` would.
   */
  labels(labels: MetricLabels<L>): { observe(value: number): void } {
    const state = this.#series.handle(labels);
    return { observe: (value) => this.#observe(state(), value) };
  }

  #observe(state: Distribution, value: number): void {
    // The first bucket whose bound is at least the value (bounds are inclusive).
    let low = 0;
    let high = this.buckets.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.buckets[mid] >= value) high = mid;
      else low = mid + 1;
    }
    if (low < this.buckets.length) state.counts[low]++;
    state.sum += value;
    state.count++;
  }

  /** The sample count, sum and cumulative bucket counts of the series `labels` names. */
  get(
    labels?: MetricLabels<L>,
  ): { count: number; sum: number; buckets: { le: number; count: number }[] } | undefined {
    const state = this.#series.existing(labels);
    if (!state) return undefined;
    let cumulative = 0;
    const buckets = this.buckets.map((le, i) => ({ le, count: cumulative += state.counts[i] }));
    buckets.push({ le: Infinity, count: state.count });
    return { count: state.count, sum: state.sum, buckets };
  }

  /** Removes the series `labels` names; true when there was one. */
  remove(labels: MetricLabels<L>): boolean {
    return this.#series.remove(labels);
  }

  /** Removes every series (a histogram without labels starts empty again). */
  reset(): void {
    this.#series.reset();
  }

  /** The histogram in the text format: cumulative `_bucket{le}` counts, `_sum`, `_count`. */
  expose(): string {
    const bounds = [...this.buckets.map(formatNumber), "+Inf"];
    return this.#series.expose(this.help, this.type, (names, values, state) => {
      // Every bucket line shares the series' labels: written once, `le` appended.
      const labels = formatLabels(names, values);
      const prefix = `${this.name}_bucket${labels ? `${labels.slice(0, -1)},` : "{"}le="`;
      let text = "";
      let cumulative = 0;
      for (let i = 0; i < bounds.length; i++) {
        cumulative = i < this.buckets.length ? cumulative + state.counts[i] : state.count;
        text += `${prefix}${bounds[i]}"} ${formatNumber(cumulative)}\n`;
      }
      text += `${this.name}_sum${labels} ${formatNumber(state.sum)}\n`;
      text += `${this.name}_count${labels} ${formatNumber(state.count)}\n`;
      return text;
    });
  }
}

/**
 * `count` bucket bounds from `start`, each `factor` times the one before (client_golang's
 * `ExponentialBuckets`, computed the same way so the floats are the same).
 *
 * @example
 * ```ts
 * import { exponentialBuckets } from "@rudder/operator/metrics";
 *
 * console.log(exponentialBuckets(0.001, 10, 4)); // [0.001, 0.01, 0.1, 1] (as floats)
 * ```
 */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  if (!(count >= 1) || !(start > 0) || !(factor > 1)) {
    throw new Error("exponentialBuckets needs count ≥ 1, start > 0 and factor > 1");
  }
  const buckets: number[] = [];
  for (let i = 0, bound = start; i < count; i++, bound *= factor) buckets.push(bound);
  return buckets;
}

/**
 * `count` bucket bounds from `start`, `width` apart (client_golang's `LinearBuckets`).
 *
 * @example
 * ```ts
 * import { linearBuckets } from "@rudder/operator/metrics";
 *
 * console.log(linearBuckets(10, 10, 3)); // [10, 20, 30]
 * ```
 */
export function linearBuckets(start: number, width: number, count: number): number[] {
  if (!(count >= 1) || !(width > 0)) {
    throw new Error("linearBuckets needs count ≥ 1 and width > 0");
  }
  const buckets: number[] = [];
  for (let i = 0, bound = start; i < count; i++, bound += width) buckets.push(bound);
  return buckets;
}
