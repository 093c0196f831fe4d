import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

import {
  decodeWatchStream,
  encodeWatchEvent,
  WatchDecodeError,
  type WatchEvent,
} from "../../lib/kube/watch.ts";

/** Every test and hook states its timeout: Bun's default of 5 s is too short on a busy machine. */
const T = { timeout: 30_000 };

const encoder = new TextEncoder();
const fixture = new Uint8Array(
  await readFile(new URL("../fixtures/watch-stream.ndjson", import.meta.url)),
);
const fixtureEvents: unknown[] = new TextDecoder().decode(fixture).split("\n")
  .filter((line) => line !== "").map((line) => JSON.parse(line));

/** Seeded PRNG (mulberry32): the same seed gives the same chunkings on every run. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Cuts `bytes` into chunks whose sizes `nextSize` picks. */
function chunk(bytes: Uint8Array, nextSize: () => number): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length;) {
    const size = Math.max(1, nextSize());
    chunks.push(bytes.slice(at, at + size));
    at += size;
  }
  return chunks;
}

interface Recorded {
  cancelled: boolean;
  reason?: unknown;
  reads: number;
}

/** A body that serves one chunk per pull and records its cancellation. */
function streamOf(chunks: Uint8Array[], recorded: Recorded = newRecord()): ReadableStream<
  Uint8Array
> {
  let next = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      recorded.reads++;
      if (next < chunks.length) controller.enqueue(chunks[next++]);
      else controller.close();
    },
    cancel(reason) {
      recorded.cancelled = true;
      recorded.reason = reason;
    },
  });
}

/** A body as a plain async generator; `finally` records an early return. */
async function* iterableOf(
  chunks: Uint8Array[],
  recorded: Recorded = newRecord(),
): AsyncGenerator<Uint8Array> {
  let finished = false;
  try {
    for (const c of chunks) {
      recorded.reads++;
      yield c;
    }
    finished = true;
  } finally {
    if (!finished) recorded.cancelled = true;
  }
}

function newRecord(): Recorded {
  return { cancelled: false, reads: 0 };
}

async function collect<T>(events: AsyncIterable<WatchEvent<T>>): Promise<WatchEvent<T>[]> {
  const out: WatchEvent<T>[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** Runs `events` to its end and returns what it yielded and what it threw. */
async function drain<T>(
  events: AsyncIterable<WatchEvent<T>>,
): Promise<{ events: WatchEvent<T>[]; error: unknown }> {
  const out: WatchEvent<T>[] = [];
  try {
    for await (const event of events) out.push(event);
  } catch (error) {
    return { events: out, error };
  }
  return { events: out, error: undefined };
}

function bytesOf(...parts: (string | number[])[]): Uint8Array[] {
  return parts.map((p) => typeof p === "string" ? encoder.encode(p) : new Uint8Array(p));
}

/** True when `at` is a chunk boundary that falls inside a multi-byte UTF-8 character. */
function splitsCharacter(bytes: Uint8Array, at: number): boolean {
  return at > 0 && at < bytes.length && (bytes[at] & 0xc0) === 0x80;
}

describe("decodeWatchStream", T, () => {
  it("decodes the recorded stream into the events JSON.parse gives line by line", T, async () => {
    const events = await collect(decodeWatchStream(streamOf([fixture])));

    assert.deepEqual(events, fixtureEvents);
    assert.deepEqual(events.map((e) => e.type), [
      "ADDED",
      "ADDED",
      "ADDED",
      "BOOKMARK",
      "MODIFIED",
      "ADDED",
      "DELETED",
      "BOOKMARK",
      "MODIFIED",
      "ERROR",
    ]);
    const modified = events[4].object as { data: Record<string, string> };
    assert.equal(modified.data["greeting.ja"], "日本語でようこそ");
    assert.equal(modified.data.launch, "🚀🚀 liftoff 👩‍🚀");
    const bookmark = events[3].object as {
      metadata: { resourceVersion: string; annotations: Record<string, string> };
    };
    assert.equal(bookmark.metadata.resourceVersion, "48240");
    assert.equal(bookmark.metadata.annotations["k8s.io/initial-events-end"], "true");
    const last = events[9];
    assert.equal(last.type, "ERROR");
    if (last.type === "ERROR") {
      assert.equal(last.object.code, 410);
      assert.equal(last.object.reason, "Expired");
    }
  });

  it(
    "gives the same events for 300 seeded random chunkings, 1-byte chunks included",
    T,
    async () => {
      let characterSplits = 0;
      for (let seed = 1; seed <= 300; seed++) {
        const random = mulberry32(seed);
        // Mix tiny, small and large chunks so boundaries land everywhere.
        const style = seed % 4;
        const chunks = chunk(fixture, () => {
          if (style === 0) return 1;
          if (style === 1) return 1 + Math.floor(random() * 4);
          if (style === 2) return 1 + Math.floor(random() * 64);
          return 1 + Math.floor(random() * fixture.length);
        });
        let at = 0;
        for (const c of chunks) {
          at += c.length;
          if (splitsCharacter(fixture, at)) characterSplits++;
        }
        const body = seed % 2 === 0 ? streamOf(chunks) : iterableOf(chunks);
        const events = await collect(decodeWatchStream(body));
        assert.deepEqual(events, fixtureEvents, `seed ${seed}`);
      }
      // Proves the chunkings exercised the hard case, not only ASCII boundaries.
      assert.ok(characterSplits > 1000, `only ${characterSplits} splits inside characters`);
    },
  );

  it("gives the same events for a split at every byte offset", T, async () => {
    for (let at = 1; at < fixture.length; at++) {
      const chunks = [fixture.subarray(0, at), fixture.subarray(at)];
      const events = await collect(decodeWatchStream(iterableOf(chunks)));
      assert.deepEqual(events, fixtureEvents, `split at byte ${at}`);
    }
  });

  it("decodes a 3 MB line with multi-byte characters split into many chunks", T, async () => {
    const unit = "日本語 é 🚀 ascii ";
    const value = unit.repeat(Math.ceil(3_000_000 / encoder.encode(unit).length));
    const event: WatchEvent = {
      type: "ADDED",
      object: { kind: "ConfigMap", metadata: { name: "big" }, data: { blob: value } },
    };
    const small: WatchEvent = { type: "DELETED", object: { metadata: { name: "after" } } };
    const bytes = encoder.encode(encodeWatchEvent(event) + encodeWatchEvent(small));
    assert.ok(bytes.length > 3_000_000);

    const random = mulberry32(42);
    const chunks = chunk(bytes, () => 1 + Math.floor(random() * 1024));
    const events = await collect(decodeWatchStream(streamOf(chunks)));

    assert.equal(events.length, 2);
    const data = (events[0].object as { data: { blob: string } }).data;
    assert.equal(data.blob.length, value.length);
    assert.equal(data.blob, value);
    assert.deepEqual(events, [event, small]);
  });

  it("completes on 8 MB of lines fed in 64-byte chunks (no quadratic buffering)", T, async () => {
    const line = encodeWatchEvent({
      type: "ADDED",
      object: { metadata: { name: "x" }, data: { v: "é".repeat(2_000_000) } },
    });
    const bytes = encoder.encode(line + line);
    const events = await collect(decodeWatchStream(iterableOf(chunk(bytes, () => 64))));
    assert.equal(events.length, 2);
    assert.equal((events[1].object as { data: { v: string } }).data.v.length, 2_000_000);
  });

  it(
    "accepts \\r\\n endings, skips blank lines and decodes a last line without newline",
    T,
    async () => {
      const a = { type: "ADDED", object: { metadata: { name: "a" } } };
      const b = { type: "MODIFIED", object: { metadata: { name: "b" } } };
      const c = { type: "DELETED", object: { metadata: { name: "c" } } };
      const text = `${JSON.stringify(a)}\r\n\r\n\n  \t \r\n${JSON.stringify(b)}\r\n\n` +
        JSON.stringify(c);
      for (const size of [1, 2, 3, 7, text.length]) {
        const chunks = chunk(encoder.encode(text), () => size);
        const events = await collect(decodeWatchStream(streamOf(chunks)));
        assert.deepEqual(events, [a, b, c], `chunk size ${size}`);
      }
    },
  );

  it("yields nothing for an empty body or one of blank lines", T, async () => {
    assert.deepEqual(await collect(decodeWatchStream(streamOf([]))), []);
    assert.deepEqual(await collect(decodeWatchStream(iterableOf(bytesOf("\n\r\n  \n")))), []);
  });

  it("yields ERROR events and keeps decoding after them", T, async () => {
    const error = {
      type: "ERROR",
      object: { kind: "Status", status: "Failure", reason: "Expired", code: 410 },
    };
    const after = { type: "BOOKMARK", object: { metadata: { resourceVersion: "9" } } };
    const body = streamOf(bytesOf(`${JSON.stringify(error)}\n${JSON.stringify(after)}\n`));
    assert.deepEqual(await collect(decodeWatchStream(body)), [error, after]);
  });

  it(
    "throws WatchDecodeError with line number and excerpt after the events before it",
    T,
    async () => {
      const good = '{"type":"ADDED","object":{"metadata":{"name":"a"}}}';
      const recorded = newRecord();
      const body = streamOf(
        chunk(encoder.encode(`${good}\r\n\n${good}\n{"type":"ADDED",oops}\r\n${good}\n`), () => 5),
        recorded,
      );
      const { events, error } = await drain(decodeWatchStream(body));

      assert.equal(events.length, 2);
      assert.ok(error instanceof WatchDecodeError);
      assert.equal(error.name, "WatchDecodeError");
      assert.equal(error.line, 4);
      assert.equal(error.excerpt, '{"type":"ADDED",oops}');
      assert.ok(error.cause instanceof SyntaxError);
      assert.match(error.message, /^watch stream line 4: invalid JSON: /);
      assert.ok(error.message.includes(error.cause.message));
      // The connection is closed: the informer will start a new watch.
      assert.equal(recorded.cancelled, true);
      assert.equal(recorded.reason, error);
    },
  );

  it("rejects lines that are JSON but not watch events", T, async () => {
    const cases = [
      "[1,2]",
      '"ADDED"',
      "null",
      '{"type":1,"object":{}}',
      '{"type":"ADDED"}',
      '{"type":"ADDED","object":null}',
      '{"type":"ADDED","object":[]}',
      '{"type":"ADDED","object":"cm"}',
    ];
    for (const line of cases) {
      const { events, error } = await drain(decodeWatchStream(iterableOf(bytesOf(`\n${line}`))));
      assert.deepEqual(events, [], line);
      assert.ok(error instanceof WatchDecodeError, line);
      assert.equal(error.line, 2, line);
      assert.equal(error.excerpt, line);
      assert.match(error.message, /not a watch event/, line);
    }
  });

  it("rejects an unknown event type, naming it", T, async () => {
    const line = '{"type":"UPDATED","object":{}}';
    const { error } = await drain(decodeWatchStream(streamOf(bytesOf(`${line}\n`))));
    assert.ok(error instanceof WatchDecodeError);
    assert.equal(error.line, 1);
    assert.match(error.message, /unknown watch event type "UPDATED"/);
  });

  it("keeps the excerpt to 200 characters without splitting an emoji", T, async () => {
    const prefix = '{"type":"ADDED","object":{"data":"';
    const long = `${prefix}${"x".repeat(199 - prefix.length)}${"🚀".repeat(20)}`;
    const { error } = await drain(decodeWatchStream(streamOf(bytesOf(`${long}\n`))));
    assert.ok(error instanceof WatchDecodeError);
    // Code unit 200 is the first half of an emoji, so the excerpt stops before it.
    assert.equal(long.charCodeAt(199), 0xd83d);
    assert.equal(error.excerpt, long.slice(0, 199));
    assert.ok(!error.message.includes("xxxx"), "the message leaves the data out");

    const plain = `${prefix}${"y".repeat(300)}`;
    const other = await drain(decodeWatchStream(streamOf(bytesOf(`${plain}\n`))));
    assert.ok(other.error instanceof WatchDecodeError);
    assert.equal(other.error.excerpt, plain.slice(0, 200));
  });

  it("enforces maxLineBytes in bytes, before the line ends", T, async () => {
    const line = encodeWatchEvent({ type: "ADDED", object: { v: "日本" } }).trimEnd();
    const size = encoder.encode(line).length;
    const ok = await collect(decodeWatchStream(streamOf(bytesOf(`${line}\n`)), {
      maxLineBytes: size,
    }));
    assert.equal(ok.length, 1);

    const { events, error } = await drain(
      decodeWatchStream(iterableOf(chunk(encoder.encode(`${line}\n${line}\n`), () => 3)), {
        maxLineBytes: size - 1,
      }),
    );
    assert.deepEqual(events, []);
    assert.ok(error instanceof WatchDecodeError);
    assert.equal(error.line, 1);
    assert.match(error.message, new RegExp(`longer than ${size - 1} bytes`));
    assert.ok(line.startsWith(error.excerpt.replace(/\uFFFD$/, "")));

    // A body that never sends a newline is stopped, not buffered until memory runs out.
    const recorded = newRecord();
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        recorded.reads++;
        controller.enqueue(new Uint8Array(1000).fill(0x61));
      },
      cancel(reason) {
        recorded.cancelled = true;
        recorded.reason = reason;
      },
    });
    const result = await drain(decodeWatchStream(endless, { maxLineBytes: 10_000 }));
    assert.ok(result.error instanceof WatchDecodeError);
    assert.equal(result.error.excerpt, "a".repeat(200));
    assert.equal(recorded.cancelled, true);
    assert.ok(recorded.reads <= 12, `read ${recorded.reads} chunks`);
  });

  it("enforces maxLineBytes on lines inside one chunk, after the events before them", {
    timeout: 10_000,
  }, async () => {
    const short = encodeWatchEvent({ type: "ADDED", object: { v: "a" } });
    const limit = short.length + 10;
    const long = `{"type":"ADDED","object":{"v":"${"b".repeat(limit)}"}}\n`;
    for (
      const [body, line] of [[short + long + short, 2], [
        short + short + long.trimEnd(),
        3,
      ]] as const
    ) {
      const { events, error } = await drain(
        decodeWatchStream(streamOf([encoder.encode(body)]), { maxLineBytes: limit }),
      );
      assert.equal(events.length, line - 1, "the events before the long line come first");
      assert.ok(error instanceof WatchDecodeError);
      assert.equal(error.line, line);
      assert.match(error.message, /longer than/);
      assert.ok(long.startsWith(error.excerpt));
    }
  });

  it("refuses a maxLineBytes that is not positive", T, () => {
    for (const maxLineBytes of [0, -1, Number.NaN]) {
      assert.throws(() => decodeWatchStream(streamOf([]), { maxLineBytes }), RangeError);
    }
  });

  it("cancels a ReadableStream body when the consumer breaks out early", T, async () => {
    const recorded = newRecord();
    const body = streamOf(chunk(fixture, () => 100), recorded);
    const seen: string[] = [];
    for await (const event of decodeWatchStream(body)) {
      seen.push(event.type);
      if (seen.length === 2) break;
    }
    assert.deepEqual(seen, ["ADDED", "ADDED"]);
    assert.equal(recorded.cancelled, true);
    assert.equal(body.locked, false);
  });

  it("returns an AsyncIterable body's iterator when the consumer calls return()", T, async () => {
    const recorded = newRecord();
    const events = decodeWatchStream(iterableOf(chunk(fixture, () => 100), recorded));
    const first = await events.next();
    assert.equal(first.done, false);
    assert.deepEqual(await events.return(), { done: true, value: undefined });
    assert.equal(recorded.cancelled, true);
    assert.deepEqual(await events.next(), { done: true, value: undefined });
  });

  it("leaves a body that ended alone", T, async () => {
    const recorded = newRecord();
    const body = streamOf([fixture], recorded);
    await collect(decodeWatchStream(body));
    assert.equal(recorded.cancelled, false);
    assert.equal(body.locked, false);
  });

  it(
    "throws the abort reason and cancels the body when the signal aborts a pending read",
    T,
    async () => {
      const recorded = newRecord();
      const line = encoder.encode('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
      let served = false;
      // Serves one line, then stays silent like a quiet watch.
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (served) return new Promise<void>(() => {});
          served = true;
          controller.enqueue(line);
        },
        cancel(reason) {
          recorded.cancelled = true;
          recorded.reason = reason;
        },
      });
      const controller = new AbortController();
      const events = decodeWatchStream(body, { signal: controller.signal });
      assert.equal((await events.next()).done, false);

      const pending = events.next();
      const reason = new Error("shutting down");
      controller.abort(reason);
      await assert.rejects(pending, (err) => err === reason);
      assert.equal(recorded.cancelled, true);
      assert.equal(recorded.reason, reason);
      assert.deepEqual(await events.next(), { done: true, value: undefined });
    },
  );

  it("returns a hanging AsyncIterable's iterator on abort", T, async () => {
    let returned = false;
    const hanging: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({
        next: () => new Promise<IteratorResult<Uint8Array>>(() => {}),
        return: () => {
          returned = true;
          return Promise.resolve({ done: true, value: undefined });
        },
      }),
    };
    const controller = new AbortController();
    const pending = decodeWatchStream(hanging, { signal: controller.signal }).next();
    // Lets the generator start its read before the abort.
    await Promise.resolve();
    controller.abort();
    await assert.rejects(pending, (err: unknown) => (err as Error).name === "AbortError");
    assert.equal(returned, true);
  });

  it("stops between events of one chunk once the signal has aborted", T, async () => {
    const recorded = newRecord();
    const controller = new AbortController();
    // Two chunks, so the body is still open when the abort comes.
    const events = decodeWatchStream(streamOf([fixture, fixture], recorded), {
      signal: controller.signal,
    });
    const seen: string[] = [];
    const reason = new Error("stop");
    await assert.rejects(async () => {
      for await (const event of events) {
        seen.push(event.type);
        controller.abort(reason);
      }
    }, (err) => err === reason);
    assert.deepEqual(seen, ["ADDED"]);
    assert.equal(recorded.cancelled, true);
  });

  it("throws at once for an already aborted signal, cancelling the body", T, async () => {
    const recorded = newRecord();
    const reason = new Error("too late");
    const events = decodeWatchStream(streamOf([fixture], recorded), {
      signal: AbortSignal.abort(reason),
    });
    await assert.rejects(events.next(), (err) => err === reason);
    assert.equal(recorded.cancelled, true);
    assert.equal(recorded.reason, reason);
  });

  it("passes an error of the body through unchanged, after the events before it", T, async () => {
    const failure = new TypeError("connection reset");
    let served = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (served) return controller.error(failure);
        served = true;
        controller.enqueue(encoder.encode('{"type":"ADDED","object":{}}\n{"type":"DEL'));
      },
    });
    const { events, error } = await drain(decodeWatchStream(body));
    assert.deepEqual(events, [{ type: "ADDED", object: {} }]);
    assert.equal(error, failure);
  });

  it("rejects chunks that are not bytes", T, async () => {
    const strings = (async function* () {
      yield '{"type":"ADDED","object":{}}\n';
    })() as unknown as AsyncIterable<Uint8Array>;
    const { error } = await drain(decodeWatchStream(strings));
    assert.ok(error instanceof TypeError);
  });

  it("fails on a body cut inside a UTF-8 character, reading the stub as U+FFFD", T, async () => {
    const good = '{"type":"ADDED","object":{}}\n';
    const cut = encoder.encode(`${good}{"type":"ADDED","object":{"data":{"v":"日`);
    const body = streamOf([cut.subarray(0, cut.length - 1)]); // drop the last byte of 日
    const { events, error } = await drain(decodeWatchStream(body));
    assert.deepEqual(events, [{ type: "ADDED", object: {} }]);
    assert.ok(error instanceof WatchDecodeError);
    assert.equal(error.line, 2);
    assert.match(error.message, /invalid JSON/);
    assert.equal(error.excerpt, '{"type":"ADDED","object":{"data":{"v":"\uFFFD');

    // A lone stub after the last newline is a line of its own.
    const stub = await drain(decodeWatchStream(streamOf(bytesOf(good, [0xf0, 0x9f, 0x9a]))));
    assert.equal(stub.events.length, 1);
    assert.ok(stub.error instanceof WatchDecodeError);
    assert.equal(stub.error.line, 2);
    assert.equal(stub.error.excerpt, "\uFFFD");
  });

  it("reads invalid UTF-8 inside a string as U+FFFD, like Go's encoding/json", T, async () => {
    const body = streamOf(bytesOf('{"type":"ADDED","object":{"v":"a', [0xff], 'b"}}\n'));
    assert.deepEqual(await collect(decodeWatchStream(body)), [
      { type: "ADDED", object: { v: "a\uFFFDb" } },
    ]);
  });
});

describe("encodeWatchEvent", T, () => {
  it("writes exactly one line that decodes back to the same event", T, async () => {
    const event: WatchEvent<{ data: Record<string, string> }> = {
      type: "MODIFIED",
      object: { data: { script: "line one\nline two\r\n🚀 日本語" } },
    };
    const line = encodeWatchEvent(event);
    assert.equal(line.indexOf("\n"), line.length - 1);
    assert.deepEqual(JSON.parse(line), event);
    const events = await collect(decodeWatchStream(streamOf(chunk(encoder.encode(line), () => 1))));
    assert.deepEqual(events, [event]);
  });
});
