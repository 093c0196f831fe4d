/**
 * The relist measure of the benchmark suite (bench/suite.ts): how far a synced cache's resident
 * memory rises while a 410 Gone makes it list everything again.
 *
 * The 410 is forced the same way for every contender by {@linkcode RelistProxy}, a
 * TLS-terminating HTTP/1.1 proxy on loopback that every relist run talks to instead of the API
 * server: it forwards each request with the suite's admin credentials and streams the response
 * back unchanged (watch streams, gzip and protobuf included). When told to expire a collection
 * it ends the collection's open watches and answers the next watch on it, once, with HTTP 410
 * and a JSON `Status` (`reason: Expired`), as the API server does for a resourceVersion it no
 * longer has. Every client under test (client-go's reflector, client-node's informer, Rudder's
 * informer) relists on that. The proxy sees the relist: a list response fully sent, or a
 * watch-list stream (`sendInitialEvents=true`) past the bookmark that ends its initial events.
 *
 * A collection's state, per expiry:
 *
 * ```
 * Passing ──expire──▶ Expired ──next watch, answered 410──▶ Gone
 *                        │                                   │
 *                        └──── full list sent, or a watch-list's initial events ended ──▶ Relisted
 * ```
 *
 * {@linkcode measureRelist} reads the contender's memory around it from /proc: VmRSS a while
 * after the sync (steady), VmHWM reset by `clear_refs` just before the expiry, and VmHWM (the
 * peak) and VmRSS a settle time after the relist.
 *
 * @module
 */

import { readFileSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { createGunzip, type Gunzip } from "node:zlib";
import { parse, stringify } from "yaml";
import { createCertificateAuthority } from "../lib/util/certs.ts";

/** How long after the relist the peak is read: the client decodes and stores what it received. */
export const RELIST_SETTLE_MS = 3000;
/** How long a relist may take from the expiry before the run fails. */
export const RELIST_TIMEOUT_MS = 120_000;

/** How a request reads a collection. */
export type RequestKind = "list" | "watch" | "watch-list" | "other";

/** What the proxy knows of a request from its method and URL. */
export interface ClassifiedRequest {
  /** `list`: a GET of a collection; `watch`; `watch-list`: a watch with `sendInitialEvents=true`. */
  kind: RequestKind;
  /** The collection's path without the legacy `/watch/` segment or query, e.g. `/api/v1/namespaces/a/configmaps`. */
  collection?: string;
  /** A list that asks for one page (`limit`): its last page is not known without parsing it. */
  paged: boolean;
}

/**
 * Classifies a Kubernetes API request by method and URL (path and query).
 *
 * @example
 * ```ts
 * import { classifyRequest } from "./relist.ts";
 *
 * const r = classifyRequest("GET", "/api/v1/namespaces/a/configmaps?watch=1&sendInitialEvents=true");
 * console.log(r.kind, r.collection); // watch-list /api/v1/namespaces/a/configmaps
 * ```
 */
export function classifyRequest(method: string, url: string): ClassifiedRequest {
  const parsed = new URL(url, "https://proxy.invalid");
  const segments = parsed.pathname.split("/").filter((s) => s !== "");
  const prefixLength = segments[0] === "api" ? 2 : segments[0] === "apis" ? 3 : 0;
  if (method !== "GET" || prefixLength === 0 || segments.length <= prefixLength) {
    return { kind: "other", paged: false };
  }
  let rest = segments.slice(prefixLength);
  const legacyWatch = rest[0] === "watch";
  if (legacyWatch) rest = rest.slice(1);
  const namespaced = rest[0] === "namespaces" && rest.length >= 3;
  const collectionLength = namespaced ? 3 : 1;
  if (rest.length < collectionLength) return { kind: "other", paged: false };
  const collection = "/" + [...segments.slice(0, prefixLength), ...rest.slice(0, collectionLength)]
    .join("/");
  const query = parsed.searchParams;
  const watch = legacyWatch || query.get("watch") === "true" || query.get("watch") === "1";
  if (watch) {
    const initialEvents = query.get("sendInitialEvents") === "true";
    return { kind: initialEvents ? "watch-list" : "watch", collection, paged: false };
  }
  if (rest.length !== collectionLength) return { kind: "other", paged: false };
  const limit = Number(query.get("limit") ?? "0");
  return { kind: "list", collection, paged: limit > 0 };
}

/**
 * Finds a byte string in a stream of chunks, also when it spans a chunk boundary, keeping only
 * the marker's length of the stream.
 *
 * @example
 * ```ts
 * import { MarkerScanner } from "./relist.ts";
 *
 * const scanner = new MarkerScanner("k8s.io/initial-events-end");
 * const bytes = new TextEncoder().encode('{"k8s.io/initial-ev');
 * console.log(scanner.push(bytes), scanner.push(new TextEncoder().encode('ents-end":"true"}'))); // false true
 * ```
 */
export class MarkerScanner {
  readonly #marker: Buffer;
  #tail: Buffer = Buffer.alloc(0);
  #found = false;

  /** Scans for `marker` (UTF-8). */
  constructor(marker: string) {
    this.#marker = Buffer.from(marker, "utf8");
  }

  /** Whether the marker has been seen. */
  get found(): boolean {
    return this.#found;
  }

  /** Scans the next chunk; true once the marker has been seen, in this chunk or before. */
  push(chunk: Uint8Array): boolean {
    if (this.#found) return true;
    const joined = Buffer.concat([this.#tail, chunk]);
    if (joined.indexOf(this.#marker) >= 0) {
      this.#found = true;
      this.#tail = Buffer.alloc(0);
      return true;
    }
    this.#tail = joined.subarray(Math.max(0, joined.length - (this.#marker.length - 1)));
    return false;
  }
}

/** The annotation of the bookmark that ends a watch-list's initial events. */
export const INITIAL_EVENTS_END = "k8s.io/initial-events-end";

/** Where the proxy forwards to, and how it authenticates there. */
export interface Upstream {
  /** Base URL, `https://host:port` (or `http://` for a test's fake upstream). */
  url: string;
  /** PEM bundle that verifies the upstream's certificate. */
  ca?: string;
  /** Client certificate and key (PEM) the proxy presents upstream. */
  cert?: string;
  key?: string;
}

/** One request the proxy saw. Times are `performance.now()` milliseconds. */
export interface ProxyRequestRecord {
  /** When the request arrived. */
  at: number;
  method: string;
  /** Path and query, as the client sent them. */
  url: string;
  kind: RequestKind;
  /** HTTP status sent to the client (410 for an expired watch); unset while waiting upstream. */
  status?: number;
  /** Content-Encoding of the response, as the upstream sent it. */
  encoding?: string;
  /** Body bytes sent to the client, as sent (compressed if compressed). */
  bytes: number;
  /** When the response ended (fully sent, ended by an expiry, or aborted). */
  endedAt?: number;
  /** When a watch-list's initial events ended (its bookmark passed through). */
  initialEventsEndAt?: number;
}

/** The state of one collection (see the module documentation). */
export type CollectionState =
  | { name: "Passing" }
  | { name: "Expired"; expiredAt: number }
  | { name: "Gone"; expiredAt: number; goneAt: number }
  | Relisted;

/** A collection's completed relist. Times are `performance.now()` milliseconds. */
export interface Relisted {
  name: "Relisted";
  /** When {@linkcode RelistProxy.expire} ended the watches. */
  expiredAt: number;
  /** When the next watch was answered 410; unset if the client relisted before watching. */
  goneAt?: number;
  /** When the relist's list was fully sent, or its initial events ended. */
  relistedAt: number;
  /** The request that relisted. */
  by: "list" | "watch-list" | "paged-list";
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** Headers without hop-by-hop ones (and, for requests, the client's own credentials). */
function forwardable(
  headers: http.IncomingHttpHeaders,
  drop: string[] = [],
): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || drop.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** The API server's answer to a watch from a resourceVersion it no longer has. */
function expiredStatus(): string {
  return JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: "too old resource version: the relist proxy expired this watch",
    reason: "Expired",
    code: 410,
  });
}

/** An open watch response, to end on expiry. */
interface OpenWatch {
  collection: string;
  end: () => void;
}

/**
 * A TLS-terminating HTTP/1.1 proxy on loopback in front of the API server that can force a 410
 * on a collection's watch (see the module documentation). HTTP/1.1 only (no ALPN `h2`), so every
 * client speaks the same protocol through it.
 *
 * @example
 * ```ts ignore
 * import { RelistProxy } from "./relist.ts";
 *
 * const proxy = await RelistProxy.start({ url: "https://127.0.0.1:6443", ca, cert, key });
 * // … a client with proxy.url and proxy.ca syncs an informer of /api/v1/namespaces/a/configmaps
 * proxy.expire("/api/v1/namespaces/a/configmaps");
 * const relist = await proxy.waitForRelist("/api/v1/namespaces/a/configmaps", 60_000);
 * console.log(relist.relistedAt - relist.expiredAt);
 * await proxy.close();
 * ```
 */
export class RelistProxy {
  /** The proxy's CA (PEM): what a client must trust to reach {@linkcode RelistProxy.url}. */
  readonly ca: string;
  readonly #server: https.Server;
  readonly #upstream: Upstream;
  readonly #agent: http.Agent;
  readonly #states = new Map<string, CollectionState>();
  readonly #pagedListSince = new Map<string, number>();
  readonly #watches = new Set<OpenWatch>();
  readonly #requests: ProxyRequestRecord[] = [];
  readonly #waiters = new Set<() => void>();

  private constructor(server: https.Server, upstream: Upstream, ca: string) {
    this.#server = server;
    this.#upstream = upstream;
    this.ca = ca;
    const agentOptions = {
      keepAlive: true,
      ca: upstream.ca,
      cert: upstream.cert,
      key: upstream.key,
    };
    this.#agent = upstream.url.startsWith("https:")
      ? new https.Agent(agentOptions)
      : new http.Agent({ keepAlive: true });
    server.on("request", (req, res) => this.#handle(req, res));
  }

  /** Starts a proxy to `upstream` on 127.0.0.1, on a free port, with a new CA. */
  static async start(upstream: Upstream): Promise<RelistProxy> {
    const ca = await createCertificateAuthority("rudder-bench-relist-proxy", 1);
    const serving = await ca.issueServing({
      commonName: "127.0.0.1",
      dnsNames: ["localhost"],
      ips: ["127.0.0.1"],
    });
    const server = https.createServer({ cert: serving.cert, key: serving.key });
    // Watches stay open as long as the client wants; requests are small.
    server.requestTimeout = 0;
    server.headersTimeout = 60_000;
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    return new RelistProxy(server, upstream, ca.cert);
  }

  /** `https://127.0.0.1:<port>`. */
  get url(): string {
    return `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Every request seen since the start or the last {@linkcode RelistProxy.reset}. */
  get requests(): readonly ProxyRequestRecord[] {
    return this.#requests;
  }

  /** Forgets the request log and every collection's state (between runs). */
  reset(): void {
    this.#requests.length = 0;
    this.#states.clear();
    this.#pagedListSince.clear();
  }

  /** The state of `collection`. */
  state(collection: string): CollectionState {
    return this.#states.get(collection) ?? { name: "Passing" };
  }

  /** Ends the open watches of `collection` and answers its next watch with 410 Expired. */
  expire(collection: string): void {
    this.#states.set(collection, { name: "Expired", expiredAt: performance.now() });
    this.#pagedListSince.delete(collection);
    for (const watch of [...this.#watches]) {
      if (watch.collection === collection) watch.end();
    }
  }

  /** Resolves when `collection` has relisted since its last expiry; rejects after `timeoutMs`. */
  async waitForRelist(collection: string, timeoutMs: number): Promise<Relisted> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const state = this.state(collection);
      if (state.name === "Relisted") return state;
      const left = deadline - performance.now();
      if (left <= 0) {
        throw new Error(`no relist of ${collection} within ${timeoutMs / 1000} s (${state.name})`);
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.#waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.#waiters.add(wake);
      });
    }
  }

  /** Stops listening and ends every open exchange. */
  async close(): Promise<void> {
    for (const watch of [...this.#watches]) watch.end();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    this.#agent.destroy();
    await closed;
  }

  #setState(collection: string, state: CollectionState): void {
    this.#states.set(collection, state);
    for (const wake of [...this.#waiters]) wake();
  }

  /** A full list of `collection` has reached the client. */
  #listed(collection: string, by: Relisted["by"], at: number): void {
    const state = this.state(collection);
    if (state.name !== "Expired" && state.name !== "Gone") return;
    this.#setState(collection, {
      name: "Relisted",
      expiredAt: state.expiredAt,
      goneAt: state.name === "Gone" ? state.goneAt : undefined,
      relistedAt: at,
      by,
    });
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = req.url ?? "/";
    const method = req.method ?? "GET";
    const { kind, collection, paged } = classifyRequest(method, url);
    const record: ProxyRequestRecord = { at: performance.now(), method, url, kind, bytes: 0 };
    this.#requests.push(record);
    const isWatch = kind === "watch" || kind === "watch-list";

    if (collection !== undefined && isWatch) {
      // A paged list is complete once its client watches again.
      const pagedSince = this.#pagedListSince.get(collection);
      if (pagedSince !== undefined) {
        this.#pagedListSince.delete(collection);
        this.#listed(collection, "paged-list", record.at);
      }
      const state = this.state(collection);
      if (state.name === "Expired") {
        this.#setState(collection, {
          name: "Gone",
          expiredAt: state.expiredAt,
          goneAt: record.at,
        });
        const body = expiredStatus();
        record.status = 410;
        record.bytes = Buffer.byteLength(body);
        req.resume();
        res.writeHead(410, {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        });
        res.end(body, () => record.endedAt = performance.now());
        return;
      }
    }
    if (collection !== undefined && kind === "list" && paged) {
      const state = this.state(collection);
      if (state.name === "Expired" || state.name === "Gone") {
        this.#pagedListSince.set(collection, record.at);
      }
    }

    const target = new URL(url, this.#upstream.url);
    const transport = target.protocol === "https:" ? https : http;
    const upstreamRequest = transport.request(target, {
      method,
      agent: this.#agent,
      headers: { ...forwardable(req.headers, ["host", "authorization"]), host: target.host },
    });
    let ended = false;
    const open: OpenWatch | undefined = collection !== undefined && isWatch
      ? {
        collection,
        end: () => {
          if (ended) return;
          ended = true;
          this.#watches.delete(open!);
          upstreamRequest.destroy();
          record.endedAt = performance.now();
          if (res.headersSent) res.end();
          else res.destroy();
        },
      }
      : undefined;
    if (open) this.#watches.add(open);
    const finish = () => {
      ended = true;
      if (open) this.#watches.delete(open);
    };
    res.on("close", () => {
      // The client went away (or the exchange is over): drop the upstream side too.
      if (!res.writableFinished) upstreamRequest.destroy();
      finish();
    });
    req.pipe(upstreamRequest);
    upstreamRequest.on("error", (err) => {
      if (ended) return;
      finish();
      record.endedAt = performance.now();
      if (res.headersSent) res.destroy(err);
      else {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(`relist proxy: ${err.message}\n`);
      }
    });
    upstreamRequest.on("response", (upstream) => {
      record.status = upstream.statusCode ?? 502;
      const encoding = upstream.headers["content-encoding"];
      record.encoding = encoding;
      res.writeHead(record.status, forwardable(upstream.headers));
      res.flushHeaders();
      let scan: ((chunk: Buffer) => void) | undefined;
      if (kind === "watch-list" && collection !== undefined && record.status === 200) {
        const scanner = new MarkerScanner(INITIAL_EVENTS_END);
        const seen = () => {
          record.initialEventsEndAt = performance.now();
          this.#listed(collection, "watch-list", record.initialEventsEndAt);
        };
        let gunzip: Gunzip | undefined;
        if (encoding === "gzip") {
          gunzip = createGunzip();
          gunzip.on("data", (plain: Buffer) => {
            if (!scanner.found && scanner.push(plain)) seen();
          });
          gunzip.on("error", () => {});
        }
        scan = (chunk) => {
          if (scanner.found) return;
          if (gunzip) gunzip.write(chunk);
          else if (scanner.push(chunk)) seen();
        };
      }
      upstream.on("data", (chunk: Buffer) => {
        if (ended) return;
        record.bytes += chunk.length;
        const more = res.write(chunk);
        scan?.(chunk);
        if (!more) upstream.pause();
      });
      res.on("drain", () => upstream.resume());
      upstream.on("end", () => {
        if (ended) return;
        res.end(() => {
          record.endedAt = performance.now();
          finish();
          if (kind === "list" && !paged && collection !== undefined && record.status === 200) {
            this.#listed(collection, "list", record.endedAt);
          }
        });
      });
      upstream.on("error", (err) => {
        if (ended) return;
        finish();
        record.endedAt = performance.now();
        res.destroy(err);
      });
    });
  }
}

/** The parts of a kubeconfig file that the proxy reads and rewrites. */
interface KubeconfigFile {
  "current-context": string;
  clusters: { name: string; cluster: Record<string, string> }[];
  users: { name: string; user: Record<string, string> }[];
  contexts: { name: string; context: { cluster: string; user: string } }[];
}

function readKubeconfig(path: string): KubeconfigFile {
  return parse(readFileSync(path, "utf8")) as KubeconfigFile;
}

/**
 * Where the kubeconfig at `path` (the suite's, written by `Environment`) points and the
 * credentials it holds: what the proxy forwards with.
 */
export function upstreamFromKubeconfig(path: string): Upstream {
  const config = readKubeconfig(path);
  const context = config.contexts.find((c) => c.name === config["current-context"])?.context;
  const cluster = config.clusters.find((c) => c.name === context?.cluster)?.cluster;
  const user = config.users.find((u) => u.name === context?.user)?.user;
  if (!cluster || !user) throw new Error(`${path}: no cluster or user in the current context`);
  const decode = (data: string | undefined) =>
    data === undefined ? undefined : Buffer.from(data, "base64").toString("utf8");
  return {
    url: cluster.server,
    ca: decode(cluster["certificate-authority-data"]),
    cert: decode(user["client-certificate-data"]),
    key: decode(user["client-key-data"]),
  };
}

/**
 * Writes a copy of the kubeconfig at `source` whose clusters are the proxy (its URL and CA) to
 * `target`. The user stays as it is: the proxy asks for no client certificate, so none is sent
 * to it, and it authenticates upstream with its own.
 */
export function writeProxyKubeconfig(source: string, target: string, proxy: RelistProxy): void {
  const config = readKubeconfig(source);
  for (const entry of config.clusters) {
    entry.cluster = {
      server: proxy.url,
      "certificate-authority-data": Buffer.from(proxy.ca).toString("base64"),
    };
  }
  writeFileSync(target, stringify(config), { mode: 0o600 });
}

/** VmRSS and VmHWM of a process, in bytes. */
export interface ProcessMemory {
  rss: number;
  hwm: number;
}

/** Reads VmRSS and VmHWM from the text of /proc/<pid>/status. */
export function parseProcStatus(status: string): ProcessMemory {
  const kb = (field: string) => {
    const value = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"))?.[1];
    if (value === undefined) throw new Error(`no ${field} in /proc/<pid>/status`);
    return Number(value) * 1024;
  };
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** VmRSS and VmHWM of process `pid` now. */
export function processMemory(pid: number): ProcessMemory {
  return parseProcStatus(readFileSync(`/proc/${pid}/status`, "utf8"));
}

/** Resets VmHWM of `pid` to its current RSS (Linux: `5` to /proc/<pid>/clear_refs). */
export function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

/** How {@linkcode measureRelist} runs. */
export interface RelistOptions {
  /** The collection the contender's informer watches. */
  collection: string;
  /** How long after the sync line the steady RSS is read. */
  steadyMs: number;
  /** How long after the relist completes the peak and RSS are read. */
  settleMs: number;
  /** How long the relist may take before the run fails. */
  timeoutMs: number;
  /** A line of the run's log. */
  log?: (line: string) => void;
}

/** More than this between VmHWM and VmRSS right after `clear_refs` means the reset failed. */
const RESET_SLACK_BYTES = 2 * 2 ** 20;

/**
 * Measures a synced contender (process `pid`, whose informer goes through `proxy`): steady RSS,
 * then peak reset, expiry, relist and settle; returns the figures of the relist measure.
 */
export async function measureRelist(
  proxy: RelistProxy,
  pid: number,
  options: RelistOptions,
): Promise<Record<string, number>> {
  await sleep(options.steadyMs);
  const steady = processMemory(pid);
  resetPeak(pid);
  const reset = processMemory(pid);
  if (reset.hwm - reset.rss > RESET_SLACK_BYTES) {
    throw new Error(`clear_refs did not reset VmHWM (${reset.hwm} B, RSS ${reset.rss} B)`);
  }
  const seenBefore = proxy.requests.length;
  proxy.expire(options.collection);
  const relist = await proxy.waitForRelist(options.collection, options.timeoutMs);
  await sleep(options.settleMs);
  const after = processMemory(pid);
  const reads = (records: readonly ProxyRequestRecord[]) =>
    records.filter((r) => r.kind !== "other");
  const since = reads(proxy.requests.slice(seenBefore));
  const show = (what: string, records: ProxyRequestRecord[]) => {
    options.log?.(`${what}:`);
    for (const r of records) {
      const at = (t: number) =>
        `${t < relist.expiredAt ? "" : "+"}${(t - relist.expiredAt).toFixed(0)} ms`;
      options.log?.(
        `  ${at(r.at)} ${r.method} ${r.url} → ${r.status ?? "…"}${
          r.encoding ? ` ${r.encoding}` : ""
        }, ${r.bytes} B${r.endedAt ? `, ended ${at(r.endedAt)}` : ""}`,
      );
    }
  };
  show("reads while syncing (ms from the expiry)", reads(proxy.requests.slice(0, seenBefore)));
  show("reads after the expiry", since);
  const count = (kind: RequestKind) => since.filter((r) => r.kind === kind).length;
  // When the client started to relist: client-go backs off after a 410, the others do not.
  const first = since.find((r) => r.kind === "list" || r.kind === "watch-list");
  return {
    steadyRssBytes: steady.rss,
    relistPeakBytes: after.hwm,
    peakOverSteady: after.hwm / steady.rss,
    rssAfterRelistBytes: after.rss,
    relistMs: relist.relistedAt - relist.expiredAt,
    relistStartMs: first === undefined ? -1 : first.at - relist.expiredAt,
    goneMs: relist.goneAt === undefined ? -1 : relist.goneAt - relist.expiredAt,
    relistLists: count("list"),
    relistWatchLists: count("watch-list"),
    relistWatches: count("watch"),
  };
}
