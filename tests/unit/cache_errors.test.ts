// The cache's refusals are typed, like controller-runtime's ErrCacheNotStarted and
// ErrResourceNotCached, and come before any request: no server is needed here.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Secret } from "../../lib/api/builtins.ts";
import { newCache } from "../../lib/cache/cache.ts";
import { CacheNotStartedError, ResourceNotCachedError } from "../../lib/cache/errors.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { FakeWatchServer, NAMESPACE } from "../support/fake_watch_server.ts";
import { eventually } from "../support/eventually.ts";

// Nothing listens on port 9 (discard) of loopback: any request would fail, none is made.
const config: KubeConfig = {
  server: "https://127.0.0.1:9",
  namespace: "default",
  auth: { credentials: () => Promise.resolve({}) },
  source: "test",
};

describe("cache errors", () => {
  it("refuses a read before start with CacheNotStartedError naming the kind", {
    timeout: 30_000,
  }, async () => {
    const cache = newCache(config);
    const err = await cache.get(ConfigMap, { namespace: "default", name: "a" }).then(
      () => assert.fail("a read before start must fail"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof CacheNotStartedError);
    assert.equal(err.kind, "ConfigMap");
    assert.equal(err.name, "CacheNotStartedError");
    assert.match(err.message, /not started.*ConfigMap/);
    await assert.rejects(cache.list(Secret), CacheNotStartedError);
  });

  it("refuses a kind without informer with ResourceNotCachedError when told to", {
    timeout: 30_000,
  }, async () => {
    const cache = newCache(config, { readerFailOnMissingInformer: true });
    const stop = new AbortController();
    const running = cache.start(stop.signal);
    try {
      const err = await cache.get(Secret, { namespace: "default", name: "a" }).then(
        () => assert.fail("a read of an uncached kind must fail"),
        (e: unknown) => e,
      );
      assert.ok(err instanceof ResourceNotCachedError);
      assert.equal(err.kind, "Secret");
      assert.equal(err.name, "ResourceNotCachedError");
      assert.match(err.message, /no informer for Secret.*getInformer/);
      await assert.rejects(cache.list(Secret), ResourceNotCachedError);
    } finally {
      stop.abort();
      await running;
    }
  });

  for (const [code, reason] of [[403, "Forbidden"], [404, "NotFound"]] as const) {
    it(`fails a read of a kind it cannot list (${code}) at once, naming the kind and the fix`, {
      timeout: 30_000,
    }, async () => {
      const server = new FakeWatchServer();
      await server.start();
      const rest = new RestClient(server.config(), { maxRetries: 0 });
      const cache = newCache(server.config(), {
        rest,
        defaultNamespaces: { [NAMESPACE]: {} },
        informer: { backoff: { initial: 10, max: 50 } },
      });
      const stop = new AbortController();
      const running = cache.start(stop.signal);
      try {
        server.refuseAll = { code, reason };
        const key = { namespace: NAMESPACE, name: "a" };
        await assert.rejects(
          cache.get(ConfigMap, key),
          /cannot read ConfigMap: the cache was not watching ConfigMap: declare it in the controller \(\.owns\(ConfigMap\) or \.watches\(ConfigMap, handler\)\) so that rudder manifests grants list and watch on it, or read it from the API server with mgr\.getAPIReader\(\); listing it failed/,
        );
        // Now watched but still refused: the next read fails at once too.
        await assert.rejects(
          cache.list(ConfigMap),
          /the cache watches ConfigMap but cannot list it/,
        );
        // Once the server lists it again (at the next try), reads are served.
        server.refuseAll = undefined;
        server.put("a", { v: "1" });
        await eventually("the read is served", async () => {
          const found = await cache.get(ConfigMap, key).catch(() => undefined);
          return found?.metadata?.name === "a";
        }, 20_000);
      } finally {
        stop.abort();
        await running;
        rest.close();
        await server.stop();
      }
    });
  }
});
