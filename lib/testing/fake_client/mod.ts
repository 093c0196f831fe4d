/**
 * An in-memory {@linkcode Client} for unit tests: the counterpart of controller-runtime's fake
 * client. It keeps objects in memory and answers every verb the way kube-apiserver does —
 * uids, resourceVersions, generations, finalizers, status and scale subresources, selectors,
 * paging, patches, server-side apply, dry runs and the API errors — so a reconciler can be
 * tested without a control plane. Rudder's own test suite runs one set of scenarios against
 * this client and against a real kube-apiserver to keep the two alike.
 *
 * What it does not do: defaulting (a Deployment keeps the fields you gave it), schema
 * validation beyond names and labels, admission (namespaces need not exist), garbage
 * collection (`propagationPolicy` is accepted and ignored), watches, and PodDisruptionBudget
 * checks on evictions. Failures are injected by wrapping it with `newInterceptedClient`.
 *
 * The parts, one file each: `client.ts` (the verbs and subresources), `store.ts` (the object
 * tracker and the write path), `field_ownership.ts` and `server_side_apply.ts` (managers and
 * apply), `kinds.ts` and `crd.ts` (which kinds are served and how each behaves), `list.ts`
 * (selectors and paging), `patches.ts`, `scale.ts`, `names.ts` (name and label validation),
 * `errors.ts` (the API server's errors) and `objects.ts` (JSON in and out, paths).
 *
 * @module
 */

export { FakeClient, type FakeClientOptions, type SelectableFields } from "./client.ts";
