/**
 * A small HTTP/1.1 client with keep-alive connections, for the API server's traffic, over a
 * connection its caller dials: `Deno.connectTls` and `Deno.connect` on Deno ({@linkcode
 * denoDialer}), `node:tls` and `node:net` sockets on Node (dial_node.ts). Deno's `fetch` costs
 * about 2.5× the CPU of this per request (372–398 µs against 138–173 µs for a merge patch and its
 * answer, measured on the benchmark machine), and Node's `node:https` spends most of a request
 * in its agent, streams and events; an operator is little else than such requests. It answers
 * with the platform's `Response`, so everything above the transport is the same as with `fetch`.
 *
 * What it speaks: requests with a string or byte body; answers framed by `Content-Length`, by
 * chunked transfer coding (watches, large lists) or by the connection's end; gzip answers
 * decoded when a caller asks for them. Unasked, it asks for no compression: on loopback and
 * in-cluster networks gunzip costs more than the bytes it saves (10,000 ConfigMaps of 1 KiB
 * cached in 351–480 ms plain against 520–886 ms gzipped). What it leaves to the runtime's own
 * client (`fetch` on Deno, `node:https` on Node): proxies, stream bodies, HTTP/2 and redirects
 * (the API server sends none). `RUDDER_DENO_FETCH=1` sends everything through `fetch` on Deno
 * (transport_deno.ts), `RUDDER_NODE_HTTPS=1` through `node:https` on Node (transport_node.ts).
 *
 * @module
 */

import { deno } from "../util/runtime.ts";

/** One server: where it is, and whether it speaks TLS. */
export interface Http1Server {
  /** Host name or IP address, without brackets for IPv6. */
  hostname: string;
  /** TCP port. */
  port: number;
  /** TLS (https) or plain TCP (http). */
  tls: boolean;
}

/**
 * An open connection, as the pool reads and writes it: `Deno.Conn`'s shape. `read` fills the
 * start of `into` and says how much, or `null` at the end of the stream.
 */
export interface Http1Conn {
  read(into: Uint8Array): Promise<number | null>;
  write(bytes: Uint8Array): Promise<number>;
  close(): void;
}

/** Opens a connection to `server`, with TLS when it says so, verifying its certificate. */
export type Http1Dialer = (server: Http1Server) => Promise<Http1Conn>;

/** How to reach one server. */
export interface Http1Options extends Http1Server {
  /** Opens its connections. */
  dial: Http1Dialer;
  /** Idle connections kept for reuse; default 64. */
  maxIdle?: number;
}

/**
 * Deno's connections: `Deno.connectTls` trusting `caCerts` besides Deno's roots, with the client
 * certificate and key when given, or `Deno.connect` for plain TCP.
 */
export function denoDialer(
  tls: { caCerts?: string[]; cert?: string; key?: string } = {},
): Http1Dialer {
  return async (server) => {
    const net = deno();
    if (!net) throw new Error("Rudder's HTTP/1.1 client dials with Deno's sockets only on Deno");
    return server.tls
      ? await net.connectTls({
        hostname: server.hostname,
        port: server.port,
        caCerts: tls.caCerts,
        cert: tls.cert,
        key: tls.key,
        alpnProtocols: ["http/1.1"],
      })
      : await net.connect({ hostname: server.hostname, port: server.port });
  };
}

/** A request as the transport hands it over: headers already checked and lower-cased. */
export interface Http1Request {
  method: string;
  /** Path and query, starting with `/`. */
  target: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /**
   * Hand the body over as it comes (watches, followed logs). Otherwise a body is read whole
   * before the answer resolves, which keeps a large list in one buffer.
   */
  stream?: boolean;
}

const READ_SIZE = 64 * 1024;
const MAX_HEAD_BYTES = 256 * 1024;
const encoder = new TextEncoder();

/**
 * Bytes as ISO-8859-1 text, one character per byte, as HTTP reads a header. Not TextDecoder's
 * "latin1", which is windows-1252 (it remaps 0x80–0x9F) and costs an op per call.
 */
function latin1(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 4096) {
    // Reflect.apply takes the bytes as they are (Function.apply's types want a number[]), as
    // fast as Function.apply; a character at a time costs 1.5× on a 400-byte head.
    text += Reflect.apply(String.fromCharCode, null, bytes.subarray(i, i + 4096));
  }
  return text;
}

/** The connection ended before the answer did. */
export class ConnectionClosedError extends Error {
  constructor(what: string) {
    super(`connection closed by the server ${what}`);
    this.name = "ConnectionClosedError";
  }
}

/** The server's answer does not follow HTTP/1.1. */
export class HttpProtocolError extends Error {
  constructor(problem: string) {
    super(`malformed HTTP answer: ${problem}`);
    this.name = "HttpProtocolError";
  }
}

/** One connection and the bytes read from it but not yet used. */
class Connection {
  readonly conn: Http1Conn;
  buffer = new Uint8Array(READ_SIZE);
  start = 0;
  end = 0;
  closed = false;

  constructor(conn: Http1Conn) {
    this.conn = conn;
  }

  /** Reads more bytes after what is buffered; false at the end of the stream. */
  async fill(): Promise<boolean> {
    if (this.start === this.end) {
      this.start = this.end = 0;
    } else if (this.end === this.buffer.length) {
      const kept = this.end - this.start;
      if (this.start > 0 && kept <= this.buffer.length / 2) {
        this.buffer.copyWithin(0, this.start, this.end);
      } else {
        const grown = new Uint8Array(this.buffer.length * 2);
        grown.set(this.buffer.subarray(this.start, this.end));
        this.buffer = grown;
      }
      this.start = 0;
      this.end = kept;
    }
    const n = await this.conn.read(this.buffer.subarray(this.end));
    if (n === null) return false;
    this.end += n;
    return true;
  }

  async writeAll(bytes: Uint8Array): Promise<void> {
    let written = 0;
    while (written < bytes.length) written += await this.conn.write(bytes.subarray(written));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.conn.close();
    } catch {
      // Already closed by a failed read or write.
    }
  }
}

/** Index of `\r\n\r\n` in the buffered bytes, or -1. */
function headEnd(c: Connection): number {
  const b = c.buffer;
  for (let i = c.start + 3; i < c.end; i++) {
    if (b[i] === 0x0a && b[i - 1] === 0x0d && b[i - 2] === 0x0a && b[i - 3] === 0x0d) return i + 1;
  }
  return -1;
}

/** Index of `\r\n` at or after `from` in the buffered bytes, or -1. */
function lineEnd(c: Connection, from: number): number {
  const b = c.buffer;
  for (let i = from + 1; i < c.end; i++) if (b[i] === 0x0a && b[i - 1] === 0x0d) return i + 1;
  return -1;
}

interface Head {
  status: number;
  statusText: string;
  /** The header lines in order, for the `Response`, which checks them once. */
  headers: [string, string][];
  /** The framing headers this client reads itself, by lower-case name. */
  framing: Framing;
}

/** The headers that frame a body, comma-joined when repeated (as `Headers.get` joins them). */
interface Framing {
  connection?: string;
  "content-encoding"?: string;
  "content-length"?: string;
  "transfer-encoding"?: string;
}

const FRAMING = new Set(["connection", "content-encoding", "content-length", "transfer-encoding"]);
/** Their lengths: a name of another length is neither lower-cased nor looked up. */
const FRAMING_LENGTHS = new Set([...FRAMING].map((name) => name.length));

/** 1 for the characters of an RFC 9110 token, as a header name must be. */
const TOKEN = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") {
  TOKEN[c.charCodeAt(0)] = 1;
}

function isToken(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if (code > 127 || TOKEN[code] === 0) return false;
  }
  return true;
}

/**
 * Splits a head into its status and header lines, refusing a line no `Response` would take
 * before any body is waited for; only the framing headers are read here.
 */
function parseHead(text: string): Head {
  let end = text.indexOf("\r\n");
  if (end < 0) end = text.length;
  const match = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(text.slice(0, end));
  if (!match) throw new HttpProtocolError(`status line ${JSON.stringify(text.slice(0, 80))}`);
  const headers: [string, string][] = [];
  const framing: Record<string, string> = {};
  for (let at = end + 2; at < text.length; at = end + 2) {
    end = text.indexOf("\r\n", at);
    if (end < 0) end = text.length;
    if (end === at) continue;
    const colon = text.indexOf(":", at);
    // A line without a colon has no name, and no name is a token.
    const name = colon > at && colon < end ? text.slice(at, colon).trim() : "";
    const value = text.slice(colon + 1, end).trim();
    if (!isToken(name) || value.includes("\0")) {
      throw new HttpProtocolError(
        `header line ${JSON.stringify(text.slice(at, end).slice(0, 80))}`,
      );
    }
    headers.push([name, value]);
    const key = FRAMING_LENGTHS.has(name.length) ? name.toLowerCase() : "";
    if (FRAMING.has(key)) framing[key] = key in framing ? `${framing[key]}, ${value}` : value;
  }
  return { status: Number(match[1]), statusText: match[2] ?? "", headers, framing };
}

/** Reads one response head; `null` when the connection ended before its first byte. */
async function readHead(c: Connection): Promise<Head | null> {
  let end = headEnd(c);
  while (end < 0) {
    if (c.end - c.start > MAX_HEAD_BYTES) throw new HttpProtocolError("the header is too large");
    const empty = c.start === c.end;
    if (!(await c.fill())) {
      if (empty) return null;
      throw new ConnectionClosedError("in the middle of an answer's header");
    }
    end = headEnd(c);
  }
  const head = parseHead(latin1(c.buffer.subarray(c.start, end - 4)));
  c.start = end;
  return head;
}

/** Reads a body of `length` bytes. */
async function readFixed(c: Connection, length: number): Promise<Uint8Array<ArrayBuffer>> {
  const out = new Uint8Array(length);
  let filled = Math.min(length, c.end - c.start);
  out.set(c.buffer.subarray(c.start, c.start + filled));
  c.start += filled;
  while (filled < length) {
    const n = await c.conn.read(out.subarray(filled));
    if (n === null) throw new ConnectionClosedError(`after ${filled} of ${length} body bytes`);
    filled += n;
  }
  return out;
}

/**
 * Parses chunked transfer coding from the buffer, handing each piece of chunk data to `sink`
 * (a view into the buffer, valid only during the call). Returns true once the last chunk (and
 * its trailers) has been read; leaves an incomplete size line in the buffer.
 */
function takeChunks(
  c: Connection,
  state: { remaining: number },
  sink: (data: Uint8Array) => void,
): boolean {
  for (;;) {
    if (state.remaining > 0) {
      const n = Math.min(state.remaining, c.end - c.start);
      if (n === 0) return false;
      sink(c.buffer.subarray(c.start, c.start + n));
      c.start += n;
      state.remaining -= n;
      if (state.remaining > 0) return false;
      state.remaining = -2; // the CRLF after the data
    }
    if (state.remaining === -2) {
      if (c.end - c.start < 2) return false;
      if (c.buffer[c.start] !== 0x0d || c.buffer[c.start + 1] !== 0x0a) {
        throw new HttpProtocolError("a chunk does not end with CRLF");
      }
      c.start += 2;
      state.remaining = 0;
    }
    const end = lineEnd(c, c.start);
    if (end < 0) {
      if (c.end - c.start > 4096) throw new HttpProtocolError("a chunk size line is too long");
      return false;
    }
    const line = latin1(c.buffer.subarray(c.start, end - 2));
    const size = parseInt(line.split(";", 1)[0].trim(), 16);
    if (!Number.isFinite(size) || size < 0 || !/^[0-9a-fA-F]/.test(line)) {
      throw new HttpProtocolError(`chunk size ${JSON.stringify(line.slice(0, 40))}`);
    }
    if (size === 0) {
      // Trailers end with an empty line; the API server sends none.
      let at = end;
      for (;;) {
        const next = lineEnd(c, at);
        if (next < 0) return false;
        if (next - at === 2) {
          c.start = next;
          return true;
        }
        at = next;
      }
    }
    c.start = end;
    state.remaining = size;
  }
}

/**
 * Bytes appended into one buffer that doubles as it fills: a body read whole is copied once,
 * from the connection's buffer into this one, instead of into a piece per chunk and then into
 * their concatenation (which left Deno 2.3 KB of resident memory more per listed object).
 */
class Collector {
  #buffer: Uint8Array<ArrayBuffer>;
  length = 0;

  /** `capacity`: the bytes expected, such as those already buffered. */
  constructor(capacity: number) {
    this.#buffer = new Uint8Array(capacity);
  }

  append = (data: Uint8Array): void => {
    const needed = this.length + data.length;
    if (needed > this.#buffer.length) {
      const grown = new Uint8Array(Math.max(needed, this.#buffer.length * 2));
      grown.set(this.#buffer.subarray(0, this.length));
      this.#buffer = grown;
    }
    this.#buffer.set(data, this.length);
    this.length = needed;
  };

  bytes(): Uint8Array<ArrayBuffer> {
    return this.#buffer.subarray(0, this.length);
  }
}

/** Decodes a gzip body (the API server compresses large answers when asked to). */
function gunzip(body: ReadableStream<Uint8Array<ArrayBuffer>>): ReadableStream<Uint8Array> {
  return body.pipeThrough(new DecompressionStream("gzip"));
}

const NULL_BODY = new Set([204, 205, 304]);

/**
 * A keep-alive pool of HTTP/1.1 connections to one server.
 *
 * @example
 * ```ts ignore
 * const pool = new Http1Pool({
 *   hostname: "127.0.0.1",
 *   port: 6443,
 *   tls: true,
 *   dial: denoDialer({ caCerts: [ca] }),
 * });
 * const response = await pool.request({ method: "GET", target: "/version", headers: {} });
 * console.log(await response.json());
 * pool.close();
 * ```
 */
export class Http1Pool {
  readonly #options: Http1Options;
  readonly #host: string;
  readonly #idle: Connection[] = [];
  readonly #open = new Set<Connection>();
  #closed = false;

  constructor(options: Http1Options) {
    this.#options = options;
    const defaultPort = options.tls ? 443 : 80;
    const name = options.hostname.includes(":") ? `[${options.hostname}]` : options.hostname;
    this.#host = options.port === defaultPort ? name : `${name}:${options.port}`;
  }

  async #connect(): Promise<Connection> {
    const { hostname, port, tls } = this.#options;
    const connection = new Connection(await this.#options.dial({ hostname, port, tls }));
    if (this.#closed) {
      connection.close();
      throw new Error("the connection pool is closed");
    }
    this.#open.add(connection);
    return connection;
  }

  /**
   * Connects, or rejects with the signal's reason as soon as it aborts (a dialer cannot be told
   * to give up: a connection that completes after the abort is closed at once).
   */
  #connectUnless(signal: AbortSignal | undefined): Promise<Connection> {
    const connecting = this.#connect();
    if (!signal) return connecting;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        reject(signal.reason);
        connecting.then((c) => this.#discard(c), () => {});
      };
      signal.addEventListener("abort", onAbort, { once: true });
      connecting.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
    });
  }

  #release(c: Connection, reusable: boolean): void {
    if (
      reusable && !c.closed && !this.#closed && c.start === c.end &&
      this.#idle.length < (this.#options.maxIdle ?? 64)
    ) {
      this.#idle.push(c);
      return;
    }
    this.#discard(c);
  }

  #discard(c: Connection): void {
    c.close();
    this.#open.delete(c);
  }

  /** Sends a request; resolves once the answer's header has come (and a short body with it). */
  async request(request: Http1Request): Promise<Response> {
    if (this.#closed) throw new Error("the connection pool is closed");
    const signal = request.signal;
    signal?.throwIfAborted();
    const bytes = this.#encode(request);
    for (;;) {
      const pooled = this.#idle.pop();
      const c = pooled ?? await this.#connectUnless(signal);
      const onAbort = () => this.#discard(c);
      signal?.addEventListener("abort", onAbort, { once: true });
      // Aborted while connecting, after the race was won: the listener would never fire.
      if (signal?.aborted) onAbort();
      const progress = { answered: false };
      let handedOver = false;
      try {
        await c.writeAll(bytes);
        const response = await this.#answer(c, request, progress, () => {
          signal?.removeEventListener("abort", onAbort);
        });
        if (response === null) {
          // A kept connection the server had closed: nothing of this request was answered.
          // Try the next (each stale one is dropped, so this ends at a new connection).
          this.#discard(c);
          if (pooled) continue;
          throw new ConnectionClosedError("before answering");
        }
        handedOver = true;
        return response;
      } catch (err) {
        this.#discard(c);
        if (signal?.aborted) throw signal.reason;
        // A kept connection the server closed while it idled: try the next one.
        if (pooled && !progress.answered && isStaleConnection(err)) continue;
        throw err;
      } finally {
        if (!handedOver) signal?.removeEventListener("abort", onAbort);
      }
    }
  }

  #encode(request: Http1Request): Uint8Array<ArrayBuffer> {
    const body = typeof request.body === "string" ? encoder.encode(request.body) : request.body;
    let head = `${request.method} ${request.target} HTTP/1.1\r\nhost: ${this.#host}\r\n`;
    const headers = request.headers;
    for (const name in headers) {
      if (name === "host" || name === "content-length" || name === "connection") continue;
      head += `${name}: ${headers[name]}\r\n`;
    }
    if (!("accept-encoding" in headers)) head += "accept-encoding: identity\r\n";
    if (body !== undefined) head += `content-length: ${body.length}\r\n`;
    else if (request.method !== "GET" && request.method !== "HEAD") head += "content-length: 0\r\n";
    head += "\r\n";
    const headBytes = encoder.encode(head);
    if (!body || body.length === 0) return headBytes;
    const out = new Uint8Array(headBytes.length + body.length);
    out.set(headBytes);
    out.set(body, headBytes.length);
    return out;
  }

  /**
   * Reads the answer's header and frames its body. `done` runs once the body is finished with
   * (read to its end, cancelled, or failed). `null` when the connection ended at once.
   */
  async #answer(
    c: Connection,
    request: Http1Request,
    progress: { answered: boolean },
    done: () => void,
  ): Promise<Response | null> {
    let head: Head | null;
    for (;;) {
      head = await readHead(c);
      if (head === null) return null;
      progress.answered = true;
      // Informational answers (100 Continue, 103 Early Hints) precede the real one.
      if (head.status >= 200) break;
    }
    const { status, statusText, headers, framing } = head;
    const keepAlive = !/\bclose\b/i.test(framing.connection ?? "");
    // Handing the lines to Response checks them once; a Headers object would be checked again.
    const init = { status, statusText, headers };
    const decode = (framing["content-encoding"] ?? "").toLowerCase() === "gzip";
    const finish = (body: Uint8Array<ArrayBuffer> | null) => {
      if (body === null || !decode) return new Response(body, init);
      return new Response(gunzip(new Response(body).body!), init);
    };
    if (request.method === "HEAD" || NULL_BODY.has(status)) {
      this.#release(c, keepAlive);
      done();
      return new Response(null, init);
    }
    const transfer = (framing["transfer-encoding"] ?? "").toLowerCase();
    if (transfer.includes("chunked")) {
      const state = { remaining: 0 };
      const body = new Collector(c.end - c.start);
      let last = takeChunks(c, state, body.append);
      // A body asked for whole is read to its end here; the common small one came with the head.
      while (!last && !request.stream) {
        if (!(await c.fill())) throw new ConnectionClosedError("in the middle of a body");
        last = takeChunks(c, state, body.append);
      }
      if (last) {
        this.#release(c, keepAlive);
        done();
        return finish(body.bytes());
      }
      return this.#streamed(c, keepAlive, init, decode, body, state, request.signal, done);
    }
    const lengthHeader = framing["content-length"] ?? null;
    if (lengthHeader !== null) {
      const length = Number(lengthHeader);
      if (!Number.isSafeInteger(length) || length < 0) {
        throw new HttpProtocolError(`content-length ${JSON.stringify(lengthHeader)}`);
      }
      const body = await readFixed(c, length);
      this.#release(c, keepAlive);
      done();
      return finish(body);
    }
    // Neither: the body runs to the end of the connection, which is not kept.
    const body = new Collector(READ_SIZE);
    body.append(c.buffer.subarray(c.start, c.end));
    c.start = c.end;
    while (await c.fill()) {
      body.append(c.buffer.subarray(c.start, c.end));
      c.start = c.end;
    }
    this.#discard(c);
    done();
    return finish(body.bytes());
  }

  /** A chunked body that is still coming: a stream that releases the connection at its end. */
  #streamed(
    c: Connection,
    keepAlive: boolean,
    init: ResponseInit,
    decode: boolean,
    first: Collector,
    state: { remaining: number },
    signal: AbortSignal | undefined,
    done: () => void,
  ): Response {
    let finished = false;
    const finish = (reusable: boolean) => {
      if (finished) return;
      finished = true;
      if (reusable) this.#release(c, keepAlive);
      else this.#discard(c);
      done();
    };
    const body = new ReadableStream<Uint8Array<ArrayBuffer>>({
      start(controller) {
        if (first.length > 0) controller.enqueue(first.bytes());
      },
      async pull(controller) {
        try {
          for (;;) {
            if (!(await c.fill())) throw new ConnectionClosedError("in the middle of a body");
            const read = new Collector(c.end - c.start);
            const last = takeChunks(c, state, read.append);
            if (read.length > 0) controller.enqueue(read.bytes());
            if (last) {
              finish(true);
              controller.close();
              return;
            }
            if (read.length > 0) return;
          }
        } catch (err) {
          finish(false);
          // As with fetch, an aborted request's body fails with the signal's reason.
          controller.error(signal?.aborted ? signal.reason : err);
        }
      },
      cancel() {
        finish(false);
      },
    }, { highWaterMark: 0 });
    return new Response(decode ? gunzip(body) : body, init);
  }

  /** Closes every connection; pending requests fail and later ones are refused. */
  close(): void {
    this.#closed = true;
    for (const c of this.#open) c.close();
    this.#open.clear();
    this.#idle.length = 0;
  }
}

/** The error a write or read gets from a kept connection the server has closed. */
function isStaleConnection(err: unknown): boolean {
  if (err instanceof ConnectionClosedError) return true;
  if (!(err instanceof Error)) return false;
  // Deno's error classes, then Node's codes.
  const name = err.name;
  if (
    name === "BrokenPipe" || name === "ConnectionReset" || name === "UnexpectedEof" ||
    name === "ConnectionAborted"
  ) return true;
  const code = (err as { code?: unknown }).code;
  return code === "ECONNRESET" || code === "EPIPE" || code === "ECONNABORTED";
}

/**
 * The API server's answers that go on for as long as they are read: watches and followed logs.
 * Their bodies are streamed; every other body is read whole before the answer resolves.
 */
export const STREAMED: RegExp = /[?&](?:watch|follow)=(?:true|1)(?:&|$)/;

/** True when the HTTP/1.1 client can send `init`: a string or byte body, headers as a record. */
export function http1Sendable(init: RequestInit): boolean {
  const body = init.body;
  if (
    body !== undefined && body !== null && typeof body !== "string" && !(body instanceof Uint8Array)
  ) {
    return false;
  }
  const headers = init.headers;
  return headers === undefined || !(headers instanceof Headers || Array.isArray(headers));
}

/** Host, port and scheme of an `http(s)://host[:port]` origin; `null` for anything else. */
export function http1Server(origin: string): Http1Server | null {
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return null;
  }
  const tls = parsed.protocol === "https:";
  if (!tls && parsed.protocol !== "http:") return null;
  const hostname = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : parsed.hostname;
  return { hostname, port: parsed.port ? Number(parsed.port) : tls ? 443 : 80, tls };
}

/**
 * A fetcher's `fetch` that sends what the HTTP/1.1 client can through one pool per origin, made
 * by `pool` (`null` for an origin it should not take, such as one behind a proxy), and the rest
 * through `fallback`. Returns it with what closes its pools.
 */
export function http1Fetch(
  pool: (server: Http1Server) => Http1Pool | null,
  fallback: (url: string, init: RequestInit) => Promise<Response>,
): { fetch: (url: string, init: RequestInit) => Promise<Response>; close: () => void } {
  // One pool per origin, parsed once; `null` for an origin only the fallback can reach.
  const pools = new Map<string, Http1Pool | null>();
  const poolFor = (origin: string): Http1Pool | null => {
    let found = pools.get(origin);
    if (found === undefined) {
      const server = http1Server(origin);
      found = server && pool(server);
      pools.set(origin, found);
    }
    return found;
  };
  return {
    fetch(url, init) {
      const slash = url.indexOf("/", url.indexOf("//") + 2);
      const found = slash > 0 && http1Sendable(init) ? poolFor(url.slice(0, slash)) : null;
      if (!found) return fallback(url, init);
      const target = url.slice(slash);
      return found.request({
        method: init.method ?? "GET",
        target,
        headers: (init.headers ?? {}) as Record<string, string>,
        body: (init.body ?? undefined) as string | Uint8Array | undefined,
        signal: init.signal ?? undefined,
        stream: STREAMED.test(target),
      });
    },
    close() {
      for (const found of pools.values()) found?.close();
      pools.clear();
    },
  };
}
