/**
 * Base64 without `node:buffer`, whose import starts Deno's Node compatibility layer. The same
 * answers as `Buffer.from(…).toString("base64")` and `Buffer.from(…, "base64")` for what Rudder
 * encodes and decodes (kubeconfig fields, Secret data, admission patches).
 *
 * @module
 */

const CHUNK = 0x8000;

/**
 * The base64 of `data` (UTF-8 for a string), with padding.
 *
 * @example
 * ```ts
 * import { encodeBase64 } from "./encoding.ts";
 *
 * console.log(encodeBase64("user:pass")); // "dXNlcjpwYXNz"
 * ```
 */
export function encodeBase64(data: string | Uint8Array): string {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  let binary = "";
  // In chunks: spreading a large array into one call overflows the stack.
  for (let at = 0; at < bytes.length; at += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(at, at + CHUNK));
  }
  return btoa(binary);
}

/**
 * The bytes of base64 `text`, as leniently as Node's `Buffer.from(text, "base64")`: whitespace
 * and other characters outside the alphabet are skipped, the URL-safe alphabet is accepted,
 * padding is optional and decoding stops at the first `=`.
 *
 * @example
 * ```ts
 * import { decodeBase64 } from "./encoding.ts";
 *
 * console.log(new TextDecoder().decode(decodeBase64("dXNlcjpw\nYXNz"))); // "user:pass"
 * ```
 */
export function decodeBase64(text: string): Uint8Array {
  const end = text.indexOf("=");
  let clean = (end === -1 ? text : text.slice(0, end))
    .replace(/-/g, "+")
    .replace(/_/g, "/")
    .replace(/[^A-Za-z0-9+/]/g, "");
  // A lone last character holds less than a byte: Node drops it.
  if (clean.length % 4 === 1) clean = clean.slice(0, -1);
  const binary = atob(clean);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/**
 * The UTF-8 text of base64 `text` (see {@linkcode decodeBase64}).
 *
 * @example
 * ```ts
 * import { decodeBase64Text } from "./encoding.ts";
 *
 * console.log(decodeBase64Text("dXNlcjpwYXNz")); // "user:pass"
 * ```
 */
export function decodeBase64Text(text: string): string {
  return new TextDecoder().decode(decodeBase64(text));
}
