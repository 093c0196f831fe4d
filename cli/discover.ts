/**
 * What an operator project declares, found by loading its code without starting anything: the
 * CRDs its api modules export (every export with a `crd()` method) and the kinds its
 * controllers watch (each controller's `watched` list, filled in by the builder when the
 * project's `setup(mgr)` registers it with a manager that is never started).
 *
 * `rudder manifests` and `rudder dev` run the CLI itself as a child process with the internal
 * command `__discover`, in the project's directory and with the project's own configuration
 * (its import map, its tsconfig paths), so that the project's imports resolve exactly as when
 * it runs:
 *
 * ```sh
 * deno run -A --config <project>/deno.json cli/main.ts __discover <project> <output.json>
 * bun cli/main.ts __discover <project> <output.json>
 * ```
 *
 * @module
 */

import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Runnable, WatchedKind } from "../lib/controller/controller.ts";
import { Manager } from "../lib/manager/manager.ts";
import { type CommandIO, USAGE_EXIT_CODE } from "./args.ts";
import { loadProject, type ProjectSettings } from "./project.ts";

/** A kind as the manifests need it. */
export interface DiscoveredKind {
  group: string;
  version: string;
  kind: string;
  plural: string;
  scope: "Namespaced" | "Cluster";
}

/** A kind a controller watches, and how. */
export interface DiscoveredWatch extends DiscoveredKind {
  role: WatchedKind["role"];
}

/** A controller and what it watches. */
export interface DiscoveredController {
  name: string;
  watched: DiscoveredWatch[];
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

/** A manager that records the controllers registered with it and is never started. */
class RecordingManager extends Manager {
  readonly runnables: Runnable[] = [];

  constructor() {
    // No config is loaded until the manager starts, which it never does.
    super({ metricsBindAddress: "0" });
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
): Promise<DiscoveredController[]> {
  return (await discoverSetup(setup)).controllers;
}

/**
 * Calls `setup` with a manager that is never started and returns the controllers and the
 * webhooks it registered.
 */
export async function discoverSetup(
  setup: (mgr: Manager) => unknown,
): Promise<
  { controllers: DiscoveredController[]; webhooks: boolean; admissionWebhooks: DiscoveredWebhook[] }
> {
  const mgr = new RecordingManager();
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
    const candidate = runnable as Partial<{ name: string; watched: WatchedKind[] }>;
    if (!Array.isArray(candidate.watched)) continue;
    controllers.push({
      name: String(candidate.name ?? ""),
      watched: candidate.watched.map(({ type, role }) => ({ ...toKind(type), role })),
    });
  }
  return { controllers, webhooks: server.hasHandlers(), admissionWebhooks };
}

/** The CRDs among a module's exports: every value with a `crd()` method. */
export function crdsOf(exports: Record<string, unknown>): CRDObject[] {
  const crds: CRDObject[] = [];
  for (const value of Object.values(exports)) {
    const candidate = value as { crd?: unknown } | null;
    if (
      candidate && (typeof candidate === "object" || typeof candidate === "function") &&
      typeof candidate.crd === "function"
    ) {
      crds.push((candidate.crd as () => CRDObject)());
    }
  }
  return crds;
}

/** Loads the project's modules and returns what they declare. */
export async function discover(settings: ProjectSettings): Promise<Discovery> {
  const byName = new Map<string, { crd: CRDObject; from: string }>();
  const apiModules: { module: string; exports: Record<string, unknown> }[] = [];
  for (const module of settings.api) {
    apiModules.push({
      module,
      exports: await import(pathToFileURL(join(settings.dir, module)).href),
    });
  }
  const main = await import(pathToFileURL(join(settings.dir, settings.main)).href);
  const setup = main[settings.setup];
  if (typeof setup !== "function") {
    throw new Error(
      `${settings.main} does not export a function "${settings.setup}" that registers the ` +
        `controllers with a manager (export function ${settings.setup}(mgr: Manager): void); ` +
        `its exports: ${Object.keys(main).join(", ") || "none"}`,
    );
  }
  // setup first: the conversions it registers show in the CRDs (spec.conversion).
  const registered = await discoverSetup(setup);
  for (const { module, exports } of apiModules) {
    for (const crd of crdsOf(exports)) {
      const name = crd.metadata?.name;
      if (!name) throw new Error(`${module}: a crd() returned a CRD without metadata.name`);
      const seen = byName.get(name);
      if (seen && JSON.stringify(seen.crd) !== JSON.stringify(crd)) {
        throw new Error(`${module} and ${seen.from} both define the CRD ${name}, differently`);
      }
      byName.set(name, { crd, from: module });
    }
  }
  return {
    crds: [...byName.keys()].sort().map((name) => byName.get(name)!.crd),
    ...registered,
  };
}

/** The internal command the CLI runs itself with to load a project (not in its help). */
export const DISCOVER_COMMAND = "__discover";

/** `rudder __discover <project> <output>`: writes what the project declares, as JSON. */
export async function runDiscover(args: string[], io: CommandIO): Promise<number> {
  const [dir, output] = args;
  if (!dir || !output || args.length > 2) {
    io.err(`usage: rudder ${DISCOVER_COMMAND} <project dir> <output file>`);
    return USAGE_EXIT_CODE;
  }
  const discovery = await discover(loadProject(resolve(io.cwd, dir)));
  writeFileSync(resolve(io.cwd, output), JSON.stringify(discovery));
  return 0;
}
