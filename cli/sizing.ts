/**
 * The memory an operator needs, from the benchmark suite's measurements (bench/README.md, "Idle
 * memory, second pass" and "Engine heap settings"), and the generated Deployment's requests and
 * limits derived from them with a stated margin. docs/guides/sizing.md explains the figures; when
 * the suite's figures change, change them here and there.
 *
 * @module
 */

/** A runtime an operator's image runs on (the CLI's `Runtime`; this layer imports nothing). */
export type SizedRuntime = "deno" | "bun" | "node";

/** One runtime's measured memory. */
export interface RuntimeMemory {
  /** Resident memory of the scaffold's operator as deployed, 10 s after `/readyz`, in MiB. */
  idleMiB: number;
  /** Resident memory per cached ConfigMap of 1 KiB (about 1.5 KB of JSON), in bytes. */
  bytesPerObject: number;
  /** What a relist (410) adds at its peak, per cached object, in bytes. */
  relistBytesPerObject: number;
}

/**
 * Medians of the suite's runs, 10,000 ConfigMaps (bench/results/2026-12-0{3,4}-*.md). Idle: the
 * scaffold's operator with metrics, probes and leader election, 10 s after `/readyz`, in
 * `d-nodelayer-idle` (Deno), `b-bunobj-final` (Bun) and `n-node-idle` (Node's single executable
 * as `rudder build --runtime node` ships it, read from disk). Per object and relist: `heap-x`
 * (Deno), `b-bunobj-final` (Bun and Go), `node-http1` (Node).
 */
export const MEASURED_MEMORY: Readonly<Record<SizedRuntime | "go", RuntimeMemory>> = {
  deno: { idleMiB: 71.6, bytesPerObject: 2_398, relistBytesPerObject: 2_055 },
  bun: { idleMiB: 61.7, bytesPerObject: 3_070, relistBytesPerObject: 2_726 },
  node: { idleMiB: 75.4, bytesPerObject: 2_704, relistBytesPerObject: 1_447 },
  go: { idleMiB: 30.6, bytesPerObject: 2_183, relistBytesPerObject: 3_355 },
};

/** Cached objects the request is sized for: a small operator's. */
export const REQUEST_OBJECTS = 1_000;
/** Cached objects the limit is sized for, relist included. */
export const LIMIT_OBJECTS = 10_000;
/** Margin over the measured figure: the request's, and the limit's (GC timing, larger objects). */
export const REQUEST_MARGIN = 1.2;
/** See {@linkcode REQUEST_MARGIN}. */
export const LIMIT_MARGIN = 1.5;

/**
 * The runtimes a project's image may be built with when `rudder manifests` is not told: a Deno
 * project's with Deno or Bun, a Node project's with Node or Bun (`rudder build --runtime`).
 */
export function imageRuntimes(project: "deno" | "node"): readonly SizedRuntime[] {
  return project === "node" ? ["node", "bun"] : ["deno", "bun"];
}

/** `objects` cached, at their relist peak when `relist`: MiB on `runtime`. */
export function operatorMemoryMiB(
  runtime: SizedRuntime | "go",
  objects: number,
  relist = false,
): number {
  const m = MEASURED_MEMORY[runtime];
  const perObject = m.bytesPerObject + (relist ? m.relistBytesPerObject : 0);
  return m.idleMiB + (objects * perObject) / 2 ** 20;
}

/** Rounds up to a multiple of 32 MiB. */
function roundUp(mib: number): number {
  return Math.ceil(mib / 32) * 32;
}

/** The largest figure of `runtimes`: the Deployment does not know which one the image runs. */
function heaviest(runtimes: readonly SizedRuntime[], objects: number, relist: boolean): number {
  if (runtimes.length === 0) throw new Error("sizing: no runtime to size the operator for");
  return Math.max(...runtimes.map((r) => operatorMemoryMiB(r, objects, relist)));
}

/** The manager container's memory request and limit, in MiB, for an image on `runtimes`. */
export function memoryMiB(
  runtimes: readonly SizedRuntime[] = imageRuntimes("deno"),
): { request: number; limit: number } {
  return {
    request: roundUp(heaviest(runtimes, REQUEST_OBJECTS, false) * REQUEST_MARGIN),
    limit: roundUp(heaviest(runtimes, LIMIT_OBJECTS, true) * LIMIT_MARGIN),
  };
}

/**
 * The manager container's resources for the memory {@linkcode memoryMiB} gives (by default for a
 * Deno or Bun image): the request covers an idle operator with {@linkcode REQUEST_OBJECTS} cached
 * objects on the heaviest runtime, the limit a relist of {@linkcode LIMIT_OBJECTS}, each with its
 * margin.
 */
export function managerResources(
  memory: { request: number; limit: number } = memoryMiB(),
): {
  requests: { cpu: string; memory: string };
  limits: { cpu: string; memory: string };
} {
  return {
    requests: { cpu: "10m", memory: `${memory.request}Mi` },
    limits: { cpu: "500m", memory: `${memory.limit}Mi` },
  };
}
