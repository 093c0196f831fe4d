// Informers against the real API server, under the failures they must survive: large syncs
// with churn, connections cut while writes go on, watches from compacted resourceVersions, and
// an API server restart. In each case the store must end equal to the server's list.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap } from "../../lib/api/builtins.ts";
import { Informer } from "../../lib/cache/informer.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { RestClient } from "../../lib/kube/rest.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { TcpProxy } from "../support/tcp_proxy.ts";
import { eventually } from "../support/eventually.ts";

const FAST = { backoff: { initial: 50, max: 500 }, idleTimeout: 20_000 };

/** name → data.v of every ConfigMap in `namespace`, from the server. */
async function serverState(
  client: Client,
  namespace: string,
): Promise<Map<string, string | undefined>> {
  const list = await client.list(ConfigMap, { namespace });
  return new Map(list.items.map((cm) => [cm.metadata!.name!, cm.data?.v]));
}

function storeState(informer: Informer<ConfigMap>): Map<string, string | undefined> {
  return new Map(informer.store.list().map((cm) => [cm.metadata!.name!, cm.data?.v]));
}

function sameState(
  a: Map<string, string | undefined>,
  b: Map<string, string | undefined>,
): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) if (b.get(key) !== value) return false;
  return true;
}

async function createNamespace(client: Client, name: string): Promise<void> {
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
}

/** Runs `write(i)` for i = 0…n-1 with bounded concurrency. */
async function writeMany(n: number, write: (i: number) => Promise<unknown>, concurrency = 16) {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) await write(next++);
  }));
}

/** Keeps writing (create, update, delete) until stopped; returns how many writes were made. */
function writeLoad(client: Client, namespace: string) {
  let stopped = false;
  let writes = 0;
  const done = (async () => {
    for (let round = 0; !stopped; round++) {
      const name = `load-${round % 40}`;
      try {
        const existing = await client.get(ConfigMap, { namespace, name }).catch(() => undefined);
        if (!existing) {
          await client.create({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name, namespace },
            data: { v: String(round) },
          });
        } else if (round % 3 === 0) {
          await client.delete(existing);
        } else {
          await client.update({ ...existing, data: { v: String(round) } });
        }
        writes++;
      } catch {
        // The API server may be down or the connection cut: the writer just goes on.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
      return writes;
    },
  };
}

/** Creates `count` ConfigMaps named `<prefix>-<i>` with `data.v = "0"`. */
function createConfigMaps(client: Client, namespace: string, prefix: string, count: number) {
  return writeMany(count, (i) =>
    client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `${prefix}-${i}`, namespace },
      data: { v: "0" },
    }));
}

/** Runs an informer on the ConfigMaps of `namespace`; `stop()` ends it and its client. */
function runInformer(
  config: KubeConfig,
  namespace: string,
  options: {
    maxRetries?: number;
    backoff?: { initial: number; max: number };
    streamingList?: boolean;
  } = {},
) {
  const rest = new RestClient(config, { maxRetries: options.maxRetries });
  const informer = new Informer(rest, ConfigMap, { namespace, ...FAST, ...options });
  const controller = new AbortController();
  const running = informer.run(controller.signal);
  return {
    informer,
    stop: async () => {
      controller.abort();
      await running;
      rest.close();
    },
  };
}

function proxiedConfig(config: KubeConfig, proxy: TcpProxy): KubeConfig {
  return { ...config, server: `https://127.0.0.1:${proxy.port}` };
}

describe("informer against the API server", () => {
  const env = new Environment();
  let config: KubeConfig;
  let client: Client;

  before(async () => {
    config = await env.start();
    client = newClient(config);
  });

  after(async () => {
    await env.stop();
  });

  for (const streamingList of [false, true]) {
    const how = streamingList ? "a streaming list" : "a paged list (the default)";
    it(`syncs 1,000 objects with ${how}, then follows 500 updates and deletes to the server's exact state`, async () => {
      const namespace = streamingList ? "sync-1000-streaming" : "sync-1000";
      await createNamespace(client, namespace);
      await createConfigMaps(client, namespace, "cm", 1000);
      const { informer, stop } = runInformer(
        config,
        namespace,
        streamingList ? { streamingList } : {},
      );
      try {
        await informer.waitForSync();
        assert.equal(informer.store.size, 1000);
        await writeMany(500, async (i) => {
          const name = `cm-${i * 2}`;
          if (i % 2 === 0) {
            const cm = await client.get(ConfigMap, { namespace, name });
            await client.update({ ...cm, data: { v: "1" } });
          } else {
            await client.delete({
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name, namespace },
            });
          }
        });
        const expected = await serverState(client, namespace);
        assert.equal(expected.size, 750);
        await eventually(
          "the store equals the server's list",
          () => sameState(storeState(informer), expected),
        );
        assert.equal(informer.health().lists, 1);
      } finally {
        await stop();
      }
    });
  }

  it("converges when every connection is cut 20 times under write load, without a burst of relists", async () => {
    const namespace = "cut";
    await createNamespace(client, namespace);
    const proxy = new TcpProxy({ host: "127.0.0.1", port: Number(new URL(config.server).port) });
    await proxy.start();
    const { informer, stop } = runInformer(proxiedConfig(config, proxy), namespace);
    const load = writeLoad(client, namespace);
    try {
      await informer.waitForSync();
      for (let cut = 0; cut < 20; cut++) {
        await new Promise((resolve) => setTimeout(resolve, 150));
        proxy.cut();
      }
      const writes = await load.stop();
      assert.ok(writes > 50, `the writer made ${writes} writes meanwhile`);
      const expected = await serverState(client, namespace);
      await eventually(
        "the store equals the server's list",
        () => sameState(storeState(informer), expected),
      );
      const health = informer.health();
      assert.ok(health.lists <= 2, `no burst of relists: ${health.lists} lists for 20 cuts`);
      // Cuts during a backoff find no connection to break, so not every cut costs a watch.
      assert.ok(
        health.watches >= 3,
        `the watch was restarted after cuts (${health.watches} watches)`,
      );
    } finally {
      await load.stop();
      await stop();
      await proxy.stop();
    }
  });

  it("recovers by itself when kube-apiserver is stopped and started again", async () => {
    const namespace = "restart";
    await createNamespace(client, namespace);
    await createConfigMaps(client, namespace, "before", 20);
    const { informer, stop } = runInformer(config, namespace, { maxRetries: 0 });
    const load = writeLoad(client, namespace);
    try {
      await informer.waitForSync();
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Killed, like a crash: a graceful stop drains open watches for up to a minute.
      await env.stopAPIServer({ timeout: 0 });
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await env.startAPIServer();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await load.stop();
      await createConfigMaps(client, namespace, "after", 20);
      const expected = await serverState(client, namespace);
      await eventually(
        "the store equals the server's list",
        () => sameState(storeState(informer), expected),
      );
      assert.ok(informer.health().watches >= 2);
    } finally {
      await load.stop();
      await stop();
    }
  });
});

describe("informer against a compacting API server without a watch cache", () => {
  // Without the watch cache, watches are served by etcd, which refuses compacted revisions; the
  // API server compacts every second. kube-apiserver 1.36 serves streaming lists from etcd too,
  // so the relist is tried with both kinds of list (the fall back from a refused streaming list
  // is tested against the fake server of tests/unit/informer.test.ts).
  const env = new Environment({
    kubeAPIServerFlags: { "--watch-cache": "false", "--etcd-compaction-interval": "1s" },
  });
  let config: KubeConfig;
  let client: Client;

  before(async () => {
    config = await env.start();
    client = newClient(config);
  });

  after(async () => {
    await env.stop();
  });

  for (const streamingList of [false, true]) {
    const how = streamingList ? "a streaming list" : "a paged list (the default)";
    it(`relists with ${how} after a watch from a compacted resourceVersion gets 410 Gone, and converges`, async () => {
      const namespace = streamingList ? "compacted-streaming" : "compacted";
      await createNamespace(client, namespace);
      await createConfigMaps(client, namespace, "cm", 10);
      const proxy = new TcpProxy({ host: "127.0.0.1", port: Number(new URL(config.server).port) });
      await proxy.start();
      const { informer, stop } = runInformer(proxiedConfig(config, proxy), namespace, {
        maxRetries: 0,
        backoff: { initial: 200, max: 400 },
        ...(streamingList ? { streamingList } : {}),
      });
      try {
        await informer.waitForSync();
        // Cut the informer off, change things, and let compaction pass its resourceVersion.
        proxy.refuse(true);
        proxy.cut();
        // One write at a time: concurrent updates of one object would conflict.
        await writeMany(30, async (i) => {
          const name = `cm-${i % 10}`;
          if (i >= 25) {
            await client.delete({
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: `cm-${i - 25}`, namespace },
            })
              .catch(() => {});
          } else {
            const cm = await client.get(ConfigMap, { namespace, name }).catch(() => undefined);
            if (cm) await client.update({ ...cm, data: { v: String(i) } });
          }
        }, 1);
        await client.create({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "new", namespace },
          data: { v: "x" },
        });
        await new Promise((resolve) => setTimeout(resolve, 3500));
        proxy.refuse(false);
        const expected = await serverState(client, namespace);
        await eventually(
          "the store equals the server's list",
          () => sameState(storeState(informer), expected),
        );
        const health = informer.health();
        assert.ok(health.lists >= 2, `a relist happened (${health.lists} lists)`);
      } finally {
        await stop();
        await proxy.stop();
      }
    });
  }
});
