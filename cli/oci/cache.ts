/**
 * A content-addressed cache of blobs (layers, configs, manifests) under
 * `${XDG_CACHE_HOME:-~/.cache}/rudder/oci/blobs/sha256/`, so a base image is fetched from its
 * registry once per digest. Entries are checked against their digest when written and read.
 *
 * @module
 */

import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { assertDigest, sha256Digest } from "./image.ts";

/** `${XDG_CACHE_HOME:-~/.cache}/rudder/oci`. */
export function ociCacheDirectory(env: Record<string, string | undefined>): string {
  return join(env.XDG_CACHE_HOME || join(env.HOME || homedir(), ".cache"), "rudder", "oci");
}

/** Blobs by digest, on disk. */
export class BlobCache {
  readonly #dir: string;

  /** The directory that holds `blobs/sha256/<hex>`. */
  readonly root: string;

  /** `root` holds `blobs/sha256/<hex>`. */
  constructor(root: string) {
    this.root = root;
    this.#dir = join(root, "blobs", "sha256");
  }

  #path(digest: string): string {
    assertDigest(digest);
    return join(this.#dir, digest.slice("sha256:".length));
  }

  /** The blob, or undefined when it is not cached (or is damaged). */
  get(digest: string): Uint8Array | undefined {
    const path = this.#path(digest);
    if (!existsSync(path)) return undefined;
    const bytes = new Uint8Array(readFileSync(path));
    return sha256Digest(bytes) === digest ? bytes : undefined;
  }

  /** Stores a blob after checking its digest; a rename makes the write atomic. */
  put(digest: string, bytes: Uint8Array): void {
    const path = this.#path(digest);
    const actual = sha256Digest(bytes);
    if (actual !== digest) throw new Error(`blob ${digest} has the digest ${actual}`);
    mkdirSync(this.#dir, { recursive: true });
    const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(temporary, bytes);
    renameSync(temporary, path);
  }

  /** The cached blob, else `fetch()`'s result, which is cached. */
  async getOrFetch(digest: string, fetch: () => Promise<Uint8Array>): Promise<Uint8Array> {
    const cached = this.get(digest);
    if (cached) return cached;
    const bytes = await fetch();
    this.put(digest, bytes);
    return bytes;
  }
}
