/**
 * The HTTP layer under every API call: `fetch` with the TLS settings and credentials of a
 * {@linkcode KubeConfig}. TLS differs per runtime, so each runtime has a small adapter
 * (transport_deno.ts, transport_bun.ts, transport_node.ts); the rest of Rudder never asks which runtime it is on.
 *
 * @module
 */

import { checkCertificate } from "../util/x509_check.ts";
import { encodeBase64 } from "../util/encoding.ts";
import { clientCertificateProblem } from "./config/client_certificate.ts";
import type { Credentials, KubeConfig } from "./config/types.ts";
import { ConnectionError, type ConnectionFailure, InvalidHeaderError } from "./errors.ts";
import {
  isValidHeaderValue,
  redactError,
  redactText,
  redactURL,
  secretsOf,
  secretsOfURL,
  urlUserInfo,
} from "./redact.ts";
import type { Fetcher, TlsSettings } from "./fetcher.ts";
import { createBunFetcher } from "./transport_bun.ts";
import { createDenoFetcher } from "./transport_deno.ts";
import { VERSION } from "../version.ts";
import { bun, deno, node, nodeProcess, runtimeName } from "../util/runtime.ts";

/** Options of {@linkcode newTransport}. */
export interface TransportOptions {
  /** `User-Agent` header; default `rudder/<version> (<runtime> <version>; <os>/<arch>)`. */
  userAgent?: string;
}

/** Sends authenticated requests to one API server. */
export interface Transport {
  /** The configuration this transport was made from. */
  readonly config: KubeConfig;
  /**
   * Sends a request to `path` (with query) on the API server with credentials attached. A 401
   * answer makes the credentials refresh once (rotated token, expired exec credential) and the
   * request repeat, when the body can be sent again. A request that gets no answer rejects
   * with a {@linkcode ConnectionError} naming the host and the reason; an aborted one with the
   * signal's reason; a credential header that cannot be sent with an `InvalidHeaderError`.
   * Without an `Accept-Encoding` header the request asks for no compression (`identity`).
   */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** Releases connection pools. Requests after close fail. */
  close(): void;
}

function runtimeVersion(): string {
  const denoApi = deno();
  if (denoApi) return `deno ${denoApi.version.deno}`;
  const bunApi = bun();
  if (bunApi) return `bun ${bunApi.version}`;
  const nodeVersion = node();
  if (nodeVersion) return `node ${nodeVersion}`;
  return "unknown runtime";
}

function platform(): string {
  const denoApi = deno();
  if (denoApi) return `${denoApi.build.os}/${denoApi.build.arch}`;
  return `${nodeProcess().platform}/${nodeProcess().arch}`;
}

/** The default `User-Agent`: `rudder/<version> (<runtime> <version>; <os>/<arch>)`. */
export function defaultUserAgent(): string {
  return `rudder/${VERSION} (${runtimeVersion()}; ${platform()})`;
}

/** Picks the TLS adapter of the runtime this code runs on. */
export function createFetcher(tls: TlsSettings): Fetcher {
  const runtime = runtimeName();
  if (runtime === "deno") return createDenoFetcher(tls);
  if (runtime === "bun") return createBunFetcher(tls);
  return nodeFetcher(tls);
}

/**
 * The `node:http(s)` fetcher, its module loaded with the first request: static, it would load
 * `node:http`, `node:https`, `node:stream` and `node:zlib` on Deno and Bun too (2–5 MiB
 * resident there, bench/README.md), where it never runs.
 */
function nodeFetcher(tls: TlsSettings): Fetcher {
  let loaded: Fetcher | undefined;
  const loading = import("./transport_node.ts").then(({ createNodeFetcher }) =>
    loaded = createNodeFetcher(tls)
  );
  loading.catch(() => {}); // a failed load rejects every fetch instead
  return {
    fetch: async (url, init) => await (loaded ?? await loading).fetch(url, init),
    close: () => {
      if (loaded) loaded.close();
      else loading.then((fetcher) => fetcher.close(), () => {});
    },
  };
}

/** `host:port` of a URL, for messages; the URL itself (redacted) when it does not parse. */
function hostOf(url: string): string {
  try {
    const parsed = new URL(url);
    const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
    return `${parsed.hostname}:${port}`;
  } catch {
    return redactURL(url);
  }
}

/** Every name, message and code of an error's cause chain, for matching. */
function chainText(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (e instanceof Error) {
      parts.push(e.name, e.message, String((e as { code?: unknown }).code ?? ""));
      e = e.cause;
    } else {
      parts.push(String(e));
      break;
    }
  }
  return parts.join(" ");
}

const FAILURES: [ConnectionFailure, RegExp, string][] = [
  [
    "untrusted-certificate",
    /UnknownIssuer|unable to verify|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|self[-_ ]signed|certificate verify failed|CERT_UNTRUSTED/i,
    "the server's certificate is not signed by a trusted CA (check certificate-authority)",
  ],
  [
    "tls",
    /certificate|NotValidForName|ALTNAME|handshake|\bTLS\b|\bSSL\b|CERT_|private key|BadEncoding/i,
    "the TLS handshake failed",
  ],
  ["refused", /ECONNREFUSED|connection refused/i, "connection refused"],
  [
    "dns",
    /ENOTFOUND|EAI_AGAIN|dns error|getaddrinfo|Name or service not known|failed to lookup/i,
    "the host name does not resolve (DNS)",
  ],
  ["timeout", /ETIMEDOUT|timed out|TimedOut/i, "connecting timed out"],
  [
    "reset",
    /ECONNRESET|EPIPE|connection reset|connection closed|socket hang up|ConnectionClosed|unexpected EOF/i,
    "the connection was closed before an answer came",
  ],
];

/** The failure reasons a dead proxy shows as: the proxy is what the client connects to. */
const PROXY_FAILURES = new Set<ConnectionFailure>(["refused", "dns", "timeout"]);

/**
 * Turns a runtime's fetch error into a {@linkcode ConnectionError} naming the host and the
 * reason. Internal: used by {@linkcode newTransport}; exported for tests.
 */
export function toConnectionError(
  err: unknown,
  target: { server: string; proxyURL?: string; clientCertificate?: boolean },
  secrets: string[] = [],
): ConnectionError {
  const text = chainText(err);
  const cause = redactError(err, secrets);
  let reason: ConnectionFailure = "unknown";
  let detail = "";
  for (const [candidate, pattern, sentence] of FAILURES) {
    if (pattern.test(text)) {
      reason = candidate;
      detail = sentence;
      break;
    }
  }
  if (reason === "unknown" && target.clientCertificate && /FailedToOpenSocket/.test(text)) {
    // Bun's words for a client certificate its TLS stack refuses ("Was there a typo in the url
    // or port?") would send the reader to the wrong field.
    return new ConnectionError({
      host: hostOf(target.server),
      reason: "tls",
      detail: "the client certificate or key could not be used for TLS (check " +
        "client-certificate and client-key)",
      cause,
    });
  }
  if (reason === "unknown") {
    const innermost = redactText(innermostMessage(err), secrets);
    detail = innermost === "" ? "no answer" : innermost;
  } else if (reason === "tls") {
    detail = `${detail}: ${redactText(innermostMessage(err), secrets)}`;
  }
  if (target.proxyURL && PROXY_FAILURES.has(reason)) {
    return new ConnectionError({
      host: hostOf(target.proxyURL),
      reason: "proxy",
      detail: `${detail}; the proxy for ${hostOf(target.server)} cannot be reached`,
      cause,
    });
  }
  return new ConnectionError({ host: hostOf(target.server), reason, detail, cause });
}

/** The message of the deepest cause: the runtime's own words on what failed. */
function innermostMessage(err: unknown): string {
  let message = err instanceof Error ? err.message : String(err);
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; depth++) {
    if (e.message) message = e.message;
    e = e.cause;
  }
  // Deno prefixes the URL and the hyper layers: keep what comes after the last colon pair.
  return message.replace(/^error sending request for url \([^)]*\): /, "");
}

/** Throws a {@linkcode ConnectionError} when `caData` holds something other than certificates. */
function checkCaData(caData: string | undefined, server: string): void {
  if (caData === undefined) return;
  const blocks = caData.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
  try {
    if (!blocks || blocks.length === 0) throw new Error("no PEM CERTIFICATE block");
    for (const block of blocks) checkCertificate(block);
  } catch (err) {
    throw new ConnectionError({
      host: hostOf(server),
      reason: "invalid-ca",
      detail: "the CA data (certificate-authority) is not a valid PEM certificate",
      cause: redactError(err),
    });
  }
}

/**
 * Throws a {@linkcode ConnectionError} naming the client certificate or key when they cannot
 * be used together: a loaded kubeconfig was checked already, but a hand-built configuration or
 * a custom auth provider was not, and Bun reports a bad pair as `FailedToOpenSocket`.
 */
function checkClientCertificate(pair: { cert: string; key: string }, config: KubeConfig): void {
  const problem = clientCertificateProblem(pair.cert, pair.key);
  if (!problem) return;
  const what = problem.field === "cert" ? "client certificate" : "client key";
  throw new ConnectionError({
    host: hostOf(config.server),
    reason: "tls",
    detail: `the ${what} of ${config.source} ${problem.reason}`,
  });
}

/** A header name fetch accepts: an RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Header names already checked, by their spelling: requests repeat a handful of them. */
const checkedNames = new Map<string, string>();

/** `name` in lower case; a TypeError for a name that is not a token. */
function headerKey(name: string): string {
  let key = checkedNames.get(name);
  if (key === undefined) {
    if (!HEADER_NAME.test(name)) throw new TypeError(`invalid header name: ${name}`);
    key = name.toLowerCase();
    if (checkedNames.size < 1000) checkedNames.set(name, key);
  }
  return key;
}

function isHttpWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/** `value` trimmed of HTTP white space; a TypeError for NUL, CR, LF or beyond Latin-1 inside. */
function headerValue(name: string, value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start++;
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end--;
  for (let i = start; i < end; i++) {
    const code = value.charCodeAt(i);
    if (code === 0 || code === 0x0a || code === 0x0d || code > 0xff) {
      throw new TypeError(`invalid value of header ${name}`);
    }
  }
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/**
 * `init` as a record of lower-case header names, as `new Headers(init)` would make it: the same
 * trimmed values, repeated names joined with ", ", and a TypeError for a bad name or value.
 * Deno's fetch takes a record about 3× faster than a Headers object (8 against 26 µs a request
 * on the benchmark's machine), and every API call goes through here.
 */
export function headerRecord(init: HeadersInit | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (init === undefined) return out;
  if (init instanceof Headers) {
    init.forEach((value, name) => void (out[name] = value));
    return out;
  }
  const add = (name: string, raw: string) => {
    const key = headerKey(name);
    const value = headerValue(name, raw);
    out[key] = key in out ? `${out[key]}, ${value}` : value;
  };
  if (Array.isArray(init) || Symbol.iterator in init) {
    for (const pair of init as Iterable<readonly string[]>) {
      if (pair.length !== 2) throw new TypeError("a header must be a name and a value");
      add(String(pair[0]), String(pair[1]));
    }
    return out;
  }
  const record = init as Record<string, string>;
  for (const name of Object.keys(record)) add(name, String(record[name]));
  return out;
}

function canResend(body: RequestInit["body"]): boolean {
  return body === undefined || body === null || typeof body === "string" ||
    body instanceof Uint8Array || body instanceof ArrayBuffer || body instanceof URLSearchParams;
}

/**
 * Creates the transport for a configuration. Fetchers are cached per client certificate, so
 * a rotated certificate (from an exec plugin) gets a new connection pool and the old one is
 * closed.
 *
 * @example
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 * import { newTransport } from "@rudder/operator/kube";
 *
 * const transport = newTransport(await loadConfig());
 * const response = await transport.fetch("/version");
 * console.log(await response.json());
 * transport.close();
 * ```
 */
export function newTransport(config: KubeConfig, options: TransportOptions = {}): Transport {
  const userAgent = options.userAgent ?? defaultUserAgent();
  let current: { cert?: string; key?: string; fetcher: Fetcher } | undefined;
  let closed = false;
  let checkedCa = false;

  function fetcherFor(credentials: Credentials): Fetcher {
    const pair = credentials.clientCertificate;
    // The same strings come back until a rotation: comparing them is a pointer check, where
    // building one cert-and-key string per request cost microseconds in a profile.
    if (current && current.cert === pair?.cert && current.key === pair?.key) {
      return current.fetcher;
    }
    if (!checkedCa) {
      checkCaData(config.caData, config.server);
      checkedCa = true;
    }
    if (pair) checkClientCertificate(pair, config);
    current?.fetcher.close();
    current = undefined;
    current = {
      cert: pair?.cert,
      key: pair?.key,
      fetcher: createFetcher({
        caData: config.caData,
        cert: pair?.cert,
        key: pair?.key,
        insecureSkipTLSVerify: config.insecureSkipTLSVerify,
        serverName: config.tlsServerName,
        proxyURL: config.proxyURL,
      }),
    };
    return current.fetcher;
  }

  // The server's URL without user-info, and that user-info: parsed once per server URL (a
  // Manager's configuration fills its server in late).
  let parsedFor: string | undefined;
  let server = "";
  let userInfo: { username: string; password: string } | undefined;

  async function send(path: string, init: RequestInit): Promise<Response> {
    // Credentials first: a configuration that is still being loaded (a Manager's) fills in its
    // server while they are fetched.
    const credentials = await config.auth.credentials(init.signal ?? undefined);
    // A hand-made config may carry user-info in the URL; fetch refuses it, Go sends it as basic
    // auth unless there is an Authorization header. Do what Go does, keeping it out of the URL.
    if (parsedFor !== config.server) {
      server = redactURL(config.server);
      userInfo = urlUserInfo(config.server);
      parsedFor = config.server;
    }
    const url = server + (path.startsWith("/") ? path : `/${path}`);
    const headers = headerRecord(init.headers);
    headers["user-agent"] = userAgent;
    // No compression unless the caller asks for it: to an API server on loopback or in the
    // cluster, gzip costs both ends more CPU than the bytes it saves (10,000 ConfigMaps read as
    // one list in 155–181 ms on Bun plain against 341 ms gzipped).
    if (!("accept-encoding" in headers)) headers["accept-encoding"] = "identity";
    for (const name in credentials.headers) {
      const value = credentials.headers[name];
      // Checked here because runtimes quote a bad value in their error (Deno does).
      if (!isValidHeaderValue(value)) {
        throw new InvalidHeaderError(name, `the credentials of ${config.source}`);
      }
      headers[name.toLowerCase()] = value;
    }
    if (userInfo && !("authorization" in headers)) {
      const basic = encodeBase64(`${userInfo.username}:${userInfo.password}`);
      headers["authorization"] = `Basic ${basic}`;
    }
    try {
      return await fetcherFor(credentials).fetch(url, { ...init, headers });
    } catch (err) {
      if (init.signal?.aborted || err instanceof ConnectionError) throw err;
      const secrets = [
        ...secretsOf(credentials),
        ...secretsOfURL(config.proxyURL),
        ...secretsOfURL(config.server),
      ];
      throw toConnectionError(err, {
        server,
        proxyURL: config.proxyURL,
        clientCertificate: credentials.clientCertificate !== undefined,
      }, secrets);
    }
  }

  return {
    config,
    async fetch(path: string, init: RequestInit = {}): Promise<Response> {
      if (closed) throw new Error(`transport to ${redactURL(config.server)} is closed`);
      const response = await send(path, init);
      if (response.status !== 401 || !canResend(init.body) || !config.auth.invalidate) {
        return response;
      }
      if (!(await config.auth.invalidate())) return response;
      await response.body?.cancel();
      return await send(path, init);
    },
    close(): void {
      closed = true;
      current?.fetcher.close();
      current = undefined;
    },
  };
}
