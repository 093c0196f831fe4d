/**
 * Loading kubeconfig files: reading and checking them (schema.ts), merging a `$KUBECONFIG`
 * list like client-go, selecting a context, and turning its cluster and user into a
 * {@linkcode KubeConfig}. {@linkcode loadConfig} adds controller-runtime's search order:
 * explicit file, `$KUBECONFIG`, in-cluster service account, `~/.kube/config`.
 *
 * @module
 */

import { decodeBase64Text, encodeBase64 } from "../../util/encoding.ts";
import {
  dirnamePath,
  joinPath,
  pathDelimiter,
  pathSeparator,
  resolvePath,
} from "../../util/paths.ts";
import { cwd, getEnv, homedir } from "../../util/runtime.ts";
import { getLogger } from "@logtape/logtape";
import { isValidHeaderValue, redactText, redactURL, urlUserInfo } from "../redact.ts";
import {
  basicAuth,
  bearerAuth,
  clientCertificateAuth,
  combineAuthProviders,
  FileTokenSource,
  StaticAuthProvider,
} from "./auth.ts";
import { clientCertificateProblem } from "./client_certificate.ts";
import {
  describeFsError,
  fieldError,
  fileError,
  isNotFoundError,
  KubeconfigError,
  type Origin,
} from "./errors.ts";
import { type ExecClusterInfo, ExecCredentialProvider } from "./exec.ts";
import { DEFAULT_SERVICE_ACCOUNT_DIR, inClusterConfig } from "./in_cluster.ts";
import {
  type ClusterEntry,
  type ContextEntry,
  type EntrySource,
  type ParsedKubeconfig,
  parseKubeconfig,
  type UserEntry,
} from "./schema.ts";
import type { AuthProvider, KubeConfig, LoadConfigOptions } from "./types.ts";
import { readTextFile } from "../../util/files.ts";

const logger = getLogger(["rudder", "kube", "config"]);

/**
 * What {@linkcode loadConfigFrom} reads from the machine, so tests can supply their own.
 * Internal: applications call {@linkcode loadConfig}.
 */
export interface ConfigEnvironment {
  /** Environment variables (`KUBECONFIG`, `KUBERNETES_SERVICE_*`); default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Home directory holding `.kube/config`; default `homedir()`. */
  homeDir?: string;
  /** Service account directory; default {@linkcode DEFAULT_SERVICE_ACCOUNT_DIR}. */
  serviceAccountDir?: string;
  /** Clock for token caches, in milliseconds since the epoch; default `Date.now`. */
  now?: () => number;
}

/** The environment plus the per-call options that reach the auth providers. */
interface ResolveOptions extends ConfigEnvironment {
  execTimeoutMs?: number;
}

/** `<path>.<section>.<key>` of an entry, e.g. `users[0].user.token`. */
function origin(entry: EntrySource, section: string, key: string): Origin {
  return { file: entry.file, field: `${entry.path}.${section}.${key}` };
}

// ---------------------------------------------------------------------------------------------
// Merging and selecting a context

/** clusters, users and contexts of several files, the first definition of a name winning. */
interface MergedKubeconfig {
  source: string;
  clusters: Map<string, ClusterEntry>;
  users: Map<string, UserEntry>;
  contexts: Map<string, ContextEntry>;
  currentContext?: { name: string; file: string };
}

function mergeKubeconfigs(parsed: ParsedKubeconfig[], source: string): MergedKubeconfig {
  const merged: MergedKubeconfig = {
    source,
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
  };
  for (const file of parsed) {
    for (const cluster of file.clusters) {
      if (!merged.clusters.has(cluster.name)) merged.clusters.set(cluster.name, cluster);
    }
    for (const user of file.users) {
      if (!merged.users.has(user.name)) merged.users.set(user.name, user);
    }
    for (const context of file.contexts) {
      if (!merged.contexts.has(context.name)) merged.contexts.set(context.name, context);
    }
    if (!merged.currentContext && file.currentContext !== undefined) {
      merged.currentContext = { name: file.currentContext, file: file.file };
    }
  }
  return merged;
}

function listNames(names: Iterable<string>): string {
  const all = [...names].map((name) => JSON.stringify(name));
  return all.length === 0 ? "none" : all.join(", ");
}

function selectContext(merged: MergedKubeconfig, contextOption: string | undefined): ContextEntry {
  let contextName: string;
  if (contextOption !== undefined && contextOption !== "") {
    contextName = contextOption;
    if (!merged.contexts.has(contextName)) {
      throw fileError(
        merged.source,
        `context ${JSON.stringify(contextName)} (from the context option) not found; ` +
          `contexts: ${listNames(merged.contexts.keys())}`,
      );
    }
  } else if (merged.currentContext) {
    contextName = merged.currentContext.name;
    if (!merged.contexts.has(contextName)) {
      throw fieldError(
        { file: merged.currentContext.file, field: "current-context" },
        `names context ${JSON.stringify(contextName)}, which is not defined; ` +
          `contexts: ${listNames(merged.contexts.keys())}`,
      );
    }
  } else {
    throw fieldError(
      { file: merged.source, field: "current-context" },
      `not set and no context option given; contexts: ${listNames(merged.contexts.keys())}`,
    );
  }
  return merged.contexts.get(contextName)!;
}

async function buildKubeConfig(
  merged: MergedKubeconfig,
  contextOption: string | undefined,
  options: ResolveOptions,
): Promise<KubeConfig> {
  const context = selectContext(merged, contextOption);
  const contextName = context.name;
  if (context.cluster === undefined) {
    throw fieldError(
      origin(context, "context", "cluster"),
      `context ${JSON.stringify(contextName)} has no cluster`,
    );
  }
  const clusterEntry = merged.clusters.get(context.cluster);
  if (!clusterEntry) {
    throw fieldError(
      origin(context, "context", "cluster"),
      `cluster ${JSON.stringify(context.cluster)} is not defined; ` +
        `clusters: ${listNames(merged.clusters.keys())}`,
    );
  }
  let userEntry: UserEntry | undefined;
  if (context.user !== undefined) {
    userEntry = merged.users.get(context.user);
    if (!userEntry) {
      throw fieldError(
        origin(context, "context", "user"),
        `user ${JSON.stringify(context.user)} is not defined; users: ${
          listNames(merged.users.keys())
        }`,
      );
    }
  }
  const cluster = await resolveCluster(clusterEntry);
  let auth = await resolveAuth(userEntry, cluster, options);
  if (cluster.serverUserInfo) {
    // Go's HTTP client sends a URL's user-info as basic auth unless the request already has an
    // Authorization header; the same here, with the secret kept out of `server`.
    const { username, password } = cluster.serverUserInfo;
    auth = combineAuthProviders([auth, basicAuth(username, password)]);
  }
  const config: KubeConfig = {
    server: cluster.server,
    namespace: context.namespace ?? "default",
    auth,
    contextName,
    source: merged.source,
  };
  if (cluster.caData !== undefined) config.caData = cluster.caData;
  if (cluster.insecureSkipTLSVerify) config.insecureSkipTLSVerify = true;
  if (cluster.tlsServerName !== undefined) config.tlsServerName = cluster.tlsServerName;
  if (cluster.proxyURL !== undefined) config.proxyURL = cluster.proxyURL;
  return config;
}

// ---------------------------------------------------------------------------------------------
// Resolving the selected cluster and user

/** Decodes a kubeconfig `-data` field; Go's decoder also ignores line breaks. */
function decodeBase64(value: string, at: Origin): string {
  const compact = value.replace(/[\r\n]/g, "");
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    throw fieldError(at, "invalid base64");
  }
  return decodeBase64Text(compact);
}

function requirePem(text: string, at: Origin, what: string): string {
  if (!text.includes("-----BEGIN ")) throw fieldError(at, `${what} contains no PEM block`);
  return text;
}

async function readReferencedFile(filePath: string, at: Origin): Promise<string> {
  try {
    return await readTextFile(filePath);
  } catch (err) {
    throw fieldError(at, `cannot read ${filePath} (${describeFsError(err)})`, err);
  }
}

/** PEM text from a `-data` field (preferred, as in client-go) or the file a path field names. */
async function readPem(
  entry: EntrySource,
  section: string,
  fileKey: string,
  filePath: string | undefined,
  dataKey: string,
  data: string | undefined,
): Promise<string | undefined> {
  if (data !== undefined) {
    const at = origin(entry, section, dataKey);
    return requirePem(decodeBase64(data, at), at, "the decoded data");
  }
  if (filePath !== undefined) {
    const at = origin(entry, section, fileKey);
    const resolved = resolvePath(entry.baseDir, filePath);
    return requirePem(await readReferencedFile(resolved, at), at, resolved);
  }
  return undefined;
}

interface ResolvedCluster {
  server: string;
  /** User-info the server URL carried, moved out of `server`. */
  serverUserInfo?: { username: string; password: string };
  caData?: string;
  insecureSkipTLSVerify?: boolean;
  tlsServerName?: string;
  proxyURL?: string;
  execExtension?: unknown;
}

async function resolveCluster(entry: ClusterEntry): Promise<ResolvedCluster> {
  const fields = entry.cluster;
  const serverField = origin(entry, "cluster", "server");
  if (fields.server === undefined) {
    throw fieldError(serverField, `cluster ${JSON.stringify(entry.name)} has no server`);
  }
  let url: URL | undefined;
  try {
    url = new URL(fields.server);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) {
    throw fieldError(
      serverField,
      `expected an http or https URL, got ${JSON.stringify(redactText(redactURL(fields.server)))}`,
    );
  }
  const proxyURL = fields["proxy-url"];
  if (proxyURL !== undefined && !URL.canParse(proxyURL)) {
    throw fieldError(origin(entry, "cluster", "proxy-url"), "not a URL");
  }
  const caData = await readPem(
    entry,
    "cluster",
    "certificate-authority",
    fields["certificate-authority"],
    "certificate-authority-data",
    fields["certificate-authority-data"],
  );
  if (caData !== undefined && fields["insecure-skip-tls-verify"]) {
    // client-go refuses this too: the user asked for two contradicting things.
    throw fieldError(
      origin(entry, "cluster", "insecure-skip-tls-verify"),
      `cluster ${JSON.stringify(entry.name)} sets both a certificate authority and ` +
        `insecure-skip-tls-verify; remove one`,
    );
  }
  const resolved: ResolvedCluster = {
    server: redactURL(fields.server).replace(/\/+$/, ""),
  };
  const userInfo = urlUserInfo(fields.server);
  if (userInfo) resolved.serverUserInfo = userInfo;
  if (caData !== undefined) resolved.caData = caData;
  if (fields["insecure-skip-tls-verify"]) resolved.insecureSkipTLSVerify = true;
  if (fields["tls-server-name"] !== undefined) resolved.tlsServerName = fields["tls-server-name"];
  if (proxyURL !== undefined) resolved.proxyURL = proxyURL;
  if (entry.execExtension !== undefined) resolved.execExtension = entry.execExtension;
  return resolved;
}

function execClusterInfo(cluster: ResolvedCluster): ExecClusterInfo {
  const info: ExecClusterInfo = { server: cluster.server };
  if (cluster.caData !== undefined) {
    info["certificate-authority-data"] = encodeBase64(cluster.caData);
  }
  if (cluster.insecureSkipTLSVerify) info["insecure-skip-tls-verify"] = true;
  if (cluster.tlsServerName !== undefined) info["tls-server-name"] = cluster.tlsServerName;
  if (cluster.proxyURL !== undefined) info["proxy-url"] = cluster.proxyURL;
  if (cluster.execExtension !== undefined) info.config = cluster.execExtension;
  return info;
}

/** Refuses a credential that could not be sent as a header, naming the field, not the value. */
function requireHeaderSafe(value: string, at: Origin): void {
  if (!isValidHeaderValue(value)) {
    throw fieldError(
      at,
      "contains a character that is not allowed in an HTTP header (a control character, a " +
        "line break or a non-Latin-1 character); the value is not shown",
    );
  }
}

async function resolveAuth(
  entry: UserEntry | undefined,
  cluster: ResolvedCluster,
  options: ResolveOptions,
): Promise<AuthProvider> {
  if (!entry) return new StaticAuthProvider({});
  const fields = entry.user;
  const at = (key: string) => origin(entry, "user", key);
  const user = JSON.stringify(entry.name);
  if (fields["auth-provider"]) {
    const name = fields["auth-provider"].name ?? "(unnamed)";
    throw fieldError(
      at("auth-provider"),
      `user ${user}: auth-provider ${name} is not supported; use an exec credential plugin`,
    );
  }
  const providers: AuthProvider[] = [];

  const cert = await readPem(
    entry,
    "user",
    "client-certificate",
    fields["client-certificate"],
    "client-certificate-data",
    fields["client-certificate-data"],
  );
  const key = await readPem(
    entry,
    "user",
    "client-key",
    fields["client-key"],
    "client-key-data",
    fields["client-key-data"],
  );
  if (cert !== undefined && key === undefined) {
    throw fieldError(
      at("client-key"),
      `user ${user} has a client certificate but no client-key or client-key-data`,
    );
  }
  if (key !== undefined && cert === undefined) {
    throw fieldError(
      at("client-certificate"),
      `user ${user} has a client key but no client-certificate or client-certificate-data`,
    );
  }
  if (cert !== undefined && key !== undefined) {
    const problem = clientCertificateProblem(cert, key);
    if (problem) {
      // The field that holds the value: -data wins over the file, as in readPem.
      const [fileKey, dataKey] = problem.field === "cert"
        ? ["client-certificate", "client-certificate-data"] as const
        : ["client-key", "client-key-data"] as const;
      throw fieldError(
        at(fields[dataKey] !== undefined ? dataKey : fileKey),
        `user ${user}: ${problem.reason}; the value is not shown`,
      );
    }
    providers.push(clientCertificateAuth(cert, key));
  }

  const hasToken = fields.token !== undefined || fields.tokenFile !== undefined;
  if (hasToken && fields.username !== undefined) {
    throw fieldError(
      at("username"),
      `user ${user} sets both a token and a username/password; only one may be used`,
    );
  }
  if (fields.password !== undefined && fields.username === undefined) {
    throw fieldError(at("username"), `user ${user} has a password but no username`);
  }
  if (fields.token !== undefined) {
    // A literal token wins over tokenFile, as in client-go.
    requireHeaderSafe(fields.token, at("token"));
    providers.push(bearerAuth(fields.token));
  } else if (fields.tokenFile !== undefined) {
    const source = new FileTokenSource({
      path: resolvePath(entry.baseDir, fields.tokenFile),
      origin: at("tokenFile"),
      now: options.now,
    });
    // Read now so a missing file fails loading, not the first request.
    requireHeaderSafe(await source.token(), at("tokenFile"));
    providers.push(source);
  } else if (fields.username !== undefined) {
    providers.push(basicAuth(fields.username, fields.password ?? ""));
  }

  if (fields.exec) {
    const exec = fields.exec;
    const execAt = (key: string) => origin(entry, "user", `exec.${key}`);
    if (exec.command === undefined) {
      throw fieldError(execAt("command"), `user ${user}: exec plugin has no command`);
    }
    if (exec.apiVersion === undefined) {
      throw fieldError(execAt("apiVersion"), `user ${user}: exec plugin has no apiVersion`);
    }
    // Like client-go: a command with a slash is a path relative to the kubeconfig, a bare
    // name is looked up on PATH.
    const command = exec.command.includes("/") || exec.command.includes(pathSeparator())
      ? resolvePath(entry.baseDir, exec.command)
      : exec.command;
    providers.push(
      new ExecCredentialProvider({
        command,
        args: exec.args,
        env: exec.env.map(({ name, value }) => ({ name, value: value ?? "" })),
        apiVersion: exec.apiVersion,
        interactiveMode: exec.interactiveMode,
        installHint: exec.installHint,
        cluster: exec.provideClusterInfo ? execClusterInfo(cluster) : undefined,
        user: entry.name,
        origin: at("exec"),
        baseEnv: options.env,
        now: options.now,
        timeoutMs: options.execTimeoutMs,
      }),
    );
  }
  return combineAuthProviders(providers);
}

// ---------------------------------------------------------------------------------------------
// Files

/**
 * The YAML of a kubeconfig file. `yaml` loads on the first file read that is not JSON: an
 * operator in a cluster reads none, and the library is 7 MiB of RSS on Deno and 10 MiB on Bun.
 * A kubeconfig in JSON (YAML's subset, which kubectl reads too) is parsed without it; one that
 * is not valid JSON goes through `yaml`, whose errors say where.
 */
async function parseKubeconfigText(text: string, file: string): Promise<unknown> {
  if (text.trimStart().startsWith("{")) {
    try {
      return JSON.parse(text);
    } catch {
      // YAML's flow mapping, or broken: `yaml` decides and reports the position.
    }
  }
  const { LineCounter, parseDocument } = await import("yaml");
  const lineCounter = new LineCounter();
  // prettyErrors would quote the offending lines, which may hold a token.
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  const [error] = document.errors;
  if (error) {
    const { line, col } = lineCounter.linePos(error.pos[0]);
    throw new KubeconfigError(
      `kubeconfig ${file}: invalid YAML at line ${line}, column ${col}: ${error.message}`,
      { file },
    );
  }
  return document.toJS();
}

/** Reads the files that exist; `undefined` for a missing one, which callers skip. */
async function readKubeconfigFile(file: string): Promise<ParsedKubeconfig | undefined> {
  let text: string;
  try {
    text = await readTextFile(file);
  } catch (err) {
    if (isNotFoundError(err)) return undefined;
    throw fileError(file, `cannot read (${describeFsError(err)})`, err);
  }
  return parseKubeconfig(await parseKubeconfigText(text, file), file, dirnamePath(file));
}

async function loadFiles(
  paths: string | string[],
  context: string | undefined,
  options: ResolveOptions,
): Promise<KubeConfig> {
  // client-go drops duplicates of a $KUBECONFIG list, keeping the first.
  const listed = (Array.isArray(paths) ? paths : [paths]).filter((entry) => entry !== "");
  const unique = [...new Set(listed.map((entry) => resolvePath(entry)))];
  if (unique.length === 0) {
    throw new KubeconfigError("no kubeconfig file given", { file: "" });
  }
  const parsed: ParsedKubeconfig[] = [];
  for (const file of unique) {
    const one = await readKubeconfigFile(file);
    if (one) parsed.push(one);
  }
  if (parsed.length === 0) {
    const detail = unique.length === 1
      ? `kubeconfig ${unique[0]}: no such file`
      : `none of the kubeconfig files exist: ${unique.join(", ")}`;
    throw new KubeconfigError(detail, { file: unique.join(", ") });
  }
  const source = parsed.map((file) => file.file).join(", ");
  return await buildKubeConfig(mergeKubeconfigs(parsed, source), context, options);
}

/**
 * Loads kubeconfig files and returns the configuration of one context: `options.context`, else
 * the `current-context`. Several files are merged like client-go merges `$KUBECONFIG`: for each
 * cluster, user and context name the first file defining it wins, `current-context` comes from
 * the first file that sets one, and missing files are skipped (it is an error when none
 * exists). Relative paths inside a file are resolved against that file's directory.
 *
 * @example Use a context of a given file
 * ```ts
 * import { loadKubeconfigFile } from "@rudder/operator/kube";
 *
 * const config = await loadKubeconfigFile("/home/me/.kube/config", { context: "kind-dev" });
 * console.log(config.server, config.namespace);
 * ```
 */
export function loadKubeconfigFile(
  paths: string | string[],
  options: { context?: string; execTimeoutMs?: number } = {},
): Promise<KubeConfig> {
  return loadFiles(paths, options.context, { execTimeoutMs: options.execTimeoutMs });
}

/**
 * Builds the configuration of one context from a kubeconfig that is already parsed (for
 * example a Secret's `value` decoded with `yaml`). Relative paths resolve against
 * `options.baseDir` (default: the working directory); `options.source` names the object in
 * messages (default `kubeconfig object`).
 *
 * @example
 * ```ts
 * import { kubeconfigFromObject } from "@rudder/operator/kube";
 *
 * const config = await kubeconfigFromObject({
 *   clusters: [{ name: "dev", cluster: { server: "https://127.0.0.1:6443/" } }],
 *   users: [{ name: "dev", user: { token: "abc" } }],
 *   contexts: [{ name: "dev", context: { cluster: "dev", user: "dev" } }],
 *   "current-context": "dev",
 * });
 * console.log(config.server); // https://127.0.0.1:6443
 * ```
 */
export async function kubeconfigFromObject(
  obj: unknown,
  options: { context?: string; source?: string; baseDir?: string; execTimeoutMs?: number } = {},
): Promise<KubeConfig> {
  const source = options.source ?? "kubeconfig object";
  const baseDir = resolvePath(options.baseDir ?? cwd());
  const parsed = parseKubeconfig(obj, source, baseDir);
  return await buildKubeConfig(mergeKubeconfigs([parsed], source), options.context, {
    execTimeoutMs: options.execTimeoutMs,
  });
}

// ---------------------------------------------------------------------------------------------
// loadConfig

/**
 * {@linkcode loadConfig} with the environment variables, home directory and service account
 * directory given explicitly. Internal: for tests.
 *
 * @example
 * ```ts
 * import { loadConfigFrom } from "./load.ts";
 *
 * const config = await loadConfigFrom({ env: {}, homeDir: "/tmp/fake-home" });
 * ```
 */
export async function loadConfigFrom(
  environment: ConfigEnvironment,
  options: LoadConfigOptions = {},
): Promise<KubeConfig> {
  const env = environment.env ?? {
    // One variable at a time: an operator may be allowed to read only these (`--allow-env=…`).
    KUBECONFIG: getEnv("KUBECONFIG"),
    KUBERNETES_SERVICE_HOST: getEnv("KUBERNETES_SERVICE_HOST"),
    KUBERNETES_SERVICE_PORT: getEnv("KUBERNETES_SERVICE_PORT"),
  };
  const resolve: ResolveOptions = { ...environment, execTimeoutMs: options.execTimeoutMs };
  if (options.kubeconfig !== undefined && options.kubeconfig !== "") {
    return await loadFiles(options.kubeconfig, options.context, resolve);
  }
  const tried = ["kubeconfig option: not given"];

  const list = env.KUBECONFIG;
  if (list !== undefined && list !== "") {
    return await loadFiles(list.split(pathDelimiter()), options.context, resolve);
  }
  tried.push("$KUBECONFIG: not set");

  if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    const dir = environment.serviceAccountDir ?? DEFAULT_SERVICE_ACCOUNT_DIR;
    try {
      return await inClusterConfig({ serviceAccountDir: dir, env, now: environment.now });
    } catch (err) {
      // controller-runtime falls back to ~/.kube/config too, e.g. when the pod has no token.
      const reason = err instanceof Error ? err.message : String(err);
      logger.debug("In-cluster config unusable, trying ~/.kube/config: {reason}", { reason });
      tried.push(`in-cluster: ${reason}`);
    }
  } else {
    tried.push("in-cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT not set");
  }

  const homeFile = joinPath(environment.homeDir ?? homedir(), ".kube", "config");
  const parsed = await readKubeconfigFile(homeFile);
  if (parsed) {
    return await buildKubeConfig(mergeKubeconfigs([parsed], homeFile), options.context, resolve);
  }
  tried.push(`${homeFile}: no such file`);
  throw new KubeconfigError(`no Kubernetes configuration found; tried ${tried.join("; ")}`, {
    file: homeFile,
  });
}

/**
 * Finds the configuration the way controller-runtime's `GetConfig` does: the
 * `options.kubeconfig` file; else the files listed in `$KUBECONFIG` (merged); else the pod's
 * service account when `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` are set; else
 * `~/.kube/config`. `options.context` replaces the `current-context`. Throws a
 * {@linkcode KubeconfigError} that lists every place tried when nothing is found.
 *
 * @example
 * ```ts
 * import { loadConfig } from "@rudder/operator";
 *
 * const config = await loadConfig();
 * console.log(`talking to ${config.server} (from ${config.source})`);
 * ```
 */
export function loadConfig(options: LoadConfigOptions = {}): Promise<KubeConfig> {
  return loadConfigFrom({}, options);
}
