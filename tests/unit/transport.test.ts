// The transport against a loopback HTTP server: headers, credentials, the 401 refresh and
// close. TLS is exercised against the real API server in tests/integration.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AuthProvider, KubeConfig } from "../../lib/kube/config/types.ts";
import { defaultUserAgent, headerRecord, newTransport } from "../../lib/kube/transport.ts";
import { VERSION } from "../../lib/version.ts";

/** Explicit, so no test depends on a runtime's default (Bun: 5 s). */
const TIMEOUT = { timeout: 30_000 };

let server: Server;
let base = "";
const requests: { url: string; headers: IncomingHttpHeaders; body: string }[] = [];

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      requests.push({ url: req.url ?? "", headers: req.headers, body });
      const authorized = req.headers.authorization !== "Bearer stale";
      res.writeHead(authorized ? 200 : 401, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ kind: authorized ? "Ok" : "Status", path: req.url }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
}, TIMEOUT);

after(async () => {
  await new Promise((resolve) => server.close(resolve));
}, TIMEOUT);

function configWith(auth: AuthProvider): KubeConfig {
  return { server: base, namespace: "default", auth, source: "unit test" };
}

/** A token that rotates from `stale` to `fresh` when invalidated. */
function rotatingToken(canRefresh = true) {
  let token = "stale";
  let invalidations = 0;
  const auth: AuthProvider = {
    credentials: () => Promise.resolve({ headers: { Authorization: `Bearer ${token}` } }),
    invalidate: () => {
      invalidations++;
      if (canRefresh) token = "fresh";
      return Promise.resolve(canRefresh);
    },
  };
  return { auth, invalidations: () => invalidations };
}

describe("headerRecord", () => {
  /** What `new Headers(init)` holds, as a record. */
  function viaHeaders(init: HeadersInit): Record<string, string> {
    const out: Record<string, string> = {};
    new Headers(init).forEach((value, name) => void (out[name] = value));
    return out;
  }

  it("holds what new Headers(init) holds, from a record, pairs or a Headers", () => {
    const record = {
      Accept: "application/json",
      "X-Trim": "  a b\t",
      "X-Lines": "\r\nv\n",
      "content-TYPE": "x/y",
    };
    assert.deepEqual(headerRecord(record), viaHeaders(record));
    assert.deepEqual(headerRecord(record), {
      accept: "application/json",
      "x-trim": "a b",
      "x-lines": "v",
      "content-type": "x/y",
    });
    const pairs: [string, string][] = [["X-A", "1"], ["x-a", "2"], ["X-B", "é"]];
    assert.deepEqual(headerRecord(pairs), viaHeaders(pairs));
    assert.deepEqual(headerRecord(pairs), { "x-a": "1, 2", "x-b": "é" });
    const headers = new Headers(pairs);
    assert.deepEqual(headerRecord(headers), viaHeaders(headers));
    assert.deepEqual(headerRecord(undefined), {});
  });

  it("refuses, as Headers does, a name that is no token and a value with CR, LF, NUL or beyond Latin-1", () => {
    for (const bad of [{ "a b": "1" }, { "": "1" }, { "a:b": "1" }] as Record<string, string>[]) {
      assert.throws(() => new Headers(bad), TypeError, JSON.stringify(bad));
      assert.throws(() => headerRecord(bad), TypeError, JSON.stringify(bad));
    }
    for (const bad of ["a\rb", "a\nb", "a\0b", "a\u0100"]) {
      assert.throws(() => new Headers({ x: bad }), TypeError, JSON.stringify(bad));
      assert.throws(() => headerRecord({ x: bad }), TypeError, JSON.stringify(bad));
    }
  });
});

describe("newTransport", () => {
  it(
    "lets credentials and the User-Agent replace the caller's headers of any case, and keeps Authorization given by the caller over user-info",
    TIMEOUT,
    async () => {
      requests.length = 0;
      const transport = newTransport(
        {
          ...configWith({ credentials: () => Promise.resolve({ headers: { "X-Token": "t" } }) }),
          server: base.replace("http://", "http://user:pass@"),
        },
        { userAgent: "ours" },
      );
      try {
        await (await transport.fetch("/a", {
          headers: { "user-agent": "theirs", "x-token": "theirs", Accept: "a/b" },
        })).body?.cancel();
        await (await transport.fetch("/b", { headers: { authorization: "Bearer caller" } })).body
          ?.cancel();
        assert.equal(requests[0].headers["user-agent"], "ours");
        assert.equal(requests[0].headers["x-token"], "t");
        assert.equal(requests[0].headers.accept, "a/b");
        assert.equal(
          requests[0].headers.authorization,
          `Basic ${btoa("user:pass")}`,
          "user-info as basic auth",
        );
        assert.equal(requests[1].headers.authorization, "Bearer caller");
        await assert.rejects(
          transport.fetch("/c", { headers: { "x-bad": "a\nb" } }),
          TypeError,
        );
        assert.equal(requests.length, 2, "nothing sent with a bad header");
      } finally {
        transport.close();
      }
    },
  );

  it("sends the User-Agent and the provider's headers to the server's path", TIMEOUT, async () => {
    requests.length = 0;
    const transport = newTransport(
      configWith({
        credentials: () => Promise.resolve({ headers: { Authorization: "Bearer abc" } }),
      }),
    );
    try {
      const response = await transport.fetch("/api/v1/pods?limit=1", {
        headers: { Accept: "application/json" },
      });
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), { kind: "Ok", path: "/api/v1/pods?limit=1" });
      assert.equal(requests[0].headers.authorization, "Bearer abc");
      assert.equal(requests[0].headers["user-agent"], defaultUserAgent());
      assert.equal(requests[0].headers.accept, "application/json");
      assert.match(
        defaultUserAgent(),
        new RegExp(`^rudder/${VERSION} \\((deno|bun|node) [^;]+; \\w+/\\w+\\)$`),
      );
      // A path without a leading slash still goes to the server root.
      await (await transport.fetch("version")).body?.cancel();
      assert.equal(requests[1].url, "/version");
    } finally {
      transport.close();
    }
  });

  it(
    "refreshes credentials once after a 401 and repeats the request with its body",
    TIMEOUT,
    async () => {
      requests.length = 0;
      const token = rotatingToken();
      const transport = newTransport(configWith(token.auth), { userAgent: "test-agent" });
      try {
        const response = await transport.fetch("/apis", { method: "POST", body: '{"a":1}' });
        assert.equal(response.status, 200);
        await response.body?.cancel();
        assert.equal(token.invalidations(), 1);
        assert.deepEqual(requests.map((r) => r.headers.authorization), [
          "Bearer stale",
          "Bearer fresh",
        ]);
        assert.deepEqual(requests.map((r) => r.body), ['{"a":1}', '{"a":1}']);
        assert.equal(requests[0].headers["user-agent"], "test-agent");
      } finally {
        transport.close();
      }
    },
  );

  it("returns the 401 when the credentials cannot be refreshed", TIMEOUT, async () => {
    requests.length = 0;
    const token = rotatingToken(false);
    const transport = newTransport(configWith(token.auth));
    try {
      const response = await transport.fetch("/apis");
      assert.equal(response.status, 401);
      await response.body?.cancel();
      assert.equal(token.invalidations(), 1);
      assert.equal(requests.length, 1, "not repeated");
    } finally {
      transport.close();
    }
  });

  it("does not repeat a request whose body is a stream", TIMEOUT, async () => {
    requests.length = 0;
    const token = rotatingToken();
    const transport = newTransport(configWith(token.auth));
    try {
      const body = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("{}"));
          controller.close();
        },
      });
      const response = await transport.fetch("/apis", {
        method: "POST",
        body,
        duplex: "half",
      } as RequestInit);
      assert.equal(response.status, 401);
      await response.body?.cancel();
      assert.equal(token.invalidations(), 0);
    } finally {
      transport.close();
    }
  });

  it("asks for no compression unless the caller does", TIMEOUT, async () => {
    requests.length = 0;
    const transport = newTransport(configWith({ credentials: () => Promise.resolve({}) }));
    try {
      await (await transport.fetch("/a")).text();
      await (await transport.fetch("/b", { headers: { "Accept-Encoding": "gzip" } })).text();
      assert.deepEqual(requests.map((r) => r.headers["accept-encoding"]), ["identity", "gzip"]);
    } finally {
      transport.close();
    }
  });

  it(
    "goes through Deno's HTTP/1.1 client, or fetch for a stream body and with RUDDER_DENO_FETCH=1",
    { ...TIMEOUT, skip: !("Deno" in globalThis) },
    async () => {
      // Deno's fetch adds `accept-language: *`; Rudder's HTTP/1.1 client sends what it is given.
      const send = async () => {
        requests.length = 0;
        const transport = newTransport(configWith({ credentials: () => Promise.resolve({}) }));
        try {
          const stream = new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode("{}"));
              controller.close();
            },
          });
          await (await transport.fetch("/a", { headers: { Accept: "application/json" } })).text();
          await (await transport.fetch("/b", {
            method: "POST",
            body: stream,
            duplex: "half",
          } as RequestInit)).text();
          return requests.map((r) => r.headers["accept-language"]);
        } finally {
          transport.close();
        }
      };
      const previous = process.env.RUDDER_DENO_FETCH;
      try {
        delete process.env.RUDDER_DENO_FETCH;
        const [own, streamed] = await send();
        assert.equal(own, undefined);
        assert.equal(streamed, "*", "a stream body goes through fetch");
        process.env.RUDDER_DENO_FETCH = "1";
        const [viaFetch] = await send();
        assert.equal(viaFetch, "*");
      } finally {
        if (previous === undefined) delete process.env.RUDDER_DENO_FETCH;
        else process.env.RUDDER_DENO_FETCH = previous;
      }
    },
  );

  it(
    "sends a DELETE's body framed, so the next request on the connection is whole",
    TIMEOUT,
    async () => {
      const transport = newTransport(configWith({ credentials: () => Promise.resolve({}) }));
      try {
        requests.length = 0;
        const options = '{"kind":"DeleteOptions","preconditions":{"uid":"x"}}';
        const deleted = await transport.fetch("/delete", { method: "DELETE", body: options });
        assert.equal(deleted.status, 200);
        await deleted.body?.cancel();
        const next = await transport.fetch("/next", { method: "POST", body: "{}" });
        assert.equal(next.status, 200);
        await next.body?.cancel();
        assert.deepEqual(requests.map(({ url, body }) => ({ url, body })), [
          { url: "/delete", body: options },
          { url: "/next", body: "{}" },
        ]);
      } finally {
        transport.close();
      }
    },
  );

  it("refuses requests after close, naming the server", TIMEOUT, async () => {
    const transport = newTransport(
      configWith({ credentials: () => Promise.resolve({}) }),
    );
    transport.close();
    await assert.rejects(transport.fetch("/version"), new RegExp(`transport to ${base} is closed`));
  });

  it(
    "sends a request again on a new connection when a kept one turns out closed",
    TIMEOUT,
    async () => {
      // Answers the first request of each connection, and drops the connection at its second:
      // what a client sees when the server closes an idle connection as it is reused.
      const served = new WeakMap<object, number>();
      let connections = 0;
      const dropping = createServer((req, res) => {
        const count = (served.get(req.socket) ?? 0) + 1;
        served.set(req.socket, count);
        if (count > 1) return void req.socket.destroy();
        req.resume();
        req.on("end", () => res.end(JSON.stringify({ path: req.url })));
      });
      dropping.on("connection", () => connections++);
      await new Promise<void>((resolve) => dropping.listen(0, "127.0.0.1", resolve));
      const port = (dropping.address() as { port: number }).port;
      const transport = newTransport({
        ...configWith({ credentials: () => Promise.resolve({}) }),
        server: `http://127.0.0.1:${port}`,
      });
      try {
        for (const path of ["/a", "/b", "/c"]) {
          const response = await transport.fetch(path, { method: "PUT", body: "{}" });
          assert.deepEqual(await response.json(), { path });
        }
        assert.equal(connections, 3);
      } finally {
        transport.close();
        dropping.closeAllConnections();
        await new Promise((resolve) => dropping.close(resolve));
      }
    },
  );
});
