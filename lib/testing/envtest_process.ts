/**
 * The processes of a local control plane: etcd and kube-apiserver started with their flags,
 * their output in log files, stopped with SIGTERM then SIGKILL; free loopback ports; the
 * watchdog script that cleans up when the test process is killed outright; and the start and
 * stop timeouts, from options or the KUBEBUILDER_CONTROLPLANE_*_TIMEOUT variables.
 *
 * @module
 */

import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import process from "node:process";

/**
 * Flags for a control-plane process: `"--name": "value"` (a string array repeats the flag,
 * `true` passes the bare flag, `null` removes a default).
 */
export type ProcessFlags = Record<string, string | readonly string[] | true | null>;

const DEFAULT_START_TIMEOUT_MS = 120_000;
const DEFAULT_STOP_TIMEOUT_MS = 10_000;
/** Milliseconds one readiness probe of etcd or kube-apiserver may take before it is retried. */
export const PROBE_TIMEOUT_MS = 5_000;
/** Tries at a free port before a start gives up: another process may take it first. */
export const PORT_ATTEMPTS = 3;
const LOG_TAIL_LINES = 20;

/**
 * Milliseconds of a Go duration (`1m30s`, `90s`, `500ms`) or a plain number of milliseconds,
 * for the KUBEBUILDER_CONTROLPLANE_*_TIMEOUT variables.
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== trimmed) return undefined;
  return parts.reduce((total, [, value, unit]) => total + Number(value) * units[unit], 0);
}

/** Milliseconds of the duration in the variable `name`, if set; throws when it is not one. */
function durationFromEnv(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === "") return undefined;
  const ms = parseDuration(value);
  if (ms === undefined) {
    throw new Error(`${name}=${JSON.stringify(value)} is not a duration such as 90s or 2m`);
  }
  return ms;
}

/** The start timeout when the options give none: the environment's, else 2 min. */
export function defaultStartTimeout(): number {
  return durationFromEnv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") ?? DEFAULT_START_TIMEOUT_MS;
}

/** The stop timeout when the options give none: the environment's, else 10 s. */
export function defaultStopTimeout(): number {
  return durationFromEnv("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT") ?? DEFAULT_STOP_TIMEOUT_MS;
}

/**
 * Waits for the test process to go away (its parent pid changes, or it stops existing), then
 * kills the pids listed in `<dir>/pids` and removes `<dir>`. It runs in its own session so a
 * terminal's Ctrl-C does not end it before it has cleaned up.
 */
export const WATCHDOG_SCRIPT = `
parent="$1"; dir="$2"
trap '' INT HUP
while :; do
  if [ -r /proc/$$/stat ]; then
    read -r stat < /proc/$$/stat
    rest="\${stat##*) }"
    set -- $rest
    [ "$2" = "$parent" ] || break
  else
    kill -0 "$parent" 2>/dev/null || break
  fi
  sleep 0.5
done
if [ -f "$dir/pids" ]; then
  while read -r pid; do kill -KILL "$pid" 2>/dev/null; done < "$dir/pids"
fi
rm -rf "$dir"
`;

/** Finds a free TCP port on 127.0.0.1 by binding port 0. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The command-line arguments of `defaults` with `overrides` applied. */
export function flagArgs(defaults: ProcessFlags, overrides: ProcessFlags | undefined): string[] {
  const merged: ProcessFlags = { ...defaults, ...overrides };
  const args: string[] = [];
  for (const [name, value] of Object.entries(merged)) {
    if (value === null) continue;
    if (value === true) args.push(name);
    else if (typeof value === "string") args.push(`${name}=${value}`);
    else for (const item of value) args.push(`${name}=${item}`);
  }
  return args;
}

/** One control-plane process, its output in a log file. */
export class ControlPlaneProcess {
  readonly name: string;
  readonly logFile: string;
  readonly child: ChildProcess;
  exit: { code: number | null; signal: string | null } | undefined;
  readonly exited: Promise<void>;

  constructor(name: string, binary: string, args: string[], logFile: string, attach: boolean) {
    this.name = name;
    this.logFile = logFile;
    const fd = attach ? undefined : openSync(logFile, "a");
    try {
      this.child = spawn(binary, args, {
        stdio: attach ? ["ignore", "inherit", "inherit"] : ["ignore", fd, fd],
      });
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    // The exit hook and the watchdog end this process; it must not keep the test run alive.
    this.child.unref();
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve();
      });
      this.child.once("error", (err) => {
        this.exit = { code: null, signal: `spawn error: ${err.message}` };
        resolve();
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** The last lines the process wrote, for error messages. */
  tail(lines = LOG_TAIL_LINES): string {
    try {
      const text = readFileSync(this.logFile, "utf8").trimEnd();
      return text.split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log file: output was attached to this process)";
    }
  }

  describeExit(): string {
    if (!this.exit) return "is running";
    return this.exit.code !== null
      ? `exited with code ${this.exit.code}`
      : `was ended by ${this.exit.signal}`;
  }

  async stop(timeoutMs: number): Promise<void> {
    if (this.exit || this.child.pid === undefined) return;
    this.#signal("SIGTERM");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    // A pending timer would keep the process alive after the control plane is gone.
    const stopped = await Promise.race([this.exited.then(() => true as const), timedOut]);
    clearTimeout(timer);
    if (!stopped) {
      // process.kill, not child.kill: Deno's ChildProcess ignores a second kill() call.
      this.#signal("SIGKILL");
      await this.exited;
    }
  }

  killSync(): void {
    if (this.exit || this.child.pid === undefined) return;
    this.#signal("SIGKILL");
  }

  #signal(signal: "SIGTERM" | "SIGKILL"): void {
    try {
      process.kill(this.child.pid!, signal);
    } catch {
      // Already gone.
    }
  }
}
