// The CLI run in-process (cli/main.ts's `main`), as the unit tests of its commands run it.
import process from "node:process";
import { main } from "../../cli/main.ts";

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
