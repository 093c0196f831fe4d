/**
 * Attribution of idle memory: a process that imports the given modules (paths relative to the
 * repository, or package names), waits, and prints its VmRSS, anonymous and file-backed resident
 * memory (MiB) as one JSON line, and its live heap (MiB) after a full collection when the engine
 * exposes one (`--v8-flags=--expose-gc` on Deno, `--expose-gc` on Node, always on Bun). Run each
 * set a few times and compare the lowest or the median: a single run on a busy machine is ±1–2 MiB
 * of VmRSS; the live heap moves by less than 0.05 MiB between runs.
 *
 * On Deno the probe itself touches neither `node:` modules nor the `process` global, either of
 * which starts Deno's Node compatibility layer (about 0.75 MiB of live heap, 2–4 MiB resident).
 *
 * ```sh
 * deno run -A --v8-flags=--expose-gc bench/import_probe.ts @logtape/logtape
 * node_modules/bun/bin/bun.exe run bench/import_probe.ts hono ./lib/healthz/healthz.ts
 * ```
 *
 * @module
 */

interface ProbeDeno {
  readTextFileSync(path: string): string;
  env: { get(name: string): string | undefined };
  args: string[];
  memoryUsage(): { heapUsed: number };
}
interface ProbeProcess {
  getBuiltinModule(name: string): { readFileSync(p: string, e: string): string };
  env: Record<string, string | undefined>;
  argv: string[];
  memoryUsage(): { heapUsed: number };
}

const deno = (globalThis as { Deno?: ProbeDeno }).Deno;
// Read only through `globalThis.process` off Deno: on Deno that getter starts the Node layer.
const nodeProcess = deno ? undefined : (globalThis as unknown as { process: ProbeProcess }).process;

const WAIT_MS = Number(
  (deno ? deno.env.get("PROBE_WAIT_MS") : nodeProcess?.env.PROBE_WAIT_MS) ?? 3000,
);

function liveHeapMiB(): number {
  const bun = (globalThis as { Bun?: { gc(sync: boolean): void } }).Bun;
  const gc = (globalThis as { gc?: () => void }).gc;
  if (bun) bun.gc(true);
  else if (gc) gc();
  else return NaN;
  const used = deno ? deno.memoryUsage().heapUsed : nodeProcess!.memoryUsage().heapUsed;
  return Math.round(used / 10485.76) / 100;
}

function statusMiB(): Record<string, number> {
  const text = deno
    ? deno.readTextFileSync("/proc/self/status")
    : nodeProcess!.getBuiltinModule("node:fs").readFileSync("/proc/self/status", "utf8");
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    return match ? Math.round(Number(match[1]) / 102.4) / 10 : NaN;
  };
  return { rss: field("VmRSS"), anon: field("RssAnon"), file: field("RssFile") };
}

const args = deno ? deno.args : nodeProcess!.argv.slice(2);
const root = new URL("../", import.meta.url);
for (const spec of args) {
  await import(spec.startsWith("./") ? new URL(spec, root).href : spec);
}
await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
const resident = statusMiB();
console.log(JSON.stringify({ modules: args, ...resident, heap: liveHeapMiB() }));
