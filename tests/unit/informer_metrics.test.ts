// rudder_informer_healthy, rudder_informer_lists_total and rudder_informer_watches_total: read
// from the informers' health at scrape time, per watch; a failing, unsynced or stopped informer
// is unhealthy; a manager's informers leave the metrics when it stops reporting them.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { InformerHealth } from "../../lib/cache/informer.ts";
import { informerMetrics } from "../../lib/metrics/informer.ts";
import { Registry } from "../../lib/metrics/registry.ts";

const healthy: InformerHealth = {
  description: "ConfigMap in default",
  state: "Watching",
  synced: true,
  lists: 1,
  watches: 3,
};

/** The samples of `family` in a scrape of `registry`, by the `name` label. */
async function samples(registry: Registry, family: string): Promise<Record<string, number>> {
  const found: Record<string, number> = {};
  const pattern = new RegExp(`^${family}\\{name="([^"]*)"\\} (\\S+)$`, "gm");
  for (const [, name, value] of (await registry.metrics()).matchAll(pattern)) {
    found[name] = Number(value);
  }
  return found;
}

describe("informer metrics", () => {
  it("serve each watch's health, lists and watches as the informers report them at scrape time", async () => {
    const registry = new Registry();
    let informers: InformerHealth[] = [healthy, {
      description: "Secret",
      state: "Backoff",
      synced: true,
      failingSince: Date.now(),
      lists: 2,
      watches: 5,
    }];
    informerMetrics(() => informers, registry);
    assert.deepEqual(await samples(registry, "rudder_informer_healthy"), {
      "ConfigMap in default": 1,
      "Secret": 0,
    });
    assert.deepEqual(await samples(registry, "rudder_informer_lists_total"), {
      "ConfigMap in default": 1,
      "Secret": 2,
    });
    informers = [{ ...healthy, lists: 2, watches: 4 }];
    assert.deepEqual(await samples(registry, "rudder_informer_lists_total"), {
      "ConfigMap in default": 2,
    });
    assert.deepEqual(await samples(registry, "rudder_informer_watches_total"), {
      "ConfigMap in default": 4,
    });
    assert.match(await registry.metrics(), /# TYPE rudder_informer_lists_total counter/);
  });

  it("count an informer that has not listed yet, or is stopped, as unhealthy", async () => {
    const registry = new Registry();
    informerMetrics(() => [
      { ...healthy, description: "A", state: "Listing", synced: false },
      { ...healthy, description: "B", state: "Stopped" },
    ], registry);
    assert.deepEqual(await samples(registry, "rudder_informer_healthy"), { A: 0, B: 0 });
  });

  it("drop a source's informers once it stops reporting them, keeping the others", async () => {
    const registry = new Registry();
    const stopFirst = informerMetrics(() => [{ ...healthy, state: "Stopped" }], registry);
    informerMetrics(() => [{ ...healthy, description: "Secret" }], registry);
    assert.deepEqual(await samples(registry, "rudder_informer_healthy"), {
      "ConfigMap in default": 0,
      "Secret": 1,
    });
    stopFirst();
    assert.deepEqual(await samples(registry, "rudder_informer_healthy"), { "Secret": 1 });
  });
});
