// What every server Rudder runs does at its limits (issue 30, items 1 and 6): an early answer
// (413, 415, 400) to a large body reaches a client that does not wait for `100 Continue`, and the
// server goes on serving; a slow request head, an idle keep-alive connection and a connection
// past the bound are closed. Real sockets on loopback, with timeouts of a few hundred ms.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { Registry } from "../../lib/metrics/registry.ts";
import { HTTPServer, type TLSPair } from "../../lib/server/mod.ts";
import { type CertificateAuthority, createCertificateAuthority } from "../../lib/util/certs.ts";
import { admissionHandler, allowed } from "../../lib/webhook/admission.ts";
import { WebhookServer } from "../../lib/webhook/server.ts";
import { CONFIGMAP_REVIEW } from "../support/admission.ts";

const T = { timeout: 60_000 };
const MiB = 1024 * 1024;
/** An answer larger than the socket buffers between server and client. */
const BIG = 16 * MiB;
/** The limits the servers of these tests run with. */
const LIMITS = { readHeaderTimeout: 300, idleTimeout: 600, maxConnections: 4 };

let ca: CertificateAuthority;
let pair: TLSPair;
let certDir: string;

before(async () => {
  ca = await createCertificateAuthority("server-limits-ca");
  pair = await ca.issueServing({ commonName: "localhost", ips: ["127.0.0.1"] });
  certDir = mkdtempSync(join(tmpdir(), "rudder-server-limits-"));
  writeFileSync(join(certDir, "tls.crt"), pair.cert);
  writeFileSync(join(certDir, "tls.key"), pair.key);
}, T);

after(() => rmSync(certDir, { recursive: true, force: true }));

/** POSTs `body` with Node's client (which sends it all without waiting for `100 Continue`). */
function post(
  url: string,
  body: string,
  type = "application/json",
  chunked = false,
): Promise<{ status: number; text: string }> {
  const { hostname, port, pathname, protocol } = new URL(url);
  const client = protocol === "https:" ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request({
      host: hostname,
      port: Number(port),
      path: pathname,
      method: "POST",
      ca: ca.cert,
      servername: "localhost",
      agent: false,
      headers: {
        "content-type": type,
        ...(chunked ? {} : { "content-length": String(Buffer.byteLength(body)) }),
      },
    }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, text }));
      response.on("error", reject);
    });
    request.on("error", reject);
    if (!chunked) return request.end(body);
    // Without a length: sent in 1 MiB chunks, so the server learns the size only by reading.
    for (let at = 0; at < body.length; at += MiB) request.write(body.slice(at, at + MiB));
    request.end();
  });
}

/** POSTs `body` over HTTP/2 (Node's client); rejects when the server does not speak it. */
function post2(url: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { ca: ca.cert, servername: "localhost" });
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": new URL(url).pathname,
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(body)),
    });
    let status = 0;
    let text = "";
    stream.setEncoding("utf8");
    stream.on("response", (headers) => (status = Number(headers[":status"])));
    stream.on("data", (chunk) => (text += chunk));
    stream.on("end", () => {
      session.close();
      resolve({ status, text });
    });
    stream.on("error", (err) => {
      session.destroy();
      reject(err);
    });
    stream.end(body);
  });
}

/** A raw connection to `url`'s server: TCP, or TLS once the handshake is through. */
async function connect(url: string): Promise<net.Socket> {
  const { hostname, port, protocol } = new URL(url);
  const socket = protocol === "https:"
    ? tls.connect({
      host: hostname,
      port: Number(port),
      ca: ca.cert,
      servername: "localhost",
      ALPNProtocols: ["http/1.1"],
    })
    : net.connect(Number(port), hostname);
  socket.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once(protocol === "https:" ? "secureConnect" : "connect", () => resolve());
    socket.once("close", () => reject(new Error("closed before connecting")));
  });
  return socket;
}

/** Milliseconds until `socket` closes, rejecting after `bound`. */
function closesWithin(socket: net.Socket, bound: number): Promise<number> {
  const began = Date.now();
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return resolve(0);
    socket.resume(); // a paused socket with unread bytes would never tell it closed
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`still open after ${bound} ms`));
    }, bound);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve(Date.now() - began);
    });
  });
}

/** One request on `socket`, kept alive; resolves with the status line. */
function requestOn(socket: net.Socket, path: string, body = CONFIGMAP_REVIEW): Promise<string> {
  return new Promise((resolve, reject) => {
    socket.once("data", (chunk) => resolve(String(chunk).split("\r\n")[0]));
    socket.once("close", () => reject(new Error("closed before an answer")));
    socket.write(
      `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The limits' behaviours, on a server reached at `url()` that answers 200 on `path`. */
function limitTests(url: () => string, path: string): void {
  it("closes a connection that sends half a request line and nothing more", T, async () => {
    const socket = await connect(url());
    socket.write("POST / HT");
    const closed = await closesWithin(socket, 5_000);
    assert.ok(closed < LIMITS.readHeaderTimeout + 1_000, `closed after ${closed} ms`);
  });

  it("closes a connection that trickles its request head, whatever it sends", T, async () => {
    const socket = await connect(url());
    const head = `POST ${path} HTTP/1.1\r\nHost: localhost\r\nX-Slow: ${"a".repeat(200)}`;
    let sent = 0;
    const trickle = setInterval(() => {
      if (!socket.destroyed && sent < head.length) socket.write(head[sent++]);
    }, 20);
    try {
      const closed = await closesWithin(socket, 5_000);
      assert.ok(closed < LIMITS.readHeaderTimeout + 1_000, `closed after ${closed} ms`);
    } finally {
      clearInterval(trickle);
    }
  });

  it("closes a silent connection within the header timeout", T, async () => {
    const socket = await connect(url());
    const closed = await closesWithin(socket, 5_000);
    assert.ok(closed < LIMITS.readHeaderTimeout + 1_000, `closed after ${closed} ms`);
  });

  it(
    "keeps a connection between requests, and closes it once idle past the timeout",
    T,
    async () => {
      const socket = await connect(url());
      assert.match(await requestOn(socket, path), /^HTTP\/1\.1 200/);
      // Requests closer together than the idle timeout go on the same connection.
      for (let i = 0; i < 2; i++) {
        await pause(LIMITS.idleTimeout / 3);
        assert.match(await requestOn(socket, path), /^HTTP\/1\.1 200/);
      }
      const began = Date.now();
      const closed = await closesWithin(socket, 5_000);
      assert.ok(closed >= LIMITS.idleTimeout - 100, `closed after ${closed} ms`);
      assert.ok(Date.now() - began < LIMITS.idleTimeout + 1_000, `closed after ${closed} ms`);
    },
  );

  it("closes a connection past maxConnections at once, and serves the others", T, async () => {
    const open: net.Socket[] = [];
    try {
      for (let i = 0; i < LIMITS.maxConnections; i++) open.push(await connect(url()));
      const surplus = net.connect(Number(new URL(url()).port), "127.0.0.1");
      surplus.on("error", () => {});
      const closed = await closesWithin(surplus, 2_000);
      assert.ok(closed < 200, `closed after ${closed} ms`);
      assert.match(await requestOn(open[0], path), /^HTTP\/1\.1 200/);
    } finally {
      for (const socket of open) socket.destroy();
    }
    // Once they are closed, new connections are served.
    await pause(50);
    const socket = await connect(url());
    assert.match(await requestOn(socket, path), /^HTTP\/1\.1 200/);
    socket.destroy();
  });
}

describe("the webhook server at its limits", () => {
  // One with the default limits for the early answers (a loaded machine may take longer than a
  // short header timeout to pass a request on), one with short limits.
  let server: WebhookServer;
  let limited: WebhookServer;
  const stop = new AbortController();
  const running: Promise<void>[] = [];
  const review = () => `${server.url}/validate`;

  before(async () => {
    for (const limits of [{}, LIMITS]) {
      const started = new WebhookServer({
        host: "127.0.0.1",
        port: 0,
        certDir,
        metricsRegistry: new Registry(),
        ...limits,
      });
      started.register("/validate", admissionHandler(() => allowed()));
      running.push(started.start(stop.signal));
      await started.started();
      if (limits === LIMITS) limited = started;
      else server = started;
    }
  }, T);

  after(async () => {
    stop.abort();
    await Promise.all(running);
  }, T);

  it("answers 413 to an 8 MiB body from Node's HTTPS client, 10 times in 10", T, async () => {
    const body = "x".repeat(8 * MiB);
    for (let i = 0; i < 10; i++) {
      const { status, text } = await post(review(), body);
      assert.equal(status, 413, `request ${i}`);
      assert.deepEqual(JSON.parse(text), { error: `request body larger than ${7 * MiB} bytes` });
    }
    assert.equal((await post(review(), CONFIGMAP_REVIEW)).status, 200);
  });

  it("answers 413 to an 8 MiB body sent without a length, 10 times in 10", T, async () => {
    const body = "x".repeat(8 * MiB);
    for (let i = 0; i < 10; i++) {
      assert.equal((await post(review(), body, "application/json", true)).status, 413);
    }
    assert.equal((await post(review(), CONFIGMAP_REVIEW, "application/json", true)).status, 200);
  });

  it("answers 415 and 400 to large bodies it refuses, and goes on serving", T, async () => {
    const large = JSON.stringify({ padding: "x".repeat(6 * MiB) });
    for (let i = 0; i < 5; i++) {
      assert.equal((await post(review(), large, "text/plain")).status, 415);
      assert.equal((await post(review(), `{${large}`)).status, 400);
      assert.equal((await post(review(), large)).status, 400); // JSON, not a review
    }
    assert.equal((await post(review(), CONFIGMAP_REVIEW)).status, 200);
  });

  it("answers 413 over HTTP/2 where the runtime's server speaks it", T, async () => {
    const socket = tls.connect({
      host: "127.0.0.1",
      port: server.port!,
      ca: ca.cert,
      servername: "localhost",
      ALPNProtocols: ["h2", "http/1.1"],
    });
    const protocol = await new Promise<string | false>((resolve, reject) => {
      socket.once("secureConnect", () => resolve(socket.alpnProtocol ?? false));
      socket.once("error", reject);
    });
    socket.destroy();
    // Deno.serve offers h2; Bun.serve speaks HTTP/1.1 only.
    assert.equal(protocol === "h2", "Deno" in globalThis, `ALPN chose ${protocol}`);
    if (protocol !== "h2") return;
    const body = "x".repeat(8 * MiB);
    for (let i = 0; i < 5; i++) assert.equal((await post2(review(), body)).status, 413);
    assert.equal((await post2(review(), CONFIGMAP_REVIEW)).status, 200);
  });

  it("keeps an HTTP/2 connection between requests until the idle timeout", T, async (t) => {
    if (!("Deno" in globalThis)) return t.skip("Bun.serve and Node's server speak HTTP/1.1 only");
    const session = http2.connect(limited.url!, { ca: ca.cert, servername: "localhost" });
    session.on("error", () => {});
    const closed = new Promise<number>((resolve) => {
      session.once("close", () => resolve(Date.now()));
    });
    let last = 0;
    for (let i = 0; i < 3; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/validate",
          "content-type": "application/json",
        });
        let code = 0;
        stream.on("response", (headers) => (code = Number(headers[":status"])));
        stream.on("data", () => {});
        stream.on("end", () => resolve(code));
        stream.on("error", reject);
        stream.end(CONFIGMAP_REVIEW);
      });
      assert.equal(status, 200);
      last = Date.now();
      await pause(LIMITS.readHeaderTimeout / 2);
    }
    // The client's frames after an answer (window updates) start no header timer.
    const idle = (await closed) - last;
    assert.ok(idle >= LIMITS.idleTimeout - 100, `closed after ${idle} ms idle`);
    assert.ok(idle < LIMITS.idleTimeout + 1_000, `closed after ${idle} ms idle`);
  });

  limitTests(() => limited.url!, "/validate");
});

for (const kind of ["plain HTTP", "HTTPS with a fixed pair"] as const) {
  describe(`an HTTPServer (${kind}) at its limits`, () => {
    let server: HTTPServer;
    let limited: HTTPServer;
    const stop = new AbortController();
    const running: Promise<void>[] = [];

    before(async () => {
      for (const limits of [{}, LIMITS]) {
        const started = new HTTPServer({
          name: "limits",
          address: "127.0.0.1:0",
          // Answers /refuse without reading the body, as a router does a path it does not serve.
          handler: (request) => {
            const path = new URL(request.url).pathname;
            if (path === "/ok") return new Response("ok");
            if (path === "/big") return new Response(new Uint8Array(BIG));
            return new Response("too large", { status: 413 });
          },
          tls: kind === "plain HTTP" ? undefined : pair,
          ...limits,
        });
        running.push(started.start(stop.signal));
        await started.ready();
        if (limits === LIMITS) limited = started;
        else server = started;
      }
    }, T);

    after(async () => {
      stop.abort();
      await Promise.all(running);
    }, T);

    it("delivers an answer given before the body was read, 10 times in 10", T, async () => {
      const body = "x".repeat(8 * MiB);
      for (let i = 0; i < 10; i++) {
        assert.deepEqual(await post(`${server.url}/refuse`, body), {
          status: 413,
          text: "too large",
        });
      }
      assert.deepEqual(await post(`${server.url}/ok`, "{}"), { status: 200, text: "ok" });
    });

    it(
      "passes a whole answer on to a slow reader, the server closing after it",
      T,
      async () => {
        const socket = await connect(limited.url!);
        // Reads nothing for longer than the idle timeout: an answer not yet taken is no idleness.
        socket.pause();
        socket.write(
          "GET /big HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        );
        await pause(LIMITS.idleTimeout * 2);
        let received = 0;
        // Deno's server over TLS leaves the connection for the client to close once answered.
        const whole = new Promise<void>((resolve) => {
          socket.on("data", (chunk: Uint8Array) => {
            received += chunk.byteLength;
            if (received > BIG) resolve();
          });
          socket.once("close", () => resolve());
        });
        socket.resume();
        await whole;
        socket.destroy();
        assert.ok(received > BIG, `received ${received} bytes of ${BIG} and a head`);
      },
    );

    limitTests(() => limited.url!, "/ok");
  });
}
