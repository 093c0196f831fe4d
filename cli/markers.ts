/**
 * The marker comments `rudder init` writes in `main.ts` (kubebuilder's
 * `// +kubebuilder:scaffold:…`): `rudder create api` and `rudder create webhook` insert their
 * import and set-up call just above them, so they never search the user's code for a place.
 *
 * @module
 */

/** Each marker line (without its indentation), by what is inserted above it. */
export const SCAFFOLD_MARKERS = {
  /** The end of the imports: each new controller's and webhook's import. */
  imports: "// +rudder:scaffold:imports",
  /** In `setup(mgr)`, after the controllers' set-up: each new controller's. */
  controllers: "// +rudder:scaffold:controllers",
  /** In `setup(mgr)`, after the webhooks' set-up: each new kind's webhooks. */
  webhooks: "// +rudder:scaffold:webhooks",
} as const;

/** Where something is inserted: a key of {@linkcode SCAFFOLD_MARKERS}. */
export type ScaffoldMarker = keyof typeof SCAFFOLD_MARKERS;

const PLACES: Record<ScaffoldMarker, string> = {
  imports: "after its last import",
  controllers: "in setup(mgr), after the controllers' set-up calls",
  webhooks: "in setup(mgr), after the webhooks' set-up calls",
};

/** A module that lacks a marker: names the file, the marker line and where it goes. */
export class MissingMarkerError extends Error {
  /** `file` lacks the line of `marker`. */
  constructor(file: string, marker: ScaffoldMarker) {
    super(
      `${file} has no \`${SCAFFOLD_MARKERS[marker]}\` line, above which rudder create ` +
        `inserts its code; add it ${PLACES[marker]} (rudder init writes it there)`,
    );
    this.name = "MissingMarkerError";
  }
}

/**
 * `source` with `lines` inserted just above its `marker` line, indented as the marker is. Throws
 * a {@linkcode MissingMarkerError} naming `file` when there is no such line.
 */
export function insertAtMarker(
  source: string,
  marker: ScaffoldMarker,
  lines: string[],
  file: string,
): string {
  const all = source.split("\n");
  const at = all.findIndex((line) => line.trim() === SCAFFOLD_MARKERS[marker]);
  if (at < 0) throw new MissingMarkerError(file, marker);
  const indent = all[at].match(/^\s*/)![0];
  all.splice(at, 0, ...lines.map((line) => `${indent}${line}`));
  return all.join("\n");
}
