/**
 * File paths without `node:path` on Deno, whose import starts Deno's Node compatibility layer:
 * POSIX `join`, `resolve` and `dirname` there (Rudder's operators run on Linux), Node's own
 * functions on Bun and Node, and on Deno for Windows.
 *
 * @module
 */

import { cwd, deno, nodeProcess } from "./runtime.ts";

type NodePath = typeof import("node:path");

function nodePath(): NodePath | undefined {
  const runtime = deno();
  if (runtime && runtime.build.os !== "windows") return undefined;
  return nodeProcess().getBuiltinModule("node:path") as NodePath;
}

/** Collapses `.`, `..` and repeated slashes of a POSIX path. */
function normalize(path: string): string {
  const absolute = path.startsWith("/");
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length > 0 && parts[parts.length - 1] !== "..") parts.pop();
      else if (!absolute) parts.push("..");
    } else parts.push(part);
  }
  const joined = parts.join("/");
  if (absolute) return `/${joined}`;
  return joined === "" ? "." : joined;
}

/**
 * The paths joined with the separator and normalised (`path.join`).
 *
 * @example
 * ```ts
 * import { joinPath } from "./paths.ts";
 *
 * console.log(joinPath("/var/run", "secrets", "token")); // "/var/run/secrets/token"
 * ```
 */
export function joinPath(...paths: string[]): string {
  const node = nodePath();
  if (node) return node.join(...paths);
  const joined = paths.filter((p) => p !== "").join("/");
  if (joined === "") return ".";
  const normal = normalize(joined);
  // As node:path does, a trailing separator stays.
  return joined.endsWith("/") && !normal.endsWith("/") ? `${normal}/` : normal;
}

/**
 * `paths` resolved, right to left, into an absolute path, the working directory last
 * (`path.resolve`).
 *
 * @example
 * ```ts
 * import { resolvePath } from "./paths.ts";
 *
 * console.log(resolvePath("/etc", "kube", "../config")); // "/etc/config"
 * ```
 */
export function resolvePath(...paths: string[]): string {
  const node = nodePath();
  if (node) return node.resolve(...paths);
  let resolved = "";
  for (let i = paths.length - 1; i >= 0 && !resolved.startsWith("/"); i--) {
    if (paths[i] !== "") resolved = resolved === "" ? paths[i] : `${paths[i]}/${resolved}`;
  }
  if (!resolved.startsWith("/")) resolved = resolved === "" ? cwd() : `${cwd()}/${resolved}`;
  const normal = normalize(resolved);
  return normal.length > 1 && normal.endsWith("/") ? normal.slice(0, -1) : normal;
}

/**
 * The directory part of `path` (`path.dirname`).
 *
 * @example
 * ```ts
 * import { dirnamePath } from "./paths.ts";
 *
 * console.log(dirnamePath("/home/me/.kube/config")); // "/home/me/.kube"
 * ```
 */
export function dirnamePath(path: string): string {
  const node = nodePath();
  if (node) return node.dirname(path);
  const trimmed = path.length > 1 ? path.replace(/\/+$/, "") : path;
  const slash = trimmed.lastIndexOf("/");
  if (slash === -1) return ".";
  if (slash === 0) return "/";
  return trimmed.slice(0, slash).replace(/\/+$/, "") || "/";
}

/** The separator of the entries of `$KUBECONFIG` and `$PATH` (`path.delimiter`). */
export function pathDelimiter(): string {
  return nodePath()?.delimiter ?? ":";
}

/** The separator of a path's parts (`path.sep`). */
export function pathSeparator(): string {
  return nodePath()?.sep ?? "/";
}
