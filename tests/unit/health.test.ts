// Health probes and the logging set-up (serving: tests/unit/server.test.ts).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Checks, healthApp, informersReady, ping } from "../../lib/healthz/healthz.ts";
import type { InformerHealth } from "../../lib/cache/informer.ts";

function informer(overrides: Partial<InformerHealth>): InformerHealth {
  return {
    description: "ConfigMap",
    state: "Watching",
    synced: true,
    lists: 1,
    watches: 1,
    ...overrides,
  };
}

describe("health probes", () => {
  it("answer 200 when every check passes and 500 naming the failing ones, withholding why", async () => {
    const healthz = new Checks("healthz");
    const readyz = new Checks("readyz");
    healthz.add("ping", ping);
    let dbUp = false;
    readyz.add("db", () => {
      if (!dbUp) throw new Error("connection refused");
    });
    readyz.add("ping", ping);
    const app = healthApp(healthz, readyz);

    const live = await app.request("/healthz");
    assert.equal(live.status, 200);
    assert.equal(await live.text(), "ok\n");

    const notReady = await app.request("/readyz");
    assert.equal(notReady.status, 500);
    assert.equal(await notReady.text(), "[-]db failed: reason withheld\nhealth check failed\n");

    const verbose = await (await app.request("/readyz?verbose")).text();
    assert.equal(verbose, "[-]db failed: reason withheld\n[+]ping ok\nhealth check failed\n");
    const single = await app.request("/readyz/db");
    assert.equal(await single.text(), "[-]db failed: reason withheld\nhealth check failed\n");

    assert.equal((await app.request("/readyz/ping")).status, 200);
    assert.equal(single.status, 500);
    assert.equal((await app.request("/readyz/nothing")).status, 404);

    dbUp = true;
    assert.equal((await app.request("/readyz")).status, 200);
    assert.match(
      await (await app.request("/readyz?verbose")).text(),
      /\[\+\]db ok\n\[\+\]ping ok\nok\n/,
    );
  });

  it("refuse duplicate and invalid check names", () => {
    const checks = new Checks("readyz");
    checks.add("a", ping);
    assert.throws(() => checks.add("a", ping), /already exists/);
    assert.throws(() => checks.add("a/b", ping), /invalid readyz check name/);
  });

  it("report informers that have not synced or whose watch is failing", async () => {
    let list: InformerHealth[] = [informer({ synced: false, state: "Listing" })];
    const check = informersReady(() => list);
    await assert.rejects(async () => await check(), /ConfigMap has not synced/);
    list = [informer({ state: "Backoff", lastError: "connection reset" })];
    await assert.rejects(
      async () => await check(),
      /ConfigMap: watch failing \(connection reset\)/,
    );
    list = [informer({})];
    await check();
  });

  it(
    "fail readiness only for an informer stuck past its threshold, naming it",
    { timeout: 5000 },
    async () => {
      const failingSince = Date.now() - 90_000;
      let list: InformerHealth[] = [
        informer({ state: "Backoff", lastError: "reset", failingSince, stuck: false }),
      ];
      const check = informersReady(() => list);
      await check();
      list = [
        informer({ state: "Watching", lastError: "400 BadRequest", failingSince, stuck: true }),
      ];
      await assert.rejects(
        async () => await check(),
        /^Error: ConfigMap: watch failing \(400 BadRequest\) for 9\d s$/,
      );
      list = [informer({ synced: false, state: "Backoff", lastError: "403 Forbidden" })];
      await assert.rejects(async () => await check(), /ConfigMap has not synced \(403 Forbidden\)/);
    },
  );
});
