// Sharding against the real API server, with two managers in one process (the tests with
// replicas as processes are tests/integration/sharding_processes*): objects are assigned, a
// second shard joining makes the first drain, acknowledge and hand over its moved objects, no
// object is reconciled by both at once, a moved object is never seen as deleted, and a shard
// that stops gracefully hands its objects back at once.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { ConfigMap, Lease } from "../../lib/api/builtins.ts";
import { defineResource } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { newControllerManagedBy } from "../../lib/controller/builder.ts";
import type { KubeConfig } from "../../lib/kube/config/types.ts";
import { isAlreadyExists, isNotFound } from "../../lib/kube/errors.ts";
import { Manager } from "../../lib/manager/manager.ts";
import { Registry } from "../../lib/metrics/registry.ts";
import type { Request } from "../../lib/reconcile/reconcile.ts";
import { drainLabel, objectRingKey, shardLabel } from "../../lib/sharding/labels.ts";
import { HashRing } from "../../lib/sharding/ring.ts";
import { shardWebhook } from "../../lib/sharding/webhook.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { eventually } from "../support/eventually.ts";

const Shardee = defineResource({
  group: "sharding.example.com",
  version: "v1",
  kind: "Shardee",
  scope: "Namespaced",
  spec: z.object({ generation: z.int().optional() }),
});

const RING = "it";
const NAMESPACE = "sharding-it";
const LEASES = "sharding-leases";
const COUNT = 40;
/** Objects created while the second shard joins. */
const LATE = 10;
let total = COUNT;
const TIMING = { leaseDuration: 3_000, renewDeadline: 2_000, retryPeriod: 500 };
const SHARD = shardLabel(RING);
const DRAIN = drainLabel(RING);

// shard-a serves the assigning webhook (two servers in one process cannot share the port).
const env = new Environment({
  crds: [Shardee.crd()],
  webhookInstallOptions: {
    mutatingWebhooks: [{
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingWebhookConfiguration",
      metadata: { name: "sharding-it" },
      webhooks: [
        shardWebhook({
          ring: RING,
          kinds: [Shardee, ConfigMap],
          clientConfig: { service: { namespace: "default", name: "unused" } },
        }),
      ],
    }],
  },
});
let config: KubeConfig;
let client: Client;

interface Window {
  replica: string;
  key: string;
  start: number;
  end: number;
  found: boolean;
}

const windows: Window[] = [];
const deletesSeen: string[] = [];

interface Replica {
  name: string;
  mgr: Manager;
  registry: Registry;
  stop: AbortController;
  running: Promise<unknown>;
}

function replica(name: string, webhook = false): Replica {
  const registry = new Registry();
  const serving = env.webhookInstallOptions;
  const mgr = new Manager({
    config,
    metricsBindAddress: "0",
    healthProbeBindAddress: "127.0.0.1:0",
    metricsRegistry: registry,
    // One namespace, as an operator with a namespaced Role has: the sharder keeps to it too.
    cache: { defaultNamespaces: { [NAMESPACE]: {} } },
    sharding: { ring: RING, shardName: name, namespace: LEASES, webhook, ...TIMING },
    ...(webhook
      ? {
        webhookServer: {
          host: serving.localServingHost,
          port: serving.localServingPort,
          certDir: serving.localServingCertDir,
          metricsRegistry: registry,
        },
      }
      : {}),
  });
  newControllerManagedBy(mgr).for(Shardee).owns(ConfigMap).sharded()
    .withOptions({ maxConcurrentReconciles: 4 })
    .complete(async (request: Request) => {
      const start = performance.now();
      let found = true;
      try {
        const obj = await mgr.getClient().get(Shardee, request);
        await ensureChild(obj.metadata!.uid!, request.name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        found = false;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
      windows.push({ replica: name, key: request.name, start, end: performance.now(), found });
      return {};
    });
  const stop = new AbortController();
  const running = mgr.start(stop.signal).then(() => undefined, (err) => err);
  mgr.getCache().getInformer(Shardee).then((informer) =>
    informer.addEventHandler({
      onDelete: (obj) => deletesSeen.push(`${name}:${obj.metadata?.name}`),
    })
  );
  return { name, mgr, registry, stop, running };
}

async function ensureChild(uid: string, name: string): Promise<void> {
  try {
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        namespace: NAMESPACE,
        name: `${name}-child`,
        ownerReferences: [{
          apiVersion: Shardee.apiVersion,
          kind: Shardee.kind,
          name,
          uid,
          controller: true,
        }],
      },
      data: { owner: name },
    });
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

async function labelsOf(
  kind: "parents" | "children",
): Promise<Map<string, Record<string, string>>> {
  const list = kind === "parents"
    ? await client.list(Shardee, { namespace: NAMESPACE })
    : await client.list(ConfigMap, { namespace: NAMESPACE });
  const out = new Map<string, Record<string, string>>();
  for (const item of list.items) {
    if (kind === "children" && !item.metadata?.ownerReferences?.length) continue;
    const name = item.metadata!.name!;
    out.set(kind === "children" ? name.replace(/-child$/, "") : name, item.metadata?.labels ?? {});
  }
  return out;
}

/** Every parent and child labelled as `ring` says, none draining. */
async function settledOn(ring: HashRing): Promise<boolean> {
  const parents = await labelsOf("parents");
  const children = await labelsOf("children");
  if (parents.size !== total || children.size !== total) return false;
  for (const [name, labels] of parents) {
    const want = ring.shardFor(
      objectRingKey({
        apiVersion: Shardee.apiVersion,
        kind: Shardee.kind,
        metadata: { namespace: NAMESPACE, name },
      }),
    );
    if (labels[SHARD] !== want || labels[DRAIN] !== undefined) return false;
    if (children.get(name)?.[SHARD] !== want) return false;
  }
  return true;
}

/** Pairs of windows of one object on two replicas that overlap in time. */
function overlaps(): string[] {
  const found: string[] = [];
  const byKey = Map.groupBy(windows, (w) => w.key);
  for (const [key, list] of byKey) {
    for (const a of list) {
      for (const b of list) {
        if (a.replica < b.replica && a.start < b.end && b.start < a.end) {
          found.push(
            `${key}: ${a.replica} [${a.start}, ${a.end}] and ${b.replica} [${b.start}, ${b.end}]`,
          );
        }
      }
    }
  }
  return found;
}

async function metric(r: Replica, name: string): Promise<number> {
  const text = await r.registry.metrics();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) {
      total += Number(line.slice(line.lastIndexOf(" ") + 1));
    }
  }
  return total;
}

before(async () => {
  config = await env.start();
  client = newClient(config);
  for (const name of [NAMESPACE, LEASES]) {
    await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  }
});

after(async () => {
  await env.stop();
});

describe("sharding with two managers in one process", () => {
  it("assigns, hands over on a join without overlap, and hands back on a graceful leave", async () => {
    const a = replica("shard-a", true);
    let b: Replica | undefined;
    try {
      await eventually(
        "shard-a is in the ring",
        () => a.mgr.sharding()?.shards().includes("shard-a") ?? false,
      );
      for (let i = 0; i < COUNT; i++) {
        const created = await client.create({
          apiVersion: Shardee.apiVersion,
          kind: Shardee.kind,
          metadata: { namespace: NAMESPACE, name: `obj-${i}` },
          spec: { generation: 0 },
        });
        assert.equal(created.metadata?.labels?.[SHARD], "shard-a", "born assigned by the webhook");
      }
      const ringA = new HashRing(["shard-a"]);
      await eventually("every object and child is on shard-a", () => settledOn(ringA), 60_000, 100);
      await eventually(
        "shard-a reconciled every object",
        () => new Set(windows.filter((w) => w.found).map((w) => w.key)).size === COUNT,
        30_000,
      );
      assert.equal(
        (await client.get(Lease, { namespace: LEASES, name: "shard-a" })).metadata
          ?.labels?.["sharding.rudder.dev/ring"],
        RING,
      );

      b = replica("shard-b");
      const ringAB = new HashRing(["shard-a", "shard-b"]);
      const target = (i: number) =>
        ringAB.shardFor(
          objectRingKey({
            apiVersion: Shardee.apiVersion,
            kind: Shardee.kind,
            metadata: { namespace: NAMESPACE, name: `obj-${i}` },
          }),
        );
      const expectedMoves = [...Array(COUNT).keys()].filter((i) => target(i) === "shard-b").length;
      assert.ok(expectedMoves > 0 && expectedMoves < COUNT, `${expectedMoves} objects move`);
      // Objects created while the ring changes end up where the new ring says too.
      for (let i = COUNT; i < COUNT + LATE; i++) {
        await client.create({
          apiVersion: Shardee.apiVersion,
          kind: Shardee.kind,
          metadata: { namespace: NAMESPACE, name: `obj-${i}` },
          spec: { generation: 0 },
        });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      total = COUNT + LATE;
      const onB = [...Array(total).keys()].filter((i) => target(i) === "shard-b").length;
      await eventually(
        "the objects are spread over both shards",
        () => settledOn(ringAB),
        60_000,
        100,
      );
      await eventually("shard-b is ready", async () => {
        const response = await fetch(`${b!.mgr.healthProbeURL}/readyz`);
        await response.body?.cancel();
        return response.ok;
      });
      assert.equal(await metric(a, "rudder_shard_ring_members"), 2);
      assert.equal(await metric(b, "rudder_shard_member"), 1);
      await eventually(
        "shard-b caches its objects and their children",
        async () => await metric(b!, "rudder_shard_objects") === 2 * onB,
        10_000,
      );
      assert.ok(await metric(a, "rudder_shard_moves_total") >= expectedMoves);
      const drains = await metric(a, "rudder_shard_drains_total");
      assert.ok(
        drains >= expectedMoves && drains <= expectedMoves + LATE,
        `${drains} drains acknowledged, ${expectedMoves} of the first objects moved`,
      );
      await eventually(
        "shard-b reconciled its objects",
        () =>
          new Set(windows.filter((w) => w.replica === "shard-b").map((w) => w.key)).size === onB,
        30_000,
      );

      // Every object changes: each is reconciled by its own shard only.
      const before = windows.length;
      for (let i = 0; i < total; i++) {
        const obj = await client.get(Shardee, { namespace: NAMESPACE, name: `obj-${i}` });
        await client.update({ ...obj, spec: { generation: 1 } });
      }
      await eventually(
        "every change was reconciled",
        () => new Set(windows.slice(before).map((w) => w.key)).size === total,
        30_000,
      );
      for (const w of windows.slice(before)) {
        const want = ringAB.shardFor(
          objectRingKey({
            apiVersion: Shardee.apiVersion,
            kind: Shardee.kind,
            metadata: { namespace: NAMESPACE, name: w.key },
          }),
        );
        assert.equal(w.replica, want, `${w.key} reconciled on its shard`);
      }

      // shard-b leaves gracefully: its Lease is released and its objects go back at once.
      b.stop.abort();
      assert.equal(await b.running, undefined);
      const lease = await client.get(Lease, { namespace: LEASES, name: "shard-b" });
      // Released; perhaps already claimed by the sharder while it moves shard-b's objects.
      assert.notEqual(lease.spec?.holderIdentity, "shard-b", "shard-b released its Lease");
      const leftAt = performance.now();
      await eventually("every object is back on shard-a", () => settledOn(ringA), 30_000, 100);
      const took = performance.now() - leftAt;
      assert.ok(took < TIMING.leaseDuration + 5_000, `moved back in ${took} ms`);
      await eventually("the sharder gave shard-b's Lease back", async () => {
        const after = await client.get(Lease, { namespace: LEASES, name: "shard-b" });
        return (after.spec?.holderIdentity ?? "") === "";
      });

      assert.deepEqual(overlaps(), [], "no object was reconciled by two shards at once");
      assert.deepEqual(
        windows.filter((w) => !w.found).map((w) => `${w.replica}:${w.key}`),
        [],
        "no reconcile found its object gone",
      );
      assert.deepEqual(deletesSeen, [], "no moved object looked deleted");
    } finally {
      b?.stop.abort();
      a.stop.abort();
      const results = await Promise.all([a.running, b?.running]);
      assert.deepEqual(results, [undefined, undefined]);
    }
  });

  it("moves a dead shard's objects at once when its Lease expires, drained or not", async () => {
    windows.length = 0;
    deletesSeen.length = 0;
    const GHOSTS = 10;
    // A shard that holds its Lease once and then dies without a word.
    await client.create({
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        namespace: LEASES,
        name: "ghost",
        labels: { "sharding.rudder.dev/ring": RING },
      },
      spec: {
        holderIdentity: "ghost",
        leaseDurationSeconds: 3,
        renewTime: new Date().toISOString().replace("Z", "000Z"),
      },
    });
    const first = COUNT + LATE;
    for (let i = first; i < first + GHOSTS; i++) {
      await client.create({
        apiVersion: Shardee.apiVersion,
        kind: Shardee.kind,
        metadata: { namespace: NAMESPACE, name: `obj-${i}`, labels: { [SHARD]: "ghost" } },
        spec: { generation: 0 },
      });
    }
    total = first + GHOSTS;
    const a = replica("shard-a", true);
    try {
      // While the ghost's Lease lasts, some objects are marked to drain from it: it never
      // acknowledges. Once it expires, every object goes to shard-a directly.
      await eventually(
        "every object is on shard-a",
        () => settledOn(new HashRing(["shard-a"])),
        30_000,
        100,
      );
      await eventually(
        "shard-a reconciled the ghost's objects",
        () =>
          new Set(windows.filter((w) => Number(w.key.slice(4)) >= first).map((w) => w.key)).size ===
            GHOSTS,
        30_000,
      );
      assert.ok(await metric(a, "rudder_shard_moves_total") >= GHOSTS);
      assert.deepEqual(windows.filter((w) => w.replica !== "shard-a" || !w.found), []);
      assert.deepEqual(deletesSeen, [], "no moved object looked deleted");
    } finally {
      a.stop.abort();
      assert.equal(await a.running, undefined);
    }
  });
});
