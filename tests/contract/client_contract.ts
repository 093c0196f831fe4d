// The client contract: one set of scenarios, written as an operator author would use the
// client, run against the real client on a kube-apiserver (tests/integration) and against the
// FakeClient (tests/unit). The fake is trusted exactly where both pass.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { isNoKindMatch } from "../../lib/api/discovery.ts";
import { type KubeObject, resourceType } from "../../lib/api/resource.ts";
import { type Client } from "../../lib/client/client.ts";
import { type ApplyOptions, type LabelSelectorInput } from "../../lib/client/options.ts";
import { jsonPatch, mergeFrom, rawPatch, strategicMergeFrom } from "../../lib/client/patch.ts";
import {
  ApiError,
  ignoreAlreadyExists,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isInvalid,
  isNotFound,
} from "../../lib/kube/errors.ts";
import {
  type autoscalingv1,
  ConfigMap,
  CustomResourceDefinition,
  Deployment,
  Pod,
  Secret,
} from "../../lib/api/mod.ts";
import type { StatusDetails } from "../../lib/client/mod.ts";
import { schemaContract } from "./schema_contract.ts";

/** What a contract run needs: a client, a fresh namespace, and how to clean up. */
export interface ContractSetup {
  client: Client;
  namespace: string;
  teardown(): Promise<void>;
}

type Scale = autoscalingv1.Scale;

/** A custom resource with a status subresource and a selectable field. */
interface Gadget extends KubeObject {
  apiVersion: "contract.rudder.dev/v1";
  kind: "Gadget";
  spec?: { size?: number; color?: string };
  status?: { phase?: string };
}

const Gadget = resourceType<Gadget>({
  group: "contract.rudder.dev",
  version: "v1",
  kind: "Gadget",
  scope: "Namespaced",
  subresources: ["status"],
});

const gadgetCRD: CustomResourceDefinition = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: "gadgets.contract.rudder.dev" },
  spec: {
    group: "contract.rudder.dev",
    scope: "Namespaced",
    names: { plural: "gadgets", singular: "gadget", kind: "Gadget", listKind: "GadgetList" },
    versions: [{
      name: "v1",
      served: true,
      storage: true,
      subresources: { status: {} },
      selectableFields: [{ jsonPath: ".spec.color" }],
      schema: {
        openAPIV3Schema: {
          type: "object",
          properties: {
            spec: {
              type: "object",
              properties: { size: { type: "integer" }, color: { type: "string" } },
            },
            status: { type: "object", properties: { phase: { type: "string" } } },
          },
        },
      },
    }],
  },
};

/** True when `A` and `B` are the same type. */
type Equal<A, B> = (<V>() => V extends A ? 1 : 2) extends (<V>() => V extends B ? 1 : 2) ? true
  : false;

/** Asserts that `promise` rejects with an ApiError of this code, reason and details. */
async function rejectsWithStatus(
  promise: Promise<unknown>,
  expected: { code: number; reason: string; details?: StatusDetails },
): Promise<ApiError> {
  let caught: unknown;
  await assert.rejects(promise, (err: unknown) => {
    caught = err;
    return true;
  });
  assert.ok(caught instanceof ApiError, `expected an ApiError, got ${caught}`);
  assert.equal(caught.code, expected.code, caught.message);
  assert.equal(caught.reason, expected.reason, caught.message);
  for (const [field, value] of Object.entries(expected.details ?? {})) {
    assert.deepEqual(caught.details?.[field as keyof StatusDetails], value, `details.${field}`);
  }
  return caught;
}

function names(objects: KubeObject[]): string[] {
  return objects.map((obj) => obj.metadata?.name ?? "");
}

/**
 * Declares the contract's scenarios for the client `setup` gives. `setup` runs once before
 * them and `teardown` once after.
 */
export function clientContract(name: string, setup: () => Promise<ContractSetup>): void {
  describe(name, () => {
    let client: Client;
    let namespace: string;
    let teardown: () => Promise<void> = () => Promise.resolve();
    let counter = 0;
    /** A name no other scenario uses. */
    const unique = (prefix: string) => `${prefix}-${++counter}`;

    before(async () => {
      ({ client, namespace, teardown } = await setup());
    });

    after(async () => {
      await teardown();
    });

    function configMap(
      name: string,
      data: Record<string, string> = {},
      labels?: Record<string, string>,
    ): ConfigMap {
      return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace, labels }, data };
    }

    function deployment(name: string, replicas = 2): Deployment {
      return {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name, namespace, labels: { app: name } },
        spec: {
          replicas,
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: {
              containers: [
                { name: "app", image: "nginx:1" },
                { name: "sidecar", image: "envoy:1" },
              ],
            },
          },
        },
      };
    }

    /** Labels three ConfigMaps with `suite` and returns their names, a < b < c. */
    async function labelledConfigMaps(suite: string) {
      const [a, b, c] = [`${suite}-a`, `${suite}-b`, `${suite}-c`];
      await client.create(configMap(a, {}, { suite, tier: "web", env: "prod" }));
      await client.create(configMap(b, {}, { suite, tier: "db", env: "prod" }));
      await client.create(configMap(c, {}, { suite, tier: "cache" }));
      return { a, b, c };
    }

    describe("create and get", () => {
      it("create sets uid, creationTimestamp and resourceVersion; get returns the same object", async () => {
        const name = unique("created");
        const created = await client.create(configMap(name, { a: "1" }));
        assert.equal(created.apiVersion, "v1");
        assert.equal(created.kind, "ConfigMap");
        assert.equal(created.metadata?.name, name);
        assert.equal(created.metadata?.namespace, namespace);
        assert.match(
          created.metadata?.uid ?? "",
          /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
        );
        assert.match(created.metadata?.resourceVersion ?? "", /^\d+$/);
        assert.ok(Date.parse(created.metadata?.creationTimestamp ?? "") > 0);
        assert.deepEqual(created.data, { a: "1" });
        const got = await client.get(ConfigMap, { namespace, name });
        assert.deepEqual(got, created);
      });

      it("create with generateName picks a fresh name from the prefix each time", async () => {
        const prefix = `${unique("generated")}-`;
        const obj: ConfigMap = {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { generateName: prefix, namespace },
        };
        const first = await client.create(obj);
        const second = await client.create(obj);
        const pattern = new RegExp(`^${prefix}[a-z0-9]{5}$`);
        assert.match(first.metadata?.name ?? "", pattern);
        assert.match(second.metadata?.name ?? "", pattern);
        assert.notEqual(first.metadata?.name, second.metadata?.name);
        assert.equal(first.metadata?.generateName, prefix);
        const got = await client.get(ConfigMap, { namespace, name: first.metadata!.name! });
        assert.equal(got.metadata?.uid, first.metadata?.uid);
      });

      it("create of a taken name fails with AlreadyExists naming the resource", async () => {
        const name = unique("taken");
        await client.create(configMap(name));
        const err = await rejectsWithStatus(client.create(configMap(name)), {
          code: 409,
          reason: "AlreadyExists",
          details: { name, kind: "configmaps" },
        });
        assert.equal(err.details?.group, undefined);
        assert.ok(isAlreadyExists(err));
        assert.equal(
          err.message,
          `POST /api/v1/namespaces/${namespace}/configmaps: configmaps "${name}" already exists ` +
            "(409 AlreadyExists)",
        );
        assert.equal(await client.create(configMap(name)).catch(ignoreAlreadyExists), undefined);
      });

      it("create without a name or generateName fails with Invalid on metadata.name", async () => {
        const obj: ConfigMap = { apiVersion: "v1", kind: "ConfigMap", metadata: { namespace } };
        const err = await rejectsWithStatus(client.create(obj), {
          code: 422,
          reason: "Invalid",
          details: { kind: "ConfigMap" },
        });
        assert.ok(isInvalid(err));
        assert.equal(err.details?.causes?.[0]?.field, "metadata.name");
        assert.equal(err.details?.causes?.[0]?.reason, "FieldValueRequired");
      });

      it("create with an invalid name or label fails with Invalid naming the field", async () => {
        const badName = await rejectsWithStatus(client.create(configMap("Not_A_DNS_Name")), {
          code: 422,
          reason: "Invalid",
          details: { name: "Not_A_DNS_Name", kind: "ConfigMap" },
        });
        assert.equal(badName.details?.causes?.[0]?.field, "metadata.name");
        const name = unique("badlabel");
        const badLabel = await rejectsWithStatus(
          client.create(configMap(name, {}, { tier: "x".repeat(64) })),
          { code: 422, reason: "Invalid", details: { name, kind: "ConfigMap" } },
        );
        assert.equal(badLabel.details?.causes?.[0]?.field, "metadata.labels");
        await rejectsWithStatus(client.get(ConfigMap, { namespace, name }), {
          code: 404,
          reason: "NotFound",
        });
      });

      it("create of an object that carries a resourceVersion is refused", async () => {
        const obj = configMap(unique("with-rv"));
        obj.metadata!.resourceVersion = "12345";
        await rejectsWithStatus(client.create(obj), { code: 500, reason: "InternalError" });
      });

      it("get of a missing object fails with NotFound; ignoreNotFound makes it undefined", async () => {
        const name = unique("missing");
        const err = await rejectsWithStatus(client.get(Deployment, { namespace, name }), {
          code: 404,
          reason: "NotFound",
          details: { name, group: "apps", kind: "deployments" },
        });
        assert.ok(isNotFound(err));
        assert.equal(
          err.message,
          `GET /apis/apps/v1/namespaces/${namespace}/deployments/${name}: ` +
            `deployments.apps "${name}" not found (404 NotFound)`,
        );
        const found = await client.get(Deployment, { namespace, name }).catch(ignoreNotFound);
        assert.equal(found, undefined);
      });

      it("a Secret's stringData is stored base64-encoded in data", async () => {
        const name = unique("secret");
        await client.create<Secret>({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name, namespace },
          stringData: { password: "s3cr3t ✓" },
        });
        const got = await client.get(Secret, { namespace, name });
        assert.equal(got.stringData, undefined);
        assert.equal(got.type, "Opaque");
        const decoded = new TextDecoder().decode(
          Uint8Array.from(atob(got.data?.password ?? ""), (c) => c.charCodeAt(0)),
        );
        assert.equal(decoded, "s3cr3t ✓");
      });

      it("gives typed objects: get(Deployment) has spec.replicas as number | undefined", async () => {
        const name = unique("typed");
        await client.create(deployment(name, 3));
        const found = await client.get(Deployment, { namespace, name });
        const replicas = found.spec?.replicas;
        const typed: Equal<typeof replicas, number | undefined> = true;
        assert.equal(typed, true);
        assert.equal(replicas, 3);
        const listed = await client.list(Deployment, { namespace, labelSelector: `app=${name}` });
        const image = listed.items[0].spec?.template.spec?.containers[0].image;
        const imageTyped: Equal<typeof image, string | undefined> = true;
        assert.equal(imageTyped, true);
        assert.equal(image, "nginx:1");
      });

      it("every object returned carries apiVersion and kind", async () => {
        const name = unique("gvk");
        const created = await client.create(deployment(name));
        const got = await client.get(Deployment, { namespace, name });
        const listed = await client.list(Deployment, { namespace, labelSelector: `app=${name}` });
        const updated = await client.update(got);
        const patched = await client.patch(got, mergeFrom(got));
        const status = await client.status().update(got);
        for (const obj of [created, got, listed.items[0], updated, patched, status]) {
          assert.equal(obj.apiVersion, "apps/v1");
          assert.equal(obj.kind, "Deployment");
        }
        assert.equal(listed.apiVersion, "apps/v1");
        assert.equal(listed.kind, "DeploymentList");
      });
    });

    describe("list", () => {
      it("filters by label selector: equality, sets, existence, string and structured", async () => {
        const suite = unique("labels");
        const { a, b, c } = await labelledConfigMaps(suite);
        const select = async (labelSelector: LabelSelectorInput) =>
          names((await client.list(ConfigMap, { namespace, labelSelector })).items);
        assert.deepEqual(await select(`suite=${suite},tier=web`), [a]);
        assert.deepEqual(await select(`suite==${suite},tier!=web`), [b, c]);
        assert.deepEqual(await select(`suite=${suite},tier in (web,db)`), [a, b]);
        assert.deepEqual(await select(`suite=${suite},tier notin (web)`), [b, c]);
        assert.deepEqual(await select(`suite=${suite},env`), [a, b]);
        assert.deepEqual(await select(`suite=${suite},!env`), [c]);
        assert.deepEqual(
          await select({
            matchLabels: { suite },
            matchExpressions: [{ key: "tier", operator: "In", values: ["db", "cache"] }],
          }),
          [b, c],
        );
        assert.deepEqual(
          await select({
            matchLabels: { suite },
            matchExpressions: [{ key: "env", operator: "DoesNotExist" }],
          }),
          [c],
        );
      });

      it("filters by field selector on metadata.name and metadata.namespace", async () => {
        const suite = unique("fields");
        const { a, b, c } = await labelledConfigMaps(suite);
        const list = async (fieldSelector: string | Record<string, string>) =>
          names(
            (await client.list(ConfigMap, {
              namespace,
              labelSelector: `suite=${suite}`,
              fieldSelector,
            }))
              .items,
          );
        assert.deepEqual(await list(`metadata.name=${a}`), [a]);
        assert.deepEqual(await list({ "metadata.name": b }), [b]);
        assert.deepEqual(await list(`metadata.name!=${a}`), [b, c]);
        assert.deepEqual(await list(`metadata.namespace=${namespace}`), [a, b, c]);
        assert.deepEqual(await list(`metadata.namespace=elsewhere`), []);
      });

      it("refuses an unsupported field selector or a malformed selector with BadRequest", async () => {
        await rejectsWithStatus(
          client.list(ConfigMap, { namespace, fieldSelector: "data.mode=fast" }),
          { code: 400, reason: "BadRequest" },
        );
        await rejectsWithStatus(
          client.list(ConfigMap, { namespace, labelSelector: "tier in web" }),
          { code: 400, reason: "BadRequest" },
        );
        await rejectsWithStatus(
          client.list(ConfigMap, { namespace, fieldSelector: "metadata.name" }),
          { code: 400, reason: "BadRequest" },
        );
      });

      it("pages with limit and continue, and listAll walks every page", async () => {
        const suite = unique("pages");
        const created = [];
        for (let i = 0; i < 5; i++) {
          created.push(
            (await client.create(configMap(`${suite}-${i}`, {}, { suite }))).metadata!.name!,
          );
        }
        const seen: string[] = [];
        let token: string | undefined;
        let pageCount = 0;
        do {
          const page = await client.list(ConfigMap, {
            namespace,
            labelSelector: { matchLabels: { suite } },
            limit: 2,
            continue: token,
          });
          assert.ok(page.items.length <= 2);
          assert.match(page.metadata.resourceVersion ?? "", /^\d+$/);
          seen.push(...names(page.items));
          token = page.metadata.continue || undefined;
          pageCount++;
        } while (token);
        assert.equal(pageCount, 3);
        assert.deepEqual(seen, created);
        const all: string[] = [];
        for await (
          const item of client.listAll(ConfigMap, {
            namespace,
            labelSelector: `suite=${suite}`,
            pageSize: 2,
          })
        ) {
          assert.equal(item.kind, "ConfigMap");
          all.push(item.metadata!.name!);
        }
        assert.deepEqual(all, created);
      });

      it("counts what is left of an unfiltered list, and refuses a malformed continue token", async () => {
        await client.create(configMap(unique("remaining")));
        const everything = await client.list(ConfigMap, { namespace });
        assert.ok(everything.items.length >= 2);
        assert.equal(everything.metadata.continue, undefined);
        const first = await client.list(ConfigMap, { namespace, limit: 1 });
        assert.equal(first.metadata.remainingItemCount, everything.items.length - 1);
        assert.deepEqual(names(first.items), names(everything.items).slice(0, 1));
        await rejectsWithStatus(client.list(ConfigMap, { namespace, continue: "not-a-token" }), {
          code: 400,
          reason: "BadRequest",
        });
      });

      it("filters Pods by the fields the API server indexes for them", async () => {
        const name = unique("pod-fields");
        await client.create<Pod>({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, namespace, labels: { suite: name } },
          spec: { containers: [{ name: "app", image: "nginx:1" }] },
        });
        const list = async (fieldSelector: string) =>
          names(
            (await client.list(Pod, { namespace, labelSelector: `suite=${name}`, fieldSelector }))
              .items,
          );
        assert.deepEqual(await list("spec.nodeName="), [name]);
        assert.deepEqual(await list("spec.nodeName=node-1"), []);
        assert.deepEqual(await list("status.phase=Pending"), [name]);
        assert.deepEqual(await list("status.phase!=Pending"), []);
        await rejectsWithStatus(
          client.list(Pod, { namespace, fieldSelector: "spec.containers=app" }),
          { code: 400, reason: "BadRequest" },
        );
      });

      it("escapes field selector values given as an object", async () => {
        const name = unique("secret-type");
        const type = `contract.rudder.dev/${name},with=odd\\chars`;
        await client.create<Secret>({
          apiVersion: "v1",
          kind: "Secret",
          metadata: { name, namespace },
          type,
        });
        const found = await client.list(Secret, { namespace, fieldSelector: { type } });
        assert.deepEqual(names(found.items), [name]);
        assert.equal(found.items[0].type, type);
      });

      it("namespaced kinds need a namespace to get; lists without one see all namespaces", async () => {
        const name = unique("everywhere");
        await client.create(configMap(name, {}, { suite: name }));
        await assert.rejects(client.get(ConfigMap, { name }));
        const all = await client.list(ConfigMap, { labelSelector: `suite=${name}` });
        assert.deepEqual(names(all.items), [name]);
        assert.equal(all.items[0].metadata?.namespace, namespace);
      });
    });

    describe("update", () => {
      it("fails with Conflict when the resourceVersion is stale", async () => {
        const name = unique("stale");
        const original = await client.create(configMap(name, { v: "1" }));
        const updated = await client.update({ ...original, data: { v: "2" } });
        assert.notEqual(updated.metadata?.resourceVersion, original.metadata?.resourceVersion);
        const err = await rejectsWithStatus(client.update({ ...original, data: { v: "3" } }), {
          code: 409,
          reason: "Conflict",
          details: { name, kind: "configmaps" },
        });
        assert.ok(isConflict(err));
        assert.deepEqual((await client.get(ConfigMap, { namespace, name })).data, { v: "2" });
      });

      it("without a resourceVersion overwrites a ConfigMap unconditionally", async () => {
        const name = unique("unconditional");
        await client.create(configMap(name, { v: "1" }));
        const updated = await client.update(configMap(name, { v: "2" }));
        assert.deepEqual(updated.data, { v: "2" });
        assert.deepEqual((await client.get(ConfigMap, { namespace, name })).data, { v: "2" });
      });

      it("of a missing object fails with NotFound", async () => {
        const name = unique("nothing-to-update");
        await rejectsWithStatus(client.update(configMap(name)), {
          code: 404,
          reason: "NotFound",
          details: { name, kind: "configmaps" },
        });
      });

      it("that changes nothing keeps the resourceVersion", async () => {
        const name = unique("noop");
        const created = await client.create(configMap(name, { v: "1" }, { keep: "me" }));
        const updated = await client.update(created);
        assert.equal(updated.metadata?.resourceVersion, created.metadata?.resourceVersion);
        const patched = await client.patch(created, mergeFrom(created));
        assert.equal(patched.metadata?.resourceVersion, created.metadata?.resourceVersion);
      });

      it("a ConfigMap has no generation", async () => {
        const name = unique("no-generation");
        const created = await client.create(configMap(name, { v: "1" }));
        assert.equal(created.metadata?.generation, undefined);
        const updated = await client.update({ ...created, data: { v: "2" } });
        assert.equal(updated.metadata?.generation, undefined);
      });

      it("a Deployment's generation starts at 1 and grows with spec and annotation changes only", async () => {
        const name = unique("generation");
        const created = await client.create(deployment(name));
        assert.equal(created.metadata?.generation, 1);
        const labelled = await client.patch(
          created,
          rawPatch("application/merge-patch+json", { metadata: { labels: { extra: "yes" } } }),
        );
        assert.equal(labelled.metadata?.generation, 1);
        const scaled = await client.patch(
          labelled,
          rawPatch("application/merge-patch+json", { spec: { replicas: 3 } }),
        );
        assert.equal(scaled.metadata?.generation, 2);
        // Deployments count annotation changes: the server copies them to ReplicaSets.
        const annotated = await client.patch(
          scaled,
          rawPatch("application/merge-patch+json", { metadata: { annotations: { note: "x" } } }),
        );
        assert.equal(annotated.metadata?.generation, 3);
        const withStatus = await client.status().update({ ...annotated, status: { replicas: 1 } });
        assert.equal(withStatus.metadata?.generation, 3);
      });
    });

    describe("patch", () => {
      it("mergeFrom sends the diff; with optimisticLock a stale original is a Conflict", async () => {
        const name = unique("merge");
        const original = await client.create(configMap(name, { a: "1", b: "2" }));
        const changed = structuredClone(original);
        changed.data = { a: "1", c: "3" };
        changed.metadata!.labels = { patched: "yes" };
        const patched = await client.patch(changed, mergeFrom(original));
        assert.deepEqual(patched.data, { a: "1", c: "3" });
        assert.deepEqual(patched.metadata?.labels, { patched: "yes" });
        // Someone else writes; a patch locked to the old original must fail.
        await client.update({ ...patched, data: { a: "9" } });
        const again = structuredClone(patched);
        again.data = { a: "1", d: "4" };
        const err = await rejectsWithStatus(
          client.patch(again, mergeFrom(patched, { optimisticLock: true })),
          { code: 409, reason: "Conflict", details: { name, kind: "configmaps" } },
        );
        assert.ok(isConflict(err));
        // Without the lock the same patch goes through, leaving the other writer's change to a.
        const unlocked = await client.patch(again, mergeFrom(patched));
        assert.deepEqual(unlocked.data, { a: "9", d: "4" });
      });

      it("jsonPatch applies operations in order; a failed test is Invalid and changes nothing", async () => {
        const name = unique("json");
        const created = await client.create(configMap(name, { a: "1", b: "2" }));
        const patched = await client.patch(
          created,
          jsonPatch([
            { op: "test", path: "/data/a", value: "1" },
            { op: "replace", path: "/data/a", value: "10" },
            { op: "remove", path: "/data/b" },
            { op: "add", path: "/metadata/labels", value: { via: "json-patch" } },
            { op: "copy", from: "/data/a", path: "/data/copy" },
          ]),
        );
        assert.deepEqual(patched.data, { a: "10", copy: "10" });
        assert.deepEqual(patched.metadata?.labels, { via: "json-patch" });
        const err = await rejectsWithStatus(
          client.patch(
            patched,
            jsonPatch([
              { op: "test", path: "/data/a", value: "1" },
              { op: "replace", path: "/data/a", value: "never" },
            ]),
          ),
          { code: 422, reason: "Invalid" },
        );
        assert.ok(isInvalid(err));
        assert.deepEqual((await client.get(ConfigMap, { namespace, name })).data, patched.data);
      });

      it("jsonPatch replace of a missing member of an existing object adds it", async () => {
        const name = unique("json-replace");
        const created = await client.create(configMap(name, { a: "1" }));
        const patched = await client.patch(
          created,
          jsonPatch([{ op: "replace", path: "/data/b", value: "2" }]),
        );
        assert.deepEqual(patched.data, { a: "1", b: "2" });
      });

      it("strategicMergeFrom merges a Deployment's containers by name", async () => {
        const name = unique("smp");
        const ours = await client.create(deployment(name));
        // Someone else adds a container after we read the Deployment.
        const theirs = structuredClone(ours);
        theirs.spec!.template.spec!.containers.push({ name: "extra", image: "busybox:1" });
        await client.update(theirs);
        const changed = structuredClone(ours);
        changed.spec!.template.spec!.containers[1].image = "envoy:2";
        const patched = await client.patch(changed, strategicMergeFrom(ours));
        const images = Object.fromEntries(
          patched.spec!.template.spec!.containers.map((c) => [c.name, c.image]),
        );
        assert.deepEqual(images, { app: "nginx:1", sidecar: "envoy:2", extra: "busybox:1" });
      });

      it("of a missing object fails with NotFound", async () => {
        const name = unique("nothing-to-patch");
        await rejectsWithStatus(
          client.patch(
            configMap(name),
            rawPatch("application/merge-patch+json", { data: { a: "1" } }),
          ),
          { code: 404, reason: "NotFound", details: { name, kind: "configmaps" } },
        );
      });
    });

    describe("server-side apply", () => {
      const applied = (
        name: string,
        data: Record<string, string>,
        labels?: Record<string, string>,
      ) =>
        ({
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name, namespace, labels },
          data,
        }) as ConfigMap;

      it("creates the object, then merges what is applied and drops what no longer is", async () => {
        const name = unique("apply");
        const created = await client.apply(applied(name, { a: "1", b: "2" }, { owner: "a" }), {
          fieldManager: "contract-a",
        });
        assert.deepEqual(created.data, { a: "1", b: "2" });
        assert.ok(created.metadata?.uid);
        // Another writer adds a key of its own.
        await client.patch(
          created,
          rawPatch("application/merge-patch+json", { data: { c: "3" } }),
          { fieldManager: "contract-other" },
        );
        const reapplied = await client.apply(applied(name, { a: "2" }), {
          fieldManager: "contract-a",
        });
        assert.deepEqual(reapplied.data, { a: "2", c: "3" });
        assert.equal(reapplied.metadata?.labels?.owner, undefined);
        assert.equal(reapplied.metadata?.uid, created.metadata?.uid);
      });

      it("conflicts on a field another manager owns, unless forced", async () => {
        const name = unique("apply-conflict");
        await client.apply(applied(name, { shared: "a" }), { fieldManager: "contract-a" });
        const err = await rejectsWithStatus(
          client.apply(applied(name, { shared: "b" }), { fieldManager: "contract-b" }),
          { code: 409, reason: "Conflict" },
        );
        assert.ok(isConflict(err));
        assert.match(err.message, /conflict with "contract-a"/);
        assert.equal(err.details?.causes?.[0]?.field, ".data.shared");
        assert.equal(err.details?.causes?.[0]?.reason, "FieldManagerConflict");
        // The same value is shared ownership, not a conflict.
        await client.apply(applied(name, { shared: "a" }), { fieldManager: "contract-c" });
        const forced = await client.apply(applied(name, { shared: "b" }), {
          fieldManager: "contract-b",
          force: true,
        });
        assert.deepEqual(forced.data, { shared: "b" });
      });

      it("conflicts on a field that create set", async () => {
        const name = unique("apply-after-create");
        await client.create(configMap(name, { mode: "slow" }));
        await rejectsWithStatus(
          client.apply(applied(name, { mode: "fast" }), { fieldManager: "contract-a" }),
          { code: 409, reason: "Conflict" },
        );
        const added = await client.apply(applied(name, { other: "1" }), {
          fieldManager: "contract-a",
        });
        assert.deepEqual(added.data, { mode: "slow", other: "1" });
      });

      it("ignores status on a Deployment and sets the spec fields it names", async () => {
        const name = unique("apply-deployment");
        const created = await client.create(deployment(name));
        const config = {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name, namespace },
          spec: { replicas: 2 },
          status: { replicas: 7 },
        } as Deployment;
        const result = await client.apply(config, { fieldManager: "contract-a", force: true });
        assert.equal(result.spec?.replicas, 2);
        assert.equal(result.status?.replicas, undefined);
        assert.equal(result.spec?.template.spec?.containers.length, 2);
        assert.equal(result.metadata?.generation, created.metadata?.generation);
      });

      it("through status() sets the status only", async () => {
        const name = unique("apply-status");
        await client.create(deployment(name));
        const config = {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name, namespace },
          spec: { replicas: 7 },
          status: { replicas: 1 },
        } as Deployment;
        const result = await client.status().apply(config, { fieldManager: "contract-status" });
        assert.equal(result.status?.replicas, 1);
        assert.equal(result.spec?.replicas, 2);
      });

      it("requires a fieldManager", async () => {
        await assert.rejects(
          client.apply(applied(unique("apply-anonymous"), { a: "1" }), {} as ApplyOptions),
        );
      });
    });

    describe("status subresource", () => {
      it("update ignores status; status().update ignores spec", async () => {
        const name = unique("status");
        const created = await client.create(deployment(name));
        const ignored = await client.update({ ...created, status: { replicas: 5 } });
        assert.equal(ignored.status?.replicas, undefined);
        assert.equal(ignored.metadata?.resourceVersion, created.metadata?.resourceVersion);
        const withStatus = await client.status().update({
          ...ignored,
          spec: { ...ignored.spec!, replicas: 9 },
          status: { replicas: 1 },
        });
        assert.equal(withStatus.spec?.replicas, 2);
        assert.equal(withStatus.status?.replicas, 1);
        const got = await client.get(Deployment, { namespace, name });
        assert.equal(got.spec?.replicas, 2);
        assert.equal(got.status?.replicas, 1);
        assert.equal(got.metadata?.generation, 1);
        const fetched = await client.status().get<Deployment>(got);
        assert.equal(fetched.status?.replicas, 1);
      });

      it("status().update of a Deployment keeps annotation changes but not label changes", async () => {
        const name = unique("status-meta");
        const created = await client.create(deployment(name));
        const written = await client.status().update({
          ...created,
          metadata: {
            ...created.metadata,
            labels: { app: name, added: "no" },
            annotations: { note: "yes" },
          },
          status: { replicas: 1 },
        });
        assert.deepEqual(written.metadata?.labels, { app: name });
        assert.deepEqual(written.metadata?.annotations, { note: "yes" });
      });

      it("status().patch changes only the status", async () => {
        const name = unique("status-patch");
        const created = await client.create(deployment(name));
        const changed = structuredClone(created);
        changed.status = { replicas: 2, readyReplicas: 1 };
        changed.spec!.replicas = 5;
        const patched = await client.status().patch(changed, mergeFrom(created));
        assert.equal(patched.spec?.replicas, 2);
        assert.equal(patched.status?.readyReplicas, 1);
      });

      it("status().update with a stale resourceVersion fails with Conflict", async () => {
        const name = unique("status-stale");
        const created = await client.create(deployment(name));
        await client.status().update({ ...created, status: { replicas: 1 } });
        await rejectsWithStatus(client.status().update({ ...created, status: { replicas: 2 } }), {
          code: 409,
          reason: "Conflict",
          details: { name, group: "apps", kind: "deployments" },
        });
      });

      it("a kind without the subresource answers NotFound", async () => {
        const name = unique("no-status");
        const created = await client.create(configMap(name));
        const err = await rejectsWithStatus(client.status().update(created), {
          code: 404,
          reason: "NotFound",
        });
        assert.ok(isNotFound(err));
      });
    });

    describe("scale subresource", () => {
      it("get returns an autoscaling/v1 Scale; update and patch set spec.replicas", async () => {
        const name = unique("scale");
        const created = await client.create(deployment(name, 2));
        const scale = await client.subResource("scale").get<Scale>(created);
        assert.equal(scale.apiVersion, "autoscaling/v1");
        assert.equal(scale.kind, "Scale");
        assert.equal(scale.metadata?.name, name);
        assert.equal(scale.metadata?.uid, created.metadata?.uid);
        assert.equal(scale.spec?.replicas, 2);
        assert.equal(scale.status?.selector, `app=${name}`);

        const updated = await client.subResource("scale").update(created, {
          body: { ...scale, spec: { replicas: 4 } },
        });
        assert.equal(updated.kind, "Scale");
        assert.equal(updated.spec?.replicas, 4);
        const scaled = await client.get(Deployment, { namespace, name });
        assert.equal(scaled.spec?.replicas, 4);
        assert.equal(scaled.metadata?.generation, 2);

        const patched = await client.subResource("scale").patch(
          created,
          jsonPatch([{ op: "replace", path: "/spec/replicas", value: 1 }]),
        );
        assert.equal((patched as unknown as Scale).spec?.replicas, 1);
        assert.equal((await client.get(Deployment, { namespace, name })).spec?.replicas, 1);

        // The Scale read first is stale now.
        await rejectsWithStatus(
          client.subResource("scale").update(created, {
            body: { ...scale, spec: { replicas: 3 } },
          }),
          { code: 409, reason: "Conflict", details: { name, group: "apps", kind: "deployments" } },
        );
      });
    });

    describe("delete", () => {
      it("of an object with finalizers marks it; removing the last finalizer deletes it", async () => {
        const name = unique("finalized");
        const created = await client.create({
          ...configMap(name, { a: "1" }),
          metadata: { name, namespace, finalizers: ["contract.rudder.dev/hold"] },
        });
        await client.delete(created);
        const deleting = await client.get(ConfigMap, { namespace, name });
        assert.ok(Date.parse(deleting.metadata?.deletionTimestamp ?? "") > 0);
        assert.equal(deleting.metadata?.deletionGracePeriodSeconds, 0);
        assert.deepEqual(deleting.metadata?.finalizers, ["contract.rudder.dev/hold"]);
        assert.notEqual(deleting.metadata?.resourceVersion, created.metadata?.resourceVersion);
        // Deleting again changes nothing.
        await client.delete(deleting);
        assert.deepEqual(await client.get(ConfigMap, { namespace, name }), deleting);
        // No new finalizers while deleting; other changes are fine.
        const err = await rejectsWithStatus(
          client.update({
            ...deleting,
            metadata: {
              ...deleting.metadata,
              finalizers: ["contract.rudder.dev/hold", "contract.rudder.dev/new"],
            },
          }),
          { code: 422, reason: "Invalid", details: { name, kind: "ConfigMap" } },
        );
        assert.equal(err.details?.causes?.[0]?.field, "metadata.finalizers");
        const changed = await client.update({ ...deleting, data: { a: "2" } });
        assert.deepEqual(changed.data, { a: "2" });
        await client.update({ ...changed, metadata: { ...changed.metadata, finalizers: [] } });
        await rejectsWithStatus(client.get(ConfigMap, { namespace, name }), {
          code: 404,
          reason: "NotFound",
        });
        assert.equal(await client.delete(changed).catch(ignoreNotFound), undefined);
      });

      it("of a Deployment with finalizers bumps its generation", async () => {
        const name = unique("finalized-deployment");
        const obj = deployment(name);
        obj.metadata!.finalizers = ["contract.rudder.dev/hold"];
        const created = await client.create(obj);
        await client.delete(created);
        const deleting = await client.get(Deployment, { namespace, name });
        assert.equal(deleting.metadata?.generation, 2);
        await client.patch(
          deleting,
          rawPatch("application/merge-patch+json", { metadata: { finalizers: null } }),
        );
        assert.equal(
          await client.get(Deployment, { namespace, name }).catch(ignoreNotFound),
          undefined,
        );
      });

      it("of a missing object fails with NotFound, which ignoreNotFound accepts", async () => {
        const name = unique("nothing-to-delete");
        const err = await rejectsWithStatus(client.delete(configMap(name)), {
          code: 404,
          reason: "NotFound",
          details: { name, kind: "configmaps" },
        });
        assert.ok(isNotFound(err));
        assert.equal(await client.delete(configMap(name)).catch(ignoreNotFound), undefined);
      });

      it("with preconditions fails with Conflict when uid or resourceVersion differ", async () => {
        const name = unique("preconditions");
        const created = await client.create(configMap(name, { a: "1" }));
        const uid = created.metadata!.uid!;
        const resourceVersion = created.metadata!.resourceVersion!;
        await rejectsWithStatus(
          client.delete(created, {
            preconditions: { uid: "00000000-0000-0000-0000-000000000000" },
          }),
          { code: 409, reason: "Conflict", details: { name, kind: "ConfigMap" } },
        );
        const updated = await client.update({ ...created, data: { a: "2" } });
        await rejectsWithStatus(client.delete(created, { preconditions: { resourceVersion } }), {
          code: 409,
          reason: "Conflict",
          details: { name, kind: "ConfigMap" },
        });
        assert.ok(await client.get(ConfigMap, { namespace, name }));
        await client.delete(updated, {
          preconditions: { uid, resourceVersion: updated.metadata!.resourceVersion! },
        });
        assert.equal(
          await client.get(ConfigMap, { namespace, name }).catch(ignoreNotFound),
          undefined,
        );
      });

      it("accepts a propagationPolicy and a grace period", async () => {
        const name = unique("propagation");
        const created = await client.create(configMap(name));
        await client.delete(created, { propagationPolicy: "Background", gracePeriodSeconds: 0 });
        assert.equal(
          await client.get(ConfigMap, { namespace, name }).catch(ignoreNotFound),
          undefined,
        );
      });

      it("deleteAllOf deletes exactly what the selector matches", async () => {
        const suite = unique("delete-all");
        await client.create(configMap(`${suite}-1`, {}, { suite, doomed: "yes" }));
        await client.create(configMap(`${suite}-2`, {}, { suite, doomed: "yes" }));
        await client.create(configMap(`${suite}-3`, {}, { suite, doomed: "no" }));
        await client.deleteAllOf(ConfigMap, {
          namespace,
          labelSelector: { matchLabels: { suite, doomed: "yes" } },
        });
        const left = await client.list(ConfigMap, { namespace, labelSelector: `suite=${suite}` });
        assert.deepEqual(names(left.items), [`${suite}-3`]);
      });

      it("eviction of a Pod deletes it", async () => {
        const name = unique("evicted");
        const pod = await client.create<Pod>({
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name, namespace },
          spec: { containers: [{ name: "app", image: "nginx:1" }] },
        });
        const result = await client.subResource("eviction").create<{ status?: string }>(pod, {
          apiVersion: "policy/v1",
          kind: "Eviction",
          metadata: { name, namespace },
        });
        assert.equal(result.status, "Success");
        assert.equal(await client.get(Pod, { namespace, name }).catch(ignoreNotFound), undefined);
      });
    });

    describe("dryRun", () => {
      it("validates and answers, but persists nothing", async () => {
        const name = unique("dry");
        const wouldBe = await client.create(configMap(name, { a: "1" }), { dryRun: true });
        assert.equal(wouldBe.metadata?.name, name);
        assert.ok(wouldBe.metadata?.uid);
        assert.equal(wouldBe.metadata?.resourceVersion, undefined);
        assert.equal(
          await client.get(ConfigMap, { namespace, name }).catch(ignoreNotFound),
          undefined,
        );
        await rejectsWithStatus(client.create(configMap("Invalid_Name"), { dryRun: true }), {
          code: 422,
          reason: "Invalid",
        });

        const created = await client.create(configMap(name, { a: "1" }));
        const updated = await client.update({ ...created, data: { a: "2" } }, { dryRun: true });
        assert.deepEqual(updated.data, { a: "2" });
        assert.equal(updated.metadata?.resourceVersion, created.metadata?.resourceVersion);
        const patched = await client.patch(
          created,
          rawPatch("application/merge-patch+json", { data: { b: "3" } }),
          { dryRun: true },
        );
        assert.deepEqual(patched.data, { a: "1", b: "3" });
        await client.apply(
          {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name, namespace },
            data: { c: "4" },
          } as ConfigMap,
          { fieldManager: "contract-a", dryRun: true },
        );
        await client.delete(created, { dryRun: true });
        await client.deleteAllOf(ConfigMap, {
          namespace,
          fieldSelector: `metadata.name=${name}`,
          dryRun: true,
        });
        assert.deepEqual(await client.get(ConfigMap, { namespace, name }), created);
      });
    });

    describe("custom resources", () => {
      before(async () => {
        await client.create(gadgetCRD).catch(ignoreAlreadyExists);
        // A real API server serves the kind a moment after the CRD is created.
        const deadline = Date.now() + 30_000;
        for (;;) {
          try {
            await client.list(Gadget, { namespace });
            break;
          } catch (err) {
            if (!isNotFound(err) || Date.now() > deadline) throw err;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      });

      const gadget = (name: string, spec: Gadget["spec"] = { size: 1 }): Gadget => ({
        apiVersion: "contract.rudder.dev/v1",
        kind: "Gadget",
        metadata: { name, namespace },
        spec,
      });

      it("generation counts spec changes, not metadata or status changes", async () => {
        const name = unique("gadget");
        const created = await client.create({ ...gadget(name), status: { phase: "Ignored" } });
        assert.equal(created.metadata?.generation, 1);
        assert.equal(created.status, undefined);
        const labelled = await client.update({
          ...created,
          metadata: { ...created.metadata, labels: { a: "b" } },
        });
        assert.equal(labelled.metadata?.generation, 1);
        const resized = await client.update({ ...labelled, spec: { size: 2 } });
        assert.equal(resized.metadata?.generation, 2);
        const withStatus = await client.status().update({
          ...resized,
          spec: { size: 99 },
          metadata: { ...resized.metadata, labels: { ignored: "yes" } },
          status: { phase: "Ready" },
        });
        assert.equal(withStatus.metadata?.generation, 2);
        assert.deepEqual(withStatus.spec, { size: 2 });
        assert.deepEqual(withStatus.metadata?.labels, { a: "b" });
        assert.deepEqual(withStatus.status, { phase: "Ready" });
        const statusIgnored = await client.update({ ...withStatus, status: { phase: "Lost" } });
        assert.deepEqual(statusIgnored.status, { phase: "Ready" });
      });

      it("update without a resourceVersion fails with Invalid", async () => {
        const name = unique("gadget-unconditional");
        await client.create(gadget(name));
        const err = await rejectsWithStatus(client.update(gadget(name, { size: 5 })), {
          code: 422,
          reason: "Invalid",
          details: { name, group: "contract.rudder.dev", kind: "gadgets" },
        });
        assert.equal(err.details?.causes?.[0]?.field, "metadata.resourceVersion");
      });

      it("merge patches work; strategic merge patches are refused with 415", async () => {
        const name = unique("gadget-patch");
        const created = await client.create(gadget(name, { size: 1, color: "red" }));
        const changed = structuredClone(created);
        changed.spec = { size: 3, color: "red" };
        const patched = await client.patch(changed, mergeFrom(created));
        assert.deepEqual(patched.spec, { size: 3, color: "red" });
        await rejectsWithStatus(
          client.patch(
            created,
            rawPatch("application/strategic-merge-patch+json", { spec: { size: 4 } }),
          ),
          { code: 415, reason: "UnsupportedMediaType" },
        );
      });

      it("field selectors work on the CRD's selectable fields only", async () => {
        const suite = unique("gadget-select");
        await client.create({
          ...gadget(`${suite}-red`, { color: "red" }),
          metadata: { name: `${suite}-red`, namespace, labels: { suite } },
        });
        await client.create({
          ...gadget(`${suite}-blue`, { color: "blue" }),
          metadata: { name: `${suite}-blue`, namespace, labels: { suite } },
        });
        const red = await client.list(Gadget, {
          namespace,
          labelSelector: `suite=${suite}`,
          fieldSelector: "spec.color=red",
        });
        assert.deepEqual(names(red.items), [`${suite}-red`]);
        await rejectsWithStatus(client.list(Gadget, { namespace, fieldSelector: "spec.size=1" }), {
          code: 400,
          reason: "BadRequest",
        });
      });

      it("an unknown kind is a NoKindMatchError", async () => {
        const unknownKind = { ...gadget(unique("nope")), kind: "Nonexistent" } as KubeObject;
        await assert.rejects(client.create(unknownKind), isNoKindMatch);
        const unknownGroup = {
          ...gadget(unique("nope")),
          apiVersion: "nowhere.rudder.dev/v1",
        } as KubeObject;
        await assert.rejects(client.create(unknownGroup), isNoKindMatch);
      });
    });

    schemaContract(() => ({ client, namespace }), unique);
  });
}
