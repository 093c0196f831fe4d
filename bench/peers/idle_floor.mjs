/**
 * The floor of the startup measure's idle RSS, one per runtime: what the scaffold's operator does
 * over the wire while idle, written with the runtime's own APIs and nothing else. No Rudder code,
 * no npm package, no TypeScript (plain JavaScript, so Node strips no types and Deno transpiles
 * nothing):
 *
 * - the kubeconfig read (the suite's JSON one: client certificate, key and CA, as data);
 * - one informer: a list of ConfigMaps in the namespace, then a watch with bookmarks, every line
 *   parsed, re-watched from the last resourceVersion when the server ends it;
 * - leader election: a Lease in the namespace, read and renewed every 2 s (Rudder's and
 *   client-go's retry period), created when missing;
 * - an HTTPS server for metrics on a free loopback port, and `/healthz` and `/readyz` on
 *   `--port` over HTTP, ready once the list is in. The HTTPS server's certificate and key are the
 *   kubeconfig's client pair (Rudder makes a self-signed one; nobody connects in this measure);
 * - `--deps`: also what ../shared/DESIGN.md's dependencies cost before an operator's own code:
 *   zod with a resource's schemas built and every object parsed, and LogTape configured with a
 *   sink and called for every event; `--zod` loads and uses zod alone, to tell the two apart.
 *
 * The HTTP client is the runtime's usual one: `fetch` with a `Deno.createHttpClient` on Deno,
 * `fetch` with `tls` options on Bun, `node:https` with a keep-alive agent on Node.
 *
 * Run by bench/suite.ts as `floor-idle-<runtime>` and `floor-idle-deps-<runtime>`, with the
 * flags and environment Rudder gives an operator on that runtime.
 *
 * @module
 */

const deno = globalThis.Deno;
const bun = globalThis.Bun;
const node = !deno && !bun;
/** Node's `process`, read only where Deno is not running (its getter would start Deno's Node layer). */
const nodeProcess = deno ? undefined : globalThis.process;

const argv = deno ? deno.args : nodeProcess.argv.slice(2);
/** The value after `--name`, or undefined. */
function flag(name) {
  const at = argv.indexOf(`--${name}`);
  return at >= 0 ? argv[at + 1] : undefined;
}
const kubeconfigPath = flag("kubeconfig");
const namespace = flag("namespace");
const port = Number(flag("port"));
const withLogTape = argv.includes("--deps");
const withZod = withLogTape || argv.includes("--zod");
if (!kubeconfigPath || !namespace || !Number.isInteger(port)) {
  throw new Error(
    "usage: idle_floor.mjs --kubeconfig <json> --namespace <ns> --port <n> [--deps | --zod]",
  );
}

async function readText(path) {
  if (deno) return await deno.readTextFile(path);
  if (bun) return await bun.file(path).text();
  const { readFileSync } = nodeProcess.getBuiltinModule("node:fs");
  return readFileSync(path, "utf8");
}

const kubeconfig = JSON.parse(await readText(kubeconfigPath));
const contextName = kubeconfig["current-context"];
const context = kubeconfig.contexts.find((c) => c.name === contextName).context;
const cluster = kubeconfig.clusters.find((c) => c.name === context.cluster).cluster;
const user = kubeconfig.users.find((u) => u.name === context.user).user;
const ca = atob(cluster["certificate-authority-data"]);
const cert = atob(user["client-certificate-data"]);
const key = atob(user["client-key-data"]);
const server = cluster.server.replace(/\/$/, "");

/**
 * One request to the API server: `{ status, text }`, or with `onChunk` the body handed over as
 * it comes (a watch), resolving at its end.
 */
let request;
if (node) {
  const https = nodeProcess.getBuiltinModule("node:https");
  const agent = new https.Agent({ keepAlive: true, ca, cert, key });
  request = (method, path, body, onChunk) =>
    new Promise((resolve, reject) => {
      const req = https.request(`${server}${path}`, {
        method,
        agent,
        headers: {
          Accept: "application/json",
          ...(body ? { "Content-Type": "application/json" } : {}),
        },
      }, (res) => {
        res.setEncoding("utf8");
        let text = "";
        res.on("data", (chunk) => onChunk ? onChunk(chunk) : text += chunk);
        res.on("end", () => resolve({ status: res.statusCode, text }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
} else {
  const init = deno ? { client: deno.createHttpClient({ caCerts: [ca], cert, key }) } : {
    tls: { ca, cert, key },
  };
  request = async (method, path, body, onChunk) => {
    const response = await fetch(`${server}${path}`, {
      ...init,
      method,
      body,
      headers: {
        Accept: "application/json",
        ...(body ? { "Content-Type": "application/json" } : {}),
      },
    });
    if (!onChunk) return { status: response.status, text: await response.text() };
    const decoder = new TextDecoder();
    for await (const bytes of response.body) onChunk(decoder.decode(bytes, { stream: true }));
    return { status: response.status, text: "" };
  };
}

// --deps, --zod: the dependencies, as an operator's start-up uses them.
let parseObject = (object) => object;
/** Called for every event; LogTape's logger with --deps. */
let logEvent = (_object) => {};
if (withLogTape) {
  const logtape = await import("@logtape/logtape");
  const lines = [];
  await logtape.configure({
    sinks: { memory: (record) => lines.length < 100 && lines.push(record) },
    // LogTape's own diagnostics at warning, as Rudder's configureLogging sets them: at info
    // it prints a notice to the console at start.
    loggers: [
      { category: ["floor"], lowestLevel: "info", sinks: ["memory"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["memory"] },
    ],
  });
  const logger = logtape.getLogger(["floor"]);
  logEvent = (object) => logger.debug("event {name}", { name: object?.metadata?.name });
}
if (withZod) {
  const { z } = await import("zod");
  const objectMeta = z.object({
    name: z.string().optional(),
    generateName: z.string().optional(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    generation: z.number().int().optional(),
    creationTimestamp: z.string().optional(),
    deletionTimestamp: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    finalizers: z.array(z.string()).optional(),
    ownerReferences: z.array(z.object({
      apiVersion: z.string(),
      kind: z.string(),
      name: z.string(),
      uid: z.string(),
      controller: z.boolean().optional(),
      blockOwnerDeletion: z.boolean().optional(),
    })).optional(),
  }).passthrough();
  const condition = z.object({
    type: z.string(),
    status: z.enum(["True", "False", "Unknown"]),
    reason: z.string().optional(),
    message: z.string().optional(),
    lastTransitionTime: z.string().optional(),
    observedGeneration: z.number().int().optional(),
  });
  const configMap = z.object({
    apiVersion: z.string().optional(),
    kind: z.string().optional(),
    metadata: objectMeta,
    data: z.record(z.string(), z.string()).optional(),
    binaryData: z.record(z.string(), z.string()).optional(),
    immutable: z.boolean().optional(),
  });
  // A custom resource's schema, as the scaffold defines one at start.
  z.object({
    apiVersion: z.string(),
    kind: z.string(),
    metadata: objectMeta,
    spec: z.object({ replicas: z.number().int().min(0).default(1), image: z.string() }),
    status: z.object({
      conditions: z.array(condition).optional(),
      readyReplicas: z.number().int().optional(),
    }).optional(),
  }).parse({
    apiVersion: "example.com/v1",
    kind: "Example",
    metadata: { name: "floor" },
    spec: { image: "floor" },
  });
  parseObject = (object) => {
    logEvent(object);
    return configMap.parse(object);
  };
}

// The informer: list, then watch from its resourceVersion for as long as the process runs.
const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`;
const store = new Map();
let resourceVersion;
for (let token = "";;) {
  const list = await request("GET", `${base}?limit=500&continue=${encodeURIComponent(token)}`);
  if (list.status !== 200) throw new Error(`list: HTTP ${list.status}: ${list.text}`);
  const page = JSON.parse(list.text);
  for (const item of page.items) store.set(item.metadata.name, parseObject(item));
  resourceVersion = page.metadata.resourceVersion;
  token = page.metadata.continue ?? "";
  if (!token) break;
}
(async () => {
  for (;;) {
    let pending = "";
    const watched = request(
      "GET",
      `${base}?watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=${resourceVersion}`,
      undefined,
      (chunk) => {
        pending += chunk;
        for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
          const event = JSON.parse(pending.slice(0, nl));
          pending = pending.slice(nl + 1);
          resourceVersion = event.object.metadata.resourceVersion;
          if (event.type === "DELETED") store.delete(event.object.metadata.name);
          else if (event.type !== "BOOKMARK") {
            store.set(event.object.metadata.name, parseObject(event.object));
          }
        }
      },
    );
    // A failed watch is retried a second later, as an informer would (after a backoff).
    await watched.catch(() => new Promise((resolve) => setTimeout(resolve, 1000)));
  }
})();

// Leader election: read the Lease, take or renew it, every 2 s.
const leasePath =
  `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases/` +
  "bench-idle-floor-leader";
const identity = `floor-${Math.random().toString(36).slice(2)}`;
const microTime = () => new Date().toISOString().replace(/Z$/, "000Z");
async function renew() {
  const got = await request("GET", leasePath);
  const now = microTime();
  if (got.status === 404) {
    await request(
      "POST",
      leasePath.slice(0, leasePath.lastIndexOf("/")),
      JSON.stringify({
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: "bench-idle-floor-leader", namespace },
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: 15,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: 0,
        },
      }),
    );
    return;
  }
  const lease = JSON.parse(got.text);
  lease.spec = { ...lease.spec, holderIdentity: identity, renewTime: now };
  await request("PUT", leasePath, JSON.stringify(lease));
}
await renew();
setInterval(() => renew().catch(() => {}), 2000);

// The servers: metrics over HTTPS on a free port, probes over HTTP on --port.
const probe = (path) => path === "/healthz" || path === "/readyz";
if (deno) {
  deno.serve(
    { hostname: "127.0.0.1", port: 0, cert, key, onListen() {} },
    () => new Response("# no metrics\n"),
  );
  deno.serve(
    { hostname: "127.0.0.1", port, onListen() {} },
    (req) =>
      probe(new URL(req.url).pathname)
        ? new Response("ok")
        : new Response("not found", { status: 404 }),
  );
} else if (bun) {
  bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert, key },
    fetch: () => new Response("# no metrics\n"),
  });
  bun.serve({
    hostname: "127.0.0.1",
    port,
    fetch: (req) =>
      probe(new URL(req.url).pathname)
        ? new Response("ok")
        : new Response("not found", { status: 404 }),
  });
} else {
  const https = nodeProcess.getBuiltinModule("node:https");
  const http = nodeProcess.getBuiltinModule("node:http");
  https.createServer({ cert, key }, (_req, res) => res.end("# no metrics\n"))
    .listen(0, "127.0.0.1");
  http.createServer((req, res) => {
    res.statusCode = probe(new URL(req.url, "http://localhost").pathname) ? 200 : 404;
    res.end(res.statusCode === 200 ? "ok" : "not found");
  }).listen(port, "127.0.0.1");
}
