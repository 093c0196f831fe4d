// EventRecorder against the real API server: the server accepts the Events it writes (names,
// references, reporter, times, notes cut to the limit) and their series, and `list` returns them.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ConfigMap, EventsV1Event, Namespace } from "../../lib/api/builtins.ts";
import type { KubeObject } from "../../lib/api/resource.ts";
import { type Client, newClient } from "../../lib/client/client.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { EventRecorder } from "../../lib/events/recorder.ts";
import { captureLogs } from "../support/logs.ts";

const env = new Environment();
const namespace = "events-it";
let client: Client;
let recorder: EventRecorder;
let logs: Awaited<ReturnType<typeof captureLogs>>;

async function eventsAbout(obj: KubeObject, inNamespace = namespace) {
  const list = await client.list(EventsV1Event, { namespace: inNamespace });
  return list.items.filter((e) => e.regarding?.uid === obj.metadata?.uid);
}

async function configMap(name: string): Promise<ConfigMap> {
  const cm: ConfigMap = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { namespace, name },
    data: { a: "1" },
  };
  return await client.create(cm);
}

before(async () => {
  logs = await captureLogs();
  client = newClient(await env.start());
  await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  recorder = new EventRecorder(client, {
    reportingController: "rudder.dev/integration-test",
    reportingInstance: "integration-test-0",
  });
});

after(async () => {
  await recorder.flush();
  await env.stop();
  await logs.stop();
});

describe("EventRecorder against the API server", () => {
  it("writes an Event that list returns with the right fields", async () => {
    const settings = await configMap("settings");
    const related = await configMap("related");
    recorder.event(settings, "Warning", "Invalid", "Validate", "key a is not allowed", {
      related,
    });
    await recorder.flush();
    const [event, ...others] = await eventsAbout(settings);
    assert.equal(others.length, 0);
    assert.match(event.metadata!.name!, /^settings\.[0-9a-f]{16}$/);
    assert.equal(event.metadata?.namespace, namespace);
    assert.equal(event.type, "Warning");
    assert.equal(event.reason, "Invalid");
    assert.equal(event.action, "Validate");
    assert.equal(event.note, "key a is not allowed");
    assert.equal(event.reportingController, "rudder.dev/integration-test");
    assert.equal(event.reportingInstance, "integration-test-0");
    assert.match(event.eventTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.deepEqual(event.regarding, {
      apiVersion: "v1",
      kind: "ConfigMap",
      namespace,
      name: "settings",
      uid: settings.metadata!.uid!,
      resourceVersion: settings.metadata!.resourceVersion!,
    });
    assert.equal(event.related?.uid, related.metadata?.uid);
    assert.equal(event.series, undefined);
  });

  it("folds repeats into the Event's series, whose count grows", async () => {
    const cm = await configMap("repeated");
    for (let i = 0; i < 3; i++) recorder.event(cm, "Normal", "Synced", "Sync", "in sync");
    await recorder.flush();
    const [first, ...others] = await eventsAbout(cm);
    assert.equal(others.length, 0, "one Event for the repeats");
    assert.equal(first.series?.count, 3);
    assert.ok(first.series?.lastObservedTime);

    for (let i = 0; i < 2; i++) recorder.event(cm, "Normal", "Synced", "Sync", "in sync");
    await recorder.flush();
    const [second, ...more] = await eventsAbout(cm);
    assert.equal(more.length, 0);
    assert.equal(second.metadata?.name, first.metadata?.name);
    assert.equal(second.series?.count, 5);
  });

  it("puts Events about cluster-scoped objects in default, and cuts long notes to what the API allows", async () => {
    const ns = await client.get(Namespace, { name: namespace });
    recorder.event(ns, "Normal", "Labelled", "Label", "n".repeat(5000));
    await recorder.flush();
    const [event] = await eventsAbout(ns, "default");
    assert.equal(event.regarding?.kind, "Namespace");
    assert.equal(event.regarding?.namespace, undefined);
    assert.equal(event.note?.length, 1024);
  });

  it("logs no failure for Events the server accepted", () => {
    const failures = logs.records.filter((r) =>
      r.category.join(".") === "rudder.events" && r.level === "warning"
    );
    assert.deepEqual(failures.map((r) => r.properties.error), []);
  });
});
