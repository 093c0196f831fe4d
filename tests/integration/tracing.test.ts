// The example operator with tracing on, against a real trace backend: Jaeger v2 (built by
// tools/jaeger/build.ts) receives its spans over OTLP/HTTP, and its query API must show a
// reconcile span with the reconcile's API calls and cache reads as children, carrying the
// attributes the tracing guide lists; the operator's log records inside that reconcile carry
// its trace id.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { type Client, newClient } from "../../lib/client/client.ts";
import { Environment } from "../../lib/testing/envtest.ts";
import { Example } from "../../examples/example-operator/api/example.ts";
import { ensureJaegerBinary } from "../../tools/jaeger/build.ts";
import { eventually } from "../support/eventually.ts";

const main = fileURLToPath(new URL("../../examples/example-operator/main.ts", import.meta.url));
/** Milliseconds for building (when not cached) and starting Jaeger and the control plane. */
const START_TIMEOUT = 900_000;
const TEST_TIMEOUT = 180_000;

/** A free loopback port (closed again, for a process to take). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** A span as Jaeger's query API (`/api/traces`) returns it. */
interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
}

function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

const env = new Environment({ crds: [Example] });
let client: Client;
let jaeger: ChildProcess | undefined;
let jaegerOutput = "";
let workDir = "";
let otlpPort = 0;
let queryPort = 0;

before(async () => {
  const binary = await ensureJaegerBinary();
  workDir = mkdtempSync(join(tmpdir(), "rudder-jaeger-"));
  otlpPort = await freePort();
  queryPort = await freePort();
  const grpcPort = await freePort();
  const config = join(workDir, "jaeger.yaml");
  // Memory storage, an OTLP/HTTP receiver and the query API, all on loopback; no telemetry port.
  writeFileSync(
    config,
    `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:${queryPort}
    grpc:
      endpoint: 127.0.0.1:${grpcPort}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${otlpPort}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`,
  );
  const jaegerEnv = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith("OTEL_")),
  );
  jaeger = spawn(binary, [`--config=file:${config}`], {
    stdio: ["ignore", "pipe", "pipe"],
    env: jaegerEnv,
  });
  jaeger.stdout!.on("data", (chunk) => (jaegerOutput += chunk));
  jaeger.stderr!.on("data", (chunk) => (jaegerOutput += chunk));
  await eventually(
    "Jaeger answers queries",
    async () => {
      if (jaeger?.exitCode !== null) assert.fail(`Jaeger exited: ${jaegerOutput}`);
      const response = await fetch(`http://127.0.0.1:${queryPort}/api/services`).catch(() =>
        undefined
      );
      await response?.body?.cancel();
      return response?.ok === true;
    },
    60_000,
    200,
  );
  client = newClient(await env.start());
}, { timeout: START_TIMEOUT });

after(async () => {
  try {
    jaeger?.kill("SIGKILL");
    await env.stop();
  } finally {
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  }
}, { timeout: TEST_TIMEOUT });

/** Starts the example operator on this runtime with tracing on; collects its output. */
function operator(namespace: string) {
  const args = "Deno" in globalThis ? ["run", "-A", main] : [main];
  const child = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      KUBECONFIG: env.kubeconfigPath,
      LEADER_ELECTION_NAMESPACE: namespace,
      METRICS_BIND_ADDRESS: "127.0.0.1:0",
      HEALTH_PROBE_BIND_ADDRESS: "127.0.0.1:0",
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlpPort}`,
      OTEL_SERVICE_NAME: "traced-example-operator",
    },
  });
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, output: () => output };
}

/** Every span Jaeger holds of the operator's service. */
async function operatorSpans(): Promise<JaegerSpan[]> {
  const url = `http://127.0.0.1:${queryPort}/api/traces?service=traced-example-operator&limit=1000`;
  const response = await fetch(url);
  if (!response.ok) return [];
  const body = await response.json() as { data?: { spans: JaegerSpan[] }[] };
  return (body.data ?? []).flatMap((trace) => trace.spans);
}

describe("tracing with a real trace backend", () => {
  it(
    "shows a reconcile with its API calls and cache reads as children, and logs that join",
    { timeout: TEST_TIMEOUT },
    async () => {
      await client.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "traced" } });
      const op = operator("traced");
      try {
        await client.create({
          apiVersion: "example.com/v1alpha1",
          kind: "Example",
          metadata: { name: "web", namespace: "traced" },
          spec: { replicas: 1 },
        });
        await eventually(
          "the Example is Running",
          async () => {
            const example = await client.get(Example, { namespace: "traced", name: "web" });
            return example.status?.phase === "Running";
          },
          90_000,
          200,
        );
        // A graceful stop flushes the spans still batched.
        process.kill(op.child.pid!, "SIGTERM");
        assert.equal(await op.exited, 0, op.output());
      } finally {
        op.child.kill("SIGKILL");
      }

      let spans: JaegerSpan[] = [];
      await eventually(
        "Jaeger holds the operator's reconciles",
        async () => {
          spans = await operatorSpans();
          return spans.some((span) => tag(span, "rudder.reconcile.result") === "requeue_after");
        },
        30_000,
        250,
      );
      const childrenOf = (parent: JaegerSpan) =>
        spans.filter((span) =>
          span.references.some((ref) => ref.refType === "CHILD_OF" && ref.spanID === parent.spanID)
        );

      // The reconcile that made the Deployment and set the status.
      const reconcile = spans.find((span) =>
        tag(span, "rudder.k8s.name") === "web" &&
        childrenOf(span).some((child) => tag(child, "rudder.k8s.subresource") === "status")
      );
      assert.ok(reconcile, "a reconcile span with the status write among its children");
      assert.match(reconcile.operationName, /^reconcile /);
      assert.ok(
        !reconcile.references.some((ref) => ref.refType === "CHILD_OF"),
        "a reconcile starts its own trace",
      );
      assert.equal(tag(reconcile, "k8s.namespace.name"), "traced");
      assert.equal(typeof tag(reconcile, "rudder.controller"), "string");
      assert.equal(typeof tag(reconcile, "rudder.reconcile_id"), "string");
      assert.equal(typeof tag(reconcile, "rudder.queue.wait_ms"), "number");

      const children = childrenOf(reconcile);
      const apiCalls = children.filter((span) => tag(span, "http.request.method") !== undefined);
      assert.ok(apiCalls.length > 0, `API calls under the reconcile: ${JSON.stringify(children)}`);
      for (const call of apiCalls) {
        assert.equal(call.traceID, reconcile.traceID);
        assert.equal(typeof tag(call, "http.response.status_code"), "number");
        assert.equal(tag(call, "server.address"), "127.0.0.1");
        assert.equal(typeof tag(call, "rudder.k8s.verb"), "string");
        assert.equal(typeof tag(call, "rudder.k8s.resource"), "string");
        assert.equal(tag(call, "k8s.namespace.name"), "traced");
      }
      assert.equal(tag(reconcile, "rudder.reconcile.result"), "requeue_after");
      const cacheReads = children.filter((span) => tag(span, "rudder.cached") === true);
      assert.ok(
        cacheReads.some((span) =>
          tag(span, "rudder.k8s.verb") === "get" && tag(span, "rudder.k8s.kind") === "Example"
        ),
        "the cached read of the Example is a child",
      );

      // The first reconcile came from the informer's event, which named the object's version.
      assert.ok(
        spans.some((span) =>
          tag(span, "rudder.k8s.name") === "web" &&
          typeof tag(span, "rudder.event.resource_version") === "string"
        ),
        "a reconcile names the resourceVersion of the object that triggered it",
      );
      // The informer's first list has a span of its own.
      assert.ok(spans.some((span) => span.operationName === "informer list"));

      // Log records written inside the reconcile carry its trace and span ids.
      const records = op.output().split("\n").filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { properties: Record<string, unknown> });
      const inside = records.filter((record) =>
        record.properties.reconcileID === tag(reconcile, "rudder.reconcile_id")
      );
      assert.ok(inside.length > 0, "the reconcile logged");
      for (const record of inside) {
        assert.equal(record.properties.trace_id, reconcile.traceID);
        assert.equal(record.properties.span_id, reconcile.spanID);
      }
    },
  );
});
