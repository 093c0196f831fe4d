// The client wrappers change each call's options or object and pass everything else through.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Client, SubResourceClient } from "../../lib/client/client.ts";
import { dryRunClient, namespacedClient, withFieldOwner } from "../../lib/client/wrappers.ts";
import { mergeFrom } from "../../lib/client/patch.ts";
import { ConfigMap, Namespace } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import type { RESTMapper } from "../../lib/api/discovery.ts";

interface Call {
  method: string;
  args: unknown[];
}

/** A client that records every call and answers with its first argument. */
function recordingClient(): { client: Client; calls: Call[] } {
  const calls: Call[] = [];
  const record = (method: string) => (...args: unknown[]) => {
    calls.push({ method, args });
    return Promise.resolve(args[0]);
  };
  const sub = (name: string): SubResourceClient => ({
    get: record(`${name}.get`) as SubResourceClient["get"],
    create: record(`${name}.create`) as SubResourceClient["create"],
    update: record(`${name}.update`) as SubResourceClient["update"],
    patch: record(`${name}.patch`) as SubResourceClient["patch"],
    apply: record(`${name}.apply`) as SubResourceClient["apply"],
  });
  const client = {
    mapper: {
      resourceTypeFor: () => Promise.resolve(ConfigMap),
    } as unknown as RESTMapper,
    get: record("get"),
    list: record("list"),
    async *listAll(...args: unknown[]) {
      calls.push({ method: "listAll", args });
      yield* [];
    },
    create: record("create"),
    update: record("update"),
    patch: record("patch"),
    apply: record("apply"),
    delete: record("delete"),
    deleteAllOf: record("deleteAllOf"),
    status: () => sub("status"),
    subResource: (name: string) => sub(name),
  } as unknown as Client;
  return { client, calls };
}

const cm = (namespace?: string): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "a", namespace },
});

describe("withFieldOwner", () => {
  it("sets fieldManager on every write that has none, keeping an explicit one", async () => {
    const { client, calls } = recordingClient();
    const owned = withFieldOwner(client, "rudder-test");
    await owned.create(cm("x"));
    await owned.update(cm("x"), { fieldManager: "someone-else" });
    await owned.patch(cm("x"), mergeFrom(cm("x")));
    await owned.apply(cm("x"), { fieldManager: "applier" });
    await owned.status().update(cm("x"));
    await owned.get(ConfigMap, { namespace: "x", name: "a" });
    await owned.delete(cm("x"));
    assert.deepEqual(
      calls.map((
        c,
      ) => [c.method, (c.args.at(-1) as { fieldManager?: string } | undefined)?.fieldManager]),
      [
        ["create", "rudder-test"],
        ["update", "someone-else"],
        ["patch", "rudder-test"],
        ["apply", "applier"],
        ["status.update", "rudder-test"],
        ["get", undefined],
        ["delete", undefined],
      ],
    );
  });
});

describe("dryRunClient", () => {
  it("makes writes and deletes dry runs and leaves reads alone", async () => {
    const { client, calls } = recordingClient();
    const dry = dryRunClient(client);
    await dry.create(cm("x"));
    await dry.delete(cm("x"), { gracePeriodSeconds: 0 });
    await dry.deleteAllOf(ConfigMap, { namespace: "x" });
    await dry.subResource("scale").update(cm("x"));
    await dry.list(ConfigMap);
    assert.deepEqual(
      calls.map((c) => [c.method, (c.args.at(-1) as { dryRun?: boolean })?.dryRun]),
      [
        ["create", true],
        ["delete", true],
        ["deleteAllOf", true],
        ["scale.update", true],
        ["list", undefined],
      ],
    );
    assert.equal((calls[1].args[1] as { gracePeriodSeconds: number }).gracePeriodSeconds, 0);
  });
});

describe("namespacedClient", () => {
  it("fills in its namespace for namespaced kinds and passes cluster-scoped ones through", async () => {
    const { client, calls } = recordingClient();
    const team = namespacedClient(client, "team-a");
    await team.create(cm());
    await team.get(ConfigMap, { name: "a" });
    await team.list(ConfigMap);
    for await (const _ of team.listAll(ConfigMap)) { /* nothing */ }
    await team.deleteAllOf(ConfigMap, { labelSelector: "x=y" });
    await team.get(Namespace, { name: "team-a" });
    assert.equal((calls[0].args[0] as KubeObject).metadata?.namespace, "team-a");
    assert.deepEqual(calls[1].args[1], { name: "a", namespace: "team-a" });
    assert.equal((calls[2].args[1] as { namespace: string }).namespace, "team-a");
    assert.equal((calls[3].args[1] as { namespace: string }).namespace, "team-a");
    assert.deepEqual(calls[4].args[1], { labelSelector: "x=y", namespace: "team-a" });
    assert.deepEqual(calls[5].args[1], { name: "team-a" }, "cluster-scoped keys are left alone");
  });

  it("refuses objects, keys and lists in another namespace", async () => {
    const { client } = recordingClient();
    const team = namespacedClient(client, "team-a");
    await assert.rejects(
      team.update(cm("team-b")),
      /in namespace team-b, but this client is confined to namespace team-a/,
    );
    await assert.rejects(
      team.get(ConfigMap, { namespace: "team-b", name: "a" }),
      /confined to namespace team-a/,
    );
    await assert.rejects(
      team.list(ConfigMap, { namespace: "team-b" }),
      /confined to namespace team-a/,
    );
    const same = await team.update(cm("team-a"));
    assert.equal(same.metadata?.namespace, "team-a");
  });
});
