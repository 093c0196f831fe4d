// A watch resumed at a resourceVersion the real API server has not reached (as after an etcd
// restore, or a bad bookmark) is held open by it with no event, no bookmark and no 504. The
// informer must notice, relist and converge. The bad bookmark is injected by a REST client
// that answers one watch with it; every later request goes to the real API server.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap } from "../../lib/api/builtins.ts";
import { Informer } from "../../lib/cache/informer.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { RestClient, type RestRequest } from "../../lib/kube/rest.ts";
import type { WatchEvent } from "../../lib/kube/watch.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { eventually } from "../support/eventually.ts";
import { captureLogs } from "../support/logs.ts";

const T = { timeout: 120_000 };
const namespace = "watch-stale";

/** Answers the first watch after `inject` with a bookmark far in the server's future. */
class BadBookmarkRest extends RestClient {
  inject = false;
  readonly futureRv = String(Number.MAX_SAFE_INTEGER - 1);
  /** The resourceVersion of every watch sent to the server. */
  readonly watchedFrom: (string | undefined)[] = [];

  override watch<T = Record<string, unknown>>(
    request: RestRequest,
  ): AsyncGenerator<WatchEvent<T>, void, undefined> {
    if (this.inject) {
      this.inject = false;
      const metadata = { resourceVersion: this.futureRv };
      return (async function* () {
        yield {
          type: "BOOKMARK",
          object: { kind: "ConfigMap", apiVersion: "v1", metadata },
        } as WatchEvent<T>;
      })();
    }
    this.watchedFrom.push(request.query?.resourceVersion as string | undefined);
    return super.watch<T>(request);
  }
}

function names(items: readonly { metadata?: { name?: string } }[]): string {
  return items.map((o) => o.metadata!.name!).sort().join();
}

describe("a watch held at an unreachable resourceVersion by the API server", T, () => {
  const env = new Environment();
  let client: Client;
  let rest: BadBookmarkRest;

  before(async () => {
    const config = await env.start();
    client = newClient(config);
    rest = new BadBookmarkRest(config);
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  }, T);

  after(async () => {
    rest?.close();
    await env.stop();
  }, T);

  it("relists within a few idle deadlines and converges to the server's state", T, async () => {
    const logs = await captureLogs();
    const stop = new AbortController();
    try {
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace, name: "a" },
      });
      rest.inject = true;
      const informer = new Informer(rest, ConfigMap, {
        namespace,
        idleTimeout: 2_000,
        backoff: { initial: 50, max: 500 },
      });
      const running = informer.run(stop.signal);
      await informer.waitForSync();
      await eventually(
        "a watch from the bad bookmark",
        () => rest.watchedFrom.includes(rest.futureRv),
        30_000,
      );
      const heldSince = Date.now();
      // Changes that the held watch never delivers.
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace, name: "b" },
      });
      await client.delete({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace, name: "a" },
      });
      const server = await client.list(ConfigMap, { namespace });
      await eventually(
        "the store equals the server's list",
        () => names(informer.store.list()) === names(server.items),
        60_000,
      );
      const tookMs = Date.now() - heldSince;

      assert.equal(informer.health().lists, 2, "one relist");
      const held = rest.watchedFrom.filter((rv) => rv === rest.futureRv).length;
      assert.equal(held, 3, "three silent watches at the unreachable resourceVersion");
      assert.ok(
        logs.records.some((r) =>
          r.level === "warning" && /will never reach/.test(r.message.join(""))
        ),
        "the relist is logged at warn with its reason",
      );
      // Three idle deadlines of 2 s and short backoffs.
      assert.ok(tookMs < 15_000, `converged in ${tookMs} ms`);
      console.log(`converged ${tookMs} ms after the watch was held`);

      // The watch goes on from the listed resourceVersion.
      await client.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { namespace, name: "c" },
      });
      await eventually(
        "the next watch delivers",
        () => names(informer.store.list()) === "b,c",
        30_000,
      );
      stop.abort();
      await running;
    } finally {
      stop.abort();
      await logs.stop();
    }
  });
});
