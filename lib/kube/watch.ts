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
import { isJsonObject } from "../util/json.ts";

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

const NEWLINE = 0x0a;
const EVENT_TYPES: ReadonlySet<string> = new Set<WatchEventType>([
  "ADDED",
  "MODIFIED",
  "DELETED",
  "BOOKMARK",
  "ERROR",
]);

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
  const source = openSource(body, signal);
  // Invalid UTF-8 is not fatal: the API server writes valid UTF-8, and where bytes are broken
  // anyway this matches Go's encoding/json, which reads them as U+FFFD. A line cut inside a
  // character is left unterminated JSON, so it still fails to parse.
  // One streaming decoder per body: text is decoded once per chunk, not once per line. A
  // character split across chunks is held back by the decoder, and 0x0a never occurs inside a
  // multi-byte sequence, so the text's newlines are exactly the bytes' newlines.
  const text = new TextDecoder();
  let ended = false;
  let failure: unknown;
  /** Text of the unfinished line, in pieces (joined once, when its newline comes). */
  let pieces: string[] = [];
  /** Bytes of the unfinished line. */
  let pendingBytes = 0;
  let lineNumber = 0;
  const tooLong = (head: Uint8Array) =>
    new WatchDecodeError(
      `line is longer than ${maxLineBytes} bytes`,
      lineNumber + 1,
      excerptOf(pieces.join("") + text.decode(head.subarray(0, EXCERPT_BYTES), { stream: true })),
    );
  try {
    signal?.throwIfAborted();
    while (true) {
      const result = await source.next();
      signal?.throwIfAborted();
      if (result.done) {
        ended = true;
        break;
      }
      const chunk = result.value;
      if (!(chunk instanceof Uint8Array)) {
        throw new TypeError(`watch stream chunks must be Uint8Array, got ${typeof chunk}`);
      }
      const firstNewline = chunk.indexOf(NEWLINE);
      if (firstNewline === -1) {
        if (pendingBytes + chunk.length > maxLineBytes) throw tooLong(chunk);
        pendingBytes += chunk.length;
        pieces.push(text.decode(chunk, { stream: true }));
        continue;
      }
      if (pendingBytes + firstNewline > maxLineBytes) {
        throw tooLong(chunk.subarray(0, firstNewline));
      }
      // Only a chunk longer than the limit can hold a whole line that is too long.
      let byteNewline = chunk.length > maxLineBytes ? firstNewline : -1;
      const decoded = text.decode(chunk, { stream: true });
      let start = 0;
      for (
        let newline = decoded.indexOf("\n");
        newline !== -1;
        newline = decoded.indexOf("\n", start)
      ) {
        lineNumber++;
        let line = decoded.slice(start, newline);
        if (pieces.length > 0) {
          pieces.push(line);
          line = pieces.join("");
          pieces = [];
        }
        start = newline + 1;
        const event = parseEvent<T>(line, lineNumber);
        if (event) {
          signal?.throwIfAborted();
          yield event;
        }
        if (byteNewline !== -1) {
          // The next line is whole in this chunk when its newline is: check it in bytes.
          const next = chunk.indexOf(NEWLINE, byteNewline + 1);
          if (next !== -1 && next - byteNewline - 1 > maxLineBytes) {
            throw new WatchDecodeError(
              `line is longer than ${maxLineBytes} bytes`,
              lineNumber + 1,
              excerptOf(decoded.slice(start, decoded.indexOf("\n", start))),
            );
          }
          byteNewline = next;
        }
      }
      pendingBytes = chunk.length - chunk.lastIndexOf(NEWLINE) - 1;
      if (pendingBytes > maxLineBytes) {
        throw new WatchDecodeError(
          `line is longer than ${maxLineBytes} bytes`,
          lineNumber + 1,
          excerptOf(decoded.slice(start, start + EXCERPT_CHARS)),
        );
      }
      if (start < decoded.length) pieces.push(decoded.slice(start));
    }
    const last = pieces.join("") + text.decode();
    if (pendingBytes > 0 || last.length > 0) {
      const event = parseEvent<T>(last, lineNumber + 1);
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
function parseEvent<T>(line: string, lineNumber: number): WatchEvent<T> | undefined {
  let start = 0;
  let end = line.length;
  while (start < end && isBlank(line.charCodeAt(start))) start++;
  while (end > start && isBlank(line.charCodeAt(end - 1))) end--;
  if (start === end) return undefined;
  const text = start === 0 && end === line.length ? line : line.slice(start, end);

  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new WatchDecodeError(`invalid JSON: ${reason}`, lineNumber, text, { cause: err });
  }
  if (!isJsonObject(value) || typeof value.type !== "string" || !isJsonObject(value.object)) {
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

function excerptOf(text: string): string {
  if (text.length <= EXCERPT_CHARS) return text;
  let cut = EXCERPT_CHARS;
  // Do not end on half a surrogate pair (an emoji, say).
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return text.slice(0, cut);
}

function ignore(): void {}

interface ChunkSource {
  /** The next chunk; after an abort, a pending read ends (done) or rejects at once. */
  next(): Promise<{ done?: boolean; value?: Uint8Array }>;
  /** Releases the body; with `cancel`, also stops it, without waiting for it to stop. */
  close(cancel?: { reason: unknown }): void;
}

function openSource(
  body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  signal: AbortSignal | undefined,
): ChunkSource {
  if (typeof (body as ReadableStream<Uint8Array>).getReader === "function") {
    const reader = (body as ReadableStream<Uint8Array>).getReader();
    // One listener for the whole body, not a wrapper per read: cancelling the stream ends the
    // pending read at once, and the decoder then sees the signal.
    const onAbort = () => reader.cancel(signal!.reason).catch(ignore);
    signal?.addEventListener("abort", onAbort, { once: true });
    return {
      next: () => reader.read(),
      close(cancel) {
        signal?.removeEventListener("abort", onAbort);
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
  // A plain iterator's pending next() cannot be ended from outside, so each read races the
  // signal (bodies from fetch are ReadableStreams; iterables come from tests and adapters).
  const iterator = (body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  return {
    next: () => abortable(iterator.next(), signal),
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
