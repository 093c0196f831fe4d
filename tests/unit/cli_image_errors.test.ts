// `rudder build --image` and `rudder manifests --image` say what is wrong: a registry that is
// down or cuts an upload is named with the runtime's reason (not a bare "fetch failed"), a
// plain-HTTP registry on loopback is told to add --insecure-registry, the flag is refused for a
// registry elsewhere, SOURCE_DATE_EPOCH and --output are checked before compiling, a missing
// manifest is named repo@sha256:…, and a reference that is not one is refused.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createNetServer } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { checkImageRequest, type ImageRequest } from "../../cli/image.ts";
import { main } from "../../cli/main.ts";
import { sha256Digest } from "../../cli/oci/image.ts";
import { RegistryClient, RegistryConnectionError, RegistryError } from "../../cli/oci/registry.ts";
import type { CommandIO } from "../../cli/args.ts";
import { UsageError } from "../../cli/args.ts";

const T = { timeout: 30_000 };
let root = "";
const servers: Server[] = [];

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "rudder-image-errors-"));
}, T);

after(async () => {
  for (const server of servers) {
    server.closeAllConnections?.();
    await new Promise((resolve) => server.close(resolve));
  }
  fs.rmSync(root, { recursive: true, force: true });
}, T);

/** A plain-HTTP registry on loopback answering with `handle`; resolves its `host:port`. */
async function registry(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<string> {
  const server = createServer(handle);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function request(overrides: Partial<ImageRequest>): ImageRequest {
  return {
    image: "127.0.0.1:5000/op:1",
    base: "127.0.0.1:5000/base:1",
    push: false,
    insecureRegistry: true,
    annotations: {},
    ...overrides,
  };
}

function memoryIO(env: Record<string, string | undefined> = {}): CommandIO & {
  lines: string[];
} {
  const lines: string[] = [];
  return {
    out: (line) => lines.push(line),
    err: (line) => lines.push(line),
    cwd: root,
    env: { HOME: root, XDG_CACHE_HOME: path.join(root, "cache"), ...env },
    lines,
  };
}

/** A project `rudder build` and `rudder manifests` accept: a directory with a main.ts. */
function project(): string {
  const dir = fs.mkdtempSync(path.join(root, "project-"));
  fs.writeFileSync(path.join(dir, "main.ts"), "console.log('operator');\n");
  return dir;
}

describe("a registry that gives no answer", () => {
  it("names the registry, the request and the reason when it is down", T, async () => {
    const host = `127.0.0.1:${await closedPort()}`;
    const client = new RegistryClient(host, { insecure: true });
    const err = await client.getManifest("op", "1").catch((e) => e);
    assert.ok(err instanceof RegistryConnectionError, String(err));
    assert.match(err.message, new RegExp(`cannot reach the registry ${host} \\(GET /v2/op/`));
    assert.match(err.message, /refused|ECONNREFUSED/i, err.message);
    assert.notEqual(err.message.replace(/^.*\): /, ""), "fetch failed");
  });

  it("names the upload and the reset when the registry cuts it", T, async () => {
    const host = await registry((req, res) => {
      if (req.method === "HEAD") return void res.writeHead(404).end();
      if (req.method === "POST") {
        return void res.writeHead(202, { location: "/v2/op/blobs/uploads/u1" }).end();
      }
      // The PUT: cut the connection as soon as the body starts arriving.
      req.once("data", () => req.socket.destroy());
    });
    const client = new RegistryClient(host, { insecure: true });
    const blob = new Uint8Array(4 * 1024 * 1024);
    const err = await client.pushBlob("op", sha256Digest(blob), blob).catch((e) => e);
    assert.ok(err instanceof RegistryConnectionError, String(err));
    assert.match(err.message, /\(PUT \/v2\/op\/blobs\/uploads\/u1\)/, err.message);
    assert.match(err.message, /reset|closed|ECONNRESET|EPIPE|broken pipe/i, err.message);
  });

  it("names the download when the registry cuts a blob short", T, async () => {
    const host = await registry((_req, res) => {
      res.writeHead(200, { "content-length": "100000" });
      res.write(new Uint8Array(1000), () => res.socket?.destroy());
    });
    const client = new RegistryClient(host, { insecure: true });
    const digest = `sha256:${"b".repeat(64)}`;
    const err = await client.getBlob("op", digest).catch((e) => e);
    assert.ok(err instanceof RegistryConnectionError, String(err));
    assert.match(
      err.message,
      new RegExp(`cannot reach the registry ${host} \\(GET blob op@${digest}\\)`),
    );
  });

  it("tells a plain-HTTP registry on loopback to add --insecure-registry", T, async () => {
    const host = await registry((_req, res) => void res.writeHead(200).end("{}"));
    const err = await new RegistryClient(host).check("op", "pull,push", 2_000).catch((e) => e);
    assert.ok(err instanceof RegistryConnectionError, String(err));
    assert.match(err.message, /speaks plain HTTP, not HTTPS; add --insecure-registry/);
    const other = await new RegistryClient(host).getManifest("op", "1").catch((e) => e);
    assert.match(other.message, /needs --insecure-registry/, other.message);
  });

  it("is found before compiling, and the build says why", T, async () => {
    const dir = project();
    const host = `127.0.0.1:${await closedPort()}`;
    const io = memoryIO();
    const code = await main([
      "build",
      "--dir",
      dir,
      "--runtime",
      "bun",
      "--image",
      `${host}/op:1`,
      "--base",
      `${host}/base:1`,
      "--push",
      "--insecure-registry",
    ], io);
    assert.equal(code, 1);
    const text = io.lines.join("\n");
    assert.match(
      text,
      new RegExp(`rudder build: cannot reach the registry ${host} \\(GET /v2/\\)`),
    );
    assert.match(text, /refused|ECONNREFUSED/i, text);
    assert.doesNotMatch(text, /compiling|\$ /, "nothing was compiled");
  });
});

describe("registry credentials, checked before compiling", () => {
  const basic = (accept: string | undefined) => (req: IncomingMessage, res: ServerResponse) => {
    if (accept && req.headers.authorization === accept) return void res.writeHead(200).end("{}");
    res.writeHead(401, { "www-authenticate": 'Basic realm="registry"' }).end();
  };

  it("are asked for when the registry wants some and there are none", T, async () => {
    const host = await registry(basic(undefined));
    const err = await checkImageRequest(
      request({ image: `${host}/op:1`, push: true }),
      memoryIO(),
      { credentials: () => undefined },
    ).catch((e) => e);
    assert.ok(err instanceof RegistryError, String(err));
    assert.match(err.message, /wants a user name and password; log in/);
  });

  it("are refused by name when wrong, and accepted when right", T, async () => {
    const good = `Basic ${btoa("me:right")}`;
    const host = await registry(basic(good));
    const wrong = await checkImageRequest(
      request({ image: `${host}/op:1`, push: true }),
      memoryIO(),
      { credentials: () => ({ username: "me", password: "wrong" }) },
    ).catch((e) => e);
    assert.ok(wrong instanceof RegistryError, String(wrong));
    assert.match(wrong.message, /refused the user name and password/);
    assert.doesNotMatch(wrong.message, /wrong/);
    await checkImageRequest(
      request({ image: `${host}/op:1`, push: true }),
      memoryIO(),
      { credentials: () => ({ username: "me", password: "right" }) },
    );
  });
});

describe("image flags checked before compiling", () => {
  const build = async (args: string[], env: Record<string, string> = {}) => {
    const io = memoryIO(env);
    const code = await main(["build", "--dir", project(), "--runtime", "bun", ...args], io);
    return { code, text: io.lines.join("\n") };
  };

  it("refuses --insecure-registry when no registry is on this machine", T, async () => {
    const { code, text } = await build([
      "--image",
      "registry.example.com/op:1",
      "--push",
      "--insecure-registry",
    ]);
    assert.equal(code, 2);
    assert.match(
      text,
      /--insecure-registry is for a registry on this machine .*registry\.example\.com and gcr\.io are not/,
    );
  });

  it("refuses a SOURCE_DATE_EPOCH that is not whole seconds", T, async () => {
    for (const value of ["yesterday", "1e9", "-5", "17.5"]) {
      const err = await checkImageRequest(
        request({ output: path.join(root, "image.tar") }),
        memoryIO({ SOURCE_DATE_EPOCH: value }),
      ).catch((e) => e);
      assert.ok(err instanceof UsageError, `${value}: ${err}`);
      assert.match(err.message, /SOURCE_DATE_EPOCH must be whole seconds/);
      assert.ok(err.message.includes(JSON.stringify(value)), err.message);
    }
    await checkImageRequest(
      request({ output: path.join(root, "ok", "image.tar") }),
      memoryIO({ SOURCE_DATE_EPOCH: "1700000000" }),
    );
  });

  it("refuses an --output that cannot be written", T, async () => {
    const dir = fs.mkdtempSync(path.join(root, "out-"));
    const isDir = await checkImageRequest(request({ output: dir }), memoryIO()).catch((e) => e);
    assert.ok(isDir instanceof UsageError, String(isDir));
    assert.match(isDir.message, /--output .* cannot be written: it is a directory/);
    const file = path.join(dir, "file");
    fs.writeFileSync(file, "");
    const under = await checkImageRequest(
      request({ output: path.join(file, "image.tar") }),
      memoryIO(),
    ).catch((e) => e);
    assert.ok(under instanceof UsageError, String(under));
    assert.match(under.message, /cannot be written: cannot create/);
  });
});

describe("registry messages", () => {
  it("name a missing manifest repo@sha256:…, a missing tag repo:tag", T, async () => {
    const host = await registry((_req, res) => {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ errors: [{ code: "MANIFEST_UNKNOWN", message: "unknown" }] }));
    });
    const client = new RegistryClient(host, { insecure: true });
    const digest = `sha256:${"a".repeat(64)}`;
    const byDigest = await client.getManifest("op", digest).catch((e) => e);
    assert.match(byDigest.message, new RegExp(`GET manifest op@${digest} on ${host}: 404`));
    const byTag = await client.getManifest("op", "1.0").catch((e) => e);
    assert.match(byTag.message, new RegExp(`GET manifest op:1\\.0 on ${host}: 404`));
  });
});

describe("rudder manifests --image", () => {
  it("refuses a reference that is not one, naming the flag", T, async () => {
    const dir = project();
    for (const bad of ["not a ref!!", "Registry Host.example/op:1", "op:bad tag"]) {
      const io = memoryIO();
      const code = await main(["manifests", "--dir", dir, "--image", bad], io);
      assert.equal(code, 2, `${bad}: ${io.lines.join("\n")}`);
      assert.match(io.lines.join("\n"), /rudder manifests: --image: image reference/);
      assert.ok(!fs.existsSync(path.join(dir, "config")), "nothing written");
    }
  });
});
