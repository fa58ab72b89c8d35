import { readFileSync, readlinkSync } from 'node:fs'
import { threadId } from 'node:worker_threads'

/**
 * Who owns a lock generation or a temp file: enough to tell, from another
 * process on the same host, whether the owner is still running. A pid alone is
 * not enough (pids are reused), so the identity adds the process start time
 * from `/proc/<pid>/stat`, the kernel boot id and the PID namespace; the
 * thread id separates worker threads of one process.
 */
export interface ProcessIdentity {
  readonly pid: number
  /** Start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`), or `"-"` without `/proc`. */
  readonly start: string
  /** First 8 characters of the kernel boot id, or `"-"` without `/proc`. */
  readonly boot: string
  /** Inode of the PID namespace (`/proc/self/ns/pid`), or `"-"` when unknown. */
  readonly pidns: string
  readonly thread: number
}

/** Start time of `pid` from `/proc`, `undefined` when the process is gone, `null` when it is a zombie. */
function procStart(pid: number): string | null | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return undefined
  }
  // The command name (field 2) is in parentheses and may contain spaces or ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const state = fields[0]
  if (state === 'Z' || state === 'X' || state === 'x') return null
  return fields[19] ?? '-'
}

function readPidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? '-'
  } catch {
    return '-'
  }
}

function readBootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim().slice(0, 8)
  } catch {
    return '-'
  }
}

const hasProc = procStart(process.pid) !== undefined

/** The identity of the calling thread, computed once. */
export const ownIdentity: ProcessIdentity = {
  pid: process.pid,
  start: hasProc ? (procStart(process.pid) ?? '-') : '-',
  boot: hasProc ? readBootId() : '-',
  pidns: hasProc ? readPidNamespace() : '-',
  thread: threadId,
}

/** Number of `.`-separated fields of {@link formatIdentity}'s output. */
export const IDENTITY_FIELDS = 5

/** `pid.start.boot.pidns.thread`: safe in a file name and a symlink target. */
export function formatIdentity(identity: ProcessIdentity): string {
  return `${identity.pid}.${identity.start}.${identity.boot}.${identity.pidns}.${identity.thread}`
}

/** Parses {@link formatIdentity}'s output; `undefined` when malformed. */
export function parseIdentity(text: string): ProcessIdentity | undefined {
  const parts = text.split('.')
  if (parts.length !== IDENTITY_FIELDS) return undefined
  const [pid, start, boot, pidns, thread] = parts as [string, string, string, string, string]
  if (!/^\d+$/.test(pid) || !/^\d+$/.test(thread) || !/^(\d+|-)$/.test(start)) return undefined
  if (!/^([0-9a-f]{8}|-)$/.test(boot) || !/^(\d+|-)$/.test(pidns)) return undefined
  return { pid: Number(pid), start, boot, pidns, thread: Number(thread) }
}

/** Whether the process is still running, judged from another process on the same host. */
function processAlive(identity: ProcessIdentity): boolean {
  if (identity.boot !== ownIdentity.boot) return false // the host rebooted since
  // A pid from another PID namespace (another container) cannot be checked from
  // here: assume the owner alive, so its lock is waited for, never broken.
  if (identity.pidns !== ownIdentity.pidns) return true
  if (hasProc) {
    const start = procStart(identity.pid)
    if (start === undefined || start === null) return false
    return start === identity.start
  }
  // Without /proc (macOS), only the pid can be checked; a reused pid looks alive.
  try {
    process.kill(identity.pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Whether an owner recorded by the calling thread may still be using what it
 * owns. The calling thread's own records count as abandoned: this package
 * holds locks and temp files only inside synchronous sections, so when the
 * thread itself looks, none of its sections is running.
 */
export function ownerAlive(identity: ProcessIdentity): boolean {
  const sameProcess =
    identity.pid === ownIdentity.pid &&
    identity.start === ownIdentity.start &&
    identity.boot === ownIdentity.boot
  if (sameProcess) return identity.thread !== ownIdentity.thread
  return processAlive(identity)
}
