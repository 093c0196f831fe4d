/**
 * Byte helpers shared by the DER writer and the exec credential plugin's output reader.
 *
 * @module
 */

/** The bytes of `parts`, one after the other, in a new array. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
