/**
 * Timer helpers: spreading a delay at random, so that many clients do not retry or resync in
 * step. (Letting the process exit while a timer is armed is runtime-specific: `unrefTimer` in
 * runtime.ts.)
 *
 * @module
 */

/** `ms` moved at random by up to ± `fraction` of itself (0.1: between 90 % and 110 %). */
export function jittered(ms: number, fraction: number): number {
  return ms * (1 - fraction + Math.random() * 2 * fraction);
}
