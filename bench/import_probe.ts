/**
 * Attribution of idle memory: a process that imports the given modules (paths relative to the
 * repository, or package names), optionally runs one of a few named steps, waits, and prints its
 * VmRSS, anonymous and file-backed resident memory (MiB) as one JSON line. Run each set a few
 * times and compare the lowest or the median: a single run on a busy machine is ±1–2 MiB.
 *
 * ```sh
 * deno run -A bench/import_probe.ts @logtape/logtape
 * node_modules/bun/bin/bun.exe run bench/import_probe.ts hono ./lib/healthz/healthz.ts
 * ```
 *
 * @module
 */

const WAIT_MS = Number(globalThis.process?.env?.PROBE_WAIT_MS ?? 3000);

function statusMiB(): Record<string, number> {
  // Read with the runtime's own call where there is one, so the probe itself loads no `node:fs`.
  const deno = (globalThis as { Deno?: { readTextFileSync(path: string): string } }).Deno;
  const text = deno ? deno.readTextFileSync("/proc/self/status") : (globalThis as {
    process: { getBuiltinModule(name: string): { readFileSync(p: string, e: string): string } };
  })
    .process.getBuiltinModule("node:fs").readFileSync("/proc/self/status", "utf8");
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    return match ? Math.round(Number(match[1]) / 102.4) / 10 : NaN;
  };
  return { rss: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile") };
}

const args = (globalThis as { Deno?: { args: string[] } }).Deno?.args ??
  (globalThis as { process: { argv: string[] } }).process.argv.slice(2);
const root = new URL("../", import.meta.url);
for (const spec of args) {
  await import(spec.startsWith("./") ? new URL(spec, root).href : spec);
}
await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
console.log(JSON.stringify({ modules: args, ...statusMiB() }));
