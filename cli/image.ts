/**
 * `rudder build --image <ref>`: the compiled executable as one layer on a base image, written
 * without a Docker daemon — pushed to a registry (`--push`) or saved as an archive that
 * `docker load` and `podman load` accept (`--output <file>`).
 *
 * - The base (default {@linkcode DEFAULT_BASE_IMAGE}) is resolved to a digest, its platform's
 *   manifest picked from its index, and its manifest, config and layers cached by digest.
 * - The new layer holds only `/<name>` (mode 0755, root-owned); the config runs it as
 *   {@linkcode IMAGE_USER} with the entrypoint `/<name>` and no command.
 * - Annotations (also labels): `org.opencontainers.image.created`, `.version` (the project's),
 *   `.revision` and `.source` (from git, when the project is a checkout), `.base.name` and
 *   `.base.digest`; `--annotation key=value` adds or replaces one.
 * - Reproducible: the tar entry's time and the image's `created` come from `SOURCE_DATE_EPOCH`,
 *   or are the epoch (1970-01-01T00:00:00Z) when it is unset; owners are 0/0; layers are gzip
 *   level 9 (identical bytes on Deno and Bun). The same executable and base give the same
 *   digest.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  booleanFlag,
  type CommandIO,
  type FlagSpec,
  type ParsedArgs,
  stringFlag,
  UsageError,
} from "./args.ts";
import { writeImageArchive } from "./oci/archive.ts";
import { BlobCache, ociCacheDirectory } from "./oci/cache.ts";
import { type CredentialSource, dockerConfigCredentials } from "./oci/credentials.ts";
import {
  appendLayer,
  type BuiltImage,
  createdTime,
  executableLayer,
  formatPlatform,
  type ImageConfig,
  type ImageIndex,
  type ImageManifest,
  isIndex,
  MediaType,
  type Platform,
  selectPlatform,
} from "./oci/image.ts";
import {
  formatReference,
  type ImageReference,
  isLoopbackRegistry,
  parseReference,
  pinnedReference,
} from "./oci/reference.ts";
import { RegistryClient, RegistryError } from "./oci/registry.ts";

/** A file the image's layer holds besides the executable. */
export interface LayerFile {
  /** Its path in the image, without the leading `/`. */
  path: string;
  data: Uint8Array;
  mode: number;
}

/** Debian's directory of shared libraries for an image architecture. */
function multiarchLibDir(architecture: string): string {
  const triplet = architecture === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  return `usr/lib/${triplet}`;
}

/**
 * `libatomic.so.1`, which Node's official builds load since Node 25 and distroless/cc lacks,
 * as a file of the image's layer, at Debian's path for `platform`: the copy this machine's
 * loader finds, which is the one the Node that built the executable runs with (Node builds for
 * this machine only). Throws when this machine has none, naming Debian's package.
 */
export function nodeSharedLibrary(
  platform: Platform,
  roots: readonly string[] = ["/"],
): LayerFile {
  const dir = multiarchLibDir(platform.architecture);
  const candidates = roots.flatMap((root) =>
    [dir, dir.replace(/^usr\//, ""), "usr/lib64", "lib64", "usr/lib"].map((d) =>
      join(root, d, "libatomic.so.1")
    )
  );
  const found = candidates.find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      `a Node executable needs libatomic.so.1, which distroless/cc lacks and the image gets ` +
        `from this machine, but it has none (looked in ${candidates.join(", ")}); install it ` +
        "(Debian and Ubuntu: apt-get install libatomic1)",
    );
  }
  // readFileSync follows the symlink to the versioned file; the image gets its bytes.
  return { path: `${dir}/libatomic.so.1`, data: readFileSync(found), mode: 0o644 };
}

/** The base image when `--base` is not given: glibc, CA certificates, tzdata, user 65532. */
export const DEFAULT_BASE_IMAGE = "gcr.io/distroless/cc-debian12:nonroot";

/** The user and group the image runs as: distroless's `nonroot`. */
export const IMAGE_USER = "65532:65532";

/** What `rudder build --image` needs besides the executable. */
export interface ImageBuildOptions {
  /** The image to write, e.g. `registry.example.com/team/operator:0.1.0`. */
  image: string;
  /** The base image reference. */
  base: string;
  /** The image's platform, e.g. linux/amd64. */
  platform: Platform;
  /** Push to the registry of `image`. */
  push: boolean;
  /** Write an archive for `docker load`/`podman load` here. */
  output?: string;
  /** Plain HTTP for registries on loopback. */
  insecureRegistry: boolean;
  /** Annotations added to (or replacing) the derived ones. */
  annotations: Record<string, string>;
  /** The project's directory, for its version and git metadata. */
  projectDir: string;
  /** Environment (`SOURCE_DATE_EPOCH`, `DOCKER_CONFIG`, `HOME`, `XDG_CACHE_HOME`). */
  env: Record<string, string | undefined>;
  /** Progress lines. */
  log(line: string): void;
  /** Where credentials come from; default the Docker config file. */
  credentials?: CredentialSource;
  /** Blob cache; default under `ociCacheDirectory(env)`. */
  cache?: BlobCache;
  /** The base, when it is resolved already (`rudder build` does so before compiling). */
  resolvedBase?: ResolvedBase;
  /** Environment of the operator's process in the image (the runtime's tunables). */
  processEnv?: Readonly<Record<string, string>>;
  /** Files the layer holds besides the executable (Node: `libatomic.so.1`). */
  extraFiles?: readonly LayerFile[];
}

/** What was built. */
export interface ImageBuildResult {
  /** The manifest digest. */
  digest: string;
  /** `registry/repository@digest`: what a Deployment should reference. */
  pinned: string;
  /** The image as built, config and manifest bytes included. */
  image: BuiltImage;
}

/** A base image resolved for one platform. */
export interface ResolvedBase {
  /** The base as given. */
  reference: ImageReference;
  /** The digest of what the reference names (an index or a manifest). */
  digest: string;
  /** The platform's manifest. */
  manifest: ImageManifest;
  /** Its config. */
  config: ImageConfig;
  /** A client of its registry, for its layers. */
  client: RegistryClient;
}

/** The platform of an image for a compile target (`x86_64-unknown-linux-gnu`, …). */
export function imagePlatform(denoTarget: string | undefined, arch: string): Platform {
  if (!denoTarget) {
    const architecture = arch === "x64" ? "amd64" : arch;
    return { os: "linux", architecture };
  }
  if (!denoTarget.includes("linux")) {
    throw new Error(`an image needs a linux target, not ${denoTarget}`);
  }
  return {
    os: "linux",
    architecture: denoTarget.startsWith("aarch64") ? "arm64" : "amd64",
  };
}

function client(
  registry: string,
  options: Pick<ImageBuildOptions, "insecureRegistry" | "credentials" | "env">,
): RegistryClient {
  return new RegistryClient(registry, {
    insecure: options.insecureRegistry && isLoopbackRegistry(registry),
    credentials: options.credentials ?? dockerConfigCredentials(options.env),
  });
}

const decode = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes));

/**
 * Resolves the base image: its tag to a digest (the registry is asked), then the platform's
 * manifest and config, each fetched once per digest and cached.
 */
export async function resolveBase(
  options: Pick<
    ImageBuildOptions,
    "base" | "platform" | "insecureRegistry" | "credentials" | "env" | "log"
  >,
  cache: BlobCache,
): Promise<ResolvedBase> {
  const reference = parseReference(options.base);
  const registry = client(reference.registry, options);
  const repo = reference.repository;
  const fetchManifest = async (ref: string) => {
    const fetched = await registry.getManifest(repo, ref);
    cache.put(fetched.digest, fetched.bytes);
    return fetched.bytes;
  };
  let digest = reference.digest;
  let top: Uint8Array;
  if (digest) {
    top = await cache.getOrFetch(digest, () => fetchManifest(digest!));
  } else {
    let fetched;
    try {
      fetched = await registry.getManifest(repo, reference.tag!);
    } catch (err) {
      if (err instanceof RegistryError) throw err;
      throw new Error(
        `cannot resolve the base ${options.base}: ${
          err instanceof Error ? err.message : err
        }; pin it by digest (--base <ref>@sha256:…) to build from the cache, or choose ` +
          "another --base",
        { cause: err },
      );
    }
    cache.put(fetched.digest, fetched.bytes);
    digest = fetched.digest;
    top = fetched.bytes;
  }
  let manifestBytes = top;
  const parsed = decode(top) as ImageIndex | ImageManifest;
  if (isIndex(parsed.mediaType) || "manifests" in parsed) {
    const chosen = selectPlatform(parsed as ImageIndex, options.platform);
    manifestBytes = await cache.getOrFetch(chosen.digest, () => fetchManifest(chosen.digest));
  }
  const manifest = decode(manifestBytes) as ImageManifest;
  if (!manifest.config || !Array.isArray(manifest.layers)) {
    throw new Error(`${options.base} is not an image manifest`);
  }
  const config = decode(
    await cache.getOrFetch(
      manifest.config.digest,
      () => registry.getBlob(repo, manifest.config.digest),
    ),
  ) as ImageConfig;
  const actual = formatPlatform({ os: config.os, architecture: config.architecture });
  if (actual !== formatPlatform({ ...options.platform, variant: undefined })) {
    throw new Error(
      `the base image ${options.base} is ${actual}, not ${formatPlatform(options.platform)}`,
    );
  }
  options.log(`base ${formatReference(reference)} → ${digest} (${actual})`);
  return { reference, digest, manifest, config, client: registry };
}

/** The project's version: `version` of its deno.json or package.json. */
function projectVersion(dir: string): string | undefined {
  for (const file of ["deno.json", "package.json"]) {
    const path = join(dir, file);
    if (!existsSync(path)) continue;
    try {
      const version = JSON.parse(readFileSync(path, "utf8")).version;
      if (typeof version === "string") return version;
    } catch {
      // not JSON; the other file may say
    }
  }
  return undefined;
}

function git(dir: string, ...args: string[]): string | undefined {
  const result = spawnSync("git", args, { cwd: dir, encoding: "utf8" });
  return result.status === 0 ? result.stdout.trim() || undefined : undefined;
}

/** A git remote as a browsable https URL, without any credentials it may hold. */
export function sourceURL(remote: string): string {
  const scp = remote.match(/^[\w.-]+@([\w.-]+):(.+?)(?:\.git)?$/);
  if (scp) return `https://${scp[1]}/${scp[2]}`;
  try {
    const url = new URL(remote);
    url.username = "";
    url.password = "";
    if (url.protocol === "ssh:" || url.protocol === "git:") url.protocol = "https:";
    return url.href.replace(/\.git$/, "");
  } catch {
    return remote;
  }
}

/** The annotations derived from the project and its base image. */
export function imageAnnotations(
  options: { projectDir: string; created: string; extra: Record<string, string> },
  base: { name: string; digest: string },
): Record<string, string> {
  const version = projectVersion(options.projectDir);
  const revision = git(options.projectDir, "rev-parse", "HEAD");
  const remote = git(options.projectDir, "remote", "get-url", "origin");
  const annotations: Record<string, string> = {
    "org.opencontainers.image.base.digest": base.digest,
    "org.opencontainers.image.base.name": base.name,
    "org.opencontainers.image.created": options.created,
    ...(revision ? { "org.opencontainers.image.revision": revision } : {}),
    ...(remote ? { "org.opencontainers.image.source": sourceURL(remote) } : {}),
    ...(version ? { "org.opencontainers.image.version": version } : {}),
    ...options.extra,
  };
  return Object.fromEntries(Object.entries(annotations).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Builds the image of `executable` and pushes it, writes it, or both. */
export async function buildImage(
  executable: Uint8Array,
  name: string,
  options: ImageBuildOptions,
): Promise<ImageBuildResult> {
  const target = parseReference(options.image);
  const cache = options.cache ?? new BlobCache(ociCacheDirectory(options.env));
  const base = options.resolvedBase ?? await resolveBase(options, cache);
  const { seconds, iso } = createdTime(options.env);
  const layer = executableLayer(name, executable, seconds, options.extraFiles);
  const image = appendLayer(base, layer, {
    name,
    user: IMAGE_USER,
    created: iso,
    env: options.processEnv,
    annotations: imageAnnotations(
      { projectDir: options.projectDir, created: iso, extra: options.annotations },
      {
        name: formatReference({ ...base.reference, digest: undefined }),
        digest: base.digest,
      },
    ),
  });
  const baseRepo = base.reference.repository;
  const baseBlob = (digest: string) =>
    cache.getOrFetch(digest, () => base.client.getBlob(baseRepo, digest));
  if (options.push) {
    const registry = client(target.registry, options);
    const repo = target.repository;
    const counts = { present: 0, mounted: 0, uploaded: 0 };
    // On the base's registry, its layers are mounted; elsewhere fetched only when missing.
    const mountFrom = base.reference.registry === target.registry ? baseRepo : undefined;
    for (const { digest } of base.manifest.layers) {
      counts[await registry.pushBlob(repo, digest, () => baseBlob(digest), { mountFrom })]++;
    }
    counts[await registry.pushBlob(repo, layer.descriptor.digest, layer.blob)]++;
    await registry.pushBlob(repo, image.configDescriptor.digest, image.config);
    await registry.putManifest(
      repo,
      target.tag ?? image.digest,
      image.manifest,
      MediaType.ociManifest,
    );
    options.log(
      `pushed ${formatReference({ ...target, digest: undefined })} ` +
        `(layers: ${counts.uploaded} uploaded, ${counts.mounted} mounted, ` +
        `${counts.present} already there)`,
    );
  }
  if (options.output) {
    const blobs = new Map<string, Uint8Array>([
      [image.configDescriptor.digest, image.config],
      [layer.descriptor.digest, layer.blob],
    ]);
    for (const descriptor of base.manifest.layers) {
      blobs.set(descriptor.digest, await baseBlob(descriptor.digest));
    }
    writeImageArchive(options.output, {
      manifest: image.manifest,
      digest: image.digest,
      config: image.configDescriptor,
      layers: image.layers,
      blob: (digest) => blobs.get(digest)!,
      reference: formatReference({ ...target, digest: undefined }),
      tag: target.tag,
    });
    options.log(`wrote ${options.output}`);
  }
  return { digest: image.digest, pinned: pinnedReference(target, image.digest), image };
}

/** The flags `rudder build` takes for images. */
export const IMAGE_FLAGS: Record<string, FlagSpec> = {
  image: {
    type: "string",
    value: "<ref>",
    description: "Also make an image of the executable, e.g. ghcr.io/me/operator:0.1.0.",
  },
  base: {
    type: "string",
    value: "<ref>",
    description: `The image's base (default: ${DEFAULT_BASE_IMAGE}).`,
  },
  push: { type: "boolean", description: "Push the image to its registry." },
  output: {
    type: "string",
    value: "<file>",
    description: "Write the image as an archive for docker load / podman load.",
  },
  "insecure-registry": {
    type: "boolean",
    description: "Plain HTTP for registries on this machine (localhost, 127.0.0.1, [::1]); " +
      "refused when neither --image nor --base is on one.",
  },
  annotation: {
    type: "string",
    multiple: true,
    value: "<key=value>",
    description: "An annotation (and label) of the image, beyond the derived ones.",
  },
};

/** The image part of `rudder build`'s flags, checked before anything is compiled. */
export interface ImageRequest {
  /** `--image`. */
  image: string;
  /** `--base`, or the default. */
  base: string;
  /** `--push`. */
  push: boolean;
  /** `--output`, absolute. */
  output?: string;
  /** `--insecure-registry`. */
  insecureRegistry: boolean;
  /** `--annotation`s. */
  annotations: Record<string, string>;
}

/** Reads and checks the image flags; undefined when no image was asked for. */
export function imageRequest(parsed: ParsedArgs, cwd: string): ImageRequest | undefined {
  const image = stringFlag(parsed, "image");
  const push = booleanFlag(parsed, "push");
  const output = stringFlag(parsed, "output");
  const others = ["base", "push", "output", "insecure-registry", "annotation"]
    .filter((flag) => parsed.values[flag] !== undefined && parsed.values[flag] !== false);
  if (!image) {
    if (others.length > 0) {
      throw new UsageError(`--${others[0]} needs --image <ref>`, "build");
    }
    return undefined;
  }
  if (!push && !output) {
    throw new UsageError("--image needs --push, --output <file>, or both", "build");
  }
  try {
    parseReference(image);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err), "build");
  }
  const base = stringFlag(parsed, "base", DEFAULT_BASE_IMAGE);
  let registries: string[];
  try {
    registries = [parseReference(image).registry, parseReference(base).registry];
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err), "build");
  }
  const insecureRegistry = booleanFlag(parsed, "insecure-registry");
  if (insecureRegistry && !registries.some(isLoopbackRegistry)) {
    // Plain HTTP to another machine would send the image and credentials in clear text.
    throw new UsageError(
      `--insecure-registry is for a registry on this machine (localhost, 127.0.0.1, [::1]); ` +
        `${[...new Set(registries)].join(" and ")} ${
          new Set(registries).size > 1 ? "are" : "is"
        } not, and are reached over HTTPS`,
      "build",
    );
  }
  const annotations: Record<string, string> = {};
  const raw = parsed.values.annotation;
  for (const pair of Array.isArray(raw) ? raw.map(String) : []) {
    const equals = pair.indexOf("=");
    if (equals <= 0) throw new UsageError(`--annotation must be key=value: ${pair}`, "build");
    annotations[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return {
    image,
    base,
    push,
    output: output ? resolve(cwd, output) : undefined,
    insecureRegistry,
    annotations,
  };
}

/**
 * Checks what can be checked before compiling, so a build does not end in a failure that was
 * known from the start: `SOURCE_DATE_EPOCH` is whole seconds, the `--output` file can be
 * written, and with `--push` the target registry answers and accepts the credentials.
 */
export async function checkImageRequest(
  request: ImageRequest,
  io: Pick<CommandIO, "env">,
  options: { credentials?: CredentialSource; timeoutMs?: number } = {},
): Promise<void> {
  try {
    createdTime(io.env);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err), "build");
  }
  if (request.output) checkWritable(request.output);
  if (request.push) {
    const target = parseReference(request.image);
    await client(target.registry, { ...request, env: io.env, ...options }).check(
      target.repository,
      "pull,push",
      options.timeoutMs,
    );
  }
}

/** Throws when `file` cannot be created or replaced: its directory is made when missing. */
function checkWritable(file: string): void {
  const problem = (reason: string) =>
    new UsageError(`--output ${file} cannot be written: ${reason}`, "build");
  if (existsSync(file) && statSync(file).isDirectory()) throw problem("it is a directory");
  const dir = dirname(file);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw problem(`cannot create ${dir} (${(err as { code?: string }).code ?? err})`);
  }
  if (!statSync(dir).isDirectory()) throw problem(`${dir} is not a directory`);
  try {
    accessSync(existsSync(file) ? file : dir, constants.W_OK);
  } catch {
    throw problem("permission denied");
  }
}

/** The file `rudder build --push` writes the pinned reference to: `dist/<name>.image`. */
export function imageRecordPath(projectDir: string, name: string): string {
  return join(projectDir, "dist", `${name}.image`);
}

/**
 * Resolves the base of the requested image (fetching and caching what it needs), so that
 * `rudder build` fails before compiling when the base cannot be had.
 */
export async function resolveImageBase(
  request: ImageRequest,
  platform: Platform,
  io: CommandIO,
): Promise<ResolvedBase> {
  return await resolveBase(
    { ...request, platform, env: io.env, log: (line) => io.err(line) },
    new BlobCache(ociCacheDirectory(io.env)),
  );
}

/**
 * Runs the image step of `rudder build` for the executable at `executablePath`: prints the
 * digest on standard output and, after a push, writes the pinned reference to
 * {@linkcode imageRecordPath} for `rudder manifests --image`.
 */
export async function runImageStep(
  request: ImageRequest,
  build: {
    executablePath: string;
    name: string;
    projectDir: string;
    platform: Platform;
    base?: ResolvedBase;
    processEnv?: Readonly<Record<string, string>>;
    extraFiles?: readonly LayerFile[];
  },
  io: CommandIO,
): Promise<ImageBuildResult> {
  const result = await buildImage(readFileSync(build.executablePath), build.name, {
    ...request,
    platform: build.platform,
    projectDir: build.projectDir,
    env: io.env,
    log: (line) => io.err(line),
    resolvedBase: build.base,
    processEnv: build.processEnv,
    extraFiles: build.extraFiles,
  });
  if (request.push) {
    const record = imageRecordPath(build.projectDir, build.name);
    mkdirSync(dirname(record), { recursive: true });
    writeFileSync(record, `${result.pinned}\n`);
    io.out(result.pinned);
  } else {
    io.out(result.digest);
  }
  return result;
}
