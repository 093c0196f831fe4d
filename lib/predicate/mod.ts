/**
 * Predicates: filters on the events a controller reacts to, as controller-runtime's
 * `pkg/predicate`. Combine them with {@linkcode and}, {@linkcode or} and {@linkcode not}.
 *
 * @example React to spec changes and to a label
 * ```ts
 * import * as predicate from "@rudder/operator/predicate";
 *
 * const filter = predicate.or(
 *   predicate.generationChangedPredicate,
 *   predicate.labelChangedPredicate,
 * );
 * console.log(typeof filter.update);
 * ```
 *
 * @module
 */

export {
  and,
  annotationChangedPredicate,
  generationChangedPredicate,
  labelChangedPredicate,
  labelSelectorPredicate,
  newPredicateFuncs,
  not,
  or,
  type Predicate,
  resourceVersionChangedPredicate,
} from "./predicate.ts";
