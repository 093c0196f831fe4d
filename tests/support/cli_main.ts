// The CLI run in-process (cli/main.ts's `main`), as the unit tests of its commands run it.
import { after, before } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { main } from "../../cli/main.ts";
import type { ScaffoldOptions } from "../../cli/templates.ts";

/** What one in-process run of the CLI returned and wrote. */
export interface MainRun {
  code: number;
  out: string;
  err: string;
}

/**
 * Runs the CLI with `args` in `cwd` and collects what it writes; `env` is its whole environment
 * (default: only PATH).
 */
export async function runMain(
  args: string[],
  cwd: string,
  env: Record<string, string | undefined> = { PATH: process.env.PATH },
): Promise<MainRun> {
  let out = "";
  let err = "";
  const code = await main(args, {
    out: (line) => (out += `${line}\n`),
    err: (line) => (err += `${line}\n`),
    cwd,
    env,
  });
  return { code, out, err };
}

/** The scaffold options the CLI's unit tests start from: a Memcached operator. */
export const MEMCACHED: ScaffoldOptions = {
  name: "memcached-operator",
  group: "cache.example.com",
  version: "v1alpha1",
  kind: "Memcached",
};

/**
 * A scratch directory for one test file, made before its tests and removed after them (call at
 * the top level); the returned function gives its path.
 */
export function useScratch(prefix: string): () => string {
  let dir: string | undefined;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  }, { timeout: 30_000 });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, { timeout: 30_000 });
  return () => {
    if (!dir) throw new Error("the scratch directory exists only while the tests run");
    return dir;
  };
}
