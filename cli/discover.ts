/**
 * What an operator project declares, found by loading its code without starting anything: the
 * CRDs its api modules export (every export with a `crd()` method) and the kinds its
 * controllers watch (each controller's `watched` list, filled in by the builder when the
 * project's `setup(mgr)` registers it with a manager that is never started).
 *
 * `rudder manifests` and `rudder dev` write a small entry module into the project
 * ({@linkcode discoveryScript}) that imports the project's api modules and main module with static
 * imports and hands them to {@linkcode writeDiscovery}, and run it as a child process in the
 * project's directory with the project's own configuration (its import map, its tsconfig paths),
 * so that the project's imports resolve exactly as when it runs.
 *
 * @module
 */

import { writeFileSync } from "node:fs";
import { resolve, sep } from "node:path";
import type { WatchedKind } from "../lib/controller/controller.ts";
import type { Runnable } from "../lib/util/runnable.ts";
import { Manager } from "../lib/manager/manager.ts";
import { loadProject, type ProjectSettings } from "./project.ts";

/** A kind as the manifests need it. */
export interface DiscoveredKind {
  group: string;
  version: string;
  kind: string;
  plural: string;
  scope: "Namespaced" | "Cluster";
}

/**
 * A kind a controller watches, and its role in the manifest model: what the generated RBAC
 * grants on it (reads for every role; writes for `for` and `owns`; status and finalizers for
 * `for`).
 */
export interface DiscoveredWatch extends DiscoveredKind {
  role: WatchedKind["relation"];
}

/** A controller and what it watches. */
export interface DiscoveredController {
  name: string;
  watched: DiscoveredWatch[];
  /** True when built with `.sharded()`: its replicas split its `for` kind's objects. */
  sharded?: boolean;
}

/** An admission webhook the operator registers. */
export interface DiscoveredWebhook extends DiscoveredKind {
  /** `mutating` or `validating`. */
  type: "mutating" | "validating";
  /** The path served, e.g. `/validate-example-com-v1-widget`. */
  path: string;
  /** The operations it is sent. */
  operations: string[];
}

/** A CRD object as `crd()` returns it. */
export type CRDObject = Record<string, unknown> & { metadata?: { name?: string } };

/** Everything `rudder manifests` derives its output from. */
export interface Discovery {
  /** The CRDs, sorted by name. */
  crds: CRDObject[];
  /** The controllers, in registration order. */
  controllers: DiscoveredController[];
  /** Whether the operator serves webhooks (a webhook Service is generated then). */
  webhooks: boolean;
  /** The admission webhooks registered by `setup(mgr)`, sorted by path. */
  admissionWebhooks?: DiscoveredWebhook[];
}

/** The ring of the discovering manager when the project declares none. */
const DISCOVERY_RING = "discovery";

/** A manager that records the controllers registered with it and is never started. */
class RecordingManager extends Manager {
  readonly runnables: Runnable[] = [];

  constructor(ring: string) {
    // No config is loaded until the manager starts, which it never does. Sharding is on, so
    // that `.sharded()` controllers register (whether the project declares a ring is checked
    // by the manifests); its names are fixed, so nothing is read from the environment.
    super({
      metricsBindAddress: "0",
      sharding: { ring, shardName: DISCOVERY_RING, namespace: DISCOVERY_RING },
    });
  }

  override add(runnable: Runnable): void {
    this.runnables.push(runnable);
    super.add(runnable);
  }
}

function toKind(type: WatchedKind["type"]): DiscoveredKind {
  return {
    group: type.group,
    version: type.version,
    kind: type.kind,
    plural: type.plural,
    scope: type.scope,
  };
}

/** Calls `setup` with a manager that is never started and returns the controllers it added. */
export async function discoverControllers(
  setup: (mgr: Manager) => unknown,
  options: { ring?: string } = {},
): Promise<DiscoveredController[]> {
  return (await discoverSetup(setup, options)).controllers;
}

/**
 * Calls `setup` with a manager that is never started and returns the controllers and the
 * webhooks it registered. The manager shards with `ring` (the project's, when it declares one).
 */
export async function discoverSetup(
  setup: (mgr: Manager) => unknown,
  options: { ring?: string } = {},
): Promise<
  { controllers: DiscoveredController[]; webhooks: boolean; admissionWebhooks: DiscoveredWebhook[] }
> {
  const mgr = new RecordingManager(options.ring ?? DISCOVERY_RING);
  await setup(mgr);
  const server = mgr.getWebhookServer();
  const admissionWebhooks = server.webhooks().map((webhook): DiscoveredWebhook => ({
    ...toKind(webhook.resource),
    type: webhook.type,
    path: webhook.path,
    operations: [...(webhook.operations ?? [])],
  })).sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const controllers: DiscoveredController[] = [];
  for (const runnable of mgr.runnables) {
    const candidate = runnable as Partial<
      { name: string; watched: WatchedKind[]; sharded: boolean }
    >;
    if (!Array.isArray(candidate.watched)) continue;
    controllers.push({
      name: String(candidate.name ?? ""),
      watched: candidate.watched.map(({ type, relation }) => ({ ...toKind(type), role: relation })),
      ...(candidate.sharded ? { sharded: true } : {}),
    });
  }
  return { controllers, webhooks: server.hasHandlers(), admissionWebhooks };
}

/** The CRDs among a module's exports (every value with a `crd()` method), by export name. */
export function crdsOf(exports: Record<string, unknown>): { symbol: string; crd: CRDObject }[] {
  const crds: { symbol: string; crd: CRDObject }[] = [];
  for (const [symbol, value] of Object.entries(exports)) {
    const candidate = value as { crd?: unknown } | null;
    if (
      candidate && (typeof candidate === "object" || typeof candidate === "function") &&
      typeof candidate.crd === "function"
    ) {
      crds.push({ symbol, crd: (candidate.crd as () => CRDObject)() });
    }
  }
  return crds;
}

/** What the project's modules declare, given the modules themselves. */
export async function discoverModules(
  settings: ProjectSettings,
  apiModules: Record<string, Record<string, unknown>>,
  main: Record<string, unknown>,
): Promise<Discovery> {
  const setup = main[settings.setup];
  if (typeof setup !== "function") {
    throw new Error(
      `${settings.main} does not export a function "${settings.setup}" that registers the ` +
        `controllers with a manager (export function ${settings.setup}(mgr: Manager): void); ` +
        `its exports: ${Object.keys(main).join(", ") || "none"}`,
    );
  }
  // setup first: the conversions it registers show in the CRDs (spec.conversion).
  const registered = await discoverSetup(setup as (mgr: Manager) => unknown, {
    ring: settings.sharding?.ring,
  });
  const byName = new Map<string, { crd: CRDObject; from: string }>();
  for (const [module, exports] of Object.entries(apiModules)) {
    for (const { symbol, crd } of crdsOf(exports)) {
      const name = crd.metadata?.name;
      const from = `${symbol} in ${module}`;
      if (!name) throw new Error(`${from}: its crd() returned a CRD without metadata.name`);
      const seen = byName.get(name);
      // The same definition exported twice (a re-export) is one CRD.
      if (seen && JSON.stringify(seen.crd) !== JSON.stringify(crd)) {
        throw new Error(
          `${from} and ${seen.from} both define the CRD ${name}, differently: define each kind ` +
            "once and import it where it is needed (for a second version, list it in the " +
            "first's versions)",
        );
      }
      byName.set(name, { crd, from });
    }
  }
  return {
    crds: [...byName.keys()].sort().map((name) => byName.get(name)!.crd),
    ...registered,
  };
}

/**
 * Writes what the project in `dir` declares, as JSON, to `output`. The discovery entry module
 * ({@linkcode discoveryScript}) calls it with the project's modules, imported statically.
 *
 * @example
 * ```ts ignore
 * import { writeDiscovery } from "@rudder/operator/cli";
 * import * as api0 from "./api/widget.ts";
 * import * as main from "./main.ts";
 *
 * await writeDiscovery(".", "/tmp/discovery.json", { "api/widget.ts": api0 }, main);
 * ```
 */
export async function writeDiscovery(
  dir: string,
  output: string,
  apiModules: Record<string, Record<string, unknown>>,
  main: Record<string, unknown>,
): Promise<void> {
  const discovery = await discoverModules(loadProject(resolve(dir)), apiModules, main);
  writeFileSync(output, JSON.stringify(discovery));
}

/**
 * The entry module that loads a project for discovery: static imports of its api modules and
 * main module, then a call of {@linkcode writeDiscovery} from `cli` (this CLI's main module, as
 * a path or a `jsr:` specifier). Written into the project's directory, so the project's own
 * configuration resolves its imports.
 */
export function discoveryScript(settings: ProjectSettings, cli: string, output: string): string {
  const specifier = (module: string) =>
    JSON.stringify(`./${module.replace(/^\.\//, "").split(sep).join("/")}`);
  return [
    "// Written by rudder to load this project's modules; removed once it has run.",
    `import { writeDiscovery } from ${JSON.stringify(cli)};`,
    ...settings.api.map((module, i) => `import * as api${i} from ${specifier(module)};`),
    `import * as main from ${specifier(settings.main)};`,
    "",
    `await writeDiscovery(${JSON.stringify(settings.dir)}, ${JSON.stringify(output)}, {`,
    ...settings.api.map((module, i) => `  ${JSON.stringify(module)}: api${i},`),
    "}, main);",
    "",
  ].join("\n");
}
