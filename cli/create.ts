/**
 * `rudder create api --kind <Kind>`: adds a custom resource and its controller to a project made
 * by `rudder init` (kubebuilder's `create api`). It writes `api/<kind>.ts`,
 * `controllers/<kind>_controller.ts` and its test, a sample object under `config/samples/`,
 * lists the api module in `rudder.json`, and registers the controller in `main.ts`'s `setup`
 * (its import and call inserted at the markers `rudder init` writes there; see `markers.ts`).
 * The existing tests' local control planes are given the new CRD, since the operator they start
 * now watches the new kind too. `rudder create webhook --kind <Kind>` adds admission webhooks
 * for a kind the project has (kubebuilder's `create webhook`; see `create_webhook.ts`).
 *
 * @module
 */

import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import {
  booleanFlag,
  type CommandIO,
  type CommandSpec,
  parseCommandArgs,
  stringFlag,
  UsageError,
} from "./args.ts";
import { runCreateWebhook } from "./create_webhook.ts";
import { validateScaffoldOptions } from "./init.ts";
import { existingKinds } from "./kinds.ts";
import { insertAtMarker } from "./markers.ts";
import { findProjectDir, loadProject, SETTINGS_FILE } from "./project.ts";
import { importStatement } from "./render.ts";
import {
  apiFiles,
  sampleKustomization,
  sampleObject,
  samplePath,
  type ScaffoldOptions,
  withEnvironmentKinds,
} from "./templates.ts";

/** `rudder create`. */
export const createSpec: CommandSpec = {
  name: "create",
  summary: "add a resource and its controller (create api) or a kind's webhooks (create webhook)",
  positionals: ["<api|webhook>"],
  flags: {
    kind: {
      type: "string",
      value: "<Kind>",
      description: "Kind of the new resource, or of the one to give webhooks (required).",
    },
    version: {
      type: "string",
      value: "<version>",
      description: "api: its version (default: the first kind's); webhook: the kind's.",
    },
    group: {
      type: "string",
      value: "<group>",
      description: "api: its API group (default: the first kind's); webhook: the kind's.",
    },
    defaulting: {
      type: "boolean",
      description: "webhook: a defaulting (mutating) webhook (neither flag: both).",
    },
    validation: {
      type: "boolean",
      description: "webhook: a validating webhook (neither flag: both).",
    },
    dir: {
      type: "string",
      value: "<project>",
      description: "The operator project (default: the nearest directory with rudder.json).",
    },
    force: {
      type: "boolean",
      description: "Overwrite the files it writes if they exist.",
    },
  },
  details: [
    "create api: writes api/<kind>.ts, controllers/<kind>_controller.ts and its test, and a",
    "sample under config/samples/; lists the api module in rudder.json and calls",
    "setup<Kind>Controller(mgr) in main.ts's setup. `rudder manifests` then writes its CRD and",
    "RBAC.",
    "",
    "create webhook: for a kind the project has (from init or create api), writes",
    "webhooks/<kind>_webhook.ts (a defaulter and/or a validator) and its test, and calls",
    "setup<Kind>Webhook(mgr) in main.ts's setup. A project without webhooks yet gets what",
    "`rudder init --webhooks` writes: ENABLE_WEBHOOKS and the webhook certificate in main.ts, the",
    "webhook server's permissions in rudder.json, and the kind's spec.replicas, which the",
    "webhooks default and check. `rudder manifests` then writes their webhook configurations.",
    "",
    "Both insert their import and call in main.ts just above the marker comments rudder init",
    "writes there: // +rudder:scaffold:imports, // +rudder:scaffold:controllers and",
    "// +rudder:scaffold:webhooks.",
  ],
  examples: [
    "rudder create api --kind MemcachedBackup",
    "rudder create api --group batch.example.com --version v1 --kind CronJob",
    "rudder create webhook --kind MemcachedBackup",
    "rudder create webhook --kind CronJob --validation",
  ],
};

/**
 * `main.ts` with `setup<Kind>Controller` imported and called in `setup`, each inserted above
 * its marker (see `markers.ts`); unchanged when it calls it already. Throws a
 * `MissingMarkerError` naming `file` when a marker is not there.
 */
export function registerController(
  main: string,
  kind: string,
  controllerFile: string,
  file = "main.ts",
): string {
  const call = `setup${kind}Controller`;
  if (main.includes(`${call}(`)) return main;
  const imported = insertAtMarker(
    main,
    "imports",
    importStatement([call], `./${controllerFile}`).split("\n"),
    file,
  );
  return insertAtMarker(imported, "controllers", [`${call}(mgr);`], file);
}

/** Runs `rudder create api` or `rudder create webhook`. */
export function runCreate(args: string[], io: CommandIO): number {
  const parsed = parseCommandArgs(createSpec, args);
  if (!parsed) return 0;
  const what = parsed.positionals[0];
  if (what !== "api" && what !== "webhook") {
    throw new UsageError(
      `unknown resource "${what}": rudder create api|webhook --kind <Kind>`,
      "create",
    );
  }
  const kind = stringFlag(parsed, "kind");
  if (kind === undefined) throw new UsageError("--kind is required", "create");
  if (what === "api") {
    for (const flag of ["defaulting", "validation"]) {
      if (booleanFlag(parsed, flag)) {
        throw new UsageError(`--${flag} is for create webhook, not create api`, "create");
      }
    }
  }
  const dirFlag = stringFlag(parsed, "dir");
  const settings = loadProject(dirFlag ? resolve(io.cwd, dirFlag) : findProjectDir(io.cwd));
  if (what === "webhook") return runCreateWebhook(parsed, settings, io);
  const dir = settings.dir;
  const kinds = existingKinds(dir, settings.api);
  if (kinds.some((existing) => existing.kind === kind)) {
    throw new Error(
      `the project already has a ${kind} (${kinds.find((k) => k.kind === kind)!.file})`,
    );
  }
  const options: ScaffoldOptions = {
    name: settings.name,
    group: stringFlag(parsed, "group", kinds[0]?.group ?? "example.com"),
    version: stringFlag(parsed, "version", kinds[0]?.version ?? "v1alpha1"),
    kind,
  };
  try {
    validateScaffoldOptions(options);
  } catch (err) {
    if (err instanceof UsageError) throw new UsageError(err.message, "create");
    throw err;
  }
  const lower = kind.toLowerCase();
  const apiFile = `api/${lower}.ts`;
  const controllerFile = `controllers/${lower}_controller.ts`;
  const all = [...kinds, { kind, file: apiFile }];
  const files = apiFiles(options, all);
  if (!booleanFlag(parsed, "force")) {
    const existing = [...files.keys()].filter((path) => existsSync(join(dir, path)));
    if (existing.length > 0) {
      throw new Error(`${existing.join(", ")} already exist(s); pass --force to overwrite`);
    }
  }

  const mainPath = join(dir, settings.main);
  const main = registerController(
    readFileSync(mainPath, "utf8"),
    kind,
    controllerFile,
    settings.main,
  );

  // Samples: add this kind's and list every sample in the kustomization.
  const sample = samplePath(options);
  files.set(sample, sampleObject(options));
  const samplesDir = join(dir, "config", "samples");
  const samples = existsSync(samplesDir)
    ? readdirSync(samplesDir).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml")
      .map((f) => `config/samples/${f}`)
    : [];
  files.set(
    "config/samples/kustomization.yaml",
    sampleKustomization([...new Set([...samples, sample])].sort()),
  );

  // The other tests start the whole operator, which now watches this kind too.
  for (const file of testFiles(dir)) {
    if (files.has(file)) continue;
    const before = readFileSync(join(dir, file), "utf8");
    const owner = kinds.find((k) =>
      file === `controllers/${k.kind.toLowerCase()}_controller_test.ts`
    );
    if (!owner) continue;
    const after = withEnvironmentKinds(before, owner.kind, [{ kind, file: apiFile }]);
    if (after !== before) files.set(file, after);
  }

  for (const [path, content] of files) {
    const target = join(dir, path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    io.out(`  ${path}`);
  }
  writeFileSync(mainPath, main);
  io.out(`  ${settings.main}`);
  const settingsPath = join(dir, SETTINGS_FILE);
  if (existsSync(settingsPath)) {
    const raw = JSON.parse(readFileSync(settingsPath, "utf8"));
    if (Array.isArray(raw.api) && !raw.api.includes(apiFile)) {
      raw.api.push(apiFile);
      writeFileSync(settingsPath, `${JSON.stringify(raw, null, 2)}\n`);
      io.out(`  ${SETTINGS_FILE}`);
    }
  }
  const shown = relative(io.cwd, dir) || ".";
  io.err(
    [
      `Added ${kind} (${options.group}/${options.version}) to ${settings.name} (${shown}).`,
      "Next:",
      `  edit ${apiFile} (its spec and status) and ${controllerFile} (its reconciler)`,
      "  deno task manifests   # its CRD and RBAC",
      "  deno task test",
    ].join("\n"),
  );
  return 0;
}

/** The project's controller tests, relative to `dir`. */
function testFiles(dir: string): string[] {
  const controllers = join(dir, "controllers");
  if (!existsSync(controllers)) return [];
  return readdirSync(controllers).filter((f) => /_test\.ts$/.test(f)).sort()
    .map((f) => `controllers/${f}`);
}
