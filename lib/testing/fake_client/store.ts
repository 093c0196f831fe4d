/**
 * The fake's object tracker: objects by kind, then by `namespace/name`, each with the fields
 * its managers own; one resourceVersion counter for all of them; and the write path every verb
 * shares: create, the preconditions of an update, the object an update stores (system metadata
 * kept, status apart, generation counted), the commit (finalizers, no-op writes, ownership)
 * and deletion.
 *
 * @module
 */

import { gvkKey, type KubeObject, type ResourceType } from "../../api/resource.ts";
import type { DeleteOptions, PatchOptions, UpdateOptions } from "../../client/options.ts";
import { isJsonObject, jsonClone, jsonEqual, type JsonObject } from "../../util/json.ts";
import { CRD_KEY, servedKinds } from "./crd.ts";
import {
  alreadyExists,
  apiError,
  badRequest,
  conflict,
  forbidden,
  invalid,
  invalidValue,
  notFound,
  required,
  type Where,
} from "./errors.ts";
import {
  DEFAULT_FIELD_MANAGER,
  managerKey,
  type Managers,
  type Operation,
  own,
  ownedLeaves,
  ownersBeforeFirstApply,
  SYSTEM_METADATA,
} from "./field_ownership.ts";
import {
  allowsUnconditionalUpdate,
  generationInput,
  hasStatus,
  isBuiltin,
  type KnownKinds,
  normalize,
  STATUS_KEEPS_LABELS,
} from "./kinds.ts";
import { labelCauses, nameProblems } from "./names.ts";
import { metadataOf, type Path, stringAt, stringsAt, timestamp } from "./objects.ts";
import { decodeWithSchema, validateWithSchema } from "./schema_validation.ts";

const GENERATE_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789";
const MAX_GENERATE_NAME_PREFIX = 58;

/** One stored object and which manager owns which of its fields. */
export interface Entry {
  /** The object as stored. */
  object: JsonObject;
  /** Its field managers. */
  managers: Managers;
}

/** Who makes a write, for field ownership. */
export interface Writer {
  /** The field manager. */
  manager: string;
  /** Update or apply. */
  operation: Operation;
  /** `""`, `status` or `scale`. */
  subresource: string;
  /** For an apply: the leaves the configuration holds. */
  applied?: Path[];
}

/** The objects of a fake, and the write path every verb shares. */
export class ObjectStore {
  /** Objects by kind (`apiVersion/kind`), then by `namespace/name`. */
  readonly #objects = new Map<string, Map<string, Entry>>();
  readonly #kinds: KnownKinds;
  readonly #clock: () => Date;
  #resourceVersion = 0;

  /** A store whose CRDs make their kinds known to `kinds`; `clock` dates the timestamps. */
  constructor(kinds: KnownKinds, clock: () => Date) {
    this.#kinds = kinds;
    this.#clock = clock;
  }

  /** The latest resourceVersion given out, as lists report it. */
  get resourceVersion(): number {
    return this.#resourceVersion;
  }

  /** The objects of a kind, by key. */
  bucket(type: ResourceType<KubeObject>): Map<string, Entry> {
    const key = gvkKey(type);
    let bucket = this.#objects.get(key);
    if (!bucket) {
      bucket = new Map();
      this.#objects.set(key, bucket);
    }
    return bucket;
  }

  /** The key of an object in its bucket. */
  key(type: ResourceType<KubeObject>, namespace: string | undefined, name: string): string {
    return type.scope === "Namespaced" ? `${namespace}/${name}` : `/${name}`;
  }

  #nextResourceVersion(): string {
    return String(++this.#resourceVersion);
  }

  #now(): string {
    return timestamp(this.#clock());
  }

  /** The stored entry of `type` named `name`, with its key; NotFound when there is none. */
  existing(
    type: ResourceType<KubeObject>,
    namespace: string | undefined,
    name: string,
    where: Where,
  ) {
    const key = this.key(type, namespace, name);
    const entry = this.bucket(type).get(key);
    if (!entry) throw notFound(type, name, where);
    return { key, entry };
  }

  /**
   * Stores an initial object as given (only a missing resourceVersion filled in), its fields
   * owned as those of an object that was never applied.
   */
  seed(type: ResourceType<KubeObject>, obj: JsonObject, described: string): void {
    obj.apiVersion = type.apiVersion;
    obj.kind = type.kind;
    // Pruned and defaulted as the API server decodes what it reads from storage; not validated.
    this.#decode(type, obj);
    const meta = metadataOf(obj);
    const name = typeof meta.name === "string" ? meta.name : undefined;
    if (!name) throw new Error(`initial object ${described}: metadata.name is required`);
    if (type.scope === "Cluster") delete meta.namespace;
    else if (!meta.namespace) {
      throw new Error(
        `initial object ${described}: a namespace is required, ${type.kind} is namespaced`,
      );
    }
    const key = this.key(type, stringAt(meta, "namespace"), name);
    const bucket = this.bucket(type);
    if (bucket.has(key)) throw new Error(`initial object ${described} is given twice`);
    delete meta.managedFields;
    const givenVersion = Number(meta.resourceVersion);
    if (!meta.resourceVersion) meta.resourceVersion = this.#nextResourceVersion();
    else if (Number.isSafeInteger(givenVersion) && givenVersion > this.#resourceVersion) {
      this.#resourceVersion = givenVersion;
    }
    bucket.set(key, { object: obj, managers: ownersBeforeFirstApply(obj) });
    if (gvkKey(type) === CRD_KEY) this.#kinds.serve(obj);
  }

  /** Prunes and defaults a custom resource by its schema, as the API server decodes a body. */
  #decode(type: ResourceType<KubeObject>, obj: JsonObject): void {
    const schema = this.#kinds.schema(type);
    if (schema) decodeWithSchema(obj, schema);
  }

  /** What the schema of a custom kind finds wrong with `obj` (only `status` for its subresource). */
  #schemaCauses(
    type: ResourceType<KubeObject>,
    obj: JsonObject,
    before: JsonObject | undefined,
    subresource: string,
  ) {
    const schema = this.#kinds.schema(type);
    if (!schema) return [];
    return validateWithSchema(schema, obj, before, subresource === "status" ? "status" : undefined);
  }

  /** Creates `obj` (a copy the store may keep), owned by `manager`; answers with a copy. */
  create(
    type: ResourceType<KubeObject>,
    obj: JsonObject,
    manager: string,
    operation: Operation,
    dryRun: boolean | undefined,
    where: Where,
  ): JsonObject {
    obj.apiVersion = type.apiVersion;
    obj.kind = type.kind;
    this.#decode(type, obj);
    if (hasStatus(type)) delete obj.status;
    const meta = metadataOf(obj);
    if (meta.resourceVersion) {
      throw apiError(
        where,
        500,
        "InternalError",
        "resourceVersion should not be set on objects to be created",
      );
    }
    if (type.scope === "Cluster") delete meta.namespace;
    const bucket = this.bucket(type);
    const subject = { kind: type.kind, group: type.group };
    if (!meta.name && typeof meta.generateName === "string" && meta.generateName) {
      const prefix = meta.generateName.slice(0, MAX_GENERATE_NAME_PREFIX);
      let generated: string;
      do {
        let suffix = "";
        for (let i = 0; i < 5; i++) {
          suffix += GENERATE_NAME_CHARS[Math.floor(Math.random() * GENERATE_NAME_CHARS.length)];
        }
        generated = prefix + suffix;
      } while (bucket.has(this.key(type, stringAt(meta, "namespace"), generated)));
      meta.name = generated;
    }
    const name = typeof meta.name === "string" ? meta.name : "";
    if (!name) {
      throw invalid(
        subject,
        "",
        [required("metadata.name", "name or generateName is required")],
        where,
      );
    }
    const causes = [
      ...nameProblems(type, name).map((problem) => invalidValue("metadata.name", name, problem)),
      ...labelCauses(meta.labels),
      ...this.#schemaCauses(type, obj, undefined, ""),
    ];
    if (causes.length > 0) throw invalid(subject, name, causes, where);
    const key = this.key(type, stringAt(meta, "namespace"), name);
    if (bucket.has(key)) throw alreadyExists(type, name, where);

    for (const field of SYSTEM_METADATA) {
      if (field !== "name" && field !== "namespace") delete meta[field];
    }
    meta.uid = crypto.randomUUID();
    meta.creationTimestamp = this.#now();
    if (generationInput(type)) meta.generation = 1;
    normalize(type, obj, undefined, () => this.#now());
    if (dryRun) return jsonClone(obj);

    meta.resourceVersion = this.#nextResourceVersion();
    const entry: Entry = { object: obj, managers: new Map() };
    own(entry.managers, managerKey(manager, operation, ""), operation, {}, obj, ownedLeaves(obj));
    bucket.set(key, entry);
    if (gvkKey(type) === CRD_KEY) this.#kinds.serve(obj);
    return jsonClone(obj);
  }

  /**
   * The object a write of `incoming` to `entry` stores: system metadata from the stored
   * object, status kept apart when it is a subresource, the generation counted.
   */
  prepareUpdate(
    type: ResourceType<KubeObject>,
    entry: Entry,
    incoming: JsonObject,
    subresource: "" | "status",
  ): JsonObject {
    const before = entry.object;
    const beforeMeta = metadataOf(before);
    let next = jsonClone(incoming);
    if (subresource === "status" && !isBuiltin(type)) {
      // A custom resource's status write changes its status and nothing else.
      next = { ...jsonClone(before), status: next.status };
      if (next.status === undefined) delete next.status;
    }
    next.apiVersion = type.apiVersion;
    next.kind = type.kind;
    const meta = metadataOf(next);
    for (const field of SYSTEM_METADATA) {
      if (beforeMeta[field] === undefined) delete meta[field];
      else meta[field] = jsonClone(beforeMeta[field]);
    }
    if (subresource === "status") {
      if (before.spec === undefined) delete next.spec;
      else next.spec = jsonClone(before.spec);
      if (STATUS_KEEPS_LABELS.has(gvkKey(type))) {
        if (beforeMeta.labels === undefined) delete meta.labels;
        else meta.labels = jsonClone(beforeMeta.labels);
      }
    } else if (hasStatus(type)) {
      if (before.status === undefined) delete next.status;
      else next.status = jsonClone(before.status);
    }
    normalize(type, next, before, () => this.#now());
    // Before the generation is counted: a dropped field that is defaulted again is no change.
    this.#decode(type, next);
    const input = generationInput(type);
    if (input && !jsonEqual(input(before), input(next))) {
      meta.generation = (typeof beforeMeta.generation === "number" ? beforeMeta.generation : 0) + 1;
    }
    return next;
  }

  /** The checks of an update of `entry` with the resourceVersion and uid `incoming` carries. */
  checkPreconditions(
    type: ResourceType<KubeObject>,
    entry: Entry,
    incoming: JsonObject,
    where: Where,
  ): void {
    const meta = isJsonObject(incoming.metadata) ? incoming.metadata : {};
    const stored = metadataOf(entry.object);
    const name = String(stored.name);
    if (meta.name !== undefined && meta.name !== name) {
      throw badRequest(
        `the name of the object (${meta.name}) does not match the name on the URL (${name})`,
        where,
      );
    }
    if (meta.resourceVersion) {
      if (meta.resourceVersion !== stored.resourceVersion) throw conflict(type, name, where);
    } else if (!allowsUnconditionalUpdate(type)) {
      throw invalid({ kind: type.plural, group: type.group }, name, [
        invalidValue("metadata.resourceVersion", 0, "must be specified for an update"),
      ], where);
    }
    if (meta.uid && meta.uid !== stored.uid) {
      throw conflict(
        type,
        name,
        where,
        `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${stored.uid}`,
      );
    }
  }

  /**
   * Stores `next` as the new state of `entry`: refuses new finalizers on an object being
   * deleted, deletes it when its last finalizer went, keeps the resourceVersion when nothing
   * changed, and records which manager owns what.
   */
  commit(
    type: ResourceType<KubeObject>,
    key: string,
    entry: Entry,
    next: JsonObject,
    owner: Writer,
    dryRun: boolean | undefined,
    where: Where,
  ): JsonObject {
    const before = entry.object;
    const meta = metadataOf(next);
    const name = String(meta.name);
    const causes = [
      ...labelCauses(meta.labels),
      ...this.#schemaCauses(type, next, before, owner.subresource),
    ];
    if (metadataOf(before).deletionTimestamp) {
      const had = new Set(stringsAt(metadataOf(before).finalizers));
      const added = stringsAt(meta.finalizers).filter((f) => !had.has(f));
      if (added.length > 0) {
        causes.push(forbidden(
          "metadata.finalizers",
          "no new finalizers can be added if the object is being deleted, found new finalizers " +
            `[]string{${added.map((f) => JSON.stringify(f)).join(", ")}}`,
        ));
      }
      if (causes.length === 0 && !(Array.isArray(meta.finalizers) && meta.finalizers.length)) {
        if (!dryRun) this.remove(type, key);
        return jsonClone(next);
      }
    }
    if (causes.length > 0) {
      throw invalid({ kind: type.kind, group: type.group }, name, causes, where);
    }
    if (jsonEqual(next, before)) return jsonClone(before);
    if (dryRun) return jsonClone(next);
    meta.resourceVersion = this.#nextResourceVersion();
    own(
      entry.managers,
      managerKey(owner.manager, owner.operation, owner.subresource),
      owner.operation,
      before,
      next,
      owner.applied ?? [],
    );
    entry.object = next;
    if (gvkKey(type) === CRD_KEY) this.#reserve(next);
    return jsonClone(next);
  }

  /**
   * Serves what an updated CRD now says, and decodes the stored objects of its kinds with the
   * new schemas: the API server prunes and defaults what it reads, so they show new defaults
   * at once (and keep their resourceVersion).
   */
  #reserve(crd: JsonObject): void {
    this.#kinds.serve(crd);
    for (const served of servedKinds(crd)) {
      if (!served.schema) continue;
      for (const stored of this.bucket(served.type).values()) {
        decodeWithSchema(stored.object, served.schema);
      }
    }
  }

  /** Removes an object now; a CRD takes its kinds' objects with it. */
  remove(type: ResourceType<KubeObject>, key: string): void {
    const entry = this.bucket(type).get(key);
    this.bucket(type).delete(key);
    if (entry && gvkKey(type) === CRD_KEY) {
      // The API server deletes a CRD's objects with it.
      for (const served of servedKinds(entry.object)) this.#objects.delete(gvkKey(served.type));
    }
  }

  /** Deletes at once, or marks for deletion an object that has finalizers. */
  delete(
    type: ResourceType<KubeObject>,
    key: string,
    name: string,
    options: DeleteOptions,
    where: Where,
  ): void {
    const entry = this.bucket(type).get(key);
    if (!entry) throw notFound(type, name, where);
    const meta = metadataOf(entry.object);
    const { uid, resourceVersion } = options.preconditions ?? {};
    const subject = type.group ? `${type.kind}.${type.group}` : type.kind;
    const details = { name, ...(type.group ? { group: type.group } : {}), kind: type.kind };
    if (uid !== undefined && uid !== meta.uid) {
      throw apiError(
        where,
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${subject} "${name}": the UID in the precondition (${uid}) ` +
          `does not match the UID in record (${meta.uid}). The object might have been deleted and then recreated`,
        details,
      );
    }
    if (resourceVersion !== undefined && resourceVersion !== meta.resourceVersion) {
      throw apiError(
        where,
        409,
        "Conflict",
        `Operation cannot be fulfilled on ${subject} "${name}": the ResourceVersion in the precondition ` +
          `(${resourceVersion}) does not match the ResourceVersion in record (${meta.resourceVersion}). ` +
          "The object might have been modified",
        details,
      );
    }
    if (!Array.isArray(meta.finalizers) || meta.finalizers.length === 0) {
      if (!options.dryRun) this.remove(type, key);
      return;
    }
    if (meta.deletionTimestamp || options.dryRun) return;
    const next = jsonClone(entry.object);
    const nextMeta = metadataOf(next);
    nextMeta.deletionTimestamp = this.#now();
    nextMeta.deletionGracePeriodSeconds = 0;
    if (typeof nextMeta.generation === "number" && nextMeta.generation > 0) nextMeta.generation++;
    nextMeta.resourceVersion = this.#nextResourceVersion();
    entry.object = next;
  }

  /** An update (PUT, or a patch once applied) of `entry` to the whole object `incoming`. */
  updateEntry(
    type: ResourceType<KubeObject>,
    key: string,
    entry: Entry,
    incoming: JsonObject,
    subresource: "" | "status",
    options: UpdateOptions | PatchOptions,
    where: Where,
  ): JsonObject {
    this.checkPreconditions(type, entry, incoming, where);
    const next = this.prepareUpdate(type, entry, incoming, subresource);
    const manager = options.fieldManager ?? DEFAULT_FIELD_MANAGER;
    return this.commit(
      type,
      key,
      entry,
      next,
      { manager, operation: "Update", subresource },
      options.dryRun,
      where,
    );
  }
}
