/**
 * Builds the loopback registry the container tests push to: `main.go` in this folder, an
 * in-memory OCI distribution registry from `github.com/google/go-containerregistry`, pinned by
 * this folder's go.mod. Built once into `${XDG_CACHE_HOME:-~/.cache}/rudder/registry/<hash>/`,
 * where the hash covers go.mod, go.sum and main.go; prints the binary's path on its last line.
 *
 * Usage: deno run -A tools/registry/build.ts
 *
 * @module
 */

import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const MODULE_DIR = dirname(fileURLToPath(import.meta.url));

/** The hash of everything that decides the binary. */
function buildHash(): string {
  const hash = createHash("sha256");
  for (const file of ["go.mod", "go.sum", "main.go"]) {
    hash.update(readFileSync(join(MODULE_DIR, file)));
  }
  return hash.digest("hex").slice(0, 16);
}

/** Where the registry binary is (or will be) cached. */
export function registryBinaryPath(env: Record<string, string | undefined> = process.env): string {
  const cacheHome = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(cacheHome, "rudder", "registry", buildHash(), "registry");
}

/** Builds the registry unless it is cached; returns the binary's path. Throws without Go. */
export function ensureRegistryBinary(): string {
  const target = registryBinaryPath();
  if (existsSync(target)) return target;
  mkdirSync(dirname(target), { recursive: true });
  const staging = `${target}.building-${process.pid}`;
  const result = spawnSync(
    "go",
    ["build", "-trimpath", "-ldflags=-s -w", "-o", staging, "."],
    { cwd: MODULE_DIR, stdio: ["ignore", "inherit", "inherit"] },
  );
  if (result.error || result.status !== 0) {
    rmSync(staging, { force: true });
    throw new Error(
      `building the test registry failed (go build: ${result.error?.message ?? result.status}); ` +
        "it needs Go and the Go module proxy",
    );
  }
  renameSync(staging, target);
  return target;
}

if (import.meta.main) {
  try {
    console.log(ensureRegistryBinary());
  } catch (err) {
    process.stderr.write(`registry: ${err instanceof Error ? err.message : err}\n`);
    process.exit(1);
  }
}
