/**
 * The watcher: one kind's list and watch as a single self-recovering async iterable of
 * {@linkcode WatcherEvent}s, usable on its own (no store, no handlers). A reflector applies it
 * to a store; an informer adds handlers. The whole reconnect story is this state machine,
 * written out in {@linkcode watcher}'s loop:
 *
 * ```
 *              relist: 410 Gone, 504 ResourceVersionTooLarge, the same
 *           ┌─ refusal (4xx, malformed event) twice at one resourceVersion, ┐
 *           │  Unreachable: silent watches at a resourceVersion the server  │
 *           │  has not reached (its own is older)                           │
 *           ▼                                                               │
 *   ┌──► Listing ─── Init, InitApply…, InitDone ─────────────────────► Watching ─► Apply, Delete
 *   │       │   (paged list; a streaming list when asked)                │   ▲
 *   │       │ error                                                      │   └─ the server's
 *   │       ▼                                                            │      timeout ended
 *   └─── Backoff ◄──── error: network, 5xx, 429, idle deadline, ─────────┘      the stream
 *   (was    │          a watch that ended at once, a first refusal
 *   listing)│ 0.8 s → 30 s, ×2, jitter; reset after 2 min healthy
 *           └──► Watching (was watching)
 * ```
 *
 * Events, named as kube-rs names them: `Init` (a list starts), `InitApply` (one object of it),
 * `InitDone` (the list is complete: swap it in), `Apply` (added or modified), `Delete`.
 *
 * Unreachable: an API server asked to watch from a resourceVersion it has not reached (after an
 * etcd restore, or a bad bookmark) may hold the watch open with no event, no bookmark and no 504,
 * and the watch would be resumed there for ever. A healthy watch is never silent that long: the
 * watcher asks for bookmarks, which the API server sends about every minute and just before its
 * timeout. So after three watches at one resourceVersion ended (idle deadline or the server's
 * timeout) without anything, or after 75 s of such silence, the watcher asks the server for its
 * current resourceVersion (a list of one item) and relists only when that is older than the one
 * it resumes from. A quiet server without bookmarks costs that small list, never a relist.
 *
 * @module
 */

import { getLogger } from "@logtape/logtape";
import type { KubeObject, ResourceType } from "../api/resource.ts";
import { resourcePath } from "../api/resource.ts";
import { ApiError, isGone, isNotFound, isTooManyRequests, type Status } from "../kube/errors.ts";
import type { QueryValue, RestClient } from "../kube/rest.ts";
import { WatchDecodeError, type WatchEvent } from "../kube/watch.ts";
import { sleep } from "../util/abort.ts";
import type { Clock } from "../util/clock.ts";
import { errorMessage } from "../util/logging.ts";
import { runtimeName } from "../util/runtime.ts";
import { jittered } from "../util/timers.ts";
import { parseListPage, type SplitListPage } from "./list_page.ts";

const logger = getLogger(["rudder", "cache", "watcher"]);

/** Where a watcher is in its cycle. */
export type WatcherState = "Listing" | "Watching" | "Backoff";

/**
 * What a watcher yields. A (re)list is `Init`, one `InitApply` per object, then `InitDone`;
 * between lists come `Apply` (added or modified) and `Delete`. A list that fails part-way is
 * started again with a new `Init`: whoever buffers `InitApply`s drops them then.
 */
export type WatcherEvent<T> =
  | { type: "Init" }
  | { type: "InitApply"; object: T }
  | { type: "InitDone"; resourceVersion?: string }
  | { type: "Apply"; object: T; resourceVersion?: string }
  | { type: "Delete"; object: T; resourceVersion?: string };

/** Options of {@linkcode watcher}. */
export interface WatcherOptions {
  /** Called with each error a list ended in, before the watcher backs off and lists again. */
  onListError?: (err: unknown) => void;
  /** Namespace to watch; all namespaces when unset. Ignored for cluster-scoped kinds. */
  namespace?: string;
  /** Label selector in the API's string form. */
  labelSelector?: string;
  /** Field selector in the API's string form. */
  fieldSelector?: string;
  /** Watch only metadata (PartialObjectMetadata), for large kinds such as Secrets. */
  metadataOnly?: boolean;
  /**
   * Objects per page of a paged list; default 5,000 (500 for a relist, whose peak the full store
   * adds to): pages that size bound the memory a list holds at once and cost little more than one
   * unpaged list (measurements under `streamingList`). The next page is asked for as soon as a
   * page's answer is in, while it is parsed and stored: at most two pages are in memory at once.
   */
  pageSize?: number;
  /**
   * List with a streaming list (a watch with `sendInitialEvents=true`, whose connection goes
   * on as the watch) instead of a paged list; default false. A server that refuses streaming
   * lists (400 or 422) gets paged lists instead, from then on.
   *
   * Off by default because the API server encodes each event of a streaming list separately,
   * which costs more than one list answer. Measured against kube-apiserver 1.36 with 10,000
   * ConfigMaps of 1 KiB, time to synced: on Bun 486–574 ms streaming against 306–325 ms with
   * pages of 5,000 (412–444 ms with pages of 500, 272–296 ms with one unpaged list); on Deno
   * 548–717 ms streaming against 441–510 ms with pages of 5,000; Go controller-runtime on
   * protobuf took 240–290 ms. Streaming lists remain the choice when a kind's objects are so
   * many or so large that a page of them should never be held at once.
   */
  streamingList?: boolean;
  /** Bounds of the server-side watch timeout in seconds; default [240, 290] (Bun drops idle connections at 300 s). */
  watchTimeoutSeconds?: [number, number];
  /**
   * Milliseconds without any event (bookmarks included) after which a watch is taken for dead
   * and started again; default: the watch timeout plus 30 s.
   */
  idleTimeout?: number;
  /** Backoff after failures: initial and maximum milliseconds; default 800 and 30 000. */
  backoff?: { initial: number; max: number };
  /** The clock the backoff waits on (default the process's); tests pass a `FakeClock`. */
  clock?: Clock;
  /** Stops the watcher: the iteration ends (without an error) and the connection closes. */
  signal?: AbortSignal;
}

/** What a watcher is doing and how well, for health checks; see {@linkcode Watcher.status}. */
export interface WatcherStatus {
  /** Current state. */
  state: WatcherState;
  /** Epoch milliseconds of the last event or bookmark seen. */
  lastEventTime?: number;
  /** The last error, cleared when a list or watch works again. */
  lastError?: string;
  /** Epoch milliseconds of the first failure of the current unbroken run of failures. */
  failingSince?: number;
  /** The resourceVersion the next watch starts from. */
  resourceVersion?: string;
  /** How many lists were made (1 on a healthy run). */
  lists: number;
  /** How many watches were started. */
  watches: number;
}

/** A running list-and-watch: iterate it once; {@linkcode Watcher.status} may be read any time. */
export interface Watcher<T> extends AsyncIterable<WatcherEvent<T>> {
  /** A snapshot of the watcher's state and health. */
  status(): WatcherStatus;
}

const DEFAULT_PAGE_SIZE = 5000;
/**
 * Objects per page of a relist when no `pageSize` is set: client-go's pager default. The first
 * list is what readiness waits for and takes large pages; a relist happens while the store is
 * full, and smaller pages keep its peak low.
 */
const RELIST_PAGE_SIZE = 500;
const DEFAULT_WATCH_TIMEOUT: [number, number] = [240, 290];
const IDLE_MARGIN_MS = 30_000;
const DEFAULT_BACKOFF = { initial: 800, max: 30_000 };
/** A watch that ran this long without trouble resets the backoff. */
const HEALTHY_RESET_MS = 2 * 60 * 1000;
/** A watch that ends sooner than this without any event counts as a failure (no hot loop). */
const SHORT_WATCH_MS = 1000;
/** Refusals of a watch at one resourceVersion after which the watcher relists. */
const REFUSALS_BEFORE_RELIST = 2;
/** Watches at one resourceVersion that ended without any event or bookmark before a check. */
const SILENT_ENDS_BEFORE_CHECK = 3;
/** Silence at one resourceVersion, across watches, before a check: above the bookmark period. */
const SILENCE_BEFORE_CHECK_MS = 75_000;
const INITIAL_EVENTS_END = "k8s.io/initial-events-end";
/**
 * Whether list pages are parsed an item at a time (./list_page.ts). On V8 that lowered a relist's
 * peak by 10 MiB for 10,000 ConfigMaps; on Bun it raised RSS per cached object by about 700 B
 * (bench/README.md, "The list path"), so Bun parses a page whole.
 */
const SPLIT_PAGES = runtimeName() !== "bun";
const METADATA_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/** A list page as the API server sends it. */
interface ListPage {
  metadata?: { continue?: string; resourceVersion?: string };
  items?: unknown[];
}

/** A page asked for: its continue token, its answer to come, and how to drop it. */
interface PageRequest {
  token: string | undefined;
  text: Promise<string>;
  abort(): void;
}

/**
 * The head of a list as the API server writes it: kind, apiVersion, then a flat `metadata`.
 * Anything else is not matched, and the page is then parsed before the next one is asked for.
 */
const LIST_HEAD = /^\{"kind":"[^"\\]*","apiVersion":"[^"\\]*","metadata":\{[^{}]*\}/;
/** Longer than any list head: a continue token is a few hundred bytes. */
const LIST_HEAD_LENGTH = 4096;

/**
 * The continue token of a list answer, read from its head without parsing the items;
 * `undefined` when the head is not the API server's usual one or has no token. The head is
 * parsed on its own, so the token is a string of its own: a slice of the answer would keep the
 * whole answer in memory for as long as the token lives.
 */
export function continueTokenAhead(text: string): string | undefined {
  const head = LIST_HEAD.exec(text.slice(0, LIST_HEAD_LENGTH));
  if (!head) return undefined;
  try {
    const token = (JSON.parse(`${head[0]}}`) as ListPage).metadata?.continue;
    return typeof token === "string" && token !== "" ? token : undefined;
  } catch {
    return undefined;
  }
}

/** The watch went quiet for longer than the idle deadline. */
class IdleWatchError extends Error {
  constructor(ms: number) {
    super(`no event for ${Math.round(ms / 1000)} s: the watch is taken for dead`);
    this.name = "IdleWatchError";
  }
}

/** The list could not be completed and must start over (410 on a continue token, …). */
class RelistNeeded extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "RelistNeeded";
  }
}

/** An event the server should never send: an object without a name, a bookmark in a list… */
class WatchProtocolError extends Error {
  constructor(problem: string) {
    super(`malformed watch event: ${problem}`);
    this.name = "WatchProtocolError";
  }
}

/**
 * True for the API server's "too large resource version" answer (504 with cause
 * `ResourceVersionTooLarge`, e.g. after an etcd restore): client-go relists on it.
 */
export function isResourceVersionTooLarge(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  const causes: unknown = err.details?.causes;
  if (
    Array.isArray(causes) && causes.some((cause) => cause?.reason === "ResourceVersionTooLarge")
  ) {
    return true;
  }
  return err.code === 504 && /too large resource version/i.test(String(err.status.message));
}

/** A refusal that asking again the same way will not change (4xx but 408 and 429). */
function isRefusal(err: unknown): boolean {
  if (err instanceof WatchDecodeError || err instanceof WatchProtocolError) return true;
  return err instanceof ApiError && err.code >= 400 && err.code < 500 && err.code !== 408 &&
    err.code !== 429;
}

/**
 * Orders two resourceVersions: negative when `a` is older than `b`, 0 when equal, positive
 * when newer; `undefined` when they cannot be ordered. resourceVersions are opaque, but the
 * API server's are etcd revisions in decimal, which are ordered; anything else is not.
 */
export function compareResourceVersions(
  a: string | undefined,
  b: string | undefined,
): number | undefined {
  if (!a || !b || !isDecimal(a) || !isDecimal(b)) return undefined;
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Digits without a leading zero; a loop, as this runs twice per event. */
function isDecimal(text: string): boolean {
  if (text.length > 1 && text.charCodeAt(0) === 0x30) return false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return text.length > 0;
}

/** Kind, namespace and selectors of a watch, for log records and messages. */
export function describeWatch(
  type: ResourceType<KubeObject>,
  options: Pick<WatcherOptions, "namespace" | "labelSelector" | "fieldSelector">,
): string {
  const where = type.scope === "Namespaced" && options.namespace ? ` in ${options.namespace}` : "";
  const selectors = [options.labelSelector, options.fieldSelector].filter(Boolean).join(", ");
  return `${type.kind}${where}${selectors ? ` (${selectors})` : ""}`;
}

/** True when `a` is known to be older than `b`. */
export function isOlderResourceVersion(a: string | undefined, b: string | undefined): boolean {
  return (compareResourceVersions(a, b) ?? 0) < 0;
}

/**
 * Fires `onExpire` once nothing has touched it for `limit` ms. Touching only stores a
 * timestamp; the timer is re-armed when it fires early, not on every event.
 */
class IdleDeadline {
  #last = Date.now();
  #paused = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #limit: number;
  readonly #onExpire: () => void;

  constructor(limit: number, onExpire: () => void) {
    this.#limit = limit;
    this.#onExpire = onExpire;
    this.#timer = setTimeout(this.#check, limit);
  }

  #check = (): void => {
    const idle = this.#paused ? 0 : Date.now() - this.#last;
    if (idle >= this.#limit) this.#onExpire();
    else this.#timer = setTimeout(this.#check, this.#limit - idle);
  };

  /** Something arrived at `now` (epoch ms). */
  touch(now: number): void {
    this.#last = now;
  }

  /** While the consumer holds an event, the server is not to blame for the silence. */
  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.#last = Date.now();
  }

  stop(): void {
    clearTimeout(this.#timer);
  }
}

/** One open watch connection, with its idle deadline and its link to the watcher's signal. */
interface Connection<T> {
  events: AsyncGenerator<WatchEvent<T>>;
  idle: IdleDeadline;
  /** The error to report for a failure: the idle deadline's, when it cut the connection. */
  explain(err: unknown): unknown;
  close(): void;
}

/**
 * Lists and watches one kind, for as long as it is iterated, recovering from every failure a
 * watch can have: reconnects with backoff, relists when the server has forgotten (410) or
 * refuses (504 ResourceVersionTooLarge, the same refusal twice at one resourceVersion), and
 * restarts a watch that has gone silent past its idle deadline. It never throws; failures are
 * logged and show in {@linkcode Watcher.status}. Iteration ends when `options.signal` aborts or
 * the consumer leaves the loop.
 *
 * @example Print what happens to the ConfigMaps of one namespace
 * ```ts
 * import { ConfigMap, loadConfig } from "@rudder/operator";
 * import { watcher } from "@rudder/operator/cache";
 * import { RestClient } from "@rudder/operator/kube";
 *
 * const stop = AbortSignal.timeout(60_000);
 * const rest = new RestClient(await loadConfig());
 * for await (const event of watcher(rest, ConfigMap, { namespace: "default", signal: stop })) {
 *   if (event.type === "Apply") console.log("applied", event.object.metadata?.name);
 *   if (event.type === "Delete") console.log("deleted", event.object.metadata?.name);
 * }
 * ```
 */
export function watcher<T extends KubeObject>(
  rest: RestClient,
  type: ResourceType<T>,
  options: WatcherOptions = {},
): Watcher<T> {
  return new ListWatcher(rest, type, options);
}

class ListWatcher<T extends KubeObject> implements Watcher<T> {
  readonly #rest: RestClient;
  readonly #type: ResourceType<T>;
  readonly #options: WatcherOptions;
  readonly #signal: AbortSignal;
  readonly #status: WatcherStatus = { state: "Listing", lists: 0, watches: 0 };
  readonly #description: string;
  #streamingList: boolean;
  #iterated = false;
  /** Consecutive refusals of the watch at #refusedAt. */
  #refusals = 0;
  #refusedAt: string | undefined;
  /** Consecutive watches at `at` that ended with nothing at all, and how long they lasted. */
  #silence: { at: string | undefined; ends: number; ms: number } = {
    at: undefined,
    ends: 0,
    ms: 0,
  };

  constructor(rest: RestClient, type: ResourceType<T>, options: WatcherOptions) {
    this.#rest = rest;
    this.#type = type;
    this.#options = options;
    this.#signal = options.signal ?? new AbortController().signal;
    this.#streamingList = options.streamingList ?? false;
    this.#description = describeWatch(type, options);
  }

  status(): WatcherStatus {
    return { ...this.#status };
  }

  [Symbol.asyncIterator](): AsyncIterator<WatcherEvent<T>> {
    if (this.#iterated) throw new Error(`the watcher of ${this.#description} is already iterated`);
    this.#iterated = true;
    return this.#run();
  }

  /** The state machine of the module doc: Listing → Watching ⇄ Backoff. */
  async *#run(): AsyncGenerator<WatcherEvent<T>, void, undefined> {
    const signal = this.#signal;
    const backoffOptions = this.#options.backoff ?? DEFAULT_BACKOFF;
    let backoff = backoffOptions.initial;
    let state: WatcherState = "Listing";
    /** Where Backoff leads. */
    let resume: "Listing" | "Watching" = "Listing";
    let waitMs = 0;
    /** A streaming list's connection, which goes on as the watch. */
    let open: Connection<T> | undefined;
    try {
      while (!signal.aborted) {
        this.#status.state = state;
        try {
          switch (state) {
            case "Listing": {
              open = yield* this.#list();
              backoff = backoffOptions.initial;
              state = "Watching";
              break;
            }
            case "Watching": {
              if (!open && this.#silentTooLong() && await this.#resourceVersionUnreachable()) {
                state = "Listing";
                break;
              }
              const started = Date.now();
              const connection = open;
              open = undefined;
              const delivered = yield* this.#watch(connection);
              const ran = Date.now() - started;
              if (!delivered && ran < SHORT_WATCH_MS) {
                throw new Error("the watch ended at once, without any event");
              }
              // The server ended the watch (its timeout): start the next one at once.
              this.#healthy();
              if (ran >= HEALTHY_RESET_MS) backoff = backoffOptions.initial;
              break;
            }
            case "Backoff": {
              // An abort ends the wait early; the loop then sees the signal and stops.
              await sleep(jittered(waitMs, 0.25), signal, this.#options.clock).catch(() => {});
              backoff = Math.min(backoffOptions.max, backoff * 2);
              state = resume;
              break;
            }
          }
        } catch (err) {
          open?.close();
          open = undefined;
          if (signal.aborted) break;
          const failedIn = state === "Listing" ? "Listing" : "Watching";
          const next = this.#recover(err, failedIn, backoff, backoffOptions.max);
          resume = next.resume;
          waitMs = next.waitMs;
          state = waitMs > 0 ? "Backoff" : resume;
        }
      }
    } finally {
      open?.close();
    }
  }

  /** Decides, after a failure in `failedIn`, where to go next and how long to wait first. */
  #recover(
    err: unknown,
    failedIn: "Listing" | "Watching",
    backoff: number,
    maxBackoff: number,
  ): { resume: "Listing" | "Watching"; waitMs: number } {
    const message = errorMessage(err) +
      // A list the server answers 404 is a kind it does not serve (a missing namespace lists empty).
      (failedIn === "Listing" && isNotFound(err)
        ? `: the API server does not serve ${this.#type.kind} (${this.#type.plural} in ` +
          `${this.#type.group ? `${this.#type.group}/` : ""}${this.#type.version}): is its CRD ` +
          "installed (rudder manifests writes it to config/crd), or are the kind, group or " +
          "version misspelled?"
        : "");
    this.#status.lastError = message;
    this.#status.failingSince ??= Date.now();
    if (failedIn === "Listing") this.#options.onListError?.(err);
    if (err instanceof RelistNeeded || isGone(err) || isResourceVersionTooLarge(err)) {
      logger.info("Relisting {informer}: {reason}", {
        informer: this.#description,
        reason: message,
      });
      // The first relist goes at once; a relist loop backs off like any failure.
      return { resume: "Listing", waitMs: failedIn === "Listing" ? backoff : 0 };
    }
    if (failedIn === "Watching" && isRefusal(err)) {
      const at = this.#status.resourceVersion;
      this.#refusals = at === this.#refusedAt ? this.#refusals + 1 : 1;
      this.#refusedAt = at;
      if (this.#refusals >= REFUSALS_BEFORE_RELIST) {
        logger.warn(
          "Relisting {informer}: the watch at resourceVersion {rv} keeps failing: {error}",
          {
            informer: this.#description,
            rv: at,
            error: message,
          },
        );
        this.#refusals = 0;
        return { resume: "Listing", waitMs: backoff };
      }
    }
    // 429 is the API server pacing its clients (or a new CRD's storage warming up).
    const level = isTooManyRequests(err)
      ? "info"
      : err instanceof IdleWatchError || err instanceof WatchDecodeError
      ? "warn"
      : "error";
    logger[level]("Watch of {informer} failed: {error}", {
      informer: this.#description,
      error: message,
    });
    // Retry-After is honoured up to the longest backoff: a server cannot park the watch for days.
    const retryAfter = err instanceof ApiError && isTooManyRequests(err)
      ? Number(err.retryAfterSeconds) * 1000
      : NaN;
    const waitMs = retryAfter >= 0 ? Math.min(retryAfter, maxBackoff) : backoff;
    return { resume: failedIn, waitMs };
  }

  /** A list completed or a watch delivered: the run of failures is over. */
  #healthy(): void {
    this.#status.lastError = undefined;
    this.#status.failingSince = undefined;
    this.#refusals = 0;
  }

  #query(extra: Record<string, QueryValue>): Record<string, QueryValue> {
    return {
      labelSelector: this.#options.labelSelector || undefined,
      fieldSelector: this.#options.fieldSelector || undefined,
      ...extra,
    };
  }

  #path(): string {
    return resourcePath(this.#type, { namespace: this.#options.namespace });
  }

  /**
   * Checks an object from the wire and gives it the kind's apiVersion and kind (lists and
   * metadata-only answers omit them).
   */
  #typed(value: unknown): T {
    const obj = value as Record<string, unknown>;
    const metadata = obj.metadata as Record<string, unknown> | null | undefined;
    if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
      throw new WatchProtocolError("an object without metadata");
    }
    if (typeof metadata.name !== "string" || metadata.name === "") {
      throw new WatchProtocolError("an object without metadata.name");
    }
    if (metadata.namespace !== undefined && typeof metadata.namespace !== "string") {
      throw new WatchProtocolError("an object whose metadata.namespace is not a string");
    }
    if (this.#options.metadataOnly || !obj.apiVersion) obj.apiVersion = this.#type.apiVersion;
    if (this.#options.metadataOnly || !obj.kind) obj.kind = this.#type.kind;
    return obj as T;
  }

  #watchTimeoutSeconds(): number {
    const [low, high] = this.#options.watchTimeoutSeconds ?? DEFAULT_WATCH_TIMEOUT;
    return Math.floor(low + Math.random() * (high - low + 1));
  }

  /** Opens a watch; the idle deadline, the signal and leaving the loop all close it. */
  #connect(query: Record<string, QueryValue>, timeoutSeconds: number): Connection<T> {
    const controller = new AbortController();
    const signal = this.#signal;
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const limit = this.#options.idleTimeout ?? timeoutSeconds * 1000 + IDLE_MARGIN_MS;
    const idleError = new IdleWatchError(limit);
    const idle = new IdleDeadline(limit, () => controller.abort(idleError));
    this.#status.watches++;
    const events = this.#rest.watch<T>({
      path: this.#path(),
      accept: this.#options.metadataOnly ? METADATA_ACCEPT : undefined,
      query: this.#query({ ...query, allowWatchBookmarks: true, timeoutSeconds }),
      signal: controller.signal,
    });
    return {
      events,
      idle,
      explain: (err) => controller.signal.reason === idleError ? idleError : err,
      close: () => {
        idle.stop();
        signal.removeEventListener("abort", onAbort);
        controller.abort();
        events.return(undefined).catch(() => {});
      },
    };
  }

  /**
   * Listing: yields Init, one InitApply per object and InitDone. A paged list (the default)
   * returns nothing; a streaming list (when asked) returns its open connection, which goes on
   * as the watch.
   */
  async *#list(): AsyncGenerator<WatcherEvent<T>, Connection<T> | undefined, undefined> {
    this.#status.lists++;
    yield { type: "Init" };
    if (this.#streamingList) {
      try {
        return yield* this.#streamList();
      } catch (err) {
        // Servers without WatchList refuse the parameters; remember and page instead.
        if (!(err instanceof ApiError) || (err.code !== 400 && err.code !== 422)) throw err;
        logger.info("Streaming lists are not supported for {informer}; using paged lists", {
          informer: this.#description,
        });
        this.#streamingList = false;
        yield { type: "Init" };
      }
    }
    yield* this.#pagedList();
    return undefined;
  }

  async *#streamList(): AsyncGenerator<WatcherEvent<T>, Connection<T>, undefined> {
    const timeoutSeconds = this.#watchTimeoutSeconds();
    const connection = this.#connect({
      sendInitialEvents: true,
      resourceVersionMatch: "NotOlderThan",
    }, timeoutSeconds);
    let handedOver = false;
    try {
      for (;;) {
        let next: IteratorResult<WatchEvent<T>, void>;
        try {
          next = await connection.events.next();
        } catch (err) {
          throw connection.explain(err);
        }
        if (next.done) {
          throw new RelistNeeded("the stream ended before the initial list was complete");
        }
        const event = next.value;
        connection.idle.touch(this.#status.lastEventTime = Date.now());
        if (event.type === "ERROR") throw this.#errorEvent(event.object);
        if (event.type === "BOOKMARK") {
          const metadata = event.object.metadata;
          if (metadata?.annotations?.[INITIAL_EVENTS_END] === "true") {
            this.#status.resourceVersion = metadata.resourceVersion;
            this.#silence = { at: undefined, ends: 0, ms: 0 };
            // The same connection goes on as the watch.
            this.#status.state = "Watching";
            this.#healthy();
            handedOver = true;
            yield { type: "InitDone", resourceVersion: metadata.resourceVersion };
            return connection;
          }
          continue;
        }
        if (event.type !== "ADDED") {
          throw new WatchProtocolError(`a ${event.type} event in a streaming list`);
        }
        const object = this.#typed(event.object);
        connection.idle.pause();
        yield { type: "InitApply", object };
        connection.idle.resume();
      }
    } finally {
      if (!handedOver) connection.close();
    }
  }

  /**
   * A paged list. The next page is asked for as soon as this one's text is in, before it is
   * parsed and stored: the API server reads and encodes page n+1 while the informer decodes page
   * n. The token comes from the answer's head ({@linkcode continueTokenAhead}); the parsed page
   * has the last word, and a page asked for with another token is dropped.
   */
  async *#pagedList(): AsyncGenerator<WatcherEvent<T>, void, undefined> {
    let resourceVersion: string | undefined;
    let next: PageRequest | undefined = this.#requestPage(undefined);
    // The page (its text) is dropped once its items are handed out: the generator waits on its
    // consumer with this frame alive, and nothing may outlast its use in it.
    let text: string | undefined;
    try {
      while (next) {
        text = await next.text;
        next = undefined;
        const ahead = continueTokenAhead(text);
        if (ahead) next = this.#requestPage(ahead);
        const page = this.#parsePage(text);
        text = undefined;
        const token = page.metadata?.continue || undefined;
        if (next?.token !== token) {
          next?.abort();
          next = token ? this.#requestPage(token) : undefined;
        }
        resourceVersion = page.metadata?.resourceVersion;
        // Each item is parsed as it is stored and let go of (./list_page.ts): the page's text
        // stays until its last item, its parsed objects never all at once.
        for (let i = 0; i < page.count; i++) {
          const item = this.#parseItem(page, i);
          if (typeof item !== "object" || item === null || Array.isArray(item)) {
            throw new WatchProtocolError("a list item that is not an object");
          }
          yield { type: "InitApply", object: this.#typed(item) };
        }
      }
    } finally {
      next?.abort();
    }
    this.#status.resourceVersion = resourceVersion;
    this.#silence = { at: undefined, ends: 0, ms: 0 };
    this.#status.lastEventTime = Date.now();
    // Whoever waits for the list may look at once: the watch is what comes next.
    this.#status.state = "Watching";
    this.#healthy();
    yield { type: "InitDone", resourceVersion };
  }

  /** Asks for one page; its text is awaited later, so a failure is held until then. */
  #requestPage(token: string | undefined): PageRequest {
    const controller = new AbortController();
    const text = this.#rest.requestText({
      path: this.#path(),
      accept: this.#options.metadataOnly ? METADATA_LIST_ACCEPT : "application/json",
      query: this.#query({
        limit: this.#options.pageSize ??
          (this.#status.lists > 1 ? RELIST_PAGE_SIZE : DEFAULT_PAGE_SIZE),
        continue: token,
      }),
      signal: AbortSignal.any([this.#signal, controller.signal]),
    }).catch((err) => {
      if (token && isGone(err)) throw new RelistNeeded("the list's continue token expired");
      throw err;
    });
    // A page that is dropped or outlived by a failure is never awaited.
    text.catch(() => {});
    return { token, text, abort: () => controller.abort() };
  }

  #parsePage(text: string): SplitListPage {
    try {
      return parseListPage(text, SPLIT_PAGES);
    } catch (err) {
      const what = err instanceof SyntaxError ? `JSON (${err.message})` : "an object";
      throw new WatchProtocolError(`a list page of ${this.#description} is not ${what}`);
    }
  }

  #parseItem(page: SplitListPage, index: number): unknown {
    try {
      return page.item(index);
    } catch (err) {
      throw new WatchProtocolError(
        `an item of a list page of ${this.#description} is not JSON (${(err as Error).message})`,
      );
    }
  }

  /**
   * Watching: yields Apply and Delete until the server ends the stream; returns whether any
   * event (bookmarks included) came. Starts a watch from the last resourceVersion unless it is
   * handed the connection of a streaming list.
   */
  async *#watch(open?: Connection<T>): AsyncGenerator<WatcherEvent<T>, boolean, undefined> {
    const connection = open ??
      this.#connect(
        { resourceVersion: this.#status.resourceVersion },
        this.#watchTimeoutSeconds(),
      );
    let delivered = false;
    const at = this.#status.resourceVersion;
    const started = Date.now();
    /** Set when the watch ended by the server's timeout or the idle deadline. */
    let quietEnd = false;
    try {
      for (;;) {
        let next: IteratorResult<WatchEvent<T>, void>;
        try {
          next = await connection.events.next();
        } catch (err) {
          const explained = connection.explain(err);
          quietEnd = explained instanceof IdleWatchError;
          throw explained;
        }
        if (next.done) {
          quietEnd = true;
          return delivered;
        }
        const event = next.value;
        connection.idle.touch(this.#status.lastEventTime = Date.now());
        if (event.type === "ERROR") throw this.#errorEvent(event.object);
        const rv = event.object.metadata?.resourceVersion;
        const usable = typeof rv === "string" && rv !== "";
        const order = usable
          ? compareResourceVersions(rv, this.#status.resourceVersion)
          : undefined;
        if (event.type === "BOOKMARK") {
          // A bookmark older than the resume point never moves it back.
          if (usable && (order === undefined || order >= 0)) this.#status.resourceVersion = rv;
        } else if (order !== undefined && order <= 0) {
          // Events come in resourceVersion order after the resume point; one that does not is
          // a duplicate or a replay, and applying it would roll an object back.
          logger.debug("Skipping an out-of-order {type} at {rv} of {informer}", {
            type: event.type,
            rv,
            informer: this.#description,
          });
          continue;
        } else {
          const object = this.#typed(event.object);
          connection.idle.pause();
          yield event.type === "DELETED"
            ? { type: "Delete", object, resourceVersion: rv }
            : { type: "Apply", object, resourceVersion: rv };
          connection.idle.resume();
          if (usable) this.#status.resourceVersion = rv;
        }
        if (!delivered) {
          delivered = true;
          this.#healthy();
          this.#silence = { at: undefined, ends: 0, ms: 0 };
        }
      }
    } finally {
      connection.close();
      if (quietEnd && !delivered) this.#silentEnd(at, Date.now() - started);
    }
  }

  /** A watch at `at` ended after `ms` with nothing at all: not even a bookmark. */
  #silentEnd(at: string | undefined, ms: number): void {
    const silence = this.#silence;
    this.#silence = silence.at === at && silence.ends > 0
      ? { at, ends: silence.ends + 1, ms: silence.ms + ms }
      : { at, ends: 1, ms };
  }

  /** Whether the watches at the resume point have been silent long enough to check it. */
  #silentTooLong(): boolean {
    const silence = this.#silence;
    return silence.at !== undefined && silence.at === this.#status.resourceVersion &&
      (silence.ends >= SILENT_ENDS_BEFORE_CHECK || silence.ms >= SILENCE_BEFORE_CHECK_MS);
  }

  /**
   * The Unreachable transition's check: asks the server for its current resourceVersion (a
   * list of one item) and tells whether it is older than the one the watches resume from, so
   * that they can never see an event. A failure to ask is thrown, and handled as the watch's;
   * the check is then made again before the next watch.
   */
  async #resourceVersionUnreachable(): Promise<boolean> {
    const { at, ends, ms } = this.#silence;
    const page = this.#parsePage(
      await this.#rest.requestText({
        path: this.#path(),
        accept: this.#options.metadataOnly ? METADATA_LIST_ACCEPT : "application/json",
        query: { limit: 1 },
        signal: this.#signal,
      }),
    );
    const current = page.metadata?.resourceVersion;
    // Checked: the next check waits for as much silence again.
    this.#silence = { at: undefined, ends: 0, ms: 0 };
    if (!isOlderResourceVersion(current, at)) {
      logger.debug(
        "The watch of {informer} was silent at resourceVersion {rv}; the server is at {current}",
        { informer: this.#description, rv: at, current },
      );
      return false;
    }
    logger.warn(
      "Relisting {informer}: its watches at resourceVersion {rv} were silent {ends} times ({seconds} s) and the server is only at {current}: it will never reach {rv} (an etcd restore, a bad bookmark)",
      { informer: this.#description, rv: at, ends, seconds: Math.round(ms / 1000), current },
    );
    return true;
  }

  #errorEvent(status: Status): Error {
    const error = new ApiError(status, { method: "WATCH", path: this.#path() });
    return isGone(error) ? new RelistNeeded(`the watch expired: ${error.message}`) : error;
  }
}
