/**
 * The transport's requests on Node: through Rudder's HTTP/1.1 client (http1.ts) over `node:tls`
 * and `node:net` sockets (dial_node.ts), one keep-alive pool per server, which costs less CPU
 * per API call than `node:https` (its agent, streams and events); through `node:http` and
 * `node:https` with one keep-alive `https.Agent` per TLS setting for proxies, stream bodies, and
 * everything when `RUDDER_NODE_HTTPS=1`. Both answer with the platform's `Response`. Node's own
 * `fetch` (undici) takes no CA bundle, client certificate or server name per request without
 * the `undici` package, which Rudder does not depend on; the agent and the dialer take them all.
 *
 * Proxies: a kubeconfig's `proxy-url` carries every request; without it `HTTPS_PROXY`,
 * `HTTP_PROXY` and `NO_PROXY` (or their lower-case spellings) apply, as Bun's `fetch` reads
 * them, except to a loopback host, which Go's clients (client-go's among them) never proxy.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import type * as NodeHttp from "node:http";
import type * as NodeHttps from "node:https";
import { isIP } from "node:net";
import process from "node:process";
import type { Readable as NodeReadable, Transform } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Fetcher, TlsSettings } from "./fetcher.ts";
import { nodeDialer } from "./dial_node.ts";
import { http1Fetch, Http1Pool, STREAMED } from "./http1.ts";

// Fetched when this module is evaluated, which is on Node only (transport.ts imports it there):
// static imports of them would be hoisted to the top of a bundle (the Bun single binary) and
// load `node:http`, `node:stream` and `node:zlib` on every runtime.
const http = process.getBuiltinModule("node:http") as typeof NodeHttp;
const https = process.getBuiltinModule("node:https") as typeof NodeHttps;
const { Readable } = process.getBuiltinModule("node:stream") as typeof import("node:stream");
const zlib = process.getBuiltinModule("node:zlib") as typeof import("node:zlib");

/**
 * Idle connections kept per host for reuse, as the Deno client's pools keep. Connections in
 * use have no bound, as client-go sets none (`MaxConnsPerHost` 0): each watch holds one for as
 * long as it runs, and a bound would queue API calls behind them.
 */
const MAX_IDLE_PER_HOST = 64;

/** Statuses whose answer has no body, which `new Response` refuses one for. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** The proxy settings an agent is made with: Node's `proxyEnv` option. */
type ProxyEnv = Record<string, string | undefined>;

/** `proxy-url` for every request, else the environment's proxy variables (module doc). */
function proxyEnv(proxyURL: string | undefined): ProxyEnv | undefined {
  if (proxyURL) return { HTTP_PROXY: proxyURL, HTTPS_PROXY: proxyURL };
  const env = process.env;
  const httpsProxy = env.HTTPS_PROXY ?? env.https_proxy;
  const httpProxy = env.HTTP_PROXY ?? env.http_proxy;
  if (!httpsProxy && !httpProxy) return undefined;
  return { HTTPS_PROXY: httpsProxy, HTTP_PROXY: httpProxy, NO_PROXY: env.NO_PROXY ?? env.no_proxy };
}

function isLoopback(hostname: string): boolean {
  const host = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

/**
 * A fetcher over `node:http(s)` with keep-alive agents holding the TLS settings: the CA bundle
 * (which replaces the root store, as in Go), the client certificate and key, the server name to
 * verify, and `insecure-skip-tls-verify`.
 */
export function createNodeFetcher(settings: TlsSettings): Fetcher {
  const proxies = proxyEnv(settings.proxyURL);
  const tls: NodeHttps.AgentOptions = {
    ca: settings.caData,
    cert: settings.cert,
    key: settings.key,
    rejectUnauthorized: !settings.insecureSkipTLSVerify,
    servername: settings.serverName,
  };
  const agents = new Map<string, NodeHttp.Agent>();
  const agentFor = (url: URL): NodeHttp.Agent => {
    const secure = url.protocol === "https:";
    const proxied = !!proxies && (!!settings.proxyURL || !isLoopback(url.hostname));
    const key = `${secure ? "https" : "http"}${proxied ? "+proxy" : ""}`;
    let agent = agents.get(key);
    if (!agent) {
      const options: NodeHttps.AgentOptions & { proxyEnv?: ProxyEnv } = {
        keepAlive: true,
        maxFreeSockets: MAX_IDLE_PER_HOST,
        ...(proxied ? { proxyEnv: proxies } : {}),
      };
      agent = secure ? new https.Agent({ ...options, ...tls }) : new http.Agent(options);
      agents.set(key, agent);
    }
    return agent;
  };
  let closed = false;
  const viaAgent = (url: string, init: RequestInit): Promise<Response> => {
    try {
      return send(new URL(url), init, agentFor);
    } catch (err) {
      return Promise.reject(err);
    }
  };
  const dial = nodeDialer({
    ca: settings.caData,
    cert: settings.cert,
    key: settings.key,
    serverName: settings.serverName,
    insecureSkipTLSVerify: settings.insecureSkipTLSVerify,
  });
  const http1 = useNodeHttps() ? undefined : http1Fetch(
    // A proxied server is the agent's: it speaks CONNECT and applies NO_PROXY.
    (server) =>
      proxies && (settings.proxyURL || !isLoopback(server.hostname))
        ? null
        : new Http1Pool({ ...server, dial, maxIdle: MAX_IDLE_PER_HOST }),
    viaAgent,
  );
  return {
    fetch(url, init) {
      if (closed) return Promise.reject(new Error("the connection pool is closed"));
      return http1 ? http1.fetch(url, init) : viaAgent(url, init);
    },
    close() {
      closed = true;
      http1?.close();
      for (const agent of agents.values()) agent.destroy();
      agents.clear();
    },
  };
}

/**
 * `RUDDER_NODE_HTTPS=1` sends every request through `node:https` instead of the HTTP/1.1
 * client: a way back, should a server need what only Node's own client speaks.
 */
function useNodeHttps(): boolean {
  return process.env.RUDDER_NODE_HTTPS === "1";
}

/** Sends one request and resolves with its answer once the head (or, unstreamed, all) is in. */
function send(
  url: URL,
  init: RequestInit,
  agentFor: (url: URL) => NodeHttp.Agent,
): Promise<Response> {
  const signal = init.signal ?? undefined;
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return Promise.reject(new TypeError(`unsupported protocol ${url.protocol}`));
  }
  const method = (init.method ?? "GET").toUpperCase();
  const headers = headerObject(init.headers);
  const body = requestBody(init.body, headers);
  frame(body, headers);
  const attempt = (): Promise<Response> => {
    const request = (url.protocol === "https:" ? https : http).request(url, {
      method,
      headers,
      agent: agentFor(url),
    });
    return exchange(request, { url, method, body, signal, retry: attempt });
  };
  return attempt();
}

/** One request on one connection: sends `body`, resolves with the answer. */
function exchange(
  request: NodeHttp.ClientRequest,
  { url, method, body, signal, retry }: {
    url: URL;
    method: string;
    body: string | Uint8Array | ReadableStream | undefined;
    signal: AbortSignal | undefined;
    /** Sends the request again, on another connection. */
    retry: () => Promise<Response>;
  },
): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    let answered = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      // A kept connection the server closed while it idled: nothing was answered, so the
      // request goes again on the next one (each stale one is dropped, so this ends at a new one).
      if (
        !answered && request.reusedSocket && isStaleConnection(err) &&
        !(body instanceof ReadableStream) &&
        !signal?.aborted
      ) {
        resolve(retry());
        return;
      }
      reject(signal?.aborted ? signal.reason : err);
    };
    const onAbort = () => {
      request.destroy();
      fail(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    request.once("error", fail);
    request.once("response", (incoming) => {
      answered = true;
      const status = incoming.statusCode ?? 0;
      const head = {
        status,
        statusText: incoming.statusMessage ?? "",
        headers: responseHeaders(incoming.rawHeaders),
      };
      const decoded = decode(incoming, incoming.headers["content-encoding"]);
      if (method === "HEAD" || NULL_BODY.has(status)) {
        incoming.resume();
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        resolve(new Response(null, head));
        return;
      }
      if (STREAMED.test(url.search)) {
        settled = true;
        // Aborting now ends the body's stream with the signal's reason, as fetch does.
        signal?.removeEventListener("abort", onAbort);
        signal?.addEventListener("abort", () => decoded.destroy(signal.reason), { once: true });
        request.on("error", () => {}); // reported through the body's stream
        resolve(new Response(Readable.toWeb(decoded) as ReadableStream<Uint8Array>, head));
        return;
      }
      const chunks: Buffer<ArrayBuffer>[] = [];
      decoded.on("data", (chunk: Buffer<ArrayBuffer>) => chunks.push(chunk));
      decoded.once("error", fail);
      decoded.once("end", () => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        const whole = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        // A kept TLS connection leaves this answer's message reachable while it idles, and
        // with it this listener's chunks: a list page's worth of memory after a sync.
        chunks.length = 0;
        resolve(new Response(whole, head));
      });
    });
    if (body instanceof ReadableStream) {
      Readable.fromWeb(body as NodeReadableStream).once("error", fail)
        .pipe(request);
    } else request.end(body);
  });
}

/** The error a request gets on a kept connection the server has closed. */
function isStaleConnection(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return code === "ECONNRESET" || code === "EPIPE";
}

/** `init`'s headers as the plain object node:http takes. */
function headerObject(init: HeadersInit | undefined): Record<string, string> {
  if (init === undefined) return {};
  if (init instanceof Headers || Array.isArray(init)) {
    const out: Record<string, string> = {};
    new Headers(init).forEach((value, name) => void (out[name] = value));
    return out;
  }
  // The transport hands over a record of checked, lower-cased names (headerRecord).
  return { ...(init as Record<string, string>) };
}

/** The body as node:http sends it, with the `Content-Type` fetch would add. */
function requestBody(
  body: RequestInit["body"],
  headers: Record<string, string>,
): string | Uint8Array | ReadableStream | undefined {
  if (body === undefined || body === null) return undefined;
  const contentType = (type: string) => {
    if (!Object.keys(headers).some((name) => name.toLowerCase() === "content-type")) {
      headers["content-type"] = type;
    }
  };
  if (typeof body === "string") {
    contentType("text/plain;charset=UTF-8");
    return body;
  }
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) {
    return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  }
  if (body instanceof URLSearchParams) {
    contentType("application/x-www-form-urlencoded;charset=UTF-8");
    return body.toString();
  }
  if (body instanceof ReadableStream) return body;
  throw new TypeError("the Node transport sends string, byte and stream bodies only");
}

/**
 * Says how the body is framed, as fetch does: node:http adds neither `Content-Length` nor chunked
 * coding to a DELETE (or GET, OPTIONS) with a body, whose bytes would then run into the next
 * request on the connection.
 */
function frame(
  body: string | Uint8Array | ReadableStream | undefined,
  headers: Record<string, string>,
): void {
  for (const name of Object.keys(headers)) {
    const key = name.toLowerCase();
    if (key === "content-length" || key === "transfer-encoding") delete headers[name];
  }
  if (body === undefined) return;
  if (body instanceof ReadableStream) headers["transfer-encoding"] = "chunked";
  else {headers["content-length"] = String(
      typeof body === "string" ? Buffer.byteLength(body) : body.byteLength,
    );}
}

/** Node's raw header list as `Headers`, repeated names kept. */
function responseHeaders(raw: string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i], raw[i + 1]);
  return headers;
}

/** The body decoded from its `Content-Encoding`, as fetch hands it over. */
function decode(incoming: NodeHttp.IncomingMessage, encoding: string | undefined): NodeReadable {
  switch (encoding?.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return pipeOn(incoming, zlib.createGunzip());
    case "deflate":
      return pipeOn(incoming, zlib.createInflate());
    case "br":
      return pipeOn(incoming, zlib.createBrotliDecompress());
    default:
      return incoming;
  }
}

function pipeOn(incoming: NodeHttp.IncomingMessage, decoder: Transform): NodeReadable {
  incoming.once("error", (err) => decoder.destroy(err));
  // A body cancelled before its end frees the connection; a whole one leaves it for reuse.
  decoder.once("close", () => {
    if (!incoming.complete) incoming.destroy();
  });
  return incoming.pipe(decoder);
}
