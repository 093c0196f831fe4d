/**
 * `rudder create webhook --kind <Kind>`: adds admission webhooks for a kind the project already
 * has (kubebuilder's `create webhook`). It writes `webhooks/<kind>_webhook.ts` (a defaulter, a
 * validator or both; the template of `rudder init --webhooks`) and its unit test, and registers
 * `setup<Kind>Webhook(mgr)` in `main.ts`'s `setup`, at the markers `rudder init` writes there
 * (see `markers.ts`). A project without webhooks yet is given
 * what `init --webhooks` would have written: the `options: { webhooks?: boolean }` of `setup`,
 * `ENABLE_WEBHOOKS`, the webhook certificate of `createManager`, the webhook server's
 * permissions in `rudder.json`, and the kind's `spec.replicas` that the template's webhooks
 * default and check.
 *
 * @module
 */

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { booleanFlag, type CommandIO, type ParsedArgs, stringFlag, UsageError } from "./args.ts";
import { type ExistingKind, existingKinds } from "./kinds.ts";
import { insertAtMarker } from "./markers.ts";
import { type ProjectSettings, SETTINGS_FILE } from "./project.ts";
import { importStatement } from "./render.ts";
import { WEBHOOK_PERMISSIONS, webhookFiles, type WebhookParts } from "./templates.ts";

/** The module `webhookCertificatesFromEnv` is imported from. */
const WEBHOOK_MODULE = "@rudder/operator/webhook";

/** A `main.ts` that cannot be changed as asked: names the file and what it lacks. */
export class MainModuleError extends Error {
  /** `file` is the module's path; `missing` says what was looked for. */
  constructor(file: string, missing: string, kind: string, webhookFile: string) {
    super(
      `${file}: cannot register the ${kind} webhooks: ${missing}. Call ` +
        `setup${kind}Webhook(mgr) from ./${webhookFile} in setup yourself`,
    );
    this.name = "MainModuleError";
  }
}

/** Lines that end an import statement: `import … from "x";` or the `} from "x";` of a long one. */
function importLines(lines: string[]): { index: number; specifier: string }[] {
  const found: { index: number; specifier: string }[] = [];
  let inImport = false;
  lines.forEach((line, index) => {
    const bare = line.match(/^import "([^"]+)";\s*$/);
    if (bare) {
      found.push({ index, specifier: bare[1] });
      return;
    }
    if (/^import\b/.test(line)) inImport = true;
    const end = inImport ? line.match(/\bfrom "([^"]+)";\s*$/) : null;
    if (end) {
      found.push({ index, specifier: end[1] });
      inImport = false;
    }
  });
  return found;
}

/** The first line at or after `from` that is exactly `}`: the end of a top-level function. */
function functionEnd(lines: string[], from: number): number {
  return lines.findIndex((line, i) => i > from && line === "}");
}

/**
 * `main.ts` with `setup<Kind>Webhook` imported and called in `setup` under
 * `options.webhooks ?? true`, as `rudder init --webhooks` writes it: the import above the
 * `imports` marker, the call above the `webhooks` one (see `markers.ts`). A main module without
 * webhooks yet is first given what `init --webhooks` writes: the import of
 * `webhookCertificatesFromEnv`, the `options: { webhooks?: boolean } = {}` parameter of `setup`,
 * and in `createManager` the `ENABLE_WEBHOOKS` switch, the `webhookCertificates` option and
 * `setup(mgr, { webhooks })`. Idempotent. Throws, naming `file`, a {@linkcode MainModuleError}
 * when a spot of that set-up is not there, or a `MissingMarkerError` when a marker is not.
 */
export function registerWebhook(
  main: string,
  kind: string,
  webhookFile: string,
  file = "main.ts",
): string {
  const lacking = (missing: string) => new MainModuleError(file, missing, kind, webhookFile);
  const call = `setup${kind}Webhook`;
  const lines = main.split("\n");

  // setup(mgr, options): its parameter says whether to register the webhooks.
  const setupStart = lines.findIndex((line) => /^export (async )?function setup\(/.test(line));
  if (setupStart < 0) throw lacking("no `export function setup(mgr: Manager): void {` line");
  const signature = lines[setupStart].match(/^(export (?:async )?function setup\()(.*)(\).*\{)$/);
  if (!signature) throw lacking("the signature of setup() is not on one line");
  const [, head, params, tail] = signature;
  if (!/\boptions: \{ webhooks\?: boolean \}/.test(params)) {
    if (!/^mgr: Manager$/.test(params)) {
      throw lacking(`setup(${params}) is not setup(mgr: Manager), to add \`options\` to`);
    }
    lines[setupStart] = `${head}mgr: Manager, options: { webhooks?: boolean } = {}${tail}`;
    // The doc comment init --webhooks writes.
    for (let i = setupStart - 1; i >= 0 && /^(\/\*\*| \*)/.test(lines[i]); i--) {
      lines[i] = lines[i].replace(
        "Registers this operator's controllers and checks",
        "Registers this operator's controllers, webhooks and checks",
      );
    }
  }

  // createManager(): ENABLE_WEBHOOKS switches the webhooks and their certificate on.
  const createStart = lines.findIndex((line) =>
    /^export (async )?function createManager\(/.test(line)
  );
  if (createStart < 0) {
    throw lacking("no `export function createManager(…)` to switch the webhooks in");
  }
  const createEnd = functionEnd(lines, createStart);
  if (createEnd < 0) throw lacking("cannot find the end of createManager()");
  const body = lines.slice(createStart, createEnd);
  if (!body.some((line) => line.includes("ENABLE_WEBHOOKS"))) {
    if (!lines[createStart].endsWith("{")) {
      throw lacking("the signature of createManager() is not on one line");
    }
    const managerAt = body.findIndex((line) => /^\s*const mgr = new Manager\(\{$/.test(line));
    if (managerAt < 0) throw lacking("createManager() has no `const mgr = new Manager({` line");
    const setupAt = body.findIndex((line) => /^\s*setup\(mgr\);$/.test(line));
    if (setupAt < 0) throw lacking("createManager() has no `setup(mgr);` line");
    // Bottom up, so that each index still holds when it is used.
    lines[createStart + setupAt] = lines[createStart + setupAt].replace(
      "setup(mgr);",
      "setup(mgr, { webhooks });",
    );
    // Projects since 2026-12-04 read `env = processEnv()`; older ones `process.env`.
    const envAt = body.findIndex((line) => /^\s*const env = processEnv\(\);$/.test(line));
    const env = envAt < 0 ? "process.env" : "env";
    lines.splice(
      createStart + managerAt + 1,
      0,
      "    // Without cert-manager, the operator provisions its webhook certificate (WEBHOOK_CERT_*).",
      `    ...(webhooks ? { webhookCertificates: webhookCertificatesFromEnv(${env}) } : {}),`,
    );
    lines.splice(
      createStart + (envAt < 0 ? 1 : envAt + 1),
      0,
      `  const webhooks = ${env}.ENABLE_WEBHOOKS === "true";`,
    );
  }

  // webhookCertificatesFromEnv, after the packages' imports.
  if (!/^import \{[^}]*\bwebhookCertificatesFromEnv\b[^}]*\} from /m.test(main)) {
    const imports = importLines(lines);
    const fromWebhook = imports.find(({ index, specifier }) =>
      specifier === WEBHOOK_MODULE && /^import \{ [^}]+ \} from /.test(lines[index])
    );
    if (fromWebhook) {
      lines[fromWebhook.index] = lines[fromWebhook.index].replace(
        /^import \{ ([^}]+) \}/,
        (_, names: string) => {
          const all = [...names.split(", "), "webhookCertificatesFromEnv"];
          all.sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));
          return `import { ${all.join(", ")} }`;
        },
      );
    } else {
      const last = imports.findLast(({ specifier }) => !specifier.startsWith(".")) ??
        imports.at(-1);
      if (!last) throw lacking("no import to add webhookCertificatesFromEnv's after");
      lines.splice(
        last.index + 1,
        0,
        `import { webhookCertificatesFromEnv } from "${WEBHOOK_MODULE}";`,
      );
    }
  }

  // The kind's set-up: its import and call, each above its marker.
  const enabled = lines.join("\n");
  if (enabled.includes(`${call}(`)) return enabled;
  const imported = insertAtMarker(
    enabled,
    "imports",
    importStatement([call], `./${webhookFile}`).split("\n"),
    file,
  );
  return insertAtMarker(
    imported,
    "webhooks",
    [`if (options.webhooks ?? true) ${call}(mgr);`],
    file,
  );
}

/** What the webhooks of `parts` do with `spec.replicas`, for the field's description. */
function replicasDescription(parts: WebhookParts): string {
  if (parts.defaulting && parts.validation) {
    return "How many copies; defaulted to 1 and capped at 10 by the webhooks.";
  }
  return parts.defaulting
    ? "How many copies; defaulted to 1 by the webhook."
    : "How many copies; capped at 10 by the webhook.";
}

/**
 * An api module whose `defineResource({ kind: "<kind>", … })` has the `spec.replicas` field the
 * scaffold's webhooks default and check (`rudder init --webhooks` writes it), added at the end
 * of its `spec: z.object({ … })`; unchanged if that spec has a `replicas:` field already (a
 * printer column's `.spec.replicas` does not count). Throws, naming `file`, when it finds no
 * such definition or spec.
 */
export function withReplicasField(
  source: string,
  kind: string,
  parts: WebhookParts,
  file: string,
): string {
  const lines = source.split("\n");
  const kindAt = lines.findIndex((line) => line.trim() === `kind: "${kind}",`);
  const start = lines.findLastIndex((line, i) => i < kindAt && /defineResource\(\{$/.test(line));
  const end = lines.findIndex((line, i) => i > kindAt && /^\}\);?$/.test(line));
  if (kindAt < 0 || start < 0 || end < 0) {
    throw new Error(`${file}: cannot find the defineResource({ … kind: "${kind}" … }) of ${kind}`);
  }
  const specAt = lines.findIndex((line, i) =>
    i > start && i < end && /^\s*spec: z\.object\(\{$/.test(line)
  );
  const indent = specAt >= 0 ? lines[specAt].replace(/\S.*$/, "") : "";
  const specEnd = lines.findIndex((line, i) => i > specAt && line === `${indent}}),`);
  // A \`replicas:\` key in the spec (or, when the spec is not a literal, anywhere in the definition).
  const field = /^\s*replicas:/;
  const found = specAt >= 0 && specEnd >= 0 && specEnd <= end;
  const searched = found ? lines.slice(specAt, specEnd) : lines.slice(start, end);
  if (searched.some((line) => field.test(line))) return source;
  if (!found) {
    throw new Error(
      `${file}: ${kind}'s spec is not a \`spec: z.object({ … }),\` to add \`replicas\` to, which ` +
        "the webhooks default and check; add `replicas: z.number().int().min(0).optional()` " +
        "to it yourself",
    );
  }
  lines.splice(
    specEnd,
    0,
    `${indent}  replicas: z.number().int().min(0).optional()`,
    `${indent}    .describe(${JSON.stringify(replicasDescription(parts))}),`,
  );
  return lines.join("\n");
}

/** The permission lists of `rudder.json` a webhook server needs. */
export type PermissionLists = {
  net?: unknown;
  read?: unknown;
  env?: unknown;
  [key: string]: unknown;
};

/**
 * `rudder.json`'s `permissions` with what the webhook server needs (its port, its certificate
 * directory, the environment it reads) added where missing, at the end of each list; the
 * environment list is sorted again if it was sorted.
 */
export function withWebhookPermissions(permissions: PermissionLists | undefined): PermissionLists {
  const result: PermissionLists = { apiServers: [], ...permissions };
  for (const key of ["net", "read", "env"] as const) {
    const before = Array.isArray(result[key])
      ? result[key].filter((item): item is string => typeof item === "string")
      : [];
    const added = WEBHOOK_PERMISSIONS[key].filter((item) => !before.includes(item));
    const sorted = before.every((item, i) => i === 0 || before[i - 1] <= item);
    const all = [...before, ...added];
    result[key] = sorted && key === "env" ? all.sort() : all;
  }
  return result;
}

/** A kind's name, group, version and api module, as the error messages show it. */
function describeKind(kind: ExistingKind): string {
  return `${kind.kind} (${kind.group}/${kind.version}, ${kind.file})`;
}

/**
 * Runs `rudder create webhook` with the arguments `rudder create` parsed, in the project of
 * `settings`.
 */
export function runCreateWebhook(
  parsed: ParsedArgs,
  settings: ProjectSettings,
  io: CommandIO,
): number {
  const kind = stringFlag(parsed, "kind");
  if (kind === undefined) throw new UsageError("--kind is required", "create");
  const group = stringFlag(parsed, "group");
  const version = stringFlag(parsed, "version");
  const asked = {
    defaulting: booleanFlag(parsed, "defaulting"),
    validation: booleanFlag(parsed, "validation"),
  };
  // Neither flag: both webhooks, as `rudder init --webhooks` writes them.
  const parts: WebhookParts = asked.defaulting || asked.validation
    ? asked
    : { defaulting: true, validation: true };
  const dir = settings.dir;
  const kinds = existingKinds(dir, settings.api);
  const candidates = kinds.filter((k) =>
    k.kind === kind && (group === undefined || k.group === group) &&
    (version === undefined || k.version === version)
  );
  const apiWhich = [group, version].filter((part) => part !== undefined).join("/");
  if (candidates.length === 0) {
    throw new Error(
      `the project has no kind ${kind}${apiWhich ? ` in ${apiWhich}` : ""}; its kinds: ` +
        `${
          kinds.map(describeKind).join(", ") || "none"
        } (api modules listed in ${SETTINGS_FILE}). ` +
        `Add it first: rudder create api --kind ${kind}`,
    );
  }
  const target = candidates[0];
  const apiPath = join(dir, target.file);
  const apiSource = readFileSync(apiPath, "utf8");
  if (!new RegExp(`^export const ${kind}\\b`, "m").test(apiSource)) {
    throw new Error(
      `${target.file} does not export \`const ${kind}\`, which the webhook module imports`,
    );
  }

  const options = { name: settings.name, group: target.group, version: target.version, kind };
  const files = webhookFiles(options, parts, target.file);
  const [webhookFile] = files.keys();
  if (!booleanFlag(parsed, "force")) {
    const existing = [...files.keys()].filter((path) => existsSync(join(dir, path)));
    if (existing.length > 0) {
      throw new Error(`${existing.join(", ")} already exist(s); pass --force to overwrite`);
    }
  }

  // Every change is computed before anything is written: a failure leaves the project as it was.
  const mainPath = join(dir, settings.main);
  const main = readFileSync(mainPath, "utf8");
  const changed = new Map(files);
  const registered = registerWebhook(main, kind, webhookFile, settings.main);
  if (registered !== main) changed.set(settings.main, registered);
  const api = withReplicasField(apiSource, kind, parts, target.file);
  if (api !== apiSource) changed.set(target.file, api);
  const settingsPath = join(dir, SETTINGS_FILE);
  if (existsSync(settingsPath)) {
    const before = readFileSync(settingsPath, "utf8");
    const raw = JSON.parse(before);
    raw.permissions = withWebhookPermissions(raw.permissions);
    const after = `${JSON.stringify(raw, null, 2)}\n`;
    if (after !== before) changed.set(SETTINGS_FILE, after);
  }

  for (const [path, content] of changed) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    io.out(`  ${path}`);
  }
  const what = parts.defaulting && parts.validation
    ? "defaulting and validating webhooks"
    : parts.defaulting
    ? "a defaulting webhook"
    : "a validating webhook";
  const edit = parts.defaulting && parts.validation
    ? `what ${kind}s get by default and what is refused`
    : parts.defaulting
    ? `what ${kind}s get by default`
    : "what is refused";
  const shown = relative(io.cwd, dir) || ".";
  io.err(
    [
      `Added ${what} for ${kind} (${target.group}/${target.version}) to ${settings.name} (${shown}).`,
      "Next:",
      `  edit ${webhookFile} (${edit})`,
      "  deno task test",
      "  deno task manifests   # its webhook configurations, Service and certificate",
      "The manager serves them when ENABLE_WEBHOOKS=true, as the Deployment of `rudder manifests` sets.",
    ].join("\n"),
  );
  return 0;
}
