// The relist proxy of the benchmark suite (bench/relist.ts) against a tiny fake upstream: it
// passes requests and streams through unchanged, ends watches on expiry, answers the next watch
// on that collection with a 410 Status once and then passes again, and sees when the relist is
// complete. Also its request classifier, marker scanner and /proc status parser.
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { parse, stringify } from "yaml";
import {
  classifyRequest,
  INITIAL_EVENTS_END,
  MarkerScanner,
  parseProcStatus,
  RelistProxy,
  upstreamFromKubeconfig,
  writeProxyKubeconfig,
} from "../../bench/relist.ts";

const T = { timeout: 30_000 };
const CONFIGMAPS = "/api/v1/namespaces/a/configmaps";
const LIST_BODY = JSON.stringify({
  kind: "ConfigMapList",
  metadata: { resourceVersion: "10" },
  items: [{ metadata: { name: "one" } }],
});

/** What the fake upstream saw, and its open watch responses to write events into. */
interface Upstream {
  server: http.Server;
  url: string;
  requests: { url: string; headers: http.IncomingHttpHeaders }[];
  watches: http.ServerResponse[];
  closedWatches: number;
}

function event(type: string, name: string, annotations: Record<string, string> = {}): string {
  return JSON.stringify({ type, object: { metadata: { name, annotations } } }) + "\n";
}

async function startUpstream(): Promise<Upstream> {
  const upstream: Upstream = {
    server: http.createServer(),
    url: "",
    requests: [],
    watches: [],
    closedWatches: 0,
  };
  upstream.server.on("request", (req, res) => {
    upstream.requests.push({ url: req.url ?? "", headers: req.headers });
    const url = new URL(req.url ?? "/", "http://upstream");
    if (url.searchParams.get("watch") === "true") {
      res.writeHead(200, { "content-type": "application/json" });
      upstream.watches.push(res);
      res.on("close", () => upstream.closedWatches++);
      if (url.searchParams.get("sendInitialEvents") === "true") {
        res.write(event("ADDED", "one"));
        res.write(event("BOOKMARK", "", { [INITIAL_EVENTS_END]: "true" }));
      } else {
        res.write(event("ADDED", "first"));
      }
      return;
    }
    if (url.pathname === CONFIGMAPS && url.searchParams.get("gzip") === "1") {
      const body = gzipSync(LIST_BODY);
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      res.end(body);
      return;
    }
    if (url.pathname === CONFIGMAPS) {
      res.writeHead(200, { "content-type": "application/json", "x-upstream": "yes" });
      res.end(LIST_BODY);
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end("{}");
  });
  await new Promise<void>((resolve) => upstream.server.listen(0, "127.0.0.1", resolve));
  upstream.url = `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}`;
  return upstream;
}

/** A response through the proxy: status, headers and the body chunks as they come. */
interface Exchange {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Resolves with the body received so far once it holds `text`. */
  until(text: string): Promise<string>;
  /** Resolves with the whole body when the response ends. */
  ended: Promise<Buffer>;
  abort(): void;
}

async function get(
  proxy: RelistProxy,
  path: string,
  headers: Record<string, string> = {},
): Promise<Exchange> {
  return await new Promise<Exchange>((resolve, reject) => {
    const req = https.get(`${proxy.url}${path}`, { ca: proxy.ca, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      const waiters: (() => void)[] = [];
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        for (const wake of waiters.splice(0)) wake();
      });
      const ended = new Promise<Buffer>((done, fail) => {
        res.on("end", () => done(Buffer.concat(chunks)));
        res.on("error", fail);
      });
      ended.catch(() => {}); // an aborted watch's body is not awaited
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        ended,
        abort: () => req.destroy(),
        async until(text) {
          for (;;) {
            const body = Buffer.concat(chunks).toString("utf8");
            if (body.includes(text)) return body;
            await new Promise<void>((wake) => waiters.push(wake));
          }
        },
      });
    });
    req.on("error", reject);
  });
}

describe("relist proxy", () => {
  let upstream: Upstream;
  let proxy: RelistProxy;

  beforeEach(async () => {
    upstream = await startUpstream();
    proxy = await RelistProxy.start({ url: upstream.url });
  });

  afterEach(async () => {
    await proxy.close();
    upstream.server.closeAllConnections();
    await new Promise<void>((resolve) => upstream.server.close(() => resolve()));
  });

  it("passes a list through unchanged, headers included, without compressing it", T, async () => {
    const list = await get(proxy, CONFIGMAPS, { "accept-encoding": "gzip" });
    assert.equal(list.status, 200);
    assert.equal(list.headers["x-upstream"], "yes");
    assert.equal(list.headers["content-encoding"], undefined);
    assert.equal((await list.ended).toString("utf8"), LIST_BODY);
    assert.equal(upstream.requests[0].url, CONFIGMAPS);
    assert.equal(upstream.requests[0].headers["accept-encoding"], "gzip");
  });

  it("passes a gzipped list through as the same gzip bytes", T, async () => {
    const list = await get(proxy, `${CONFIGMAPS}?gzip=1`, { "accept-encoding": "gzip" });
    assert.equal(list.headers["content-encoding"], "gzip");
    assert.deepEqual(await list.ended, gzipSync(LIST_BODY));
  });

  it("streams watch events as they come and ends the watch on expiry", T, async () => {
    const watch = await get(proxy, `${CONFIGMAPS}?watch=true&resourceVersion=10`);
    assert.equal(watch.status, 200);
    await watch.until('"first"');
    upstream.watches[0].write(event("MODIFIED", "second"));
    await watch.until('"second"'); // while the upstream response is still open
    assert.equal(proxy.state(CONFIGMAPS).name, "Passing");
    proxy.expire(CONFIGMAPS);
    const body = (await watch.ended).toString("utf8");
    assert.equal(body, event("ADDED", "first") + event("MODIFIED", "second"));
    while (upstream.closedWatches < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.equal(proxy.state(CONFIGMAPS).name, "Expired");
  });

  it("answers the next watch with a 410 Expired Status once, then passes again", T, async () => {
    proxy.expire(CONFIGMAPS);
    const gone = await get(proxy, `${CONFIGMAPS}?watch=true&resourceVersion=10`);
    assert.equal(gone.status, 410);
    assert.equal(gone.headers["content-type"], "application/json");
    const status = JSON.parse((await gone.ended).toString("utf8"));
    assert.equal(status.kind, "Status");
    assert.equal(status.reason, "Expired");
    assert.equal(status.code, 410);
    assert.equal(upstream.requests.length, 0, "the 410 never reaches the upstream");
    assert.equal(proxy.state(CONFIGMAPS).name, "Gone");

    const again = await get(proxy, `${CONFIGMAPS}?watch=true&resourceVersion=10`);
    assert.equal(again.status, 200);
    await again.until('"first"');
    assert.equal(upstream.requests.length, 1);
    again.abort();
  });

  it("expires only the collection it is told to", T, async () => {
    const other = "/api/v1/namespaces/b/configmaps";
    const watch = await get(proxy, `${other}?watch=true`);
    await watch.until('"first"');
    proxy.expire(CONFIGMAPS);
    const next = await get(proxy, `${other}?watch=true`);
    assert.equal(next.status, 200);
    assert.equal(upstream.closedWatches, 0);
    watch.abort();
    next.abort();
  });

  it("sees a relist by a list once the list is fully sent", T, async () => {
    await (await get(proxy, CONFIGMAPS)).ended; // the sync's list does not count
    proxy.expire(CONFIGMAPS);
    const gone = await get(proxy, `${CONFIGMAPS}?watch=true&resourceVersion=10`);
    await gone.ended;
    const relisted = proxy.waitForRelist(CONFIGMAPS, 10_000);
    await (await get(proxy, CONFIGMAPS)).ended;
    const relist = await relisted;
    assert.equal(relist.by, "list");
    assert.ok(relist.goneAt !== undefined && relist.goneAt >= relist.expiredAt);
    assert.ok(relist.relistedAt >= relist.goneAt);
  });

  it("sees a relist by a watch-list when its initial events end", T, async () => {
    proxy.expire(CONFIGMAPS);
    await (await get(proxy, `${CONFIGMAPS}?watch=true&resourceVersion=10`)).ended;
    const watchList = await get(
      proxy,
      `${CONFIGMAPS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`,
    );
    const relist = await proxy.waitForRelist(CONFIGMAPS, 10_000);
    assert.equal(relist.by, "watch-list");
    await watchList.until(INITIAL_EVENTS_END);
    const record = proxy.requests.find((r) => r.kind === "watch-list");
    assert.ok(record?.initialEventsEndAt !== undefined);
    watchList.abort();
  });

  it("sees a paged relist when its client watches again", T, async () => {
    proxy.expire(CONFIGMAPS);
    await (await get(proxy, `${CONFIGMAPS}?watch=true`)).ended;
    await (await get(proxy, `${CONFIGMAPS}?limit=500`)).ended;
    assert.equal(proxy.state(CONFIGMAPS).name, "Gone");
    const watch = await get(proxy, `${CONFIGMAPS}?watch=true&resourceVersion=10`);
    assert.equal(watch.status, 200);
    assert.equal((await proxy.waitForRelist(CONFIGMAPS, 10_000)).by, "paged-list");
    watch.abort();
  });

  it("gives up waiting for a relist that does not come", T, async () => {
    proxy.expire(CONFIGMAPS);
    await assert.rejects(proxy.waitForRelist(CONFIGMAPS, 50), /no relist .* \(Expired\)/);
  });
});

describe("the proxy's kubeconfig", () => {
  it(
    "forwards with the suite's credentials; the copy points to the proxy, same user",
    T,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "bench-relist-"));
      const b64 = (text: string) => Buffer.from(text).toString("base64");
      const source = join(dir, "kubeconfig");
      const user = { "client-certificate-data": b64("CERT"), "client-key-data": b64("KEY") };
      writeFileSync(
        source,
        stringify({
          apiVersion: "v1",
          kind: "Config",
          clusters: [{
            name: "envtest",
            cluster: { server: "https://127.0.0.1:6443", "certificate-authority-data": b64("CA") },
          }],
          users: [{ name: "admin", user }],
          contexts: [{ name: "envtest", context: { cluster: "envtest", user: "admin" } }],
          "current-context": "envtest",
        }),
      );
      const proxy = await RelistProxy.start({ url: "https://127.0.0.1:6443" });
      try {
        assert.deepEqual(upstreamFromKubeconfig(source), {
          url: "https://127.0.0.1:6443",
          ca: "CA",
          cert: "CERT",
          key: "KEY",
        });
        const target = join(dir, "proxy");
        writeProxyKubeconfig(source, target, proxy);
        const copy = parse(readFileSync(target, "utf8"));
        assert.equal(copy.clusters[0].cluster.server, proxy.url);
        assert.equal(
          Buffer.from(copy.clusters[0].cluster["certificate-authority-data"], "base64").toString(),
          proxy.ca,
        );
        assert.deepEqual(copy.users[0].user, user);
        assert.equal(upstreamFromKubeconfig(target).url, proxy.url);
      } finally {
        await proxy.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe("classifyRequest", () => {
  it("tells lists, watches and watch-lists of a collection apart", () => {
    assert.deepEqual(classifyRequest("GET", CONFIGMAPS), {
      kind: "list",
      collection: CONFIGMAPS,
      paged: false,
    });
    assert.deepEqual(classifyRequest("GET", `${CONFIGMAPS}?limit=500`).paged, true);
    assert.equal(classifyRequest("GET", `${CONFIGMAPS}?watch=1`).kind, "watch");
    assert.equal(
      classifyRequest("GET", `${CONFIGMAPS}?watch=true&sendInitialEvents=true`).kind,
      "watch-list",
    );
    assert.deepEqual(classifyRequest("GET", "/api/v1/watch/namespaces/a/configmaps"), {
      kind: "watch",
      collection: CONFIGMAPS,
      paged: false,
    });
  });

  it("knows cluster-scoped and grouped collections", () => {
    assert.equal(classifyRequest("GET", "/api/v1/namespaces").collection, "/api/v1/namespaces");
    assert.equal(classifyRequest("GET", "/api/v1/namespaces").kind, "list");
    assert.deepEqual(
      classifyRequest("GET", "/apis/apps/v1/namespaces/a/deployments?watch=true"),
      { kind: "watch", collection: "/apis/apps/v1/namespaces/a/deployments", paged: false },
    );
  });

  it("calls objects, discovery and writes other", () => {
    assert.equal(classifyRequest("GET", `${CONFIGMAPS}/one`).kind, "other");
    assert.equal(classifyRequest("GET", "/api/v1/namespaces/a").kind, "other");
    assert.equal(classifyRequest("GET", "/api").kind, "other");
    assert.equal(classifyRequest("GET", "/apis/apps/v1").kind, "other");
    assert.equal(classifyRequest("POST", CONFIGMAPS).kind, "other");
  });
});

describe("MarkerScanner", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);

  it("finds the marker inside one chunk and across chunk boundaries", () => {
    assert.equal(new MarkerScanner("end").push(bytes("the end.")), true);
    const split = new MarkerScanner(INITIAL_EVENTS_END);
    assert.equal(split.push(bytes('{"k8s.io/init')), false);
    assert.equal(split.push(bytes("ial-")), false);
    assert.equal(split.push(bytes('events-end":"true"}')), true);
    assert.equal(split.found, true);
  });

  it("does not find what is not there, however it is cut", () => {
    const scanner = new MarkerScanner("abcd");
    for (const piece of ["ab", "c", "xabc", "ab", "cxd", "d"]) {
      assert.equal(scanner.push(bytes(piece)), false);
    }
  });
});

describe("parseProcStatus", () => {
  it("reads VmRSS and VmHWM in bytes", () => {
    const status = "Name:\tdeno\nVmPeak:\t 900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
    assert.deepEqual(parseProcStatus(status), { rss: 1024 * 1024, hwm: 2048 * 1024 });
  });

  it("throws when a field is missing", () => {
    assert.throws(() => parseProcStatus("VmRSS:\t1 kB\n"), /no VmHWM/);
  });
});
