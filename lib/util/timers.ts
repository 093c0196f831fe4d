/**
 * Timer helpers: spreading a delay at random, so that many clients do not retry or resync in
 * step, and letting the process exit while a timer is armed.
 *
 * @module
 */

/** `ms` moved at random by up to ± `fraction` of itself (0.1: between 90 % and 110 %). */
export function jittered(ms: number, fraction: number): number {
  return ms * (1 - fraction + Math.random() * 2 * fraction);
}

/** Lets the process exit while the timer is armed (Deno, Bun and Node each have their way). */
export function unrefTimer(timer: ReturnType<typeof setTimeout>): void {
  if (typeof timer === "number") {
    (globalThis as { Deno?: { unrefTimer?(id: number): void } }).Deno?.unrefTimer?.(timer);
  } else {
    (timer as { unref?(): void }).unref?.();
  }
}
