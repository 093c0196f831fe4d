/**
 * The memory an operator needs, from the benchmark suite's measurements (bench/README.md,
 * "Loaded memory and the list path"), and the generated Deployment's requests and limits derived
 * from them with a stated margin. docs/guides/sizing.md explains the figures; when the suite's
 * figures change, change them here and there.
 *
 * @module
 */

/** One runtime's measured memory. */
export interface RuntimeMemory {
  /** Resident memory of an idle operator 3 s after `/readyz`, in MiB. */
  idleMiB: number;
  /** Resident memory per cached ConfigMap of 1 KiB (about 1.5 KB of JSON), in bytes. */
  bytesPerObject: number;
  /** What a relist (410) adds at its peak, per cached object, in bytes. */
  relistBytesPerObject: number;
}

/**
 * Measured with 10,000 ConfigMaps: per object in bench/results/2026-12-03-memload-after.md (Bun's
 * from 2026-12-03-memload-before.md: Bun parses list pages whole, as before), the relist in
 * 2026-12-03-memload-relist500.md; idle in 2026-12-02-final10.md.
 */
export const MEASURED_MEMORY: Readonly<Record<"deno" | "bun" | "go", RuntimeMemory>> = {
  deno: { idleMiB: 75.0, bytesPerObject: 2_430, relistBytesPerObject: 2_230 },
  bun: { idleMiB: 61.4, bytesPerObject: 3_640, relistBytesPerObject: 1_760 },
  go: { idleMiB: 30.5, bytesPerObject: 2_180, relistBytesPerObject: 3_770 },
};

/** Cached objects the request is sized for: a small operator's. */
export const REQUEST_OBJECTS = 1_000;
/** Cached objects the limit is sized for, relist included. */
export const LIMIT_OBJECTS = 10_000;
/** Margin over the measured figure: the request's, and the limit's (GC timing, larger objects). */
export const REQUEST_MARGIN = 1.2;
/** See {@linkcode REQUEST_MARGIN}. */
export const LIMIT_MARGIN = 1.5;

/** `objects` cached, at their relist peak when `relist`: MiB on `runtime`. */
export function operatorMemoryMiB(
  runtime: keyof typeof MEASURED_MEMORY,
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

/** The larger of Deno's and Bun's figure: the Deployment does not know the image's runtime. */
function heaviest(objects: number, relist: boolean): number {
  return Math.max(
    operatorMemoryMiB("deno", objects, relist),
    operatorMemoryMiB("bun", objects, relist),
  );
}

/** The manager container's memory request, in MiB (see {@linkcode managerResources}). */
export const MEMORY_REQUEST_MIB: number = roundUp(
  heaviest(REQUEST_OBJECTS, false) * REQUEST_MARGIN,
);
/** The manager container's memory limit, in MiB (see {@linkcode managerResources}). */
export const MEMORY_LIMIT_MIB: number = roundUp(heaviest(LIMIT_OBJECTS, true) * LIMIT_MARGIN);

/**
 * The manager container's resources: the request covers an idle operator with
 * {@linkcode REQUEST_OBJECTS} cached objects on the heaviest runtime, the limit a relist of
 * {@linkcode LIMIT_OBJECTS}, each with its margin.
 */
export function managerResources(): {
  requests: { cpu: string; memory: string };
  limits: { cpu: string; memory: string };
} {
  return {
    requests: { cpu: "10m", memory: `${MEMORY_REQUEST_MIB}Mi` },
    limits: { cpu: "500m", memory: `${MEMORY_LIMIT_MIB}Mi` },
  };
}
