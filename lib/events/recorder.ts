/**
 * The event recorder: reports what a controller did to an object as `events.k8s.io/v1` Events,
 * the ones `kubectl describe` and `kubectl events` show. It follows client-go's
 * `tools/events` recorder, and its spam filter from `tools/record`:
 *
 * - `event()` returns at once and never throws; the write happens in the background and a
 *   failed write is logged (the first failure of each kind as a warning, repeats at debug).
 * - Repeats of an event (same regarding and related objects, type, reason, action, note and
 *   reporting controller) are folded into one Event's `series` while they keep coming: the first
 *   occurrence creates the Event; later ones raise `series.count` and
 *   `series.lastObservedTime`. A series ends after {@linkcode EventRecorderOptions.seriesWindow}
 *   (6 minutes, client-go's `finishTime`) without a repeat; the next occurrence starts a new
 *   Event.
 * - Series writes are batched: a series is written (a merge patch of `series`) at most once per
 *   {@linkcode EventRecorderOptions.seriesUpdateInterval} (30 s), carrying the latest count.
 *   client-go writes at the second occurrence and then only every 30 minutes, so its counts lag;
 *   this bounds the writes just as well and keeps counts current. `flush()` writes what is
 *   pending at once. If the Event is gone (Events expire after an hour) it is created again.
 * - A token bucket per regarding object (burst 25, one more token every 5 minutes: client-go's
 *   `EventSourceObjectSpamFilter`) meters the creation of new Events; an event without a token
 *   is dropped (counted in {@linkcode EventRecorder.dropped}, logged at debug). Repeats folded
 *   into a series take no token: they cost at most one write per interval.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { ObjectReference } from "../api/generated/core_v1.ts";
import type { Event as EventsV1Event } from "../api/generated/events_v1.ts";
import type { KubeObject } from "../api/resource.ts";
import type { Client } from "../client/client.ts";
import { rawPatch } from "../client/patch.ts";
import { ApiError, isNotFound } from "../kube/errors.ts";
import { errorMessage } from "../util/logging.ts";
import { unrefTimer } from "../util/runtime.ts";

const logger = getLogger(["rudder", "events"]);

/** The type of an event: `Normal`, or `Warning` for something that needs attention. */
export type EventType = "Normal" | "Warning";

/** The writes the recorder needs: any client (`Client`, `CachedClient`, `FakeClient`). */
export type EventRecorderClient = Pick<Client, "create" | "patch">;

/** Options of {@linkcode EventRecorder}. */
export interface EventRecorderOptions {
  /**
   * The controller that reports, as a qualified name such as `example.com/widget-controller`
   * (the API server requires one): the Event's `reportingController`.
   */
  reportingController: string;
  /** The instance that reports, e.g. the pod name (at most 128 characters): `reportingInstance`. */
  reportingInstance: string;
  /** The current time; default `() => new Date()`. */
  clock?: () => Date;
  /** New Events a regarding object may have at once; default 25 (client-go's spam filter). */
  burst?: number;
  /** Milliseconds until a regarding object gets one more token; default 300 000 (5 minutes). */
  refillInterval?: number;
  /** Milliseconds without a repeat after which a series ends; default 360 000 (6 minutes). */
  seriesWindow?: number;
  /** Least milliseconds between two writes of one series; default 30 000. */
  seriesUpdateInterval?: number;
}

/** Options of {@linkcode EventRecorder.event}. */
export interface EventOptions {
  /** A second object the event is about, e.g. the Pod a ReplicaSet created: `related`. */
  related?: KubeObject;
}

type Settings = Required<Omit<EventRecorderOptions, "reportingController" | "reportingInstance">>;

/** The options with their defaults. */
function withDefaults(options: EventRecorderOptions): Settings {
  return {
    clock: options.clock ?? (() => new Date()),
    burst: options.burst ?? 25,
    refillInterval: options.refillInterval ?? 5 * 60_000,
    seriesWindow: options.seriesWindow ?? 6 * 60_000,
    seriesUpdateInterval: options.seriesUpdateInterval ?? 30_000,
  };
}

/** The API's limit on `note`, in bytes. */
const MAX_NOTE_BYTES = 1024;
/** Series and token buckets kept at most, least recently used dropped first (client-go's LRU size). */
const MAX_ENTRIES = 4096;
/** How often expired series and full buckets are swept out, in milliseconds. */
const SWEEP_INTERVAL = 60_000;
const MAX_NAME = 253;
const NAME_SUFFIX_LENGTH = 17; // "." and 16 hex digits

type Timer = ReturnType<typeof setTimeout>;

/** One Event and its repeats. */
interface Series {
  readonly event: EventsV1Event;
  /** Occurrences so far. */
  count: number;
  /** Occurrences the API server has (1 once the Event is created). */
  written: number;
  /** Time of the last occurrence, in milliseconds. */
  lastObserved: number;
  /** Time the last write was started, in milliseconds. */
  lastWrite: number;
  /** A pending series write. */
  timer?: Timer;
  /** The writes of this Event, one after another. */
  chain: Promise<void>;
}

interface Bucket {
  tokens: number;
  updated: number;
}

/** An `ObjectReference` to `obj`, with only the fields it has. */
function referenceTo(obj: KubeObject): ObjectReference {
  const ref: ObjectReference = { apiVersion: obj.apiVersion, kind: obj.kind };
  const { name, namespace, uid, resourceVersion } = obj.metadata ?? {};
  if (namespace) ref.namespace = namespace;
  if (name) ref.name = name;
  if (uid) ref.uid = uid;
  if (resourceVersion) ref.resourceVersion = resourceVersion;
  return ref;
}

/** The identity of a referenced object, without its resourceVersion (which changes). */
function identity(ref: ObjectReference | undefined): unknown[] {
  return ref ? [ref.apiVersion, ref.kind, ref.namespace, ref.name, ref.uid] : [];
}

/** A `metav1.MicroTime`: RFC 3339 with microseconds. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** `note` cut to {@linkcode MAX_NOTE_BYTES} bytes of UTF-8, never inside a character. */
function truncateNote(note: string): string {
  const bytes = encoder.encode(note);
  if (bytes.length <= MAX_NOTE_BYTES) return note;
  let end = MAX_NOTE_BYTES;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // a continuation byte: back up
  return decoder.decode(bytes.subarray(0, end));
}

/** `<name>.<16 hex digits>`, the name made a valid DNS subdomain that fits in 253 characters. */
function eventName(regardingName: string): string {
  const prefix = regardingName.toLowerCase().replace(/[^a-z0-9.-]/g, "-")
    .slice(0, MAX_NAME - NAME_SUFFIX_LENGTH)
    .split(".").map((label) => label.replace(/^-+|-+$/g, "")).filter(Boolean).join(".");
  const random = crypto.getRandomValues(new Uint8Array(8));
  const hex = Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${prefix || "event"}.${hex}`;
}

/** A short description of a failure for logs: the API's code and reason, or the error's name. */
function failureKind(err: unknown): string {
  if (err instanceof ApiError) return `${err.code} ${err.reason}`;
  return err instanceof Error ? err.name : typeof err;
}

function describe(ref: ObjectReference): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name ?? ""}`;
}

/**
 * Records `events.k8s.io/v1` Events about objects, as a controller's `EventRecorder` does in
 * controller-runtime (client-go's `tools/events`). See the module documentation for how repeats
 * are folded into series and how new Events are rate-limited per object.
 *
 * @example
 * ```ts
 * import { Deployment, loadConfig, newClient } from "@rudder/operator";
 * import { EventRecorder } from "@rudder/operator/events";
 *
 * const client = newClient(await loadConfig());
 * const recorder = new EventRecorder(client, {
 *   reportingController: "example.com/web-controller",
 *   reportingInstance: Deno.env.get("POD_NAME") ?? "web-controller-0",
 * });
 * const web = await client.get(Deployment, { namespace: "default", name: "web" });
 * recorder.event(web, "Normal", "Scaled", "Scale", "scaled to 3 replicas");
 * await recorder.flush(); // before the process exits
 * ```
 */
export class EventRecorder {
  readonly #client: EventRecorderClient;
  readonly #reportingController: string;
  readonly #reportingInstance: string;
  readonly #settings: Settings;
  /** Series by event identity, least recently observed first. */
  readonly #series = new Map<string, Series>();
  /** Series with a pending series write. */
  readonly #scheduled = new Set<Series>();
  /** Token buckets by regarding object, least recently used first. */
  readonly #buckets = new Map<string, Bucket>();
  readonly #pending = new Set<Promise<void>>();
  readonly #loggedFailures = new Set<string>();
  #dropped = 0;
  #lastSweep = 0;

  /**
   * A recorder writing through `client` in the name of `options.reportingController`.
   *
   * @throws {TypeError} when `reportingController` or `reportingInstance` is empty.
   */
  constructor(client: EventRecorderClient, options: EventRecorderOptions) {
    if (!options?.reportingController || !options.reportingInstance) {
      throw new TypeError("EventRecorder needs a reportingController and a reportingInstance");
    }
    this.#client = client;
    this.#reportingController = options.reportingController;
    this.#reportingInstance = options.reportingInstance;
    this.#settings = withDefaults(options);
  }

  /** Events dropped so far by the per-object rate limit. */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Records that `action` was taken (or failed) on `regarding` for `reason`: a machine-readable
   * CamelCase reason and action of at most 128 characters each, and an optional human-readable
   * `note` (cut to 1 KiB). Returns at once; the write happens in the background and never throws
   * into the caller.
   *
   * @example
   * ```ts
   * import type { Pod } from "@rudder/operator";
   * import type { EventRecorder } from "@rudder/operator/events";
   *
   * declare const recorder: EventRecorder, pod: Pod;
   * recorder.event(pod, "Warning", "FailedMount", "Mount", "volume data is not ready");
   * ```
   */
  event(
    regarding: KubeObject,
    type: EventType,
    reason: string,
    action: string,
    note?: string,
    options: EventOptions = {},
  ): void {
    try {
      this.#record(regarding, type, reason, action, note, options);
    } catch (err) {
      this.#failed("record", `${regarding?.kind} ${regarding?.metadata?.name ?? ""}`, err);
    }
  }

  /**
   * Resolves once every write started so far is done, after starting the pending series writes
   * at once. Call it before a graceful exit, and in tests before reading Events.
   *
   * @example
   * ```ts
   * import type { EventRecorder } from "@rudder/operator/events";
   *
   * declare const recorder: EventRecorder;
   * await recorder.flush();
   * ```
   */
  async flush(): Promise<void> {
    for (const series of [...this.#scheduled]) {
      clearTimeout(series.timer);
      this.#writeSeriesNow(series);
    }
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  #record(
    regarding: KubeObject,
    type: EventType,
    reason: string,
    action: string,
    note: string | undefined,
    options: EventOptions,
  ): void {
    if (type !== "Normal" && type !== "Warning") {
      throw new TypeError(`unsupported event type ${JSON.stringify(type)}: Normal or Warning`);
    }
    const ref = referenceTo(regarding);
    if (!ref.name) throw new TypeError(`the regarding ${ref.kind} has no metadata.name`);
    const related = options.related ? referenceTo(options.related) : undefined;
    const text = note ? truncateNote(note) : undefined;
    const now = this.#settings.clock().getTime();
    this.#sweep(now);

    const key = JSON.stringify([
      identity(ref),
      identity(related),
      type,
      reason,
      action,
      text ?? "",
      this.#reportingController,
      this.#reportingInstance,
    ]);
    const existing = this.#series.get(key);
    if (existing && now - existing.lastObserved <= this.#settings.seriesWindow) {
      existing.count++;
      existing.lastObserved = now;
      this.#touch(this.#series, key, existing);
      this.#scheduleSeriesWrite(existing, now);
      return;
    }
    if (existing) this.#series.delete(key); // that series ended

    if (!this.#takeToken(JSON.stringify(identity(ref)), now)) {
      this.#dropped++;
      logger.debug("Dropped event {reason} about {object}: the object's event rate limit is hit", {
        reason,
        object: describe(ref),
      });
      return;
    }
    const event: EventsV1Event = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: eventName(ref.name), namespace: ref.namespace || "default" },
      eventTime: microTime(now),
      reportingController: this.#reportingController,
      reportingInstance: this.#reportingInstance,
      action,
      reason,
      type,
      regarding: ref,
    };
    if (related) event.related = related;
    if (text) event.note = text;
    const series: Series = {
      event,
      count: 1,
      written: 0,
      lastObserved: now,
      lastWrite: now,
      chain: Promise.resolve(),
    };
    this.#touch(this.#series, key, series);
    this.#enqueue(series, () => this.#create(series));
  }

  /** Moves `key` to the most recently used end of `map`, dropping the least recent beyond the cap. */
  #touch<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > MAX_ENTRIES) map.delete(map.keys().next().value!);
  }

  /** Takes a token from the bucket of one regarding object; false when it is empty. */
  #takeToken(key: string, now: number): boolean {
    const { burst, refillInterval } = this.#settings;
    const bucket = this.#buckets.get(key) ?? { tokens: burst, updated: now };
    bucket.tokens = Math.min(
      burst,
      bucket.tokens + Math.max(0, now - bucket.updated) / refillInterval,
    );
    bucket.updated = now;
    this.#touch(this.#buckets, key, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Forgets ended series and buckets that have refilled, so memory follows activity. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < SWEEP_INTERVAL) return;
    this.#lastSweep = now;
    for (const [key, series] of this.#series) {
      if (now - series.lastObserved > this.#settings.seriesWindow) this.#series.delete(key);
    }
    const { burst, refillInterval } = this.#settings;
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + (now - bucket.updated) / refillInterval >= burst) {
        this.#buckets.delete(key);
      }
    }
  }

  /** Writes the series once its interval since the last write has passed. */
  #scheduleSeriesWrite(series: Series, now: number): void {
    if (series.timer !== undefined) return; // the pending write will carry the latest count
    const delay = Math.max(0, series.lastWrite + this.#settings.seriesUpdateInterval - now);
    series.timer = setTimeout(() => this.#writeSeriesNow(series), delay);
    unrefTimer(series.timer);
    this.#scheduled.add(series);
  }

  #writeSeriesNow(series: Series): void {
    series.timer = undefined;
    this.#scheduled.delete(series);
    series.lastWrite = this.#settings.clock().getTime();
    this.#enqueue(series, () => this.#writeSeries(series));
  }

  /** Runs `write` after the writes of `series` before it; `flush()` waits for it. */
  #enqueue(series: Series, write: () => Promise<void>): void {
    const done = series.chain.then(write).catch((err) =>
      this.#failed("write", describe(series.event.regarding!), err)
    );
    series.chain = done;
    this.#pending.add(done);
    done.finally(() => this.#pending.delete(done));
  }

  async #create(series: Series): Promise<void> {
    try {
      await this.#client.create(series.event);
      series.written = Math.max(series.written, 1);
    } catch (err) {
      this.#failed("create", describe(series.event.regarding!), err);
    }
  }

  async #writeSeries(series: Series): Promise<void> {
    const count = series.count;
    if (count <= series.written || count < 2) return;
    const body = { series: { count, lastObservedTime: microTime(series.lastObserved) } };
    try {
      await this.#client.patch(
        series.event,
        rawPatch<EventsV1Event>("application/merge-patch+json", body),
      );
      series.written = count;
    } catch (err) {
      if (!isNotFound(err)) {
        this.#failed("update the series of", describe(series.event.regarding!), err);
        return;
      }
      // The Event expired or was deleted: create it again with its series, as client-go does.
      try {
        await this.#client.create({ ...series.event, ...body });
        series.written = count;
      } catch (err) {
        this.#failed("create", describe(series.event.regarding!), err);
      }
    }
  }

  /** Logs a failure: the first of its kind as a warning, later ones at debug. */
  #failed(operation: string, object: string, err: unknown): void {
    const kind = `${operation}: ${failureKind(err)}`;
    const first = !this.#loggedFailures.has(kind);
    if (first) this.#loggedFailures.add(kind);
    const properties = {
      operation,
      object,
      kind: failureKind(err),
      error: errorMessage(err),
    };
    if (first) {
      logger.warn(
        "Could not {operation} an Event about {object}: {error} " +
          "(further failures of this kind are logged at debug level)",
        properties,
      );
    } else {
      logger.debug("Could not {operation} an Event about {object}: {error}", properties);
    }
  }
}
