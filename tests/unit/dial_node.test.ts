// Node's connections for the HTTP/1.1 client (lib/kube/dial_node.ts): bytes pulled in pieces of
// any size come in order and whole, a socket that has read far ahead of its reader waits for it,
// and the end and errors of the stream reach the reader.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { nodeDialer } from "../../lib/kube/dial_node.ts";
import type { Http1Conn } from "../../lib/kube/http1.ts";

const T = { timeout: 30_000 };

let server: Server;
let port = 0;
/** What the server does with each connection. */
let onConnection: (socket: Socket) => void = () => {};

before(async () => {
  server = createServer((socket) => {
    socket.on("error", () => {});
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
}, T);

after(async () => {
  await new Promise((resolve) => server.close(resolve));
}, T);

/** Reads `conn` to its end in pieces of at most `size` bytes. */
async function readAll(conn: Http1Conn, size: number): Promise<Uint8Array> {
  const pieces: Uint8Array[] = [];
  const into = new Uint8Array(size);
  for (;;) {
    const n = await conn.read(into);
    if (n === null) break;
    assert.ok(n > 0 && n <= size, `read ${n} of at most ${size}`);
    pieces.push(into.slice(0, n));
  }
  const out = new Uint8Array(pieces.reduce((sum, p) => sum + p.length, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.length;
  }
  return out;
}

const dial = nodeDialer();

describe("Node's connections for the HTTP/1.1 client", () => {
  it("hands over what the server sent, in order, to reads of any size", T, async () => {
    // 3 MiB, more than a socket reads ahead, with every byte's position in it.
    const sent = new Uint8Array(3 * 2 ** 20).map((_, i) => (i * 7 + (i >> 8)) & 0xff);
    onConnection = (socket) => socket.end(sent);
    const conn = await dial({ hostname: "127.0.0.1", port, tls: false });
    try {
      // Let the server write it all, and the socket read up to its limit, before reading.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const got = await readAll(conn, 1000);
      assert.equal(got.length, sent.length);
      assert.ok(got.every((byte, i) => byte === sent[i]), "the bytes as sent");
      assert.equal(await conn.read(new Uint8Array(10)), null, "and the end, again");
    } finally {
      conn.close();
    }
  });

  it("writes what it is given and reads the answer", T, async () => {
    onConnection = (socket) => socket.once("data", (data) => socket.end(`echo ${data}`));
    const conn = await dial({ hostname: "127.0.0.1", port, tls: false });
    try {
      assert.equal(await conn.write(new TextEncoder().encode("ping")), 4);
      assert.equal(new TextDecoder().decode(await readAll(conn, 64)), "echo ping");
      await assert.rejects(conn.write(new Uint8Array(1)), { code: "EPIPE" });
    } finally {
      conn.close();
    }
  });

  it("fails a read when the connection breaks, and a dial that finds no server", T, async () => {
    onConnection = (socket) => {
      socket.write("partial");
      setTimeout(() => socket.resetAndDestroy(), 20);
    };
    const conn = await dial({ hostname: "127.0.0.1", port, tls: false });
    try {
      const into = new Uint8Array(64);
      assert.equal(await conn.read(into), 7);
      await assert.rejects(conn.read(into), { code: "ECONNRESET" });
    } finally {
      conn.close();
    }
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const unused = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    await assert.rejects(dial({ hostname: "127.0.0.1", port: unused, tls: false }), {
      code: "ECONNREFUSED",
    });
  });
});
