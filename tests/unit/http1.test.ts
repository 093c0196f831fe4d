// Rudder's HTTP/1.1 client (lib/kube/http1.ts) against a scripted loopback TCP server: each
// test writes the answer byte by byte as it wants it framed, split, delayed or broken. On Deno
// over Deno's sockets (denoDialer), elsewhere over Node's (lib/kube/dial_node.ts, what the Node
// transport dials with; Bun runs them too, though its transport is its fetch). TLS is exercised
// against the real API server in tests/integration (every Deno and Node request goes through
// this client).
import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { gzipSync } from "node:zlib";
import {
  ConnectionClosedError,
  denoDialer,
  type Http1Dialer,
  Http1Pool,
  HttpProtocolError,
} from "../../lib/kube/http1.ts";

const T = { timeout: 30_000 };
const onDeno = "Deno" in globalThis;
const dial: Http1Dialer = onDeno
  ? denoDialer()
  : (await import("../../lib/kube/dial_node.ts")).nodeDialer();

/** What the server got: one entry per request, with the connection it came on. */
interface Received {
  connection: number;
  head: string;
  body: string;
}

type Answer = (socket: Socket, request: Received) => void | Promise<void>;

let server: Server;
let port = 0;
let connections = 0;
let received: Received[] = [];
let answer: Answer = (socket) =>
  void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
const sockets = new Set<Socket>();

before(async () => {
  server = createServer((socket) => {
    const connection = ++connections;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let pending = Buffer.alloc(0);
    socket.on("data", (data) => {
      pending = Buffer.concat([pending, data]);
      for (;;) {
        const end = pending.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = pending.subarray(0, end).toString("latin1");
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (pending.length < end + 4 + length) return;
        const body = pending.subarray(end + 4, end + 4 + length).toString();
        pending = pending.subarray(end + 4 + length);
        const request = { connection, head, body };
        received.push(request);
        void answer(socket, request);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  port = typeof address === "object" && address ? address.port : 0;
}, T);

after(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
}, T);

let pool: Http1Pool | undefined;

afterEach(() => {
  pool?.close();
  pool = undefined;
  received = [];
  answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
});

function newPool(): Http1Pool {
  pool?.close();
  pool = new Http1Pool({ hostname: "127.0.0.1", port, tls: false, dial });
  return pool;
}

function get(p: Http1Pool, target = "/x", signal?: AbortSignal): Promise<Response> {
  const stream = target.includes("watch");
  return p.request({
    method: "GET",
    target,
    headers: { accept: "application/json" },
    signal,
    stream,
  });
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe(`HTTP/1.1 client (${onDeno ? "Deno's" : "Node's"} sockets)`, () => {
  it("writes the request line, host, headers and a counted body", T, async () => {
    const p = newPool();
    const response = await p.request({
      method: "PATCH",
      target: "/api/v1/namespaces/a/configmaps/b?fieldManager=m",
      headers: { "content-type": "application/merge-patch+json", "user-agent": "rudder-test" },
      body: '{"data":{"é":"1"}}',
    });
    assert.equal(await response.text(), "ok");
    const [request] = received;
    const lines = request.head.split("\r\n");
    assert.equal(lines[0], "PATCH /api/v1/namespaces/a/configmaps/b?fieldManager=m HTTP/1.1");
    assert.ok(lines.includes(`host: 127.0.0.1:${port}`));
    assert.ok(lines.includes("content-type: application/merge-patch+json"));
    assert.ok(lines.includes("user-agent: rudder-test"));
    assert.ok(lines.includes("accept-encoding: identity"), "no compression unless asked for");
    assert.ok(lines.includes("content-length: 19"), "the length counts bytes, not characters");
    assert.equal(request.body, '{"data":{"é":"1"}}');
  });

  it("sends no content-length on a GET and 0 on a POST without a body", T, async () => {
    const p = newPool();
    await (await get(p)).text();
    await (await p.request({ method: "POST", target: "/y", headers: {} })).text();
    assert.ok(!/content-length/i.test(received[0].head));
    assert.match(received[1].head, /\r\ncontent-length: 0$/m);
  });

  it("keeps connections and reuses them", T, async () => {
    const p = newPool();
    const before = connections;
    for (let i = 0; i < 3; i++) assert.equal(await (await get(p)).text(), "ok");
    assert.equal(connections - before, 1);
    assert.deepEqual(received.map((r) => r.connection), Array(3).fill(received[0].connection));
  });

  it("opens a connection per request in flight", T, async () => {
    answer = async (socket) => {
      await wait(50);
      socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    };
    const p = newPool();
    const texts = await Promise.all([1, 2, 3].map(async () => await (await get(p)).text()));
    assert.deepEqual(texts, ["ok", "ok", "ok"]);
    assert.equal(new Set(received.map((r) => r.connection)).size, 3);
  });

  it("gives status, status text and repeated headers as fetch does", T, async () => {
    answer = (socket) =>
      void socket.write(
        'HTTP/1.1 422 Unprocessable Entity\r\nWarning: 299 - "a"\r\nwarning: 299 - "b"\r\n' +
          "Content-Length: 4\r\n\r\nnope",
      );
    const response = await get(newPool());
    assert.equal(response.status, 422);
    assert.equal(response.statusText, "Unprocessable Entity");
    assert.equal(response.ok, false);
    assert.equal(response.headers.get("warning"), '299 - "a", 299 - "b"');
    assert.equal(await response.text(), "nope");
  });

  it("reads header bytes one to one, as ISO-8859-1, in heads of any length", T, async () => {
    const long = "v".repeat(10_000);
    answer = (socket) =>
      void socket.write(
        Buffer.concat([
          Buffer.from("HTTP/1.1 200 OK\r\nx-note: caf"),
          // 0xe9 and 0x85: obs-text; windows-1252 would turn 0x85 into "…", no header value.
          Buffer.from([0xe9, 0x85]),
          Buffer.from(`\r\nx-long: ${long}\r\ncontent-length: 2\r\n\r\nok`),
        ]),
      );
    const response = await get(newPool());
    assert.equal(response.headers.get("x-note"), "caf\u00e9\u0085");
    assert.equal(response.headers.get("x-long"), long);
    assert.equal(await response.text(), "ok");
  });

  it(
    "reads a head that arrives a byte at a time and a body longer than its buffer",
    T,
    async () => {
      const big = "x".repeat(200_000);
      answer = async (socket) => {
        for (const byte of `HTTP/1.1 200 OK\r\ncontent-length: ${big.length}\r\n\r\n`) {
          socket.write(byte);
          await wait(1);
        }
        socket.write(big);
      };
      const p = newPool();
      assert.equal((await (await get(p)).text()).length, big.length);
      assert.equal(await (await get(p)).text(), big, "the connection is still in step");
    },
  );

  it("decodes a chunked body that came whole, then reuses the connection", T, async () => {
    answer = (socket) =>
      void socket.write(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
      );
    const p = newPool();
    assert.equal(await (await get(p)).text(), "hello world");
    assert.equal(await (await get(p)).text(), "hello world");
    assert.equal(new Set(received.map((r) => r.connection)).size, 1);
  });

  it("streams a chunked body as it comes, with chunks split anywhere", T, async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const one = '{"type":"ADDED","n":1}\n';
    const two = '{"type":"ADDED","n":2}\n';
    const size = (text: string) => text.length.toString(16);
    answer = async (socket) => {
      socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
      socket.write(`${size(one)}\r\n${one}\r\n`);
      await released;
      const rest = `${size(two)}\r\n${two}\r\n0\r\n\r\n`;
      // Pieces of 3 bytes split the size line, the data and every CRLF.
      for (let i = 0; i < rest.length; i += 3) {
        socket.write(rest.slice(i, i + 3));
        await wait(2);
      }
    };
    const p = newPool();
    const response = await get(p, "/watch");
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes("\n")) text += decoder.decode((await reader.read()).value);
    assert.equal(text, '{"type":"ADDED","n":1}\n', "the first event comes before the rest is sent");
    release();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    assert.equal(text, '{"type":"ADDED","n":1}\n{"type":"ADDED","n":2}\n');
    answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    assert.equal(await (await get(p)).text(), "ok");
    assert.equal(received[1].connection, received[0].connection, "kept after the last chunk");
  });

  it("reads a chunked body asked for whole to its end before answering", T, async () => {
    const page = JSON.stringify({ items: Array.from({ length: 3000 }, (_, i) => ({ i })) });
    answer = async (socket) => {
      socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
      for (let at = 0; at < page.length; at += 4096) {
        const piece = page.slice(at, at + 4096);
        socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
        if (at % (4096 * 8) === 0) await wait(2);
      }
      socket.write("0\r\n\r\n");
    };
    const p = newPool();
    const response = await get(p);
    assert.equal((await response.json()).items.length, 3000);
    answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    assert.equal(await (await get(p)).text(), "ok");
    assert.equal(received[1].connection, received[0].connection, "kept after the last chunk");
  });

  it("reads a body without length to the end of the connection, which is not kept", T, async () => {
    answer = (socket) => void socket.end("HTTP/1.1 200 OK\r\n\r\nuntil the end");
    const p = newPool();
    assert.equal(await (await get(p)).text(), "until the end");
    answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    await (await get(p)).text();
    assert.notEqual(received[1].connection, received[0].connection);
  });

  it("does not keep a connection the server says it closes", T, async () => {
    answer = (socket) =>
      void socket.write("HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 2\r\n\r\nok");
    const p = newPool();
    await (await get(p)).text();
    await (await get(p)).text();
    assert.notEqual(received[1].connection, received[0].connection);
  });

  it(
    "skips kept connections the server closed while idle, and answers on a new one",
    T,
    async () => {
      answer = async (socket) => {
        await wait(20); // three requests in flight at once: three kept connections
        socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
        setTimeout(() => socket.destroy(), 10);
      };
      const p = newPool();
      await Promise.all([1, 2, 3].map(async () => assert.equal(await (await get(p)).text(), "ok")));
      assert.equal(new Set(received.map((r) => r.connection)).size, 3);
      await wait(60);
      answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
      assert.equal(await (await get(p)).text(), "ok", "the stale connections are replaced");
      assert.equal(received.length, 4, "no request reached a closed connection's server");
      assert.ok(!received.slice(0, 3).some((r) => r.connection === received[3].connection));
    },
  );

  it("fails a fresh connection that closes without an answer", T, async () => {
    answer = (socket) => void socket.destroy();
    await assert.rejects(get(newPool()), ConnectionClosedError);
  });

  it("fails an answer cut in its header or its body", T, async () => {
    answer = (socket) => void socket.end("HTTP/1.1 200 OK\r\ncontent-le");
    await assert.rejects(get(newPool()), /in the middle of an answer's header/);
    answer = (socket) => void socket.end("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc");
    await assert.rejects(get(newPool()), /after 3 of 10 body bytes/);
    answer = (socket) =>
      void socket.end("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab");
    await assert.rejects(get(newPool()), /in the middle of a body/, "a body asked for whole");
    const response = await get(newPool(), "/watch");
    await assert.rejects(response.text(), /in the middle of a body/, "a streamed body");
  });

  it("refuses a malformed status line, header, length or chunk", T, async () => {
    const cases: [string, RegExp][] = [
      ["HTTP/2 200 OK\r\n\r\n", /status line/],
      ["HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", /header line/],
      ["HTTP/1.1 200 OK\r\nbad name: x\r\n\r\n", /header line/],
      ["HTTP/1.1 200 OK\r\nx-value: a\0b\r\n\r\n", /header line/],
      // Repeated, the lengths are joined as Headers.get joins them, which is no length.
      ["HTTP/1.1 200 OK\r\ncontent-length: 1\r\nContent-Length: 1\r\n\r\nx", /content-length/],
      ["HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", /content-length/],
      ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", /chunk size/],
      ["HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabXY0\r\n\r\n", /CRLF/],
    ];
    for (const [raw, message] of cases) {
      answer = (socket) => void socket.write(raw);
      await assert.rejects(get(newPool()), (err: Error) => {
        assert.ok(err instanceof HttpProtocolError, `${raw}: ${err}`);
        assert.match(err.message, message);
        return true;
      });
      pool?.close();
    }
  });

  it("skips informational answers and gives 204 and HEAD no body", T, async () => {
    answer = (socket) =>
      void socket.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n");
    const p = newPool();
    const response = await get(p);
    assert.equal(response.status, 204);
    assert.equal(response.body, null);
    answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n");
    const head = await p.request({ method: "HEAD", target: "/", headers: {} });
    assert.equal(head.headers.get("content-length"), "7");
    assert.equal(await head.text(), "");
    answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    assert.equal(await (await get(p)).text(), "ok");
    assert.equal(new Set(received.map((r) => r.connection)).size, 1, "all on one connection");
  });

  it("decodes gzip answers, whole and chunked", T, async () => {
    const zipped = gzipSync(Buffer.from('{"kind":"List"}'));
    answer = (socket) => {
      socket.write(
        `HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: ${zipped.length}\r\n\r\n`,
      );
      socket.write(zipped);
    };
    const p = newPool();
    assert.deepEqual(
      await (await p.request({
        method: "GET",
        target: "/",
        headers: { "accept-encoding": "gzip" },
      }))
        .json(),
      { kind: "List" },
    );
    assert.match(received[0].head, /accept-encoding: gzip/);
    answer = async (socket) => {
      socket.write(
        "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n",
      );
      socket.write(`${zipped.length.toString(16)}\r\n`);
      await wait(10);
      socket.write(Buffer.concat([zipped, Buffer.from("\r\n0\r\n\r\n")]));
    };
    assert.deepEqual(await (await get(p)).json(), { kind: "List" });
  });

  it("rejects with the signal's reason when aborted before the answer", T, async () => {
    answer = () => {};
    const p = newPool();
    const controller = new AbortController();
    const pending = get(p, "/slow", controller.signal);
    await wait(20);
    const reason = new Error("stop");
    controller.abort(reason);
    await assert.rejects(pending, (err) => err === reason);
    await assert.rejects(get(p, "/", AbortSignal.abort(reason)), (err) => err === reason);
  });

  it("stops waiting for a connection that does not come when aborted", T, async () => {
    // A TLS handshake with a server that never answers it hangs: only the signal ends the wait.
    const p = new Http1Pool({ hostname: "127.0.0.1", port, tls: true, dial });
    try {
      const controller = new AbortController();
      const pending = get(p, "/", controller.signal);
      await wait(50);
      const reason = new Error("gave up");
      controller.abort(reason);
      await assert.rejects(pending, (err) => err === reason);
    } finally {
      p.close();
    }
  });

  it(
    "fails a streamed body with the signal's reason when aborted, and drops the connection",
    T,
    async () => {
      answer = (socket) => {
        socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\none\r\n");
      };
      const p = newPool();
      const controller = new AbortController();
      const response = await get(p, "/watch", controller.signal);
      const reader = response.body!.getReader();
      assert.equal(new TextDecoder().decode((await reader.read()).value), "one");
      const reason = new Error("leave");
      const next = reader.read();
      controller.abort(reason);
      await assert.rejects(next, (err) => err === reason);
      answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
      await (await get(p)).text();
      assert.notEqual(received[1].connection, received[0].connection);
    },
  );

  it("drops a connection whose streamed body is cancelled", T, async () => {
    answer = (socket) => {
      socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\none\r\n");
    };
    const p = newPool();
    const response = await get(p, "/watch");
    await response.body!.cancel();
    answer = (socket) => void socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
    await (await get(p)).text();
    assert.notEqual(received[1].connection, received[0].connection);
  });

  it("refuses requests after close and ends the ones in flight", T, async () => {
    answer = () => {};
    const p = newPool();
    const pending = get(p);
    await wait(20);
    p.close();
    await assert.rejects(pending);
    await assert.rejects(get(p), /closed/);
  });
});
