/**
 * An image as one tar file that both `docker load` and `podman load` accept: an OCI image
 * layout (`oci-layout`, `index.json`, `blobs/sha256/…`) that also carries Docker's
 * `manifest.json`, the layout `docker save` writes since Docker 25. Written deterministically:
 * the same image gives the same archive.
 *
 * @module
 */

import { closeSync, openSync, writeSync } from "node:fs";
import { type Descriptor, jsonBytes, MediaType } from "./image.ts";
import { tarChunks, type TarEntry } from "./tar.ts";

/** What goes into an archive. */
export interface ArchiveImage {
  /** The manifest's bytes. */
  manifest: Uint8Array;
  /** The manifest's digest. */
  digest: string;
  /** The config's descriptor. */
  config: Descriptor;
  /** The layers' descriptors, bottom first. */
  layers: Descriptor[];
  /** Every blob the manifest names (config and layers), by digest. */
  blob(digest: string): Uint8Array;
  /** The reference it loads as, e.g. `registry.example.com/operator:0.1.0`. */
  reference: string;
  /** The tag, for `org.opencontainers.image.ref.name`. */
  tag?: string;
}

const blobPath = (digest: string) => `blobs/sha256/${digest.slice("sha256:".length)}`;

/** The archive's entries, in the order they are written. */
export function archiveEntries(image: ArchiveImage): TarEntry[] {
  const index = {
    schemaVersion: 2,
    mediaType: MediaType.ociIndex,
    manifests: [{
      mediaType: MediaType.ociManifest,
      digest: image.digest,
      size: image.manifest.length,
      annotations: {
        "io.containerd.image.name": image.reference,
        ...(image.tag ? { "org.opencontainers.image.ref.name": image.tag } : {}),
      },
    }],
  };
  const dockerManifest = [{
    Config: blobPath(image.config.digest),
    RepoTags: image.tag ? [image.reference] : [],
    Layers: image.layers.map((layer) => blobPath(layer.digest)),
  }];
  const blobs = [...new Set([image.config.digest, ...image.layers.map((l) => l.digest)])];
  return [
    { type: "directory", path: "blobs" },
    { type: "directory", path: "blobs/sha256" },
    { type: "file", path: blobPath(image.digest), data: image.manifest },
    ...blobs.map((digest): TarEntry => ({
      type: "file",
      path: blobPath(digest),
      data: image.blob(digest),
    })),
    { type: "file", path: "index.json", data: jsonBytes(index) },
    { type: "file", path: "manifest.json", data: jsonBytes(dockerManifest) },
    { type: "file", path: "oci-layout", data: jsonBytes({ imageLayoutVersion: "1.0.0" }) },
  ];
}

/** Writes the archive to `path`, a chunk at a time. */
export function writeImageArchive(path: string, image: ArchiveImage): void {
  const fd = openSync(path, "w", 0o644);
  try {
    for (const chunk of tarChunks(archiveEntries(image))) {
      for (let offset = 0; offset < chunk.length;) {
        offset += writeSync(fd, chunk, offset, chunk.length - offset);
      }
    }
  } finally {
    closeSync(fd);
  }
}
