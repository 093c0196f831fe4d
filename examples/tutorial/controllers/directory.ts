/**
 * The site directory: one ConfigMap per namespace that lists every Website's address. No
 * Website owns it, so garbage collection cannot remove an entry; a finalizer does.
 *
 * @module
 */

import {
  addFinalizer,
  clone,
  ConfigMap,
  containsFinalizer,
  createOrUpdate,
  type DeepReadonly,
  mergeFrom,
  removeFinalizer,
  type Request,
} from "@rudder/operator";
import type { ObjectClient } from "@rudder/operator/controllerutil";
import type { EventRecorder } from "@rudder/operator/events";
import type { Website } from "../api/website.ts";

/** The directory ConfigMap's name, in each namespace that has Websites. */
export const DIRECTORY = "website-directory";

/** The finalizer that makes a Website's deletion wait until its directory entry is gone. */
export const FINALIZER = "tutorial.rudder.dev/directory";

/** Sets (or, with `address` undefined, removes) a Website's entry in the directory. */
export async function setDirectoryEntry(
  client: ObjectClient,
  req: Request,
  address: string | undefined,
): Promise<void> {
  await createOrUpdate<ConfigMap>(
    client,
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: DIRECTORY, namespace: req.namespace },
    },
    (directory) => {
      // Only `data` is the operator's: every other field stays as it was read.
      const data = { ...directory.data };
      if (address === undefined) delete data[req.name];
      else data[req.name] = address;
      directory.data = data;
    },
  );
}

/**
 * Runs the finalizer protocol. A Website being deleted loses its directory entry and then its
 * finalizer; a live one without the finalizer gets it. Returns true when the reconcile is over
 * (the Website was deleted, or the patch that added the finalizer brings it back).
 */
export async function finalize(
  client: ObjectClient,
  site: Website | DeepReadonly<Website>,
  req: Request,
  recorder?: EventRecorder,
): Promise<boolean> {
  if (site.metadata?.deletionTimestamp) {
    if (!containsFinalizer(site, FINALIZER)) return true;
    await setDirectoryEntry(client, req, undefined);
    recorder?.event(site, "Normal", "Unlisted", "Delete", `removed ${req.name} from ${DIRECTORY}`);
    const released = clone(site);
    removeFinalizer(released, FINALIZER);
    await client.patch(released, mergeFrom(site));
    return true;
  }
  if (containsFinalizer(site, FINALIZER)) return false;
  const withFinalizer = clone(site);
  addFinalizer(withFinalizer, FINALIZER);
  await client.patch(withFinalizer, mergeFrom(site));
  return true;
}
