/**
 * The TCP the forwarder (`forwarder.ts`) needs: a listener, outgoing connections, and sockets
 * that pipe bytes both ways with backpressure, half-close and `close` once both directions are
 * done. On Bun and Node that is `node:net`; on Deno it is Deno's own `Deno.listen` and
 * `Deno.connect` behind the same few calls, because Deno's `node:net` starts its Node
 * compatibility layer (streams, buffers, the `process` object: 4–5 MiB resident in an idle
 * operator, about 1.1 MiB of live heap).
 *
 * @module
 */

import { deno, nodeProcess } from "../util/runtime.ts";

/** One TCP connection, as the forwarder uses it (a subset of `net.Socket`). */
export interface TcpSocket {
  /** The local port, once connected. */
  readonly localPort: number | undefined;
  /** Bytes written but not yet handed to the kernel. */
  readonly writableLength: number;
  /** `connect` (outgoing only), `data` (each chunk read), `error`, `close` (once, at the end). */
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  on(event: "close", listener: () => void): unknown;
  once(event: "connect", listener: () => void): unknown;
  /** Sends `bytes` (after what was written before). */
  write(bytes: Uint8Array): unknown;
  /** Writes what this socket reads to `destination`, and ends it when this one ends. */
  pipe(destination: TcpSocket): unknown;
  /** Stops {@linkcode TcpSocket.pipe}. */
  unpipe(destination: TcpSocket): unknown;
  /** Reads on (dropping what nobody takes). */
  resume(): unknown;
  /** Sends what is written, then the end of this direction (FIN). */
  end(): unknown;
  /** Closes both directions now. */
  destroy(): unknown;
  setNoDelay(noDelay: boolean): unknown;
}

/** A listening TCP server (a subset of `net.Server`). */
export interface TcpServer {
  address(): { address: string; port: number } | string | null;
  /** Stops accepting; `callback` once every accepted connection has closed. */
  close(callback: () => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
}

/** Listens on `port` (0 for a free one) at `hostname` (every address when undefined). */
export function listenTcp(
  port: number,
  hostname: string | undefined,
  onConnection: (socket: TcpSocket) => void,
): Promise<TcpServer> {
  const runtime = deno();
  if (runtime) return Promise.resolve(DenoServer.listen(runtime, port, hostname, onConnection));
  const net = nodeProcess().getBuiltinModule("node:net") as typeof import("node:net");
  // node:net's sockets have these members; their declared types are wider than TcpSocket's.
  const server = net.createServer((socket) => onConnection(socket as unknown as TcpSocket));
  return new Promise<TcpServer>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, hostname, () => {
      server.off("error", reject);
      resolve(server);
    });
  });
}

/** Connects to `port` on `hostname`; `connect` (or `error`) follows. */
export function connectTcp(port: number, hostname: string): TcpSocket {
  const runtime = deno();
  if (runtime) return DenoSocket.connect(runtime, port, hostname);
  const net = nodeProcess().getBuiltinModule("node:net") as typeof import("node:net");
  return net.connect(port, hostname) as unknown as TcpSocket;
}

type Listener = (...args: never[]) => void;

const READ_SIZE = 64 * 1024;

/** A `Deno.TcpConn` with the calls and events of {@linkcode TcpSocket}. */
class DenoSocket implements TcpSocket {
  #conn: Deno.TcpConn | undefined;
  readonly #listeners = new Map<string, Listener[]>();
  #destination: DenoSocket | undefined;
  #flowing = false;
  #readEnded = false;
  #ending = false;
  #writeEnded = false;
  #closed = false;
  #queue: { bytes: Uint8Array; done: () => void }[] = [];
  #writing = false;
  #pending = 0;
  #noDelay = false;
  #onClosed?: () => void;

  private constructor(conn?: Deno.TcpConn) {
    this.#conn = conn;
  }

  static accepted(conn: Deno.TcpConn, onClosed: () => void): DenoSocket {
    const socket = new DenoSocket(conn);
    socket.#onClosed = onClosed;
    return socket;
  }

  static connect(runtime: typeof Deno, port: number, hostname: string): DenoSocket {
    const socket = new DenoSocket();
    runtime.connect({ hostname, port }).then((conn) => {
      if (socket.#closed) {
        conn.close();
        return;
      }
      socket.#conn = conn;
      if (socket.#noDelay) conn.setNoDelay(true);
      socket.#emit("connect");
      if (socket.#flowing) socket.#read();
      socket.#flush();
    }, (err) => socket.#fail(err));
    return socket;
  }

  get localPort(): number | undefined {
    const address = this.#conn?.localAddr;
    return address && "port" in address ? address.port : undefined;
  }

  get writableLength(): number {
    return this.#pending;
  }

  on(event: string, listener: Listener): this {
    const list = this.#listeners.get(event) ?? [];
    list.push(listener);
    this.#listeners.set(event, list);
    return this;
  }

  once(event: string, listener: Listener): this {
    const wrapped = (...args: never[]) => {
      const list = this.#listeners.get(event) ?? [];
      this.#listeners.set(event, list.filter((l) => l !== wrapped));
      listener(...args);
    };
    return this.on(event, wrapped);
  }

  pipe(destination: TcpSocket): this {
    this.#destination = destination as DenoSocket;
    this.resume();
    return this;
  }

  unpipe(destination: TcpSocket): this {
    if (this.#destination === destination) this.#destination = undefined;
    return this;
  }

  resume(): this {
    if (!this.#flowing) {
      this.#flowing = true;
      if (this.#conn) this.#read();
    }
    return this;
  }

  setNoDelay(noDelay: boolean): this {
    this.#noDelay = noDelay;
    this.#conn?.setNoDelay(noDelay);
    return this;
  }

  end(): this {
    if (this.#ending || this.#closed) return this;
    this.#ending = true;
    this.#flush();
    return this;
  }

  destroy(): this {
    if (this.#closed) return this;
    this.#closed = true;
    try {
      this.#conn?.close();
    } catch {
      // Closed already by the peer's reset.
    }
    for (const { done } of this.#queue) done();
    this.#queue = [];
    this.#pending = 0;
    this.#onClosed?.();
    // Like node:net, `close` comes after the call that caused it returns.
    setTimeout(() => this.#emit("close"), 0);
    return this;
  }

  /** Resolves once `bytes` went to the kernel (or the socket closed). */
  write(bytes: Uint8Array): Promise<void> {
    if (this.#closed || this.#ending) return Promise.resolve();
    return new Promise((resolve) => {
      this.#queue.push({ bytes, done: resolve });
      this.#pending += bytes.length;
      this.#flush();
    });
  }

  #emit(event: string, ...args: unknown[]): void {
    for (const listener of [...(this.#listeners.get(event) ?? [])]) {
      (listener as (...a: unknown[]) => void)(...args);
    }
  }

  #fail(err: unknown): void {
    if (this.#closed) return;
    this.#emit("error", err instanceof Error ? err : new Error(String(err)));
    this.destroy();
  }

  async #read(): Promise<void> {
    const conn = this.#conn!;
    try {
      while (!this.#closed) {
        const buffer = new Uint8Array(READ_SIZE);
        const n = await conn.read(buffer);
        if (n === null) break;
        const chunk = buffer.subarray(0, n);
        this.#emit("data", chunk);
        // Backpressure: read on once the other side has taken this chunk.
        if (this.#destination) await this.#destination.write(chunk);
      }
    } catch (err) {
      this.#fail(err);
      return;
    }
    if (this.#closed) return;
    this.#readEnded = true;
    this.#destination?.end();
    // Not half-open, as node:net's default: the peer's end ends this direction too, and the
    // socket closes once both are done.
    if (this.#writeEnded) this.destroy();
    else this.end();
  }

  async #flush(): Promise<void> {
    const conn = this.#conn;
    if (this.#writing || !conn || this.#closed) return;
    this.#writing = true;
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        const { bytes, done } = this.#queue[0];
        let rest = bytes;
        while (rest.length > 0) rest = rest.subarray(await conn.write(rest));
        this.#queue.shift();
        this.#pending -= bytes.length;
        done();
      }
    } catch (err) {
      this.#writing = false;
      this.#fail(err);
      return;
    }
    this.#writing = false;
    if (this.#ending && !this.#writeEnded && this.#queue.length === 0 && !this.#closed) {
      this.#writeEnded = true;
      try {
        await conn.closeWrite();
      } catch {
        // The peer is gone: closing below says so.
      }
    }
    if (this.#writeEnded && this.#readEnded) this.destroy();
  }
}

/** A `Deno.Listener` with the calls of {@linkcode TcpServer}. */
class DenoServer implements TcpServer {
  readonly #listener: Deno.TcpListener;
  readonly #open = new Set<DenoSocket>();
  readonly #errorListeners: ((err: Error) => void)[] = [];
  #closing = false;
  #onEmpty?: () => void;

  private constructor(listener: Deno.TcpListener) {
    this.#listener = listener;
  }

  static listen(
    runtime: typeof Deno,
    port: number,
    hostname: string | undefined,
    onConnection: (socket: TcpSocket) => void,
  ): DenoServer {
    let listener: Deno.TcpListener;
    if (hostname === undefined || hostname === "") {
      // Every address, IPv6 and IPv4, as node:net does; IPv4 alone where there is no IPv6.
      try {
        listener = runtime.listen({ hostname: "::", port });
      } catch (err) {
        if (err instanceof runtime.errors.AddrInUse) throw err;
        listener = runtime.listen({ hostname: "0.0.0.0", port });
      }
    } else listener = runtime.listen({ hostname, port });
    const server = new DenoServer(listener);
    server.#accept(onConnection);
    return server;
  }

  address(): { address: string; port: number } {
    const address = this.#listener.addr;
    return { address: address.hostname, port: address.port };
  }

  close(callback: () => void): this {
    this.#closing = true;
    try {
      this.#listener.close();
    } catch {
      // Closed already.
    }
    this.#onEmpty = callback;
    if (this.#open.size === 0) setTimeout(callback, 0);
    return this;
  }

  on(_event: "error", listener: (err: Error) => void): this {
    this.#errorListeners.push(listener);
    return this;
  }

  async #accept(onConnection: (socket: TcpSocket) => void): Promise<void> {
    while (!this.#closing) {
      let conn: Deno.TcpConn;
      try {
        conn = await this.#listener.accept();
      } catch (err) {
        if (this.#closing) return;
        for (const listener of this.#errorListeners) listener(err as Error);
        // A failed accept (too many open files) must not spin: try again a moment later.
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      const socket = DenoSocket.accepted(conn, () => {
        this.#open.delete(socket);
        if (this.#closing && this.#open.size === 0) this.#onEmpty?.();
      });
      this.#open.add(socket);
      onConnection(socket);
    }
  }
}
