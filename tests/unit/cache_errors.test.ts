// The cache's refusals are typed, like controller-runtime's ErrCacheNotStarted and
// ErrResourceNotCached, and come before any request: no server is needed here.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, Secret } from "../../lib/api/builtins.ts";
import { newCache } from "../../lib/cache/cache.ts";
import { CacheNotStartedError, ResourceNotCachedError } from "../../lib/cache/errors.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";

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
});
