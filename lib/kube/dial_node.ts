/**
 * The HTTP/1.1 client's connections on Node (http1.ts): `node:tls` and `node:net` sockets read
 * the way the client reads `Deno.Conn`, by pulling bytes into its buffer. Used by
 * transport_node.ts, which is loaded on Node only.
 *
 * @module
 */

import type { Buffer } from "node:buffer";
import type * as NodeNet from "node:net";
import process from "node:process";
import type * as NodeTls from "node:tls";
import type { Http1Conn, Http1Dialer } from "./http1.ts";

// Fetched when this module is evaluated, which is on Node only: static imports would be hoisted
// to the top of a bundle (the Bun single binary) and load `node:tls` on every runtime.
const net = process.getBuiltinModule("node:net") as typeof NodeNet;
const tls = process.getBuiltinModule("node:tls") as typeof NodeTls;

/**
 * Bytes a socket may have read ahead of the client before it stops reading: a watch's events
 * wait in the kernel, not in memory, while its consumer is busy.
 */
const READ_AHEAD = 1024 * 1024;

/** A socket as an `Http1Conn`. Referenced only while a read waits, as Node's agent does. */
class SocketConn implements Http1Conn {
  readonly #socket: NodeNet.Socket;
  readonly #chunks: Uint8Array[] = [];
  #queued = 0;
  #ended = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;

  constructor(socket: NodeNet.Socket) {
    this.#socket = socket;
    socket.on("data", (chunk: Buffer) => {
      this.#chunks.push(chunk);
      this.#queued += chunk.length;
      if (this.#queued > READ_AHEAD) socket.pause();
      this.#notify();
    });
    socket.on("end", () => this.#end());
    socket.on("close", () => this.#end());
    socket.on("error", (err: Error) => {
      this.#error ??= err;
      this.#notify();
    });
    // An idle kept connection does not hold the process open.
    socket.unref();
  }

  #end(): void {
    this.#ended = true;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async read(into: Uint8Array): Promise<number | null> {
    while (this.#chunks.length === 0) {
      if (this.#error) throw this.#error;
      if (this.#ended) return null;
      this.#socket.resume();
      this.#socket.ref();
      try {
        await new Promise<void>((resolve) => this.#wake = resolve);
      } finally {
        this.#socket.unref();
      }
    }
    let n = 0;
    while (n < into.length && this.#chunks.length > 0) {
      const chunk = this.#chunks[0];
      const take = Math.min(chunk.length, into.length - n);
      into.set(take === chunk.length ? chunk : chunk.subarray(0, take), n);
      n += take;
      if (take === chunk.length) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(take);
    }
    this.#queued -= n;
    if (this.#queued <= READ_AHEAD && this.#socket.isPaused()) this.#socket.resume();
    return n;
  }

  write(bytes: Uint8Array): Promise<number> {
    if (this.#error) return Promise.reject(this.#error);
    if (this.#ended || this.#socket.destroyed) {
      return Promise.reject(Object.assign(new Error("write after the end"), { code: "EPIPE" }));
    }
    return new Promise((resolve, reject) => {
      this.#socket.write(bytes, (err) => err ? reject(err) : resolve(bytes.length));
    });
  }

  close(): void {
    this.#socket.destroy();
    this.#end();
  }
}

/** What the Node dialer verifies and presents: the transport's TLS settings. */
export interface NodeDialerTls {
  /** PEM CA bundle, which replaces Node's root store (as in Go). */
  ca?: string;
  /** PEM client certificate. */
  cert?: string;
  /** PEM client key. */
  key?: string;
  /** The name the server's certificate is verified against; default the host's. */
  serverName?: string;
  /** `insecure-skip-tls-verify`. */
  insecureSkipTLSVerify?: boolean;
}

/** Node's connections for the HTTP/1.1 client: TLS with `settings`, or plain TCP. */
export function nodeDialer(settings: NodeDialerTls = {}): Http1Dialer {
  return (server) =>
    new Promise((resolve, reject) => {
      const socket = server.tls
        ? tls.connect({
          host: server.hostname,
          port: server.port,
          ca: settings.ca,
          cert: settings.cert,
          key: settings.key,
          // SNI takes a name, never an address; the certificate is checked against either.
          servername: settings.serverName ??
            (net.isIP(server.hostname) ? undefined : server.hostname),
          rejectUnauthorized: !settings.insecureSkipTLSVerify,
          ALPNProtocols: ["http/1.1"],
        })
        : net.connect({ host: server.hostname, port: server.port });
      socket.setNoDelay(true);
      const fail = (err: Error) => {
        socket.destroy();
        reject(err);
      };
      socket.once("error", fail);
      socket.once(server.tls ? "secureConnect" : "connect", () => {
        socket.off("error", fail);
        resolve(new SocketConn(socket));
      });
    });
}
