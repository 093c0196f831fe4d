// The parts of `rudder build --image`, without network or containers: the tar writer and
// reader, layers and their digests (the same bytes on Deno and Bun), image references, platform
// selection, the new image's manifest and config, the archive layout, Docker config
// credentials, and the registry client against a scripted fetch.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { archiveEntries } from "../../cli/oci/archive.ts";
import { BlobCache } from "../../cli/oci/cache.ts";
import { credentialsFromConfig, normalizeRegistryKey } from "../../cli/oci/credentials.ts";
import {
  appendLayer,
  createdTime,
  executableLayer,
  type ImageConfig,
  type ImageIndex,
  type ImageManifest,
  jsonBytes,
  MediaType,
  selectPlatform,
  sha256Digest,
  withEnv,
} from "../../cli/oci/image.ts";
import {
  formatReference,
  isLoopbackRegistry,
  parseReference,
  pinnedReference,
} from "../../cli/oci/reference.ts";
import { parseChallenge, RegistryClient, RegistryError } from "../../cli/oci/registry.ts";
import { readTar, tar } from "../../cli/oci/tar.ts";
import { imageAnnotations, imagePlatform, imageRequest, sourceURL } from "../../cli/image.ts";
import { parseCommandArgs, UsageError } from "../../cli/args.ts";
import { buildSpec } from "../../cli/build.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array) => new TextDecoder().decode(data);

/** Pseudo-random but fixed bytes (a xorshift stream), so digests can be pinned. */
function fixedBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  let x = 0x12345678;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    // Half text-like, half random: both paths of the compressor.
    out[i] = i % 2048 < 1024 ? 97 + ((x >>> 0) % 6) : x & 0xff;
  }
  return out;
}

describe("tar", () => {
  it("writes ustar headers with the given mode, numeric owners and the fixed time", () => {
    const archive = tar([{ type: "file", path: "op", data: bytes("hello"), mode: 0o755 }], {
      mtime: 1_700_000_000,
    });
    assert.equal(archive.length, 512 + 512 + 1024);
    const header = archive.subarray(0, 512);
    assert.equal(text(header.subarray(0, 2)), "op");
    assert.equal(text(header.subarray(100, 107)), "0000755");
    assert.equal(text(header.subarray(108, 115)), "0000000");
    assert.equal(text(header.subarray(124, 135)), "00000000005");
    assert.equal(text(header.subarray(136, 147)), (1_700_000_000).toString(8));
    assert.equal(text(header.subarray(156, 157)), "0");
    assert.equal(text(header.subarray(257, 263)), "ustar\0");
    assert.equal(text(header.subarray(263, 265)), "00");
    assert.equal(header[265], 0, "no user name: numeric ids only");
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : header[i];
    assert.equal(parseInt(text(header.subarray(148, 154)), 8), sum);
    assert.equal(text(archive.subarray(512, 517)), "hello");
    assert.ok(archive.subarray(517).every((b) => b === 0), "padding and end marker are zero");
  });

  it("gives the same bytes for the same entries, and pins them", () => {
    const entries = () => [
      { type: "directory" as const, path: "etc" },
      { type: "file" as const, path: "etc/passwd", data: bytes("root:x:0:0::/:\n") },
      { type: "symlink" as const, path: "lib64", target: "usr/lib64" },
    ];
    const first = tar(entries());
    assert.deepEqual(tar(entries()), first);
    assert.equal(
      sha256Digest(first),
      "sha256:313f04db93f8f7fee68e21204345ae14543fcea41c79649c2ad5959e623989af",
    );
  });

  it("round-trips files, directories, symlinks and names longer than 100 bytes", () => {
    const long = `${"deep/".repeat(30)}file.txt`;
    const target = `${"t".repeat(120)}`;
    const records = readTar(tar([
      { type: "directory", path: "home/nonroot", mode: 0o700, uid: 65532, gid: 65532 },
      { type: "file", path: long, data: bytes("x".repeat(600)), mode: 0o600 },
      { type: "symlink", path: "link", target },
    ], { mtime: 42 }));
    assert.deepEqual(
      records.map(({ path, type, mode, uid, gid, mtime, linkname }) => ({
        path,
        type,
        mode,
        uid,
        gid,
        mtime,
        linkname,
      })),
      [
        {
          path: "home/nonroot/",
          type: "directory",
          mode: 0o700,
          uid: 65532,
          gid: 65532,
          mtime: 42,
          linkname: "",
        },
        { path: long, type: "file", mode: 0o600, uid: 0, gid: 0, mtime: 42, linkname: "" },
        { path: "link", type: "symlink", mode: 0o777, uid: 0, gid: 0, mtime: 42, linkname: target },
      ],
    );
    assert.equal(text(records[1].data), "x".repeat(600));
  });

  it("rejects a header whose checksum is wrong", () => {
    const archive = tar([{ type: "file", path: "a", data: bytes("a") }]);
    archive[0] = "b".charCodeAt(0);
    assert.throws(() => readTar(archive), /bad header checksum/);
  });
});

describe("layers", () => {
  it("hold only /<name>, mode 0755, root-owned, with the time given", () => {
    const layer = executableLayer("my-operator", bytes("#!binary"), 1234);
    const records = readTar(new Uint8Array(gunzipSync(layer.blob)));
    assert.deepEqual(
      records.map(({ path, mode, uid, gid, mtime }) => ({ path, mode, uid, gid, mtime })),
      [{ path: "my-operator", mode: 0o755, uid: 0, gid: 0, mtime: 1234 }],
    );
    assert.equal(layer.descriptor.digest, sha256Digest(layer.blob));
    assert.equal(layer.descriptor.size, layer.blob.length);
    assert.equal(layer.descriptor.mediaType, MediaType.ociLayerGzip);
    assert.equal(layer.diffId, sha256Digest(new Uint8Array(gunzipSync(layer.blob))));
  });

  it("have the same digest on Deno and Bun, and one of Node's own: fixed header, level 9", () => {
    const layer = executableLayer("op", fixedBytes(300_000));
    assert.deepEqual([...layer.blob.subarray(0, 10)], [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3]);
    assert.equal(
      layer.diffId,
      "sha256:50dc9ca020045a9928c1fcf607ea03f7c134d70640c9c1b90725811a5f3e5c19",
    );
    // Node bundles Chromium's zlib, which picks other matches at level 9 than the zlib under
    // Deno's and Bun's node:zlib: the same tar, other (still fixed) compressed bytes.
    const onNode = !("Deno" in globalThis) && !("Bun" in globalThis);
    assert.equal(
      layer.descriptor.digest,
      onNode
        ? "sha256:af55cad81333e98652b53f968036b928c05c581ca2445831e323e283f3501d95"
        : "sha256:332dc9bf6a50723ad5d7fca311c627da27953c60dadfc5dc37c1d05738fcb9e7",
    );
  });

  it("refuse a name that is not a plain file name", () => {
    assert.throws(() => executableLayer("../etc/passwd", bytes("x")), /plain file name/);
  });

  it("take their time from SOURCE_DATE_EPOCH, or the epoch", () => {
    assert.deepEqual(createdTime({}), { seconds: 0, iso: "1970-01-01T00:00:00Z" });
    assert.deepEqual(createdTime({ SOURCE_DATE_EPOCH: "1700000000" }), {
      seconds: 1_700_000_000,
      iso: "2023-11-14T22:13:20Z",
    });
    assert.throws(() => createdTime({ SOURCE_DATE_EPOCH: "yesterday" }), /SOURCE_DATE_EPOCH/);
  });
});

describe("image references", () => {
  it("parse with Docker Hub's defaults, ports, tags and digests", () => {
    const digest = `sha256:${"a".repeat(64)}`;
    assert.deepEqual(parseReference("alpine"), {
      registry: "docker.io",
      repository: "library/alpine",
      tag: "latest",
      digest: undefined,
    });
    assert.deepEqual(parseReference("gcr.io/distroless/cc-debian12:nonroot"), {
      registry: "gcr.io",
      repository: "distroless/cc-debian12",
      tag: "nonroot",
      digest: undefined,
    });
    assert.deepEqual(parseReference(`127.0.0.1:5000/team/op@${digest}`), {
      registry: "127.0.0.1:5000",
      repository: "team/op",
      tag: undefined,
      digest,
    });
    assert.deepEqual(parseReference("localhost/op:1"), {
      registry: "localhost",
      repository: "op",
      tag: "1",
      digest: undefined,
    });
    assert.equal(parseReference("me/op:1").registry, "docker.io");
    assert.equal(
      formatReference(parseReference(`ghcr.io/me/op:1@${digest}`)),
      `ghcr.io/me/op:1@${digest}`,
    );
    assert.equal(
      pinnedReference(parseReference("ghcr.io/me/op:1"), digest),
      `ghcr.io/me/op@${digest}`,
    );
  });

  it("reject bad repositories, tags and digests", () => {
    assert.throws(() => parseReference("ghcr.io/Me/op"), /invalid repository/);
    assert.throws(() => parseReference("op:-bad"), /invalid tag/);
    assert.throws(() => parseReference("op@sha256:abc"), /digest/);
  });

  it("know which registries are on loopback", () => {
    assert.ok(isLoopbackRegistry("127.0.0.1:5000"));
    assert.ok(isLoopbackRegistry("localhost:5000"));
    assert.ok(isLoopbackRegistry("[::1]:5000"));
    assert.ok(!isLoopbackRegistry("registry.example.com"));
    assert.ok(!isLoopbackRegistry("127.0.0.1.example.com"));
  });
});

const digestOf = (n: number) => `sha256:${n.toString(16).padStart(64, "0")}`;

describe("platforms", () => {
  const index: ImageIndex = {
    schemaVersion: 2,
    manifests: [
      {
        mediaType: MediaType.ociManifest,
        digest: digestOf(1),
        size: 1,
        platform: { os: "linux", architecture: "amd64" },
      },
      {
        mediaType: MediaType.ociManifest,
        digest: digestOf(2),
        size: 1,
        platform: { os: "linux", architecture: "arm", variant: "v7" },
      },
      {
        mediaType: MediaType.ociManifest,
        digest: digestOf(3),
        size: 1,
        platform: { os: "linux", architecture: "arm64", variant: "v8" },
      },
      {
        mediaType: MediaType.ociManifest,
        digest: digestOf(4),
        size: 1,
        platform: { os: "unknown", architecture: "unknown" },
      },
    ],
  };

  it("pick the platform's manifest from an index", () => {
    assert.equal(selectPlatform(index, { os: "linux", architecture: "amd64" }).digest, digestOf(1));
    assert.equal(selectPlatform(index, { os: "linux", architecture: "arm64" }).digest, digestOf(3));
  });

  it("name the platforms there are when the one asked for is missing", () => {
    assert.throws(
      () => selectPlatform(index, { os: "linux", architecture: "s390x" }),
      /no linux\/s390x image \(it has: linux\/amd64, linux\/arm\/v7, linux\/arm64\/v8, unknown\/unknown\)/,
    );
  });

  it("come from the compile target, which must be linux", () => {
    assert.deepEqual(imagePlatform(undefined, "x64"), { os: "linux", architecture: "amd64" });
    assert.deepEqual(imagePlatform("aarch64-unknown-linux-gnu", "x64"), {
      os: "linux",
      architecture: "arm64",
    });
    assert.throws(() => imagePlatform("aarch64-apple-darwin", "x64"), /needs a linux target/);
  });
});

describe("the new image", () => {
  const baseConfig: ImageConfig = {
    architecture: "amd64",
    os: "linux",
    config: { User: "0", Env: ["PATH=/bin"], Cmd: ["/bin/sh"], Labels: { base: "yes" } },
    rootfs: { type: "layers", diff_ids: [digestOf(10)] },
    history: [{ created_by: "base" }],
  };
  const baseManifest: ImageManifest = {
    schemaVersion: 2,
    mediaType: MediaType.dockerManifest,
    config: { mediaType: MediaType.dockerConfig, digest: digestOf(11), size: 5 },
    layers: [{ mediaType: MediaType.dockerLayerGzip, digest: digestOf(12), size: 100 }],
  };
  const layer = executableLayer("op", bytes("binary"));
  const annotations = { "org.opencontainers.image.version": "1.2.3" };
  const image = appendLayer({ manifest: baseManifest, config: baseConfig }, layer, {
    name: "op",
    user: "65532:65532",
    created: "1970-01-01T00:00:00Z",
    annotations,
  });
  const manifest = JSON.parse(text(image.manifest)) as ImageManifest;
  const config = JSON.parse(text(image.config)) as ImageConfig;

  it("is an OCI manifest: the base's layers, then the executable's", () => {
    assert.equal(manifest.mediaType, MediaType.ociManifest);
    assert.deepEqual(manifest.layers, [
      { mediaType: MediaType.ociLayerGzip, digest: digestOf(12), size: 100 },
      layer.descriptor,
    ]);
    assert.deepEqual(manifest.config, image.configDescriptor);
    assert.equal(image.configDescriptor.digest, sha256Digest(image.config));
    assert.equal(image.digest, sha256Digest(image.manifest));
    assert.deepEqual(manifest.annotations, annotations);
  });

  it("runs the executable as 65532 with no command, and records the layer", () => {
    assert.equal(config.config?.User, "65532:65532");
    assert.deepEqual(config.config?.Entrypoint, ["/op"]);
    assert.equal(config.config?.Cmd, null);
    assert.deepEqual(config.config?.Env, ["PATH=/bin"]);
    assert.deepEqual(config.config?.Labels, { base: "yes", ...annotations });
    assert.deepEqual(config.rootfs.diff_ids, [digestOf(10), layer.diffId]);
    assert.equal(config.created, "1970-01-01T00:00:00Z");
    assert.deepEqual(config.history?.at(-1), {
      created: "1970-01-01T00:00:00Z",
      created_by: "rudder build",
      comment: "/op",
    });
    assert.equal(config.architecture, "amd64");
  });

  it("is the same for the same inputs", () => {
    const again = appendLayer({ manifest: baseManifest, config: baseConfig }, layer, {
      name: "op",
      user: "65532:65532",
      created: "1970-01-01T00:00:00Z",
      annotations,
    });
    assert.equal(again.digest, image.digest);
  });

  it("sets the process environment over the base's, keeping the base's other variables", () => {
    const withTunable = appendLayer(
      {
        manifest: baseManifest,
        config: { ...baseConfig, config: { ...baseConfig.config, Env: ["PATH=/bin", "A=base"] } },
      },
      layer,
      {
        name: "op",
        user: "65532:65532",
        created: "1970-01-01T00:00:00Z",
        annotations,
        env: { A: "mine", MALLOC_MMAP_THRESHOLD_: "131072" },
      },
    );
    const env = (JSON.parse(text(withTunable.config)) as ImageConfig).config?.Env;
    assert.deepEqual(env, ["PATH=/bin", "A=mine", "MALLOC_MMAP_THRESHOLD_=131072"]);
    assert.deepEqual(withEnv(undefined, { B: "1=2" }), ["B=1=2"]);
    assert.deepEqual(withEnv(["B=0", "C"], { B: "1" }), ["C", "B=1"]);
  });

  it("refuses a base whose config and manifest disagree", () => {
    assert.throws(
      () =>
        appendLayer(
          { manifest: { ...baseManifest, layers: [] }, config: baseConfig },
          layer,
          { name: "op", user: "1", created: "x", annotations: {} },
        ),
      /lists 1 layers but its manifest 0/,
    );
  });

  it("goes into an archive for docker load and podman load", () => {
    const blobs = new Map([[image.configDescriptor.digest, image.config], [
      layer.descriptor.digest,
      layer.blob,
    ], [digestOf(12), bytes("base")]]);
    const entries = archiveEntries({
      manifest: image.manifest,
      digest: image.digest,
      config: image.configDescriptor,
      layers: image.layers,
      blob: (d) => blobs.get(d)!,
      reference: "registry.example.com/op:1",
      tag: "1",
    });
    const files = new Map(
      entries.filter((e) => e.type === "file").map((
        e,
      ) => [e.path, text((e as { data: Uint8Array }).data)]),
    );
    const hex = (d: string) => d.slice("sha256:".length);
    assert.deepEqual(JSON.parse(files.get("manifest.json")!), [{
      Config: `blobs/sha256/${hex(image.configDescriptor.digest)}`,
      RepoTags: ["registry.example.com/op:1"],
      Layers: [`blobs/sha256/${hex(digestOf(12))}`, `blobs/sha256/${hex(layer.descriptor.digest)}`],
    }]);
    const index = JSON.parse(files.get("index.json")!);
    assert.equal(index.manifests[0].digest, image.digest);
    assert.equal(
      index.manifests[0].annotations["io.containerd.image.name"],
      "registry.example.com/op:1",
    );
    assert.equal(index.manifests[0].annotations["org.opencontainers.image.ref.name"], "1");
    assert.equal(files.get(`blobs/sha256/${hex(image.digest)}`), text(image.manifest));
    assert.equal(JSON.parse(files.get("oci-layout")!).imageLayoutVersion, "1.0.0");
  });
});

describe("Docker config credentials", () => {
  const auth = Buffer.from("me:s3cret:with-colon").toString("base64");

  it("come from auths, by host, whatever the key's scheme and path", () => {
    assert.deepEqual(
      credentialsFromConfig({ auths: { "https://ghcr.io/v2/": { auth } } }, "ghcr.io"),
      { username: "me", password: "s3cret:with-colon" },
    );
    assert.deepEqual(
      credentialsFromConfig(
        { auths: { "https://index.docker.io/v1/": { username: "u", password: "p" } } },
        "docker.io",
      ),
      { username: "u", password: "p" },
    );
    assert.equal(credentialsFromConfig({ auths: { "ghcr.io": { auth } } }, "gcr.io"), undefined);
    assert.equal(normalizeRegistryKey("https://registry-1.docker.io"), "docker.io");
  });

  it("come from a credential helper for its registry, else from the store", () => {
    const asked: string[] = [];
    const helper = (name: string, registry: string) => {
      asked.push(`${name} ${registry}`);
      return { username: name, password: "x" };
    };
    const config = { credHelpers: { "gcr.io": "gcloud" }, credsStore: "desktop", auths: {} };
    assert.equal(credentialsFromConfig(config, "gcr.io", helper)?.username, "gcloud");
    assert.equal(credentialsFromConfig(config, "ghcr.io", helper)?.username, "desktop");
    assert.deepEqual(asked, ["gcloud gcr.io", "desktop ghcr.io"]);
  });
});

/** A scripted registry: each request is checked and answered in turn. */
function scriptedFetch(
  steps: ((url: URL, init: RequestInit) => Response | Promise<Response>)[],
): { fetch: typeof fetch; calls: { url: string; method: string; authorization?: string }[] } {
  const calls: { url: string; method: string; authorization?: string }[] = [];
  const fetchImpl = (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    const headers = new Headers(init.headers);
    calls.push({
      url: url.href,
      method: init.method ?? "GET",
      authorization: headers.get("authorization") ?? undefined,
    });
    const step = steps.shift();
    if (!step) throw new Error(`unexpected request ${init.method ?? "GET"} ${url}`);
    return Promise.resolve(step(url, init));
  };
  return { fetch: fetchImpl as typeof fetch, calls };
}

describe("RegistryClient", () => {
  const blob = bytes("layer bytes");
  const blobDigest = sha256Digest(blob);
  const credentials = () => ({ username: "me", password: "hunter2" });

  it("answers a Bearer challenge with a token fetched with basic credentials", async () => {
    const { fetch, calls } = scriptedFetch([
      () =>
        new Response(null, {
          status: 401,
          headers: {
            "www-authenticate":
              'Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:team/op:pull"',
          },
        }),
      (url) => {
        assert.equal(url.searchParams.get("service"), "registry.example.com");
        assert.equal(url.searchParams.get("scope"), "repository:team/op:pull");
        return Response.json({ token: "tok-123" });
      },
      () => new Response(blob, { status: 200 }),
      () => new Response(blob, { status: 200 }),
    ]);
    const client = new RegistryClient("registry.example.com", { fetch, credentials });
    assert.deepEqual(await client.getBlob("team/op", blobDigest), blob);
    assert.deepEqual(await client.getBlob("team/op", blobDigest), blob);
    assert.equal(calls[0].url, `https://registry.example.com/v2/team/op/blobs/${blobDigest}`);
    assert.equal(calls[0].authorization, undefined);
    assert.equal(calls[1].authorization, `Basic ${Buffer.from("me:hunter2").toString("base64")}`);
    assert.equal(calls[2].authorization, "Bearer tok-123");
    assert.equal(calls[3].authorization, "Bearer tok-123", "the token is kept for its scope");
  });

  it("answers a Basic challenge with the credentials", async () => {
    const { fetch, calls } = scriptedFetch([
      () => new Response(null, { status: 401, headers: { "www-authenticate": 'Basic realm="r"' } }),
      () => new Response(blob),
    ]);
    const client = new RegistryClient("registry.example.com", { fetch, credentials });
    await client.getBlob("op", blobDigest);
    assert.equal(calls[1].authorization, `Basic ${Buffer.from("me:hunter2").toString("base64")}`);
  });

  it("skips a blob the registry has, and uploads one it lacks with POST then one PUT", async () => {
    const { fetch, calls } = scriptedFetch([
      () => new Response(null, { status: 200 }),
      () => new Response(null, { status: 404 }),
      () =>
        new Response(null, {
          status: 202,
          headers: { location: "/v2/op/blobs/uploads/u1?_state=abc" },
        }),
      async (url, init) => {
        assert.equal(url.searchParams.get("digest"), blobDigest);
        assert.equal(url.searchParams.get("_state"), "abc");
        assert.deepEqual(new Uint8Array(await new Response(init.body).arrayBuffer()), blob);
        return new Response(null, { status: 201 });
      },
    ]);
    const client = new RegistryClient("127.0.0.1:5000", { fetch, insecure: true });
    const unwanted = () => Promise.reject(new Error("the blob was fetched though present"));
    assert.equal(await client.pushBlob("op", blobDigest, unwanted), "present");
    assert.equal(
      await client.pushBlob("op", blobDigest, () => Promise.resolve(blob)),
      "uploaded",
    );
    assert.deepEqual(calls.map((c) => `${c.method} ${c.url}`), [
      `HEAD http://127.0.0.1:5000/v2/op/blobs/${blobDigest}`,
      `HEAD http://127.0.0.1:5000/v2/op/blobs/${blobDigest}`,
      "POST http://127.0.0.1:5000/v2/op/blobs/uploads/",
      `PUT http://127.0.0.1:5000/v2/op/blobs/uploads/u1?_state=abc&digest=${
        blobDigest.replace(":", "%3A")
      }`,
    ]);
  });

  it("mounts a blob from another repository, asking a token for both", async () => {
    const { fetch, calls } = scriptedFetch([
      () => new Response(null, { status: 404 }),
      () =>
        new Response(null, {
          status: 401,
          headers: { "www-authenticate": 'Bearer realm="https://auth.example.com/t"' },
        }),
      (url) => {
        assert.deepEqual(url.searchParams.getAll("scope"), [
          "repository:team/op:pull,push",
          "repository:distroless/cc:pull",
        ]);
        return Response.json({ token: "t" });
      },
      () => new Response(null, { status: 201 }),
    ]);
    const client = new RegistryClient("r.example.com", { fetch });
    const unwanted = () => Promise.reject(new Error("a mounted blob is not fetched"));
    assert.equal(
      await client.pushBlob("team/op", blobDigest, unwanted, { mountFrom: "distroless/cc" }),
      "mounted",
    );
    assert.equal(
      calls[3].url,
      `https://r.example.com/v2/team/op/blobs/uploads/?mount=${
        encodeURIComponent(blobDigest)
      }&from=distroless%2Fcc`,
    );
  });

  it("puts a manifest and checks the digest the registry reports", async () => {
    const manifest = jsonBytes({ schemaVersion: 2 });
    const { fetch, calls } = scriptedFetch([
      (_url, init) => {
        assert.equal(new Headers(init.headers).get("content-type"), MediaType.ociManifest);
        return new Response(null, {
          status: 201,
          headers: { "docker-content-digest": sha256Digest(manifest) },
        });
      },
      () => new Response(null, { status: 201, headers: { "docker-content-digest": digestOf(1) } }),
    ]);
    const client = new RegistryClient("r.example.com", { fetch });
    assert.equal(
      await client.putManifest("op", "1.0", manifest, MediaType.ociManifest),
      sha256Digest(manifest),
    );
    assert.equal(calls[0].url, "https://r.example.com/v2/op/manifests/1.0");
    await assert.rejects(
      client.putManifest("op", "1.0", manifest, MediaType.ociManifest),
      /stored the manifest as/,
    );
  });

  it("follows a blob's redirect without the registry's credentials", async () => {
    const { fetch, calls } = scriptedFetch([
      () => new Response(null, { status: 401, headers: { "www-authenticate": 'Basic realm="r"' } }),
      () =>
        new Response(null, {
          status: 307,
          headers: { location: "https://cdn.example.com/b?sig=1" },
        }),
      () => new Response(blob),
    ]);
    const client = new RegistryClient("r.example.com", { fetch, credentials });
    assert.deepEqual(await client.getBlob("op", blobDigest), blob);
    assert.equal(calls[2].url, "https://cdn.example.com/b?sig=1");
    assert.equal(calls[2].authorization, undefined);
  });

  it("refuses a blob whose bytes do not match its digest", async () => {
    const { fetch } = scriptedFetch([() => new Response(bytes("tampered"))]);
    const client = new RegistryClient("r.example.com", { fetch });
    await assert.rejects(client.getBlob("op", blobDigest), /has digest/);
  });

  it("fetches a manifest by digest and checks it", async () => {
    const manifest = jsonBytes({ schemaVersion: 2, mediaType: MediaType.ociIndex, manifests: [] });
    const { fetch, calls } = scriptedFetch([
      () => new Response(manifest as Uint8Array<ArrayBuffer>),
      () => new Response(bytes("{}")),
    ]);
    const client = new RegistryClient("r.example.com", { fetch });
    const fetched = await client.getManifest("op", sha256Digest(manifest));
    assert.equal(fetched.mediaType, MediaType.ociIndex);
    assert.equal(calls[0].url, `https://r.example.com/v2/op/manifests/${sha256Digest(manifest)}`);
    await assert.rejects(client.getManifest("op", sha256Digest(manifest)), /has the digest/);
  });

  it("reports the registry's error codes and never a secret", async () => {
    const { fetch } = scriptedFetch([
      () =>
        new Response(null, {
          status: 401,
          headers: { "www-authenticate": 'Bearer realm="https://auth.example.com/t"' },
        }),
      () => new Response("hunter2 is wrong", { status: 403 }),
      () =>
        new Response(null, {
          status: 401,
          headers: { "www-authenticate": 'Bearer realm="https://auth.example.com/t"' },
        }),
      () => Response.json({ token: "tok-secret" }),
      () => Response.json({ errors: [{ code: "DENIED", message: "no push" }] }, { status: 403 }),
    ]);
    const client = new RegistryClient("r.example.com", { fetch, credentials });
    const first = await client.getBlob("op", blobDigest).catch((e) => e);
    assert.ok(first instanceof RegistryError);
    assert.match(first.message, /token service refused repository:op:pull \(403\)/);
    const second = await client.putManifest("op", "1", bytes("{}"), MediaType.ociManifest)
      .catch((e) => e);
    assert.match(second.message, /PUT manifest op:1 on r\.example\.com: 403 DENIED: no push/);
    for (const err of [first, second]) {
      assert.doesNotMatch(String(err.message), /hunter2|tok-secret|bWU6aHVudGVyMg/);
    }
  });

  it("uses plain HTTP only for a registry on loopback", () => {
    assert.throws(
      () => new RegistryClient("registry.example.com", { insecure: true }),
      /only for a registry on this machine/,
    );
  });

  it("parses challenges with quoted and bare parameters", () => {
    assert.deepEqual(
      parseChallenge('Bearer realm="https://a/t",service=reg,scope="x:y:pull,push"'),
      {
        scheme: "bearer",
        params: { realm: "https://a/t", service: "reg", scope: "x:y:pull,push" },
      },
    );
  });
});

describe("rudder build's image flags", () => {
  const parse = (...args: string[]) => imageRequest(parseCommandArgs(buildSpec, args)!, "/work");

  it("need --image, and --image needs --push or --output", () => {
    assert.equal(parse(), undefined);
    assert.throws(
      () => parse("--push"),
      (e) => e instanceof UsageError && /--push needs --image/.test(e.message),
    );
    assert.throws(() => parse("--image", "op:1"), /needs --push, --output <file>, or both/);
  });

  it("default the base to distroless/cc and collect annotations", () => {
    assert.deepEqual(
      parse("--image", "ghcr.io/me/op:1", "--output", "x.tar", "--annotation", "a=b=c"),
      {
        image: "ghcr.io/me/op:1",
        base: "gcr.io/distroless/cc-debian12:nonroot",
        push: false,
        output: "/work/x.tar",
        insecureRegistry: false,
        annotations: { a: "b=c" },
      },
    );
    assert.throws(() => parse("--image", "op:1", "--push", "--annotation", "novalue"), /key=value/);
  });

  it("turn a git remote into a source URL without credentials", () => {
    assert.equal(sourceURL("git@github.com:me/op.git"), "https://github.com/me/op");
    assert.equal(sourceURL("https://me:token@github.com/me/op.git"), "https://github.com/me/op");
  });
});

describe("BlobCache", () => {
  it("keeps blobs by digest, refuses wrong bytes, and ignores a damaged entry", async () => {
    const root = mkdtempSync(join(tmpdir(), "rudder-blob-cache-"));
    try {
      const cache = new BlobCache(root);
      const blob = bytes("config");
      const digest = sha256Digest(blob);
      assert.equal(cache.get(digest), undefined);
      assert.throws(() => cache.put(digest, bytes("other")), /has the digest/);
      let fetched = 0;
      const fetchOnce = () => {
        fetched++;
        return Promise.resolve(blob);
      };
      assert.deepEqual(await cache.getOrFetch(digest, fetchOnce), blob);
      assert.deepEqual(await cache.getOrFetch(digest, fetchOnce), blob);
      assert.equal(fetched, 1, "fetched once, then read from disk");
      const path = join(root, "blobs", "sha256", digest.slice("sha256:".length));
      assert.deepEqual(new Uint8Array(readFileSync(path)), blob);
      writeFileSync(path, "damaged");
      assert.equal(cache.get(digest), undefined);
      assert.throws(() => cache.get("sha256:../../etc"), /not a sha256 digest/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("imageAnnotations", () => {
  it("take the version from the project, revision and source from git, and sort the keys", () => {
    const dir = mkdtempSync(join(tmpdir(), "rudder-annotations-"));
    try {
      writeFileSync(join(dir, "package.json"), JSON.stringify({ version: "2.0.1" }));
      const git = (...args: string[]) =>
        spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...args], {
          cwd: dir,
          encoding: "utf8",
        });
      git("init", "-q");
      git("remote", "add", "origin", "https://me:token@github.com/me/op.git");
      git("add", ".");
      git("commit", "-qm", "x");
      const revision = git("rev-parse", "HEAD").stdout.trim();
      assert.match(revision, /^[0-9a-f]{40}$/);
      const annotations = imageAnnotations(
        { projectDir: dir, created: "1970-01-01T00:00:00Z", extra: { "com.example/x": "y" } },
        { name: "gcr.io/distroless/cc:nonroot", digest: digestOf(5) },
      );
      assert.deepEqual(annotations, {
        "com.example/x": "y",
        "org.opencontainers.image.base.digest": digestOf(5),
        "org.opencontainers.image.base.name": "gcr.io/distroless/cc:nonroot",
        "org.opencontainers.image.created": "1970-01-01T00:00:00Z",
        "org.opencontainers.image.revision": revision,
        "org.opencontainers.image.source": "https://github.com/me/op",
        "org.opencontainers.image.version": "2.0.1",
      });
      assert.deepEqual(Object.keys(annotations), Object.keys(annotations).sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
