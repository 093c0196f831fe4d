// Reconcilers without casts: a frozen object the cache returned (DeepReadonly<T>) goes straight
// into everything that only reads it, and clone() turns it into a mutable T. Most of this file's
// checks are made by the type checker: it compiles only while those signatures hold, and each
// `@ts-expect-error` fails the check if the line it marks starts compiling.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Deployment } from "../../lib/api/builtins.ts";
import { clone, deepFreeze, type DeepReadonly } from "../../lib/api/readonly.ts";
import type { KubeObject, Unstructured } from "../../lib/api/resource.ts";
import type { CachedClient } from "../../lib/cache/cached_client.ts";
import type { Client } from "../../lib/client/client.ts";
import { mergeFrom, type Patch, strategicMergeFrom } from "../../lib/client/patch.ts";
import { FakeClient } from "../../lib/testing/fake_client/mod.ts";

const TIMEOUT = { timeout: 10_000 };

/** True when A and B are the same type (not merely assignable either way). */
type Equal<A, B> = (<G>() => G extends A ? 1 : 2) extends (<G>() => G extends B ? 1 : 2) ? true
  : false;

/** Compiles only when its type argument is `true`. */
function expectType<_Check extends true>(): void {}

const key = { namespace: "default", name: "web" };

function web(): Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { ...key, labels: { app: "web" }, finalizers: ["example.com/cleanup"] },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: "web" } },
      template: {
        metadata: { labels: { app: "web" } },
        spec: { containers: [{ name: "web", image: "nginx:1.26" }] },
      },
    },
  };
}

/** A Deployment in a fake, and a frozen copy of it as the cache would hand it out. */
async function cachedWeb(): Promise<{ client: Client; frozen: DeepReadonly<Deployment> }> {
  const client = new FakeClient({ objects: [web()] });
  const frozen = deepFreeze(await client.get(Deployment, key));
  return { client, frozen };
}

describe("clone", () => {
  it(
    "gives a mutable Deployment from a frozen one, and leaves the frozen one alone",
    TIMEOUT,
    async () => {
      const { frozen } = await cachedWeb();
      const changed = clone(frozen);
      expectType<Equal<typeof changed, Deployment>>();
      changed.spec!.replicas = 3;
      changed.metadata!.finalizers!.push("example.com/more");
      assert.equal(frozen.spec?.replicas, 1);
      assert.deepEqual(frozen.metadata?.finalizers, ["example.com/cleanup"]);
      assert.ok(!Object.isFrozen(changed.spec));
    },
  );

  it("gives the same type back for an object that is already mutable", TIMEOUT, () => {
    const copy = clone(web());
    expectType<Equal<typeof copy, Deployment>>();
    assert.deepEqual(copy, web());
  });

  it("does not let a frozen object be changed without it", TIMEOUT, async () => {
    const { frozen } = await cachedWeb();
    assert.throws(() => {
      // @ts-expect-error a frozen object's fields are read-only
      frozen.spec!.replicas = 3;
    }, TypeError);
    assert.throws(() => {
      // @ts-expect-error a frozen object's lists are read-only
      frozen.metadata!.finalizers!.push("example.com/more");
    }, TypeError);
    // @ts-expect-error a frozen Deployment is not a (mutable) Deployment
    const _mutable: Deployment = frozen;
  });
});

describe("a frozen object from the cache", () => {
  it(
    "is the original of mergeFrom and strategicMergeFrom, typed by its kind",
    TIMEOUT,
    async () => {
      const { frozen } = await cachedWeb();
      const merge = mergeFrom(frozen);
      const strategic = strategicMergeFrom(frozen, { optimisticLock: true });
      expectType<Equal<typeof merge, Patch<Deployment>>>();
      expectType<Equal<typeof strategic, Patch<Deployment>>>();
      const changed = clone(frozen);
      changed.spec!.replicas = 3;
      assert.deepEqual(merge.data(changed), { spec: { replicas: 3 } });
      // Either may be computed for the frozen object itself: nothing changed.
      assert.deepEqual(merge.data(frozen), {});
    },
  );

  it(
    "goes to patch, status().patch and delete as it is, and patch answers a mutable T",
    TIMEOUT,
    async () => {
      const { client, frozen } = await cachedWeb();

      const changed = clone(frozen);
      changed.spec!.replicas = 3;
      const patched = await client.patch(changed, mergeFrom(frozen));
      expectType<Equal<typeof patched, Deployment>>();
      assert.equal(patched.spec?.replicas, 3);

      // The object patch() is given is only read: a frozen one is its target as it is.
      const again = await client.patch(frozen, strategicMergeFrom(frozen));
      expectType<Equal<typeof again, Deployment>>();
      again.metadata!.labels = { app: "web", patched: "yes" };

      const withStatus = clone(frozen);
      withStatus.status = { replicas: 1, readyReplicas: 1 };
      const status = await client.status().patch(withStatus, mergeFrom(frozen));
      expectType<Equal<typeof status, Deployment>>();
      assert.equal(status.status?.readyReplicas, 1);
      await client.status().patch(frozen, mergeFrom(frozen));
      // Other subresources read only its identity, and a body is sent instead of it.
      const scale = await client.subResource("scale").get<{ spec: { replicas: number } }>(frozen);
      assert.equal(scale.spec.replicas, 3);
      await client.subResource("scale").update(frozen, {
        body: { apiVersion: "autoscaling/v1", kind: "Scale", spec: { replicas: 4 } },
      });

      await client.delete(frozen, { preconditions: { uid: frozen.metadata?.uid } });
      const left = await client.get(Deployment, key);
      assert.ok(left.metadata?.deletionTimestamp, "the finalizer holds it back");
    },
  );
});

// Not run: these compile only while a reconciler can write them without casts.

/** A reconciler's step over the cached client, whose reads are frozen. */
async function _reconcileFromTheCache(client: CachedClient): Promise<void> {
  const cached = await client.get(Deployment, key);
  expectType<Equal<typeof cached, DeepReadonly<Deployment>>>();
  const changed = clone(cached);
  changed.spec!.replicas = 2;
  const patched = await client.patch(changed, mergeFrom(cached));
  expectType<Equal<typeof patched, Deployment>>();
  await client.patch(cached, strategicMergeFrom(cached));
  await client.status().patch(changed, mergeFrom(cached));
  await client.delete(cached);
  for (const item of (await client.list(Deployment)).items) await client.delete(item);
  // @ts-expect-error the cached client's reads are frozen
  cached.metadata!.name = "other";
}

/** The same step, generic over the kind, as a helper library would write it. */
async function _labelAny<T extends KubeObject>(
  client: Client,
  cached: DeepReadonly<T>,
): Promise<T> {
  const changed = clone(cached);
  expectType<Equal<typeof changed, T>>();
  changed.metadata = { ...changed.metadata, labels: { touched: "yes" } };
  await client.status().patch(cached, mergeFrom(cached));
  await client.delete(cached);
  return await client.patch(changed, mergeFrom(cached));
}

/** Objects of a kind given only by apiVersion and kind are read-only the same way. */
async function _unstructured(client: CachedClient): Promise<Unstructured> {
  const cached = await client.get({ apiVersion: "example.com/v1", kind: "Widget" }, key);
  const changed = clone(cached);
  changed.spec = { size: 2 };
  return await client.patch(changed, mergeFrom(cached));
}
