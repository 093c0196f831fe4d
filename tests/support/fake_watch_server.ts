// A small HTTP server that speaks just enough of the Kubernetes list/watch protocol for one
// collection of ConfigMaps, with hooks to misbehave: refuse streaming lists, send malformed
// lines, go silent, expire resourceVersions, refuse resourceVersions it cannot serve (400 for
// one that is not a number, 504 ResourceVersionTooLarge for one from its future). The informer's unit tests use it for the failures
// a real API server cannot be made to produce on demand; everything else is tested against
// the real one.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { KubeConfig } from "../../lib/kube/config/types.ts";

export interface FakeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; [key: string]: unknown };
  data?: Record<string, string>;
}

interface HistoryEntry {
  rv: number;
  type: "ADDED" | "MODIFIED" | "DELETED";
  object: FakeObject;
}

interface OpenWatch {
  response: ServerResponse;
  /** Events newer than this are sent. */
  sentUpTo: number;
  /** A stalled watch is kept open but sent nothing more. */
  stalled: boolean;
}

/** What the watch that received `injectLines` does next. */
export type AfterInject = "continue" | "stall" | "end" | "destroy";

export const NAMESPACE = "ns";
export const COLLECTION = `/api/v1/namespaces/${NAMESPACE}/configmaps`;

export class FakeWatchServer {
  readonly objects = new Map<string, FakeObject>();
  readonly history: HistoryEntry[] = [];
  readonly requests: { method: string; url: URL; accept?: string }[] = [];
  readonly #watches = new Set<OpenWatch>();
  #server: Server | undefined;
  #rv = 100;
  /** Watches from a resourceVersion older than this get a 410 ERROR event. */
  compactedBelow = 0;
  /** Answer `sendInitialEvents` with 400, as a server without WatchList does. */
  refuseStreamingList = false;
  /**
   * Raw lines sent at the start of the next watch (after the initial events, if any). Strings
   * get a `\n`; byte arrays are written as they are, so they may end mid-line.
   */
  injectLines: (string | Uint8Array)[] = [];
  /** What that watch does after the injected lines. */
  afterInject: AfterInject = "continue";
  /** How many watches have received injected lines. */
  injections = 0;
  /**
   * Hold a watch from a resourceVersion newer than the server's open, sending nothing (not even
   * bookmarks) until the server gets there, as kube-apiserver's watch cache does, instead of
   * answering 504 ResourceVersionTooLarge.
   */
  holdFutureWatches = false;
  /** Refuse watches from a resourceVersion it cannot serve with an ERROR event, not a status. */
  refuseInStream = false;
  /** Answer every request with this status until cleared (a persistent refusal). */
  refuseAll: { code: number; reason: string } | undefined;
  /** Every watch that is not a streaming list ends at once, sending nothing. */
  endWatchesAtOnce = false;
  /** The next watch sends nothing at all and never ends. */
  stallNextWatch = false;
  /** Status codes to answer the next requests with (then normal service resumes). */
  failNext: { code: number; reason?: string; retryAfter?: number }[] = [];
  /** Write each list's metadata before its kind, as no API server does (no read-ahead then). */
  listMetadataFirst = false;
  /** Answer the next list request with a body cut short (then serve again). */
  truncateNextList = false;
  /** Answer the next list request with a continue token with 410 Expired (then serve again). */
  expireNextContinue = false;
  /** Hold each answer to a list request with a continue token this long. */
  continueDelayMs = 0;
  /** Continue tokens of list requests whose client went away before the answer was sent. */
  readonly abandonedContinues: string[] = [];
  base = "";

  async start(): Promise<void> {
    this.#server = createServer((req, res) => this.#handle(req, res));
    await new Promise<void>((resolve) => this.#server!.listen(0, "127.0.0.1", resolve));
    const address = this.#server.address();
    this.base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  }

  async stop(): Promise<void> {
    this.closeWatches();
    this.#server?.closeAllConnections?.();
    await new Promise((resolve) => this.#server?.close(resolve));
  }

  config(): KubeConfig {
    return {
      server: this.base,
      namespace: NAMESPACE,
      auth: { credentials: () => Promise.resolve({}) },
      source: "fake watch server",
    };
  }

  get resourceVersion(): number {
    return this.#rv;
  }

  /** How many watch connections are open. */
  get openWatches(): number {
    return this.#watches.size;
  }

  /** Ends every open watch, as a server timeout does. */
  closeWatches(): void {
    for (const watch of this.#watches) watch.response.end();
    this.#watches.clear();
  }

  /**
   * Sends a BOOKMARK at the server's resourceVersion to every open watch that has not asked for
   * a newer one, as the API server does about once a minute to watches that allow bookmarks.
   */
  sendBookmarks(): void {
    for (const watch of this.#watches) {
      if (watch.stalled || watch.sentUpTo > this.#rv) continue;
      const metadata = { resourceVersion: String(this.#rv) };
      watch.response.write(
        JSON.stringify({
          type: "BOOKMARK",
          object: { kind: "ConfigMap", apiVersion: "v1", metadata },
        }) +
          "\n",
      );
    }
  }

  /** Creates or replaces an object, recording the event and sending it to open watches. */
  put(name: string, data: Record<string, string>): FakeObject {
    const rv = ++this.#rv;
    const existing = this.objects.has(name);
    const object: FakeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: NAMESPACE, resourceVersion: String(rv) },
      data,
    };
    this.objects.set(name, object);
    this.#record({ rv, type: existing ? "MODIFIED" : "ADDED", object });
    return object;
  }

  remove(name: string): void {
    const object = this.objects.get(name);
    if (!object) return;
    const rv = ++this.#rv;
    this.objects.delete(name);
    this.#record({
      rv,
      type: "DELETED",
      object: { ...object, metadata: { ...object.metadata, resourceVersion: String(rv) } },
    });
  }

  /** Changes the store without telling any watch (as if the events were lost to compaction). */
  putSilently(name: string, data: Record<string, string>): void {
    const rv = ++this.#rv;
    this.objects.set(name, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name, namespace: NAMESPACE, resourceVersion: String(rv) },
      data,
    });
  }

  removeSilently(name: string): void {
    ++this.#rv;
    this.objects.delete(name);
  }

  #record(entry: HistoryEntry): void {
    this.history.push(entry);
    for (const watch of this.#watches) this.#send(watch, entry);
  }

  #send(watch: OpenWatch, entry: HistoryEntry): void {
    if (entry.rv <= watch.sentUpTo || watch.stalled) return;
    watch.sentUpTo = entry.rv;
    watch.response.write(JSON.stringify({ type: entry.type, object: entry.object }) + "\n");
  }

  #status(res: ServerResponse, code: number, reason: string, message: string, retryAfter?: number) {
    const headers: Record<string, string> = { "Content-Type": "application/json" };
    if (retryAfter !== undefined) headers["Retry-After"] = String(retryAfter);
    res.writeHead(code, headers);
    res.end(
      JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        code,
        reason,
        message,
      }),
    );
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", this.base);
    this.requests.push({ method: req.method ?? "GET", url, accept: req.headers.accept });
    if (this.refuseAll) {
      return this.#status(res, this.refuseAll.code, this.refuseAll.reason, "refused");
    }
    const failure = this.failNext.shift();
    if (failure) {
      return this.#status(
        res,
        failure.code,
        failure.reason ?? (failure.code === 429 ? "TooManyRequests" : "InternalError"),
        "injected",
        failure.retryAfter,
      );
    }
    if (url.pathname !== COLLECTION) return this.#status(res, 404, "NotFound", "not found");
    const query = url.searchParams;
    if (query.get("watch") !== "true") return this.#list(res, query);
    if (query.get("sendInitialEvents") === "true" && this.refuseStreamingList) {
      return this.#status(res, 400, "BadRequest", "sendInitialEvents is not supported");
    }
    const from = query.get("resourceVersion") ?? "0";
    if (query.get("sendInitialEvents") !== "true" && this.#refuseResourceVersion(res, from)) return;
    res.writeHead(200, { "Content-Type": "application/json" });
    res.flushHeaders();
    if (this.endWatchesAtOnce && query.get("sendInitialEvents") !== "true") {
      res.end();
      return;
    }
    if (this.stallNextWatch) {
      this.stallNextWatch = false;
      return; // Headers sent, then nothing: a dead connection that never closes.
    }
    const watch: OpenWatch = { response: res, sentUpTo: this.#rv, stalled: false };
    if (query.get("sendInitialEvents") === "true") {
      for (const object of this.objects.values()) {
        res.write(JSON.stringify({ type: "ADDED", object }) + "\n");
      }
      res.write(
        JSON.stringify({
          type: "BOOKMARK",
          object: {
            kind: "ConfigMap",
            apiVersion: "v1",
            metadata: {
              resourceVersion: String(this.#rv),
              annotations: { "k8s.io/initial-events-end": "true" },
            },
          },
        }) + "\n",
      );
    } else {
      if (Number(from) < this.compactedBelow) {
        res.end(
          JSON.stringify({
            type: "ERROR",
            object: {
              kind: "Status",
              apiVersion: "v1",
              status: "Failure",
              code: 410,
              reason: "Expired",
              message: `too old resource version: ${from}`,
            },
          }) + "\n",
        );
        return;
      }
      watch.sentUpTo = Number(from);
      for (const entry of this.history) this.#send(watch, entry);
    }
    this.#watches.add(watch);
    res.on("close", () => this.#watches.delete(watch));
    if (this.injectLines.length > 0) {
      this.injections++;
      for (const line of this.injectLines.splice(0)) {
        res.write(typeof line === "string" ? line + "\n" : line);
      }
      const after = this.afterInject;
      this.afterInject = "continue";
      if (after === "stall") watch.stalled = true;
      else if (after === "end") res.end();
      else if (after === "destroy") res.destroy();
    }
  }

  /**
   * Refuses a watch from a resourceVersion this server cannot serve, as the API server does:
   * 400 for one that is not a number, 504 with cause ResourceVersionTooLarge for one newer
   * than its newest. True when it refused.
   */
  #refuseResourceVersion(res: ServerResponse, from: string): boolean {
    const rv = Number(from);
    let status: { code: number; [key: string]: unknown } | undefined;
    if (!/^\d+$/.test(from)) {
      status = { code: 400, reason: "BadRequest", message: `invalid resource version: ${from}` };
    } else if (rv > this.#rv && !this.holdFutureWatches) {
      status = {
        code: 504,
        reason: "Timeout",
        message: `Too large resource version: ${rv}, current: ${this.#rv}`,
        details: {
          causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
          retryAfterSeconds: 1,
        },
      };
    }
    if (!status) return false;
    const body = { kind: "Status", apiVersion: "v1", status: "Failure", ...status };
    if (this.refuseInStream) {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ type: "ERROR", object: body }) + "\n");
    } else {
      res.writeHead(status.code, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    }
    return true;
  }

  #list(res: ServerResponse, query: URLSearchParams): void {
    const token = query.get("continue");
    if (token && this.expireNextContinue) {
      this.expireNextContinue = false;
      return this.#status(res, 410, "Expired", "the continue token is too old");
    }
    if (token && this.continueDelayMs > 0) {
      const timer = setTimeout(() => this.#answerList(res, query), this.continueDelayMs);
      res.on("close", () => {
        if (res.writableEnded) return;
        clearTimeout(timer);
        this.abandonedContinues.push(token);
      });
      return;
    }
    this.#answerList(res, query);
  }

  #answerList(res: ServerResponse, query: URLSearchParams): void {
    const all = [...this.objects.values()].sort((a, b) =>
      a.metadata.name.localeCompare(b.metadata.name)
    );
    const start = Number(query.get("continue") || "0");
    const limit = Number(query.get("limit") || "0") || all.length;
    const page = all.slice(start, start + limit);
    const next = start + limit < all.length ? String(start + limit) : undefined;
    const metadata = { resourceVersion: String(this.#rv), continue: next };
    // List items come without apiVersion and kind, as from the real server.
    const items = page.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    res.writeHead(200, { "Content-Type": "application/json" });
    if (this.truncateNextList) {
      this.truncateNextList = false;
      res.end(
        JSON.stringify({ kind: "ConfigMapList", apiVersion: "v1", metadata, items }).slice(0, -20),
      );
      return;
    }
    res.end(
      JSON.stringify(
        this.listMetadataFirst
          ? { metadata, kind: "ConfigMapList", apiVersion: "v1", items }
          : { kind: "ConfigMapList", apiVersion: "v1", metadata, items },
      ),
    );
  }
}
