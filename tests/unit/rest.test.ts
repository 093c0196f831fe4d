// RestClient over a stand-in transport: request shaping, JSON and error handling, warnings,
// timeouts and watches. The real API server is exercised in tests/integration/rest.test.ts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { ApiError, isGone, isNotFound } from "../../lib/kube/errors.ts";
import {
  encodeQuery,
  parseWarningHeaders,
  type RequestInfo,
  RestClient,
} from "../../lib/kube/rest.ts";
import type { Transport } from "../../lib/kube/transport.ts";
import { captureLogs } from "../support/logs.ts";

/** Explicit, so no test depends on a runtime's default (Bun: 5 s). */
const TIMEOUT = { timeout: 30_000 };

const config: KubeConfig = {
  server: "https://api.test:6443",
  namespace: "default",
  auth: { credentials: () => Promise.resolve({}) },
  source: "unit test",
};

interface Seen {
  path: string;
  init: RequestInit;
}

/** A transport that records requests and answers with `respond`. */
function fakeTransport(respond: (path: string, init: RequestInit) => Response | Promise<Response>) {
  const seen: Seen[] = [];
  let closed = false;
  const transport: Transport = {
    config,
    fetch(path, init = {}) {
      seen.push({ path, init });
      return Promise.resolve(respond(path, init));
    },
    close() {
      closed = true;
    },
  };
  return { transport, seen, isClosed: () => closed };
}

describe("encodeQuery", () => {
  it("skips undefined, repeats arrays and escapes values", TIMEOUT, () => {
    assert.equal(encodeQuery(undefined), "");
    assert.equal(encodeQuery({ a: undefined }), "");
    assert.equal(
      encodeQuery({
        labelSelector: "app in (a,b)",
        limit: 500,
        watch: true,
        dryRun: ["All"],
        skip: undefined,
      }),
      "?labelSelector=app+in+%28a%2Cb%29&limit=500&watch=true&dryRun=All",
    );
    assert.equal(encodeQuery({ x: ["1", "2"] }), "?x=1&x=2");
  });
});

describe("parseWarningHeaders", () => {
  it("extracts each warning text, unescaping quotes", TIMEOUT, () => {
    assert.deepEqual(parseWarningHeaders(null), []);
    assert.deepEqual(
      parseWarningHeaders('299 - "spec.foo is deprecated", 299 - "use \\"bar\\" instead"'),
      ["spec.foo is deprecated", 'use "bar" instead'],
    );
  });
});

describe("RestClient", () => {
  let logs: Awaited<ReturnType<typeof captureLogs>>;
  before(async () => {
    logs = await captureLogs();
  }, TIMEOUT);
  after(async () => {
    await logs.stop();
  }, TIMEOUT);

  it("sends JSON with method, query and headers, and parses the JSON answer", TIMEOUT, async () => {
    const { transport, seen } = fakeTransport(() => Response.json({ kind: "ConfigMap" }));
    const rest = new RestClient(config, { transport });
    const result = await rest.request<{ kind: string }>({
      method: "POST",
      path: "/api/v1/namespaces/a/configmaps",
      query: { fieldManager: "rudder", dryRun: ["All"] },
      body: { kind: "ConfigMap" },
      headers: { "X-Extra": "1" },
    });
    assert.deepEqual(result, { kind: "ConfigMap" });
    assert.equal(seen[0].path, "/api/v1/namespaces/a/configmaps?fieldManager=rudder&dryRun=All");
    assert.equal(seen[0].init.method, "POST");
    assert.equal(seen[0].init.body, '{"kind":"ConfigMap"}');
    const headers = seen[0].init.headers as Record<string, string>;
    assert.equal(headers["Content-Type"], "application/json");
    assert.equal(headers.Accept, "application/json");
    assert.equal(headers["X-Extra"], "1");
  });

  it("sends string bodies as they are with the given content type", TIMEOUT, async () => {
    const { transport, seen } = fakeTransport(() => new Response(null, { status: 204 }));
    const rest = new RestClient(config, { transport });
    const result = await rest.request({
      method: "PATCH",
      path: "/x",
      body: "[]",
      contentType: "application/json-patch+json",
    });
    assert.equal(result, undefined);
    assert.equal(seen[0].init.body, "[]");
    assert.equal(
      (seen[0].init.headers as Record<string, string>)["Content-Type"],
      "application/json-patch+json",
    );
  });

  it("throws an ApiError from a Status answer with the Retry-After header", TIMEOUT, async () => {
    const { transport } = fakeTransport(() =>
      new Response(
        JSON.stringify({ kind: "Status", code: 410, reason: "Expired", message: "too old" }),
        { status: 410, headers: { "Retry-After": "2" } },
      )
    );
    const rest = new RestClient(config, { transport });
    await assert.rejects(rest.request({ path: "/api/v1/pods" }), (err) => {
      assert.ok(err instanceof ApiError && isGone(err));
      assert.equal(err.retryAfterSeconds, 2);
      assert.equal(err.path, "/api/v1/pods");
      return true;
    });
  });

  it("names the request when the answer is not JSON", TIMEOUT, async () => {
    const { transport } = fakeTransport(() => new Response("<html>", { status: 200 }));
    const rest = new RestClient(config, { transport });
    await assert.rejects(rest.request({ path: "/apis" }), /GET \/apis: the response is not JSON/);
  });

  it("wraps network failures with the method and URL, keeping the cause", TIMEOUT, async () => {
    const cause = new TypeError("connection refused");
    let attempts = 0;
    const transport: Transport = {
      config,
      fetch: () => {
        attempts++;
        return Promise.reject(cause);
      },
      close() {},
    };
    const rest = new RestClient(config, { transport, maxRetries: 0 });
    await assert.rejects(rest.request({ path: "/version" }), (err: Error) => {
      assert.equal(err.message, "GET https://api.test:6443/version: connection refused");
      assert.equal(err.cause, cause);
      return true;
    });
    assert.equal(attempts, 1);
  });

  it(
    "retries reads after 429, 5xx and network failures, honouring Retry-After",
    TIMEOUT,
    async () => {
      const answers: (() => Response)[] = [
        () => {
          throw new TypeError("connection reset");
        },
        () => new Response("busy", { status: 503 }),
        () =>
          new Response(JSON.stringify({ kind: "Status", code: 429, reason: "TooManyRequests" }), {
            status: 429,
            headers: { "Retry-After": "0" },
          }),
        () => Response.json({ kind: "PodList" }),
      ];
      const infos: RequestInfo[] = [];
      const { transport, seen } = fakeTransport(() => answers[seen.length - 1]());
      const rest = new RestClient(config, { transport, onRequest: (info) => infos.push(info) });
      assert.deepEqual(await rest.request({ path: "/api/v1/pods" }), { kind: "PodList" });
      assert.equal(seen.length, 4);
      assert.deepEqual(infos.map((i) => [i.attempt, i.statusCode]), [
        [0, undefined],
        [1, 503],
        [2, 429],
        [3, 200],
      ]);
      assert.equal(infos[0].host, "api.test:6443");
      assert.equal(infos[0].method, "GET");
    },
  );

  it("gives up after maxRetries and never retries writes", TIMEOUT, async () => {
    const busy = fakeTransport(() => new Response("busy", { status: 503 }));
    const rest = new RestClient(config, { transport: busy.transport, maxRetries: 2 });
    await assert.rejects(
      rest.request({ path: "/api/v1/pods" }),
      (err) => err instanceof ApiError && err.code === 503,
    );
    assert.equal(busy.seen.length, 3);
    busy.seen.length = 0;
    await assert.rejects(rest.request({ method: "POST", path: "/api/v1/pods", body: {} }));
    assert.equal(busy.seen.length, 1, "a POST is sent once");
    busy.seen.length = 0;
    await assert.rejects(rest.request({ path: "/api/v1/pods", retry: false }));
    assert.equal(busy.seen.length, 1, "retry: false turns it off");
  });

  it("spaces requests out with a token bucket when qps is set", TIMEOUT, async () => {
    const { transport, seen } = fakeTransport(() => Response.json({}));
    const rest = new RestClient(config, { transport, qps: 50, burst: 2 });
    const started = performance.now();
    await Promise.all(Array.from({ length: 5 }, () => rest.request({ path: "/x" })));
    assert.equal(seen.length, 5);
    // Not a speed measurement: a lower bound the limiter guarantees. Two go at once, the other
    // three each wait for a token at 50 per second, so the five cannot finish in under 60 ms.
    assert.ok(performance.now() - started >= 55, "the bucket made requests wait");
  });

  it(
    "rejects with the abort reason, and with a TimeoutError after its timeout",
    TIMEOUT,
    async () => {
      const hang = fakeTransport((_, init) =>
        new Promise<Response>((_, reject) => {
          init.signal?.addEventListener("abort", () => reject(init.signal?.reason));
        })
      );
      const rest = new RestClient(config, { transport: hang.transport, timeout: 20 });
      // A real fetch holds the event loop open while it waits; this stand-in does not.
      const keepAlive = setInterval(() => {}, 1000);
      try {
        await assert.rejects(
          rest.request({ path: "/slow" }),
          (err: Error) => err.name === "TimeoutError",
        );
      } finally {
        clearInterval(keepAlive);
      }
      const controller = new AbortController();
      const reason = new Error("cancelled by caller");
      const pending = rest.request({ path: "/slow", signal: controller.signal, timeout: 0 });
      controller.abort(reason);
      await assert.rejects(pending, (err) => err === reason);
    },
  );

  it(
    "bounds reading the answer by the timeout, and disarms it once the answer is read",
    TIMEOUT,
    async () => {
      // The body arrives after the headers: the timeout must still cover it.
      const slowBody = fakeTransport((_, init) =>
        new Response(
          new ReadableStream({
            start(controller) {
              init.signal?.addEventListener("abort", () => controller.error(init.signal?.reason));
            },
          }),
        )
      );
      const keepAlive = setInterval(() => {}, 1000);
      try {
        await assert.rejects(
          new RestClient(config, { transport: slowBody.transport, timeout: 20 }).request({
            path: "/slow-body",
          }),
          (err: Error) => err.name === "TimeoutError",
        );
      } finally {
        clearInterval(keepAlive);
      }
      const quick = fakeTransport(() => Response.json({ ok: true }));
      const rest = new RestClient(config, { transport: quick.transport, timeout: 20 });
      assert.deepEqual(await rest.request({ path: "/quick" }), { ok: true });
      assert.equal(await rest.requestText({ path: "/quick" }), '{"ok":true}');
      // Well past the timeout: a disarmed timer never aborts the requests' signals.
      await new Promise((resolve) => setTimeout(resolve, 80));
      assert.equal(quick.seen.length, 2);
      for (const { init } of quick.seen) assert.equal(init.signal?.aborted, false);
    },
  );

  it("logs API warnings as structured records", TIMEOUT, async () => {
    logs.records.length = 0;
    const { transport } = fakeTransport(() =>
      Response.json({}, { headers: { Warning: '299 - "v1beta1 is deprecated"' } })
    );
    await new RestClient(config, { transport }).request({ path: "/apis/x/v1beta1/things" });
    const warning = logs.records.find((r) => r.level === "warning");
    assert.ok(warning, "a warning record");
    assert.deepEqual(warning.category, ["rudder", "kube", "rest"]);
    assert.equal(warning.properties.warning, "v1beta1 is deprecated");
    assert.equal(warning.properties.path, "/apis/x/v1beta1/things");
  });

  it("returns text for plain endpoints", TIMEOUT, async () => {
    const { transport, seen } = fakeTransport(() => new Response("ok"));
    assert.equal(
      await new RestClient(config, { transport }).requestText({ path: "/readyz" }),
      "ok",
    );
    assert.match((seen[0].init.headers as Record<string, string>).Accept, /text\/plain/);
  });

  it(
    "watches with watch=true and yields decoded events, closing the stream on break",
    TIMEOUT,
    async () => {
      let cancelled = false;
      const { transport, seen } = fakeTransport(() =>
        new Response(
          new ReadableStream({
            start(controller) {
              const encoder = new TextEncoder();
              controller.enqueue(
                encoder.encode('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD'),
              );
              controller.enqueue(encoder.encode('IFIED","object":{"metadata":{"name":"a"}}}\n'));
            },
            cancel() {
              cancelled = true;
            },
          }),
        )
      );
      const rest = new RestClient(config, { transport });
      const types: string[] = [];
      for await (
        const event of rest.watch({ path: "/api/v1/pods", query: { resourceVersion: "5" } })
      ) {
        types.push(event.type);
        if (types.length === 2) break;
      }
      assert.deepEqual(types, ["ADDED", "MODIFIED"]);
      assert.equal(seen[0].path, "/api/v1/pods?resourceVersion=5&watch=true");
      assert.equal(cancelled, true);
      assert.equal(seen[0].init.signal?.aborted, true, "the request's signal is aborted");
    },
  );

  it("throws the refusal of a watch on the first next()", TIMEOUT, async () => {
    const { transport } = fakeTransport(() =>
      new Response(JSON.stringify({ kind: "Status", code: 404, reason: "NotFound" }), {
        status: 404,
      })
    );
    await assert.rejects(
      new RestClient(config, { transport }).watch({ path: "/x" }).next(),
      isNotFound,
    );
  });

  it("does not start a watch whose signal is already aborted", TIMEOUT, async () => {
    const { transport, seen } = fakeTransport(() => new Response(""));
    const reason = new Error("already");
    const watch = new RestClient(config, { transport }).watch({
      path: "/x",
      signal: AbortSignal.abort(reason),
    });
    await assert.rejects(watch.next(), (err) => err === reason);
    assert.equal(seen.length, 0);
  });

  it("closes its transport", TIMEOUT, () => {
    const fake = fakeTransport(() => new Response(""));
    new RestClient(config, { transport: fake.transport }).close();
    assert.equal(fake.isClosed(), true);
  });
});
