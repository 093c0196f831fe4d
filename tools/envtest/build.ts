/**
 * `deno task envtest`: builds `kube-apiserver` and `etcd` from this folder's Go module (see
 * lib/testing/envtest_build.ts), once, into the cache that `Environment` looks in, with progress
 * at least every 10 s; prints that directory on its last line. With `KUBEBUILDER_ASSETS` set it
 * builds nothing.
 *
 * Usage: deno run -A tools/envtest/build.ts [--force]
 *
 * @module
 */

import process from "node:process";
import { ensureEnvtestBinaries } from "../../lib/testing/envtest_build.ts";

export { ensureEnvtestBinaries };

if (import.meta.main) {
  try {
    console.log(await ensureEnvtestBinaries({ force: process.argv.includes("--force") }));
  } catch (err) {
    process.stderr.write(`envtest: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
