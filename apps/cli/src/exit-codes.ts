/**
 * The exit codes of the `agent-state` command. Scripts branch on these, so
 * they are part of the command's interface (documented in the README).
 */
export const EXIT = {
  /** Everything asked for happened and every check held. */
  OK: 0,
  /** The command ran and found a problem: a failed or unproved contract check, a copy that left a key different. */
  FAILED: 1,
  /** Bad usage: unknown command or flag, a bad argument, a malformed or unknown backend URL. */
  USAGE: 2,
  /** The backend could not be opened or reached: server down, wrong password, missing bucket, missing package, timeout. */
  UNAVAILABLE: 3,
  /** A named key, session or worker does not exist. */
  NOT_FOUND: 4,
  /** Stopped by SIGINT (128 + 2). */
  INTERRUPTED: 130,
  /** Stopped by SIGTERM (128 + 15). */
  TERMINATED: 143,
} as const

/** One of {@link EXIT}'s values. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT]

/**
 * A failure the command reports as one line and an exit code. Commands throw
 * it; `main` prints `agent-state <command>: <message>` and exits with `exitCode`.
 */
export class CliError extends Error {
  /** The exit code the command ends with. */
  readonly exitCode: ExitCode

  constructor(message: string, exitCode: ExitCode, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'CliError'
    this.exitCode = exitCode
  }
}
