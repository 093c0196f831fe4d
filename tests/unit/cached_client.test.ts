// Read-your-own-writes of the cached client for subresource writes, against a fake API server
// whose watch never delivers them: only the cached client's own bookkeeping can show a status
// written a moment ago. (The object's own writes, and the watch's newer versions winning, are
// tested against the real API server in tests/integration/cache.test.ts.)
import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import { type Cache, newCache } from "../../lib/cache/cache.ts";
import { type CachedClient, newCachedClient } from "../../lib/cache/cached_client.ts";
import { newInterceptedClient } from "../../lib/client/interceptor.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { FakeClient } from "../../lib/testing/fake_client/client.ts";
import { FakeWatchServer, NAMESPACE } from "../support/fake_watch_server.ts";

const T = { timeout: 30_000 };
type WithStatus = ConfigMap & { status?: { phase?: string } };

describe("the cached client reads its own subresource writes", T, () => {
  let server: FakeWatchServer;
  let rest: RestClient;
  let cache: Cache;
  let client: CachedClient;
  let stop: AbortController;
  let running: Promise<void>;

  /**
   * The API server's side of a status write: a new resourceVersion that no watch is told about
   * (the watch is behind), answered with the object and the status the write asked for.
   */
  function writeStatus(obj: KubeObject, phase: string): WithStatus {
    const name = obj.metadata!.name!;
    server.putSilently(name, server.objects.get(name)!.data ?? {});
    return { ...server.objects.get(name)!, status: { phase } } as WithStatus;
  }

  beforeEach(async () => {
    server = new FakeWatchServer();
    await server.start();
    server.put("web", { v: "1" });
    rest = new RestClient(server.config(), { maxRetries: 0 });
    cache = newCache(server.config(), {
      rest,
      defaultNamespaces: { [NAMESPACE]: {} },
      informer: { backoff: { initial: 10, max: 50 } },
    });
    const api = newInterceptedClient(new FakeClient(), {
      subResourceUpdate: (_client, subResource, obj) => {
        assert.equal(subResource, "status");
        return Promise.resolve(writeStatus(obj, "updated") as never);
      },
      subResourcePatch: (_client, subResource, obj) => {
        assert.equal(subResource, "status");
        return Promise.resolve(writeStatus(obj as KubeObject, "patched") as never);
      },
      subResourceApply: (_client, subResource, obj) => {
        assert.equal(subResource, "status");
        return Promise.resolve(writeStatus(obj, "applied") as never);
      },
    });
    client = newCachedClient(cache, api);
    stop = new AbortController();
    running = cache.start(stop.signal);
  }, T);

  afterEach(async () => {
    stop.abort();
    await running;
    rest.close();
    await server.stop();
  }, T);

  const key = { namespace: NAMESPACE, name: "web" };

  /** Writes a status with `write`, then reads the object back from the cache. */
  async function writeThenRead(
    write: (cached: WithStatus) => Promise<unknown>,
  ): Promise<{ written: WithStatus; read: WithStatus }> {
    const cached = await client.get(ConfigMap, key) as WithStatus;
    assert.equal(cached.status, undefined, "the cache starts without a status");
    const written = await write(cached) as WithStatus;
    assert.notEqual(written.metadata?.resourceVersion, cached.metadata?.resourceVersion);
    const read = await client.get(ConfigMap, key) as WithStatus;
    return { written, read };
  }

  const writes: [string, string, (cached: WithStatus) => Promise<unknown>][] = [
    [
      "status().update",
      "updated",
      (cached) => client.status().update({ ...cached, status: { phase: "updated" } }),
    ],
    [
      "status().patch",
      "patched",
      (cached) =>
        client.status().patch({ ...cached, status: { phase: "patched" } }, mergeFrom(cached)),
    ],
    ["status().apply", "applied", () =>
      client.status().apply(
        { apiVersion: "v1", kind: "ConfigMap", metadata: key, status: { phase: "applied" } },
        { fieldManager: "test", force: true },
      )],
    [
      'subResource("status").update',
      "updated",
      (cached) => client.subResource("status").update({ ...cached, status: { phase: "updated" } }),
    ],
    ['subResource("status").patch', "patched", (cached) =>
      client.subResource("status").patch(
        { ...cached, status: { phase: "patched" } },
        mergeFrom(cached),
      )],
  ];

  for (const [how, phase, write] of writes) {
    it(`after ${how}, before the watch delivers it`, T, async () => {
      const { written, read } = await writeThenRead(write);
      assert.equal(read.status?.phase, phase);
      assert.equal(read.metadata?.resourceVersion, written.metadata?.resourceVersion);
      const listed = await client.list(ConfigMap, { namespace: NAMESPACE });
      assert.equal((listed.items[0] as WithStatus).status?.phase, phase, "list reads it too");
    });
  }
});
