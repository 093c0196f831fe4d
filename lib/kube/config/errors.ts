/**
 * {@linkcode KubeconfigError}, the one error every configuration loader throws, and the
 * helpers that build its messages: always the file, the field when one is at fault, and
 * never the value of a credential.
 *
 * @module
 */

/**
 * A kubeconfig (or in-cluster configuration) that cannot be used. `file` is the file at fault
 * and `field` the path of the offending field inside it (e.g. `users[0].user.token`), when the
 * problem is one field. Messages never contain tokens, keys or passwords.
 *
 * @example Tell a broken kubeconfig from other failures
 * ```ts
 * import { KubeconfigError, loadKubeconfigFile } from "@rudder/operator/kube";
 *
 * try {
 *   await loadKubeconfigFile("/etc/operator/kubeconfig");
 * } catch (err) {
 *   if (err instanceof KubeconfigError) console.error(err.file, err.field, err.message);
 *   else throw err;
 * }
 * ```
 */
export class KubeconfigError extends Error {
  /** The file at fault: a kubeconfig, a file it references, or a service account file. */
  readonly file: string;
  /** Path of the offending field inside `file`, e.g. `clusters[1].cluster.server`. */
  readonly field?: string;

  /** Builds an error with a complete message and the file and field it concerns. */
  constructor(message: string, options: { file: string; field?: string; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "KubeconfigError";
    this.file = options.file;
    this.field = options.field;
  }
}

/** Where a value came from, so errors about it can name the file and the field. */
export interface Origin {
  /** The kubeconfig file (or `kubeconfig object`). */
  file: string;
  /** The field's path in it, e.g. `users[0].user.token`. */
  field: string;
}

/** `kubeconfig <file>: <field>: <detail>`. */
export function fieldError(origin: Origin, detail: string, cause?: unknown): KubeconfigError {
  return new KubeconfigError(`kubeconfig ${origin.file}: ${origin.field}: ${detail}`, {
    file: origin.file,
    field: origin.field,
    cause,
  });
}

/** `kubeconfig <file>: <detail>`, for problems of the whole file. */
export function fileError(file: string, detail: string, cause?: unknown): KubeconfigError {
  return new KubeconfigError(`kubeconfig ${file}: ${detail}`, { file, cause });
}

/** A short reason for a failed file operation, without the stack or the file's content. */
export function describeFsError(err: unknown): string {
  const code = err instanceof Error && "code" in err ? String(err.code) : undefined;
  switch (code) {
    case "ENOENT":
      return "no such file";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "is a directory";
    case undefined:
      return err instanceof Error ? err.message : String(err);
    default:
      return code;
  }
}

/** True for a file (or a directory on its path) that does not exist. */
export function isNotFoundError(err: unknown): boolean {
  return err instanceof Error && "code" in err && (err.code === "ENOENT" || err.code === "ENOTDIR");
}

/** `null`, `array`, or the `typeof` of a value, for "expected …, got …" messages. */
export function describeType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** `250 ms`, `30 s`, `1.5 s`: the deadlines of exec plugins and requests in messages. */
export function formatDuration(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(1))} s`;
}
