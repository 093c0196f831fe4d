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
 * Measured on 2026-12-03 (bench/results/2026-12-03-memload-after.md, 10,000 ConfigMaps) and, for
 * the idle figures, 2026-12-02 (bench/results/2026-12-02-final10.md). Deno is the heaviest
 * runtime, so the Deployment's figures come from it.
 */
export const MEASURED_MEMORY: Readonly<Record<"deno" | "bun" | "go", RuntimeMemory>> = {
  deno: { idleMiB: 75.0, bytesPerObject: 2_430, relistBytesPerObject: 5_800 },
  bun: { idleMiB: 61.4, bytesPerObject: 3_640, relistBytesPerObject: 2_800 },
  go: { idleMiB: 30.5, bytesPerObject: 2_180, relistBytesPerObject: 3_300 },
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

/** Rounds up to a multiple of 32 MiB, as a Kubernetes quantity. */
function quantity(mib: number): string {
  return `${Math.ceil(mib / 32) * 32}Mi`;
}

/**
 * The manager container's resources: the request covers an idle operator with
 * {@linkcode REQUEST_OBJECTS} cached objects on the heaviest runtime, the limit a relist of
 * {@linkcode LIMIT_OBJECTS}, each with its margin.
 */
export function managerResources(): {
  requests: { cpu: string; memory: string };
  limits: { cpu: string; memory: string };
} {
  const heaviest = (objects: number, relist: boolean) =>
    Math.max(
      operatorMemoryMiB("deno", objects, relist),
      operatorMemoryMiB("bun", objects, relist),
    );
  return {
    requests: {
      cpu: "10m",
      memory: quantity(heaviest(REQUEST_OBJECTS, false) * REQUEST_MARGIN),
    },
    limits: { cpu: "500m", memory: quantity(heaviest(LIMIT_OBJECTS, true) * LIMIT_MARGIN) },
  };
}
