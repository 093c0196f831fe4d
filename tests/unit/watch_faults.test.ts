// Malformed watch streams, table-driven: each case feeds one broken stream to a running
// informer through the fake watch server, then the server changes objects as usual. For every
// case: no crash, no hang, and the store ends equal to what the server serves.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap } from "../../lib/api/builtins.ts";
import { Informer } from "../../lib/cache/informer.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { concat } from "../../lib/util/bytes.ts";
import { type AfterInject, FakeWatchServer, NAMESPACE } from "../support/fake_watch_server.ts";
import { eventually } from "../support/eventually.ts";

type CM = ConfigMap;

interface FaultCase {
  name: string;
  /** Raw lines the next watch gets (strings get a newline, bytes go as they are). */
  lines?: (server: FakeWatchServer) => (string | Uint8Array)[];
  /** What that watch does after them. */
  then?: AfterInject;
  /** Further set-up: statuses to answer with, objects to add. */
  setup?: (server: FakeWatchServer) => void;
  /** True once the server has served the fault; default: the lines were sent. */
  served?: (server: FakeWatchServer) => boolean;
}

const encoder = new TextEncoder();
const MB = 1024 * 1024;

function bytes(...parts: (string | number[])[]): Uint8Array {
  return concat(parts.map((p) => typeof p === "string" ? encoder.encode(p) : Uint8Array.from(p)));
}

/** The event the server last sent for `a`, as a line: a duplicate when sent again. */
function lastEventOfA(server: FakeWatchServer): string {
  return JSON.stringify({ type: "MODIFIED", object: server.objects.get("a") });
}

/** `a` as it was long ago: an event no watch from now should apply. */
function staleA(rv: string, v = "stale", type = "MODIFIED"): string {
  return JSON.stringify({
    type,
    object: {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "a", namespace: NAMESPACE, resourceVersion: rv },
      data: { v },
    },
  });
}

function error(object: unknown): string {
  return JSON.stringify({ type: "ERROR", object });
}

function event(type: string, object: unknown): string {
  return JSON.stringify({ type, object });
}

function bookmark(rv: string): string {
  return event("BOOKMARK", {
    kind: "ConfigMap",
    apiVersion: "v1",
    metadata: { resourceVersion: rv },
  });
}

const cases: FaultCase[] = [];

// Truncated JSON: a real event cut at several places, each followed by a newline.
for (const cut of [1, 5, 12, 20, 31, 0.5, -2, -1]) {
  cases.push({
    name: `a line truncated at ${
      cut > 0 && cut < 1 ? `${cut * 100} %` : cut < 0 ? `${-cut} bytes from its end` : `byte ${cut}`
    }`,
    lines: (s) => {
      const line = lastEventOfA(s);
      const at = cut > 0 && cut < 1
        ? Math.floor(line.length * cut)
        : cut < 0
        ? line.length + cut
        : cut;
      return [line.slice(0, at)];
    },
  });
}

// Connections closed mid-line, cleanly or by a reset.
for (
  const [then, at] of [["end", 10], ["end", 0.5], ["end", -1], ["destroy", 10], [
    "destroy",
    0.5,
  ]] as const
) {
  cases.push({
    name: `a connection ${then === "end" ? "closed" : "reset"} mid-line at ${at}`,
    lines: (s) => {
      const line = lastEventOfA(s);
      const cut = at > 0 && at < 1 ? Math.floor(line.length * at) : at < 0 ? line.length + at : at;
      return [encoder.encode(line.slice(0, cut))];
    },
    then,
  });
}
cases.push(
  {
    name: "a connection closed right after its headers",
    lines: () => [new Uint8Array(0)],
    then: "end",
  },
  {
    name: "a connection reset right after its headers",
    lines: () => [new Uint8Array(0)],
    then: "destroy",
  },
  {
    name: "a complete last line without its newline, then the end",
    lines: (s) => [encoder.encode(lastEventOfA(s))],
    then: "end",
  },
);

// Invalid UTF-8.
cases.push(
  { name: "a line of invalid UTF-8 bytes", lines: () => [bytes([0xff, 0xfe, 0xfd, 0x0a])] },
  { name: "NUL bytes", lines: () => [bytes([0, 0, 0, 0x0a])] },
  {
    name: "invalid UTF-8 in the event type",
    lines: () => [bytes('{"type":"ADD', [0xff], 'ED","object":{}}\n')],
  },
  {
    name: "a line cut inside a multi-byte character",
    lines: () => [bytes('{"type":"MODIFIED","object":{"metadata":{"name":"a', [0xe2, 0x82], "\n")],
  },
  { name: "an overlong encoding outside strings", lines: () => [bytes([0xc0, 0xaf], "{}\n")] },
  {
    name: "a lone surrogate's bytes between tokens",
    lines: () => [bytes('{"type":', [0xed, 0xa0, 0x80], '"ADDED"}\n')],
  },
  {
    name: "invalid UTF-8 inside a stale object's data",
    lines: () => {
      const [before, after] = staleA("1", "XX").split("XX");
      return [bytes(before, [0xc3, 0x28], after, "\n")];
    },
  },
);

// Multi-megabyte lines.
cases.push(
  { name: "a 3 MB line of garbage", lines: () => ["x".repeat(3 * MB)] },
  {
    name: "a 3 MB line of garbage without a newline, then the end",
    lines: () => [encoder.encode("y".repeat(3 * MB))],
    then: "end",
  },
  { name: "a 3 MB stale event", lines: () => [staleA("2", "z".repeat(3 * MB))] },
  { name: "a 3 MB line of spaces", lines: () => [" ".repeat(3 * MB)] },
  { name: "100 000 nested arrays", lines: () => ["[".repeat(100_000)] },
  {
    name: "a real 2 MB object among broken lines",
    setup: (s) => s.put("big", { v: "b".repeat(2 * MB) }),
    lines: () => ["{", "}"],
  },
);

// ERROR events with odd codes and odd Status objects.
for (
  const code of [
    0,
    1,
    100,
    200,
    302,
    400,
    401,
    403,
    404,
    409,
    410,
    422,
    429,
    500,
    503,
    504,
    999,
    -1,
    1e12,
    3.5,
  ]
) {
  cases.push({
    name: `an ERROR event with code ${code}`,
    lines: () => [error({ kind: "Status", status: "Failure", code, message: "odd" })],
  });
}
cases.push(
  {
    name: "an ERROR event with a string code",
    lines: () => [error({ kind: "Status", code: "410" })],
  },
  { name: "an ERROR event with a null code", lines: () => [error({ kind: "Status", code: null })] },
  { name: "an ERROR event with an empty Status", lines: () => [error({})] },
  {
    name: "an ERROR event whose causes are not a list",
    lines: () => [error({ code: 504, reason: "Timeout", details: { causes: "nope" } })],
  },
  {
    name: "an ERROR event whose details are a string",
    lines: () => [error({ code: 504, details: "nope", message: 7 })],
  },
  {
    name: "a 429 ERROR event asking to wait a day",
    lines: () => [
      error({ code: 429, reason: "TooManyRequests", details: { retryAfterSeconds: 86_400 } }),
    ],
  },
  {
    name: "a 504 ERROR event with cause ResourceVersionTooLarge",
    lines: () => [
      error({
        code: 504,
        reason: "Timeout",
        details: { causes: [{ reason: "ResourceVersionTooLarge" }] },
      }),
    ],
  },
);

// Objects without (usable) metadata.
for (
  const [label, object] of [
    ["no metadata", {}],
    ["null metadata", { metadata: null }],
    ["array metadata", { metadata: [] }],
    ["string metadata", { metadata: "a" }],
    ["no name", { metadata: { namespace: NAMESPACE, resourceVersion: "99999" } }],
    ["an empty name", { metadata: { name: "", resourceVersion: "99999" } }],
    ["a numeric name", { metadata: { name: 42, resourceVersion: "99999" } }],
    ["a numeric namespace", { metadata: { name: "n", namespace: 7, resourceVersion: "99999" } }],
  ] as const
) {
  cases.push({ name: `an ADDED object with ${label}`, lines: () => [event("ADDED", object)] });
}
cases.push(
  { name: "a DELETED object without metadata", lines: () => [event("DELETED", {})] },
  { name: "a BOOKMARK without metadata", lines: () => [event("BOOKMARK", {})] },
);

// Not watch events at all.
for (
  const line of [
    "null",
    "[]",
    "42",
    '"text"',
    "true",
    "{}",
    '{"type":"ADDED"}',
    '{"type":"ADDED","object":null}',
    '{"type":"ADDED","object":[]}',
    '{"type":"ADDED","object":"x"}',
    '{"type":5,"object":{}}',
    '{"type":"SYNC","object":{}}',
    '{"type":"added","object":{}}',
  ]
) {
  cases.push({ name: `the line ${line}`, lines: () => [line] });
}
cases.push(
  { name: "trailing garbage after an event", lines: (s) => [lastEventOfA(s) + "xyz"] },
  { name: "two events on one line", lines: (s) => [lastEventOfA(s) + lastEventOfA(s)] },
  {
    name: "a bare carriage return between events",
    lines: (s) => [`${lastEventOfA(s)}\r${lastEventOfA(s)}`],
  },
  {
    name: "CRLF line endings and blank lines",
    lines: (s) => [`${lastEventOfA(s)}\r`, "", "   ", "\t\r"],
  },
);

// Older and duplicate resourceVersions.
cases.push(
  { name: "a stale MODIFIED", lines: () => [staleA("101")] },
  { name: "a stale DELETED", lines: () => [staleA("102", "gone", "DELETED")] },
  { name: "a stale ADDED", lines: () => [staleA("1", "old", "ADDED")] },
  { name: "a duplicate of the last event", lines: (s) => [lastEventOfA(s), lastEventOfA(s)] },
  {
    name: "the whole history replayed",
    lines: (s) => s.history.map((h) => event(h.type, h.object)),
  },
  { name: "a stale bookmark, then the end", lines: () => [bookmark("1")], then: "end" },
  {
    name: "a bookmark from the future, then the end",
    lines: () => [bookmark("99999999")],
    then: "end",
  },
  {
    name: "a bookmark with an invalid resourceVersion, then the end",
    lines: () => [bookmark("x1")],
    then: "end",
  },
  {
    name: "a bookmark with an invalid resourceVersion, then more events",
    lines: () => [bookmark("x1")],
  },
);

// Stalls: the deadline restarts the watch.
cases.push(
  { name: "a stall right after the headers", lines: () => [new Uint8Array(0)], then: "stall" },
  { name: "a stall after a duplicate event", lines: (s) => [lastEventOfA(s)], then: "stall" },
  { name: "a stall mid-line", lines: () => [encoder.encode('{"type":"MODI')], then: "stall" },
  { name: "a stall after a carriage return", lines: () => [encoder.encode("\r")], then: "stall" },
);

// Refusals before the stream starts.
for (const code of [400, 403, 404, 500, 503]) {
  cases.push({
    name: `a watch refused once with ${code}`,
    setup: (s) => (s.failNext = [{ code }]),
    served: (s) => s.failNext.length === 0,
  });
}

describe("malformed watch streams", { timeout: 600_000 }, () => {
  let server: FakeWatchServer;
  let rest: RestClient;
  let stop: AbortController;
  let running: Promise<void> | undefined;

  beforeEach(async () => {
    server = new FakeWatchServer();
    await server.start();
    rest = new RestClient(server.config(), { maxRetries: 0 });
    stop = new AbortController();
  }, { timeout: 10_000 });

  afterEach(async () => {
    stop.abort();
    await running;
    running = undefined;
    rest.close();
    await server.stop();
  }, { timeout: 10_000 });

  function converged(informer: Informer<CM>): boolean {
    const ours = informer.store.list().map((o) =>
      `${o.metadata?.name}@${o.metadata?.resourceVersion}=${o.data?.v?.length}`
    );
    const theirs = [...server.objects.values()].map((o) =>
      `${o.metadata.name}@${o.metadata.resourceVersion}=${o.data?.v?.length}`
    );
    return JSON.stringify(ours.sort()) === JSON.stringify(theirs.sort());
  }

  it("has at least 50 cases, each with a unique name", { timeout: 1000 }, () => {
    assert.ok(cases.length >= 50, `${cases.length} cases`);
    assert.equal(new Set(cases.map((c) => c.name)).size, cases.length);
  });

  for (const fault of cases) {
    it(`survives ${fault.name}`, { timeout: 30_000 }, async () => {
      server.put("a", { v: "1" });
      server.put("b", { v: "1" });
      server.put("a", { v: "2" });
      const informer = new Informer(rest, ConfigMap, {
        namespace: NAMESPACE,
        backoff: { initial: 5, max: 40 },
        idleTimeout: 250,
      });
      running = informer.run(stop.signal);
      await informer.waitForSync(AbortSignal.timeout(10_000));

      fault.setup?.(server);
      if (fault.lines) server.injectLines = fault.lines(server);
      server.afterInject = fault.then ?? "continue";
      server.closeWatches();
      const served = fault.served ?? ((s: FakeWatchServer) => s.injections > 0);
      await eventually("the fault was served", () => served(server), 10_000);

      server.put("c", { v: "1" });
      server.remove("b");
      await eventually("the store equals the server's objects", () => converged(informer), 10_000);
      assert.notEqual(informer.health().state, "Stopped", "the informer is still running");
    });
  }
});
