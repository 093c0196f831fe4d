// Whether `deno compile` can be tested here: it needs denort, the runtime it copies into the
// executable, from DENORT_BIN or Deno's cache, since tests may not download it.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { runtimeExecutable } from "../../cli/project.ts";

/** Why a deno-compiled binary cannot be tested here, or false when it can. */
export function denortMissing(): string | false {
  if (process.env.DENORT_BIN) {
    return existsSync(process.env.DENORT_BIN)
      ? false
      : `DENORT_BIN=${process.env.DENORT_BIN} does not exist`;
  }
  const deno = runtimeExecutable("deno", process.env);
  const info = spawnSync(deno, ["info", "--json"], { encoding: "utf8" });
  const version = spawnSync(deno, ["--version"], { encoding: "utf8" }).stdout.match(
    /^deno (\S+)/,
  )?.[1];
  const denoDir = info.status === 0 ? JSON.parse(info.stdout).denoDir : undefined;
  const triple = `${process.arch === "arm64" ? "aarch64" : "x86_64"}-unknown-linux-gnu`;
  const cached = denoDir && version &&
    join(denoDir, "dl", "release", `v${version}`, `denort-${triple}.zip`);
  if (cached && existsSync(cached)) return false;
  return "denort cannot be had without downloading it (tests stay on loopback): " +
    "set DENORT_BIN to a denort binary of this Deno version to run it";
}
