/**
 * The Kubernetes watch protocol on the wire: a response body of newline-delimited JSON, one
 * `{"type": …, "object": …}` event per line. {@linkcode decodeWatchStream} turns such a body
 * into typed {@linkcode WatchEvent}s; {@linkcode encodeWatchEvent} writes one line, for fake
 * servers and tests.
 *
 * @module
 */

import type { Status } from "./errors.ts";
import { abortable } from "../util/abort.ts";

/** The `type` of a watch event, as the API server sends it. */
export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

/**
 * One event of a watch. `ADDED`, `MODIFIED` and `DELETED` carry the object; `BOOKMARK` carries
 * an object of the watched kind with only `metadata.resourceVersion` (and, at the end of a
 * streaming list, the `k8s.io/initial-events-end: "true"` annotation); `ERROR` carries a
 * `Status`, e.g. 410 Expired when the requested resourceVersion is too old.
 *
 * @example Narrow on `type`
 * ```ts
 * import type { WatchEvent } from "@rudder/operator/kube";
 *
 * function summary(event: WatchEvent<{ metadata: { name?: string } }>): string {
 *   return event.type === "ERROR"
 *     ? `error ${event.object.code}`
 *     : `${event.type} ${event.object.metadata.name}`;
 * }
 * console.log(summary({ type: "ADDED", object: { metadata: { name: "a" } } })); // ADDED a
 * ```
 */
export type WatchEvent<T = Record<string, unknown>> =
  | { type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK"; object: T }
  | { type: "ERROR"; object: Status };

/** Options of {@linkcode decodeWatchStream}. */
export interface DecodeWatchStreamOptions {
  /**
   * Stops decoding: the pending read is abandoned, the body is cancelled and the generator
   * throws `signal.reason`.
   */
  signal?: AbortSignal;
  /**
   * Longest line accepted, in bytes, not counting the `\n`. A longer line throws a
   * {@linkcode WatchDecodeError} as soon as the limit is passed, before the rest of it is
   * buffered. Default 64 MiB.
   */
  maxLineBytes?: number;
}

// etcd refuses values over ~1.5 MiB by default and the API server bodies over 3 MiB, so no
// real object comes near this; it only stops a stream without newlines from eating the heap.
const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

const EXCERPT_CHARS = 200;
// 200 UTF-16 code units never take more than 600 bytes of UTF-8.
const EXCERPT_BYTES = 800;
// A buffer grown for one huge line is dropped afterwards rather than kept for the watch's life.
const RETAINED_BUFFER_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;
const EVENT_TYPES: ReadonlySet<string> = new Set<WatchEventType>([
  "ADDED",
  "MODIFIED",
  "DELETED",
  "BOOKMARK",
  "ERROR",
]);

// Not fatal: the API server writes valid UTF-8, and where bytes are broken anyway this matches
// Go's encoding/json, which reads them as U+FFFD. A line cut inside a character is left
// unterminated JSON, so it still fails to parse.
const utf8 = new TextDecoder();

/**
 * A watch stream line that is not a watch event: invalid JSON, JSON without a string `type`
 * and an object `object`, or an unknown event type. The watch cannot go on from such a line;
 * an informer logs the error and starts a new watch.
 *
 * @example
 * ```ts
 * import { decodeWatchStream, WatchDecodeError } from "@rudder/operator/kube";
 *
 * const body = new Response('{"type":"ADDED","object":{}}\nnot json\n').body!;
 * try {
 *   for await (const _event of decodeWatchStream(body));
 * } catch (err) {
 *   if (err instanceof WatchDecodeError) console.log(err.line, err.excerpt); // 2 not json
 * }
 * ```
 */
export class WatchDecodeError extends Error {
  /** 1-based number of the offending line in the stream, counting empty lines. */
  readonly line: number;
  /** The first 200 characters of the offending line. */
  readonly excerpt: string;

  /**
   * Builds the error for line `line`, keeping the first 200 characters of `text` (the line)
   * as the excerpt. The message is `watch stream line <line>: <problem>`; the excerpt stays out
   * of it, so logging the message does not log object data.
   */
  constructor(problem: string, line: number, text: string, options?: ErrorOptions) {
    super(`watch stream line ${line}: ${problem}`, options);
    this.name = "WatchDecodeError";
    this.line = line;
    this.excerpt = excerptOf(text);
  }
}

/**
 * Decodes a watch response body (newline-delimited JSON) into {@linkcode WatchEvent}s.
 *
 * Chunks may split lines and UTF-8 characters anywhere; lines end in `\n` or `\r\n`, blank
 * lines are skipped, and a last line without a newline is decoded when the body ends. Time and
 * memory are linear in the line length, however the body is chunked.
 *
 * `ERROR` events are yielded like any other: whether to relist is the caller's decision. A line
 * that is not a watch event throws a {@linkcode WatchDecodeError} after the events before it.
 *
 * The body is locked on the first `next()`. It is cancelled (a `ReadableStream`) or its
 * iterator returned (an `AsyncIterable`) whenever decoding stops before the body ends: the
 * consumer leaves the loop, a line fails to decode, or `options.signal` aborts. Cancelling
 * never waits for the body, so a stuck connection cannot stall the consumer. On abort the
 * generator throws `signal.reason`, as `fetch` does; check `signal.aborted` to tell a
 * requested stop from a failure. Errors of the body itself are thrown unchanged.
 *
 * @example Read a watch response
 * ```ts
 * import { encodeWatchEvent } from "./watch.ts";
 * import { decodeWatchStream } from "@rudder/operator/kube";
 *
 * type ConfigMap = { metadata: { name: string }; data?: Record<string, string> };
 * const body = new Response(
 *   encodeWatchEvent<ConfigMap>({ type: "ADDED", object: { metadata: { name: "a" } } }) +
 *     encodeWatchEvent({ type: "ERROR", object: { kind: "Status", code: 410 } }),
 * ).body!;
 *
 * for await (const event of decodeWatchStream<ConfigMap>(body)) {
 *   if (event.type === "ERROR") console.log("relist after", event.object.code); // 410
 *   else console.log(event.type, event.object.metadata.name); // ADDED a
 * }
 * ```
 */
export function decodeWatchStream<T = Record<string, unknown>>(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  options: DecodeWatchStreamOptions = {},
): AsyncGenerator<WatchEvent<T>, void, undefined> {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  // Checked here, not in the generator, so a bad option fails at the call site.
  if (!(maxLineBytes > 0)) {
    throw new RangeError(`maxLineBytes must be a positive number, got ${maxLineBytes}`);
  }
  return decode<T>(body, options.signal, maxLineBytes);
}

/**
 * Writes one event as a watch stream line: its JSON and a `\n`. JSON escapes newlines inside
 * strings, so the result is always exactly one line.
 *
 * @example
 * ```ts
 * import { encodeWatchEvent } from "./watch.ts";
 *
 * const line = encodeWatchEvent({ type: "DELETED", object: { metadata: { name: "a" } } });
 * console.log(line); // {"type":"DELETED","object":{"metadata":{"name":"a"}}}
 * ```
 */
export function encodeWatchEvent<T = Record<string, unknown>>(event: WatchEvent<T>): string {
  return `${JSON.stringify(event)}\n`;
}

async function* decode<T>(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  signal: AbortSignal | undefined,
  maxLineBytes: number,
): AsyncGenerator<WatchEvent<T>, void, undefined> {
  const source = openSource(body);
  let ended = false;
  let failure: unknown;
  const buffer = new LineBuffer();
  let lineNumber = 0;
  try {
    signal?.throwIfAborted();
    while (true) {
      const result = await abortable(source.next(), signal);
      if (result.done) {
        ended = true;
        break;
      }
      const chunk = result.value;
      if (!(chunk instanceof Uint8Array)) {
        throw new TypeError(`watch stream chunks must be Uint8Array, got ${typeof chunk}`);
      }
      let start = 0;
      while (start < chunk.length) {
        // 0x0a never occurs inside a multi-byte UTF-8 sequence, so splitting bytes is safe.
        const newline = chunk.indexOf(NEWLINE, start);
        const end = newline === -1 ? chunk.length : newline;
        if (buffer.length + (end - start) > maxLineBytes) {
          throw new WatchDecodeError(
            `line is longer than ${maxLineBytes} bytes`,
            lineNumber + 1,
            utf8.decode(buffer.head(chunk.subarray(start, end), EXCERPT_BYTES)),
          );
        }
        if (newline === -1) {
          buffer.append(chunk.subarray(start));
          break;
        }
        lineNumber++;
        let line = chunk.subarray(start, newline);
        if (buffer.length > 0) {
          buffer.append(line);
          line = buffer.view();
        }
        start = newline + 1;
        const event = parseEvent<T>(line, lineNumber);
        buffer.clear();
        if (event) {
          signal?.throwIfAborted();
          yield event;
        }
      }
    }
    if (buffer.length > 0) {
      const event = parseEvent<T>(buffer.view(), lineNumber + 1);
      buffer.clear();
      if (event) {
        signal?.throwIfAborted();
        yield event;
      }
    }
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    source.close(ended ? undefined : { reason: failure });
  }
}

/** Parses one line; `undefined` for a blank line. */
function parseEvent<T>(bytes: Uint8Array, lineNumber: number): WatchEvent<T> | undefined {
  let start = 0;
  let end = bytes.length;
  while (start < end && isBlank(bytes[start])) start++;
  while (end > start && isBlank(bytes[end - 1])) end--;
  if (start === end) return undefined;
  const text = utf8.decode(bytes.subarray(start, end));

  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new WatchDecodeError(`invalid JSON: ${reason}`, lineNumber, text, { cause: err });
  }
  if (!isObject(value) || typeof value.type !== "string" || !isObject(value.object)) {
    throw new WatchDecodeError(
      'not a watch event: want an object with a string "type" and an object "object"',
      lineNumber,
      text,
    );
  }
  if (!EVENT_TYPES.has(value.type)) {
    const type = JSON.stringify(value.type.slice(0, 64));
    throw new WatchDecodeError(`unknown watch event type ${type}`, lineNumber, text);
  }
  return value as WatchEvent<T>;
}

// Space, tab and the \r of a \r\n ending.
function isBlank(byte: number): boolean {
  return byte === 0x20 || byte === 0x09 || byte === 0x0d;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function excerptOf(text: string): string {
  if (text.length <= EXCERPT_CHARS) return text;
  let cut = EXCERPT_CHARS;
  // Do not end on half a surrogate pair (an emoji, say).
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return text.slice(0, cut);
}

function ignore(): void {}

/** The bytes of the line being assembled from several chunks. */
class LineBuffer {
  #bytes = new Uint8Array(0);
  #length = 0;

  get length(): number {
    return this.#length;
  }

  // Doubling keeps a line that arrives in many small chunks linear in copying, and, unlike a
  // list of pieces, costs nothing per chunk when chunks are a few bytes each.
  append(part: Uint8Array): void {
    const needed = this.#length + part.length;
    if (needed > this.#bytes.length) {
      const grown = new Uint8Array(Math.max(needed, this.#bytes.length * 2, 4096));
      grown.set(this.#bytes.subarray(0, this.#length));
      this.#bytes = grown;
    }
    // Copied, never kept by reference: a producer may reuse its chunk buffers.
    this.#bytes.set(part, this.#length);
    this.#length = needed;
  }

  view(): Uint8Array {
    return this.#bytes.subarray(0, this.#length);
  }

  /** The first `max` bytes of the buffer followed by `next`. */
  head(next: Uint8Array, max: number): Uint8Array {
    const own = this.view().subarray(0, max);
    const head = new Uint8Array(Math.min(max, own.length + next.length));
    head.set(own);
    head.set(next.subarray(0, head.length - own.length), own.length);
    return head;
  }

  clear(): void {
    this.#length = 0;
    if (this.#bytes.length > RETAINED_BUFFER_BYTES) this.#bytes = new Uint8Array(0);
  }
}

interface ChunkSource {
  next(): Promise<{ done?: boolean; value?: Uint8Array }>;
  /** Releases the body; with `cancel`, also stops it, without waiting for it to stop. */
  close(cancel?: { reason: unknown }): void;
}

function openSource(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
): ChunkSource {
  if (typeof (body as ReadableStream<Uint8Array>).getReader === "function") {
    const reader = (body as ReadableStream<Uint8Array>).getReader();
    return {
      next: () => reader.read(),
      close(cancel) {
        // cancel() resolves a pending read at once, so releasing the lock is safe after it.
        if (cancel) reader.cancel(cancel.reason).catch(ignore);
        try {
          reader.releaseLock();
        } catch {
          // Older runtimes refuse to release with a read pending; the stream is cancelled.
        }
      },
    };
  }
  const iterator = (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  return {
    next: () => iterator.next(),
    close(cancel) {
      if (!cancel) return;
      try {
        // An async generator queues return() behind a pending next(), so it is not awaited.
        Promise.resolve(iterator.return?.()).catch(ignore);
      } catch {
        // A throwing return() has nothing more to clean up.
      }
    },
  };
}
