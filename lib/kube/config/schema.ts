/**
 * The kubeconfig document as a zod schema. Parsing checks the types of every field of every
 * entry (as client-go's decoder does, even for entries the selected context does not use) and
 * turns the first problem into a {@linkcode KubeconfigError} naming the file and the field,
 * e.g. `kubeconfig ~/.kube/config: users[0].user.token: expected a string, got number`.
 * Values are never quoted. Whether the selected entries are usable (a server set, a readable
 * certificate) is checked later, when they are resolved.
 *
 * @module
 */

import { z } from "zod";
import { describeType, fieldError, fileError, KubeconfigError } from "./errors.ts";

/** The cluster extension whose `extension` is handed to exec plugins as `spec.cluster.config`. */
const EXEC_CLUSTER_EXTENSION = "client.authentication.k8s.io/exec";

type Issue = { input?: unknown; code?: string };

/** `expected <what>, got <type of the input>`; `missing` messages for required fields. */
function expected(what: string, missing?: string) {
  return (issue: Issue) =>
    issue.input === undefined && missing !== undefined
      ? missing
      : `expected ${what}, got ${describeType(issue.input)}`;
}

/**
 * The schemas, built on first use: an operator in a cluster reads no kubeconfig, and building
 * them at import cost 1.4 MiB resident (bench/README.md, "Idle memory, second pass").
 */
function buildSchemas() {
  /** A string; `""` means unset, as in client-go. */
  const text = z.string({ error: expected("a string") }).optional()
    .transform((value) => (value === "" ? undefined : value));

  const flag = z.boolean({ error: expected("a boolean") }).optional();

  function mapping<T extends z.core.$ZodLooseShape>(shape: T) {
    return z.object(shape, { error: expected("a mapping") });
  }

  function list<T extends z.ZodType>(item: T) {
    return z.array(item, { error: expected("a list") }).optional().transform((value) =>
      value ?? []
    );
  }

  const entryName = z.string({ error: expected("a string", "missing; every entry needs a name") })
    .refine((name) => name !== "", { error: "missing; every entry needs a name" });

  const clusterSchema = mapping({
    server: text,
    "certificate-authority": text,
    "certificate-authority-data": text,
    "insecure-skip-tls-verify": flag,
    "tls-server-name": text,
    "proxy-url": text,
    // Extensions are otherwise ignored, so a malformed one is not an error.
    extensions: z.unknown().optional(),
  });

  const envSchema = mapping({
    name: z.string({ error: expected("a string", "missing; every env entry needs a name") })
      .refine((name) => name !== "", { error: "missing; every env entry needs a name" }),
    value: z.string({ error: expected("a string") }).optional(),
  }).superRefine((variable, context) => {
    if (variable.value === undefined) {
      context.addIssue({
        code: "custom",
        path: ["value"],
        message: `missing for env variable ${variable.name}`,
      });
    }
  });

  const execSchema = mapping({
    command: text,
    args: z.array(z.string({ error: expected("a string") }), {
      error: expected("a list of strings"),
    }).optional(),
    env: list(envSchema),
    apiVersion: text,
    interactiveMode: text,
    installHint: text,
    provideClusterInfo: flag,
  });

  const userSchema = mapping({
    "client-certificate": text,
    "client-certificate-data": text,
    "client-key": text,
    "client-key-data": text,
    token: text,
    tokenFile: text,
    username: text,
    password: text,
    exec: execSchema.optional(),
    "auth-provider": mapping({ name: z.string({ error: expected("a string") }).optional() })
      .optional(),
  });

  const contextSchema = mapping({ cluster: text, user: text, namespace: text });

  const documentSchema = mapping({
    clusters: list(mapping({ name: entryName, cluster: clusterSchema.optional() })),
    users: list(mapping({ name: entryName, user: userSchema.optional() })),
    contexts: list(mapping({ name: entryName, context: contextSchema.optional() })),
    "current-context": text,
  });

  /** A cluster's fields, `""` already turned into unset. */
  return {
    cluster: clusterSchema,
    user: userSchema,
    exec: execSchema,
    context: contextSchema,
    document: documentSchema,
  };
}

type Schemas = ReturnType<typeof buildSchemas>;
let schemas: Schemas | undefined;

export type ClusterFields = Partial<z.output<Schemas["cluster"]>>;
/** A user's fields. */
export type UserFields = Partial<z.output<Schemas["user"]>>;
/** A user's `exec` block. */
export type ExecFields = z.output<Schemas["exec"]>;
/** A context's fields. */
export type ContextFields = Partial<z.output<Schemas["context"]>>;

/** Where a named kubeconfig entry was defined. */
export interface EntrySource {
  /** The kubeconfig file that defined it. */
  file: string;
  /** The directory relative paths in it are resolved against. */
  baseDir: string;
  /** Its path in the file, e.g. `users[2]`. */
  path: string;
}

/** A `clusters[]` entry. */
export interface ClusterEntry extends EntrySource {
  /** The entry's name. */
  name: string;
  /** Its `cluster` mapping. */
  cluster: ClusterFields;
  /** The `extension` of its `client.authentication.k8s.io/exec` extension, if any. */
  execExtension?: unknown;
}

/** A `users[]` entry. */
export interface UserEntry extends EntrySource {
  /** The entry's name. */
  name: string;
  /** Its `user` mapping. */
  user: UserFields;
}

/** A `contexts[]` entry. */
export interface ContextEntry extends EntrySource, ContextFields {
  /** The entry's name. */
  name: string;
}

/** One kubeconfig document, checked. */
export interface ParsedKubeconfig {
  /** Where it came from. */
  file: string;
  /** Its clusters, in file order. */
  clusters: ClusterEntry[];
  /** Its users, in file order. */
  users: UserEntry[];
  /** Its contexts, in file order. */
  contexts: ContextEntry[];
  /** Its `current-context`, unless empty. */
  currentContext?: string;
}

/** `users[0].user.token` from zod's `["users", 0, "user", "token"]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** YAML `key:` with nothing after it means "unset", as in client-go: drop such keys. */
function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNulls);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (item === null) continue;
    // An extension's content is handed on untouched.
    out[key] = key === "extensions" ? item : dropNulls(item);
  }
  return out;
}

function execExtensionOf(extensions: unknown): unknown {
  if (!Array.isArray(extensions)) return undefined;
  for (const entry of extensions) {
    if (typeof entry === "object" && entry !== null && entry.name === EXEC_CLUSTER_EXTENSION) {
      return entry.extension;
    }
  }
  return undefined;
}

/**
 * Checks one kubeconfig document (already parsed from YAML) and returns its entries. `file`
 * names it in errors; `baseDir` is where its relative paths point. An empty document is an
 * empty configuration, as in client-go.
 */
export function parseKubeconfig(
  document: unknown,
  file: string,
  baseDir: string,
): ParsedKubeconfig {
  if (document === null || document === undefined) {
    return { file, clusters: [], users: [], contexts: [] };
  }
  if (typeof document !== "object" || Array.isArray(document)) {
    throw fileError(file, `expected a mapping at the top level, got ${describeType(document)}`);
  }
  const result = (schemas ??= buildSchemas()).document.safeParse(dropNulls(document));
  if (!result.success) throw issueError(result.error, file);
  const data = result.data;
  const source = (path: string): EntrySource => ({ file, baseDir, path });
  return {
    file,
    clusters: data.clusters.map((entry, index) => ({
      ...source(`clusters[${index}]`),
      name: entry.name,
      cluster: entry.cluster ?? {},
      execExtension: execExtensionOf(entry.cluster?.extensions),
    })),
    users: data.users.map((entry, index) => ({
      ...source(`users[${index}]`),
      name: entry.name,
      user: entry.user ?? {},
    })),
    contexts: data.contexts.map((entry, index) => ({
      ...source(`contexts[${index}]`),
      ...entry.context,
      name: entry.name,
    })),
    currentContext: data["current-context"],
  };
}

function issueError(error: z.ZodError, file: string): KubeconfigError {
  // The first problem in file order is the one a person fixes first.
  const [issue] = error.issues;
  const field = formatPath(issue.path);
  if (field === "") return fileError(file, issue.message);
  return fieldError({ file, field }, issue.message);
}
