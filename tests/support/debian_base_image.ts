// A distroless/cc-equivalent base image made from the Debian packages distroless itself is
// made from, for the container tests: `apt-get download`, `dpkg -x`, the CA bundle, and
// /etc/passwd and /etc/group with `nonroot` (65532). One layer, built once per set of package
// versions and cached in ${XDG_CACHE_HOME:-~/.cache}/rudder/base-image/<hash>/.
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import {
  type Descriptor,
  type ImageConfig,
  type ImageIndex,
  type ImageManifest,
  jsonBytes,
  layerFromTar,
  MediaType,
  sha256Digest,
} from "../../cli/oci/image.ts";
import type { RegistryClient } from "../../cli/oci/registry.ts";
import { tar, type TarEntry } from "../../cli/oci/tar.ts";

/** The packages of distroless/cc (static + base + cc). */
export const BASE_PACKAGES = [
  "base-files",
  "ca-certificates",
  "libc6",
  "libgcc-s1",
  "libssl3",
  "libstdc++6",
  "netbase",
  "tzdata",
];

const NONROOT = 65532;

/** A base image as blobs: an index over one manifest. */
export interface BaseImage {
  index: Uint8Array;
  manifest: Uint8Array;
  config: Uint8Array;
  layer: Uint8Array;
  /** Digest of the index. */
  digest: string;
}

/** Why the base cannot be made here, or false when it can. */
export function baseImageUnavailable(): string | false {
  for (const tool of ["apt-get", "dpkg"]) {
    if (spawnSync(tool, ["--version"]).status !== 0) {
      return `${tool} is missing: the base image is made from Debian packages`;
    }
  }
  const uris = spawnSync("apt-get", ["download", "--print-uris", ...BASE_PACKAGES], {
    encoding: "utf8",
  });
  if (uris.status !== 0) {
    return `apt-get cannot find the base image's packages (run apt-get update): ${
      uris.stderr.trim().split("\n").pop()
    }`;
  }
  return false;
}

function run(command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed: ${result.stderr || result.error}`);
  }
  return result.stdout;
}

/** Every file system entry under `root`, sorted by path, owned by root (or nonroot's home). */
function entriesOf(root: string): TarEntry[] {
  const entries: TarEntry[] = [];
  const walk = (relative: string) => {
    for (const name of readdirSync(join(root, relative)).sort()) {
      const path = relative ? `${relative}/${name}` : name;
      const full = join(root, path);
      const stat = lstatSync(full);
      const owner = path.startsWith("home/nonroot") ? NONROOT : 0;
      const ids = { uid: owner, gid: owner };
      if (stat.isSymbolicLink()) {
        entries.push({ type: "symlink", path, target: readlinkSync(full), ...ids });
      } else if (stat.isDirectory()) {
        entries.push({ type: "directory", path, mode: stat.mode & 0o7777, ...ids });
        walk(path);
      } else if (stat.isFile()) {
        const data = new Uint8Array(readFileSync(full));
        entries.push({ type: "file", path, data, mode: stat.mode & 0o7777, ...ids });
      }
    }
  };
  walk("");
  return entries;
}

/** Unpacks the packages into a root file system and adds what distroless adds. */
function makeRootfs(work: string): string {
  const debs = join(work, "debs");
  const rootfs = join(work, "rootfs");
  mkdirSync(debs);
  mkdirSync(rootfs);
  run("apt-get", ["download", ...BASE_PACKAGES], debs);
  for (const deb of readdirSync(debs).sort()) run("dpkg", ["-x", join(debs, deb), rootfs], rootfs);
  const etc = join(rootfs, "etc");
  mkdirSync(etc, { recursive: true });
  writeFileSync(
    join(etc, "passwd"),
    "root:x:0:0:root:/root:/sbin/nologin\n" +
      "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
      "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
  );
  writeFileSync(join(etc, "group"), "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n");
  // update-ca-certificates would make the bundle; dpkg -x runs no scripts.
  const mozilla = join(rootfs, "usr/share/ca-certificates/mozilla");
  const bundle = readdirSync(mozilla).sort().map((f) => readFileSync(join(mozilla, f), "utf8"));
  mkdirSync(join(etc, "ssl/certs"), { recursive: true });
  writeFileSync(join(etc, "ssl/certs/ca-certificates.crt"), bundle.join(""));
  mkdirSync(join(rootfs, "home/nonroot"), { recursive: true, mode: 0o700 });
  mkdirSync(join(rootfs, "tmp"), { recursive: true });
  spawnSync("chmod", ["1777", join(rootfs, "tmp")]);
  spawnSync("chmod", ["700", join(rootfs, "home/nonroot")]);
  return rootfs;
}

function architecture(): string {
  return process.arch === "arm64" ? "arm64" : "amd64";
}

/** Builds the base image, or reads it from the cache. */
export function debianBaseImage(): BaseImage {
  const uris = run("apt-get", ["download", "--print-uris", ...BASE_PACKAGES], tmpdir());
  const key = createHash("sha256").update(uris).update(readFileSync(new URL(import.meta.url)))
    .digest("hex").slice(0, 16);
  const cacheHome = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  const dir = join(cacheHome, "rudder", "base-image", key);
  const files = ["index.json", "manifest.json", "config.json", "layer.tar.gz"];
  if (!files.every((f) => existsSync(join(dir, f)))) {
    const work = mkdtempSync(join(tmpdir(), "rudder-base-image-"));
    try {
      const layer = layerFromTar(tar(entriesOf(makeRootfs(work))));
      const created = "1970-01-01T00:00:00Z";
      const config: ImageConfig = {
        created,
        architecture: architecture(),
        os: "linux",
        config: {
          User: String(NONROOT),
          Env: [
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
          ],
          WorkingDir: "/home/nonroot",
        },
        rootfs: { type: "layers", diff_ids: [layer.diffId] },
        history: [{ created, created_by: `dpkg -x ${BASE_PACKAGES.join(" ")}` }],
      };
      const configBytes = jsonBytes(config);
      const manifest: ImageManifest = {
        schemaVersion: 2,
        mediaType: MediaType.ociManifest,
        config: {
          mediaType: MediaType.ociConfig,
          digest: sha256Digest(configBytes),
          size: configBytes.length,
        },
        layers: [layer.descriptor],
      };
      const manifestBytes = jsonBytes(manifest);
      const index: ImageIndex = {
        schemaVersion: 2,
        mediaType: MediaType.ociIndex,
        manifests: [{
          mediaType: MediaType.ociManifest,
          digest: sha256Digest(manifestBytes),
          size: manifestBytes.length,
          platform: { os: "linux", architecture: architecture() },
        } as Descriptor],
      };
      const staging = `${dir}.building-${process.pid}`;
      mkdirSync(staging, { recursive: true });
      writeFileSync(join(staging, "index.json"), jsonBytes(index));
      writeFileSync(join(staging, "manifest.json"), manifestBytes);
      writeFileSync(join(staging, "config.json"), configBytes);
      writeFileSync(join(staging, "layer.tar.gz"), layer.blob);
      rmSync(dir, { recursive: true, force: true });
      renameSync(staging, dir);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  const read = (f: string) => new Uint8Array(readFileSync(join(dir, f)));
  const index = read("index.json");
  return {
    index,
    manifest: read("manifest.json"),
    config: read("config.json"),
    layer: read("layer.tar.gz"),
    digest: sha256Digest(index),
  };
}

/** Pushes the base image (its index under `tag`); resolves the index's digest. */
export async function pushBaseImage(
  client: RegistryClient,
  repository: string,
  tag: string,
  image: BaseImage,
): Promise<string> {
  await client.pushBlob(repository, sha256Digest(image.layer), image.layer);
  await client.pushBlob(repository, sha256Digest(image.config), image.config);
  await client.putManifest(
    repository,
    sha256Digest(image.manifest),
    image.manifest,
    MediaType.ociManifest,
  );
  return await client.putManifest(repository, tag, image.index, MediaType.ociIndex);
}
