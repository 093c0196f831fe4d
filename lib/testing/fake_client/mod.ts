/**
 * An in-memory {@linkcode Client} for unit tests: the counterpart of controller-runtime's fake
 * client. It keeps objects in memory and answers every verb the way kube-apiserver does —
 * uids, resourceVersions, generations, finalizers, status and scale subresources, selectors,
 * paging, patches, server-side apply, dry runs and the API errors — so a reconciler can be
 * tested without a control plane. Rudder's own test suite runs one set of scenarios against
 * this client and against a real kube-apiserver to keep the two alike.
 *
 * Custom resources are held to their structural schema (their CRD's, or the one `defineResource`
 * generates for a type given in `types`) as the API server holds them: every write prunes fields
 * the schema does not know, drops `null`s of non-nullable fields and fills `default`s (in list
 * items and in defaulted objects too), then validates — required fields, types, `enum`,
 * bounds, lengths, `pattern`, item and property counts, list-type sets and maps, the common
 * formats — and refuses with the server's 422 Invalid and its causes (`spec.replicas:
 * Required value`). The status subresource checks `status` only; updates ratchet (a value left
 * as it was is not checked again). A server-side apply configuration with a field the schema
 * does not declare fails with the server's 500 instead of being pruned. Initial `objects` are
 * pruned and defaulted, not validated; an update of a CRD applies its new schema to the stored
 * objects at once, as the server does when it reads them.
 *
 * What it does not do: CEL rules (`x-kubernetes-validations`), the warnings the server sends
 * about pruned fields, the server's 500 for an apply configuration of the wrong type (a 422
 * here), admission (no webhooks, and namespaces need not exist), defaulting and validation of built-in kinds beyond names and
 * labels (a Deployment keeps the fields you gave it), garbage collection (`propagationPolicy`
 * is accepted and ignored), watches, and PodDisruptionBudget checks on evictions. Failures are
 * injected by wrapping it with `newInterceptedClient`.
 *
 * The parts, one file each: `client.ts` (the verbs and subresources), `store.ts` (the object
 * tracker and the write path), `field_ownership.ts` and `server_side_apply.ts` (managers and
 * apply), `kinds.ts` and `crd.ts` (which kinds are served and how each behaves), `list.ts`
 * (selectors and paging), `patches.ts`, `scale.ts`, `names.ts` (name and label validation),
 * `schema_validation.ts` (custom resources against their schema), `errors.ts` (the API
 * server's errors) and `objects.ts` (JSON in and out, paths).
 *
 * @module
 */

export { FakeClient, type FakeClientOptions, type SelectableFields } from "./client.ts";
