/**
 * OCI images as data: media types, descriptors, manifests, indexes and configs, the digest of
 * a blob, choosing a platform's manifest from an index, and the one step `rudder build --image`
 * takes — an executable as one more layer on a base image. Pure functions: nothing here does
 * I/O, so the same inputs give the same bytes and the same digests.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { tar } from "./tar.ts";

/** The media types Rudder reads and writes. */
export const MediaType: {
  readonly ociManifest: "application/vnd.oci.image.manifest.v1+json";
  readonly ociIndex: "application/vnd.oci.image.index.v1+json";
  readonly ociConfig: "application/vnd.oci.image.config.v1+json";
  readonly ociLayerGzip: "application/vnd.oci.image.layer.v1.tar+gzip";
  readonly ociLayer: "application/vnd.oci.image.layer.v1.tar";
  readonly dockerManifest: "application/vnd.docker.distribution.manifest.v2+json";
  readonly dockerManifestList: "application/vnd.docker.distribution.manifest.list.v2+json";
  readonly dockerConfig: "application/vnd.docker.container.image.v1+json";
  readonly dockerLayerGzip: "application/vnd.docker.image.rootfs.diff.tar.gzip";
} = {
  ociManifest: "application/vnd.oci.image.manifest.v1+json",
  ociIndex: "application/vnd.oci.image.index.v1+json",
  ociConfig: "application/vnd.oci.image.config.v1+json",
  ociLayerGzip: "application/vnd.oci.image.layer.v1.tar+gzip",
  ociLayer: "application/vnd.oci.image.layer.v1.tar",
  dockerManifest: "application/vnd.docker.distribution.manifest.v2+json",
  dockerManifestList: "application/vnd.docker.distribution.manifest.list.v2+json",
  dockerConfig: "application/vnd.docker.container.image.v1+json",
  dockerLayerGzip: "application/vnd.docker.image.rootfs.diff.tar.gzip",
} as const;

/** Docker's media types and the OCI ones that mean the same. */
const DOCKER_TO_OCI: Record<string, string> = {
  [MediaType.dockerManifest]: MediaType.ociManifest,
  [MediaType.dockerManifestList]: MediaType.ociIndex,
  [MediaType.dockerConfig]: MediaType.ociConfig,
  [MediaType.dockerLayerGzip]: MediaType.ociLayerGzip,
};

/** The `Accept` header for fetching a manifest or an index in any of the formats read here. */
export const MANIFEST_ACCEPT: string = [
  MediaType.ociIndex,
  MediaType.ociManifest,
  MediaType.dockerManifestList,
  MediaType.dockerManifest,
].join(", ");

/** An OS and architecture, as in OCI's `platform`. */
export interface Platform {
  /** `linux`. */
  os: string;
  /** `amd64`, `arm64`, … (Go's names). */
  architecture: string;
  /** `v8` for arm64, `v7` for arm, … */
  variant?: string;
}

/** A reference to a blob: its media type, digest and size. */
export interface Descriptor {
  /** What the blob is. */
  mediaType: string;
  /** `sha256:…` of its bytes. */
  digest: string;
  /** Its length in bytes. */
  size: number;
  /** In an index: the platform of the manifest. */
  platform?: Platform;
  /** Free-form metadata. */
  annotations?: Record<string, string>;
}

/** An image manifest (OCI, or Docker's schema 2, which has the same shape). */
export interface ImageManifest {
  /** Always 2. */
  schemaVersion: 2;
  /** Its own media type. */
  mediaType?: string;
  /** The image configuration blob. */
  config: Descriptor;
  /** The layers, bottom first. */
  layers: Descriptor[];
  /** Free-form metadata, e.g. `org.opencontainers.image.*`. */
  annotations?: Record<string, string>;
}

/** An image index (OCI, or Docker's manifest list). */
export interface ImageIndex {
  /** Always 2. */
  schemaVersion: 2;
  /** Its own media type. */
  mediaType?: string;
  /** A manifest per platform. */
  manifests: Descriptor[];
  /** Free-form metadata. */
  annotations?: Record<string, string>;
}

/** An image configuration, with the fields Rudder sets; others are kept as they are. */
export interface ImageConfig {
  /** When the image was made (RFC 3339). */
  created?: string;
  /** Go's architecture name. */
  architecture: string;
  /** `linux`. */
  os: string;
  /** The architecture's variant. */
  variant?: string;
  /** How a container of it runs: user, environment, entrypoint, … (Docker's field names). */
  config?: {
    User?: string;
    Env?: string[];
    Entrypoint?: string[] | null;
    Cmd?: string[] | null;
    WorkingDir?: string;
    Labels?: Record<string, string>;
    [key: string]: unknown;
  };
  /** The digests of the uncompressed layers, bottom first. */
  rootfs: { type: "layers"; diff_ids: string[] };
  /** A line per step that made the image. */
  history?: {
    created?: string;
    created_by?: string;
    comment?: string;
    empty_layer?: boolean;
  }[];
  /** Fields Rudder does not set, kept as the base has them. */
  [key: string]: unknown;
}

/** `sha256:<hex>` of the bytes. */
export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
}

/** Throws unless `digest` is a well-formed sha256 digest. */
export function assertDigest(digest: string): void {
  if (!/^sha256:[a-f0-9]{64}$/.test(digest)) throw new Error(`not a sha256 digest: ${digest}`);
}

/** JSON bytes of a manifest, index or config: what is pushed and what the digest is of. */
export function jsonBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

/** Whether a media type is an index (OCI index or Docker manifest list). */
export function isIndex(mediaType: string | undefined): boolean {
  return mediaType === MediaType.ociIndex || mediaType === MediaType.dockerManifestList;
}

/** The platform of a Go-style `os/arch[/variant]` string, e.g. `linux/arm64`. */
export function parsePlatform(text: string): Platform {
  const [os, architecture, variant] = text.split("/");
  if (!os || !architecture) throw new Error(`platform must be os/arch, e.g. linux/amd64: ${text}`);
  return variant ? { os, architecture, variant } : { os, architecture };
}

/** `os/arch[/variant]`. */
export function formatPlatform(platform: Platform): string {
  return [platform.os, platform.architecture, platform.variant].filter(Boolean).join("/");
}

/**
 * The descriptor of `platform`'s manifest in an index. A requested variant must match; with
 * none requested, arm64 prefers `v8` or no variant. Throws listing the platforms there are.
 */
export function selectPlatform(index: ImageIndex, platform: Platform): Descriptor {
  const candidates = index.manifests.filter((m) =>
    m.platform?.os === platform.os && m.platform.architecture === platform.architecture &&
    (platform.variant === undefined || m.platform.variant === platform.variant)
  );
  const preferred = candidates.find((m) => !m.platform?.variant || m.platform.variant === "v8") ??
    candidates[0];
  if (!preferred) {
    const available = index.manifests.filter((m) => m.platform)
      .map((m) => formatPlatform(m.platform!)).join(", ");
    throw new Error(
      `the base image has no ${formatPlatform(platform)} image (it has: ${available || "none"})`,
    );
  }
  return preferred;
}

/** The layer of an executable, compressed, with its digests. */
export interface Layer {
  /** The gzip-compressed tar: the blob that is pushed. */
  blob: Uint8Array;
  /** The blob's descriptor. */
  descriptor: Descriptor;
  /** The digest of the uncompressed tar (the config's `rootfs.diff_ids`). */
  diffId: string;
}

/**
 * The gzip compression level of layers. Level 9 is used because Deno's and Bun's `node:zlib`
 * give byte-identical output at 9 (they differ at 1 and 6), so a layer's digest does not
 * depend on the runtime that built it.
 */
export const GZIP_LEVEL = 9;

/** A layer of tar bytes: compressed with a fixed header (no name, mtime 0), with its digests. */
export function layerFromTar(tarBytes: Uint8Array): Layer {
  const blob = new Uint8Array(gzipSync(tarBytes, { level: GZIP_LEVEL }));
  return {
    blob,
    diffId: sha256Digest(tarBytes),
    descriptor: {
      mediaType: MediaType.ociLayerGzip,
      digest: sha256Digest(blob),
      size: blob.length,
    },
  };
}

/**
 * The layer that holds `/<name>`: the executable, mode 0755, owned by root, with the
 * modification time `mtime` (seconds since the epoch); and `others` (paths without the leading
 * `/`, in path order), such as a shared library the executable loads that the base lacks.
 */
export function executableLayer(
  name: string,
  executable: Uint8Array,
  mtime = 0,
  others: readonly { path: string; data: Uint8Array; mode: number }[] = [],
): Layer {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new Error(`the executable's name must be a plain file name: ${name}`);
  }
  const files = [...others].sort((a, b) => (a.path < b.path ? -1 : 1))
    .map(({ path, data, mode }) => ({ type: "file" as const, path, data, mode }));
  return layerFromTar(
    tar([{ type: "file", path: name, data: executable, mode: 0o755 }, ...files], { mtime }),
  );
}

/** The RFC 3339 time of `SOURCE_DATE_EPOCH` (seconds), or of the epoch when it is unset. */
export function createdTime(env: Record<string, string | undefined>): {
  seconds: number;
  iso: string;
} {
  const raw = env.SOURCE_DATE_EPOCH?.trim();
  // Digits only: Number() would also take "1e9", "0x10" and "12.0".
  const seconds = raw ? (/^\d+$/.test(raw) ? Number(raw) : Number.NaN) : 0;
  if (!Number.isSafeInteger(seconds) || new Date(seconds * 1000).getTime() !== seconds * 1000) {
    throw new Error(
      `SOURCE_DATE_EPOCH must be whole seconds since the epoch (e.g. ` +
        `$(git log -1 --format=%ct)), not ${JSON.stringify(env.SOURCE_DATE_EPOCH)}`,
    );
  }
  return { seconds, iso: new Date(seconds * 1000).toISOString().replace(".000Z", "Z") };
}

/** What goes into the new image besides the base and the layer. */
export interface ImageOptions {
  /** The executable's name: it is `/<name>` and the entrypoint. */
  name: string;
  /** The user the process runs as, e.g. `65532:65532`. */
  user: string;
  /** The image's `created` time (RFC 3339). */
  created: string;
  /** Annotations of the manifest (also set as labels of the config). */
  annotations: Record<string, string>;
  /** Environment of the process, set over the base's (`NAME=value` entries). */
  env?: Readonly<Record<string, string>>;
}

/** A new image: the config and manifest bytes, and their digests. */
export interface BuiltImage {
  /** The config's bytes. */
  config: Uint8Array;
  /** The config's descriptor. */
  configDescriptor: Descriptor;
  /** The manifest's bytes. */
  manifest: Uint8Array;
  /** The manifest's digest: the image's digest. */
  digest: string;
  /** The manifest as an object. */
  manifestObject: ImageManifest;
  /** Every layer, the base's first. */
  layers: Descriptor[];
}

/** `base` (`NAME=value` entries) with the variables of `env` added or replaced, in order. */
export function withEnv(
  base: string[] | undefined,
  env: Readonly<Record<string, string>>,
): string[] {
  const names = new Set(Object.keys(env));
  return [
    ...(base ?? []).filter((entry) => !names.has(entry.split("=", 1)[0])),
    ...Object.entries(env).map(([name, value]) => `${name}=${value}`),
  ];
}

/**
 * The base image with `layer` on top, as an OCI image: the base's layers (Docker media types
 * translated to OCI's, digests unchanged), then the layer; the base's config with the user,
 * entrypoint, labels, `created`, history and the given environment set and the command cleared.
 */
export function appendLayer(
  base: { manifest: ImageManifest; config: ImageConfig },
  layer: Layer,
  options: ImageOptions,
): BuiltImage {
  const baseConfig = base.config;
  if (baseConfig.rootfs?.diff_ids?.length !== base.manifest.layers.length) {
    throw new Error(
      `the base image's config lists ${baseConfig.rootfs?.diff_ids?.length ?? 0} layers ` +
        `but its manifest ${base.manifest.layers.length}`,
    );
  }
  const entrypoint = `/${options.name}`;
  const config: ImageConfig = {
    ...baseConfig,
    created: options.created,
    config: {
      ...baseConfig.config,
      User: options.user,
      Entrypoint: [entrypoint],
      Cmd: null,
      ...(options.env ? { Env: withEnv(baseConfig.config?.Env, options.env) } : {}),
      WorkingDir: "/",
      Labels: { ...baseConfig.config?.Labels, ...options.annotations },
    },
    rootfs: { type: "layers", diff_ids: [...baseConfig.rootfs.diff_ids, layer.diffId] },
    history: [
      ...(baseConfig.history ?? []),
      { created: options.created, created_by: "rudder build", comment: entrypoint },
    ],
  };
  const configBytes = jsonBytes(config);
  const configDescriptor: Descriptor = {
    mediaType: MediaType.ociConfig,
    digest: sha256Digest(configBytes),
    size: configBytes.length,
  };
  const layers = [
    ...base.manifest.layers.map((d) => ({
      mediaType: DOCKER_TO_OCI[d.mediaType] ?? d.mediaType,
      digest: d.digest,
      size: d.size,
      ...(d.annotations ? { annotations: d.annotations } : {}),
    })),
    layer.descriptor,
  ];
  const manifestObject: ImageManifest = {
    schemaVersion: 2,
    mediaType: MediaType.ociManifest,
    config: configDescriptor,
    layers,
    annotations: options.annotations,
  };
  const manifest = jsonBytes(manifestObject);
  return {
    config: configBytes,
    configDescriptor,
    manifest,
    digest: sha256Digest(manifest),
    manifestObject,
    layers,
  };
}

/** Concatenates chunks (a small helper shared by the writers). */
export function concat(chunks: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(chunks));
}
