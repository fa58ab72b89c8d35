import { existsSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The name every bundle directory of agent-state's tests starts with, in the system temp directory. */
export const BUNDLE_DIR_PREFIX = 'agent-state-child-bundles-'

/**
 * The environment variable naming the run's bundle directory (set by {@link startChildBundleRun} in
 * a vitest global setup; test workers inherit it and put their bundles under it).
 */
export const RUN_DIR_ENV = 'AGENT_STATE_CHILD_BUNDLES_DIR'

/** A bundle directory untouched for this long is a leftover of a killed run. */
export const STALE_AFTER_MS = 24 * 60 * 60 * 1000

// The contract suite's bundle directories were named so before this package existed; their
// leftovers are swept as well.
const PREFIXES = [BUNDLE_DIR_PREFIX, 'agent-state-contract-children-']

let processRoot: string | undefined

/** Whether process `pid` is running (on this host, in this pid namespace). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** A fresh directory in `parent` named after this process (`<prefix><pid>-XXXXXX`). */
function makeOwnDir(parent: string, prefix: string): string {
  return mkdtempSync(join(parent, `${prefix}${process.pid}-`))
}

/**
 * Removes the leftovers of killed test processes: directories in `parent` (default: the system temp
 * directory) named like a bundle directory, owned by this user, not modified for `maxAgeMs`
 * (default a day), and whose creating process (its pid is in the name) no longer runs, so a
 * long-lived watch run keeps its bundles. Returns the paths removed; one it cannot remove is left
 * alone.
 */
export function removeStaleBundleDirs(
  options: { readonly parent?: string; readonly maxAgeMs?: number; readonly now?: number } = {},
): string[] {
  const parent = options.parent ?? tmpdir()
  const oldest = (options.now ?? Date.now()) - (options.maxAgeMs ?? STALE_AFTER_MS)
  const uid = process.getuid?.()
  const removed: string[] = []
  for (const name of readdirSync(parent)) {
    if (!PREFIXES.some((prefix) => name.startsWith(prefix))) continue
    const path = join(parent, name)
    try {
      const stat = lstatSync(path)
      if (!stat.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue
      if (stat.mtimeMs >= oldest) continue
      const pid = /^\D+(\d+)-/.exec(name)?.[1]
      if (pid !== undefined && isRunning(Number(pid))) continue
      rmSync(path, { recursive: true, force: true })
      removed.push(path)
    } catch {
      // Gone already (another process swept it) or not ours to remove: nothing to do.
    }
  }
  return removed
}

/**
 * Where this process's bundles go: a private directory inside the run's directory when a global
 * setup made one ({@link RUN_DIR_ENV}), else a directory of its own in the system temp directory
 * (stale leftovers swept first). Either way it is removed when the process exits or gets SIGTERM
 * (how vitest stops its workers); a process killed otherwise (SIGKILL) leaves it, to go with the
 * run's directory at global teardown, or with a later sweep.
 */
export function processOutputRoot(): string {
  if (processRoot === undefined) {
    const runDir = process.env[RUN_DIR_ENV]
    let dir: string
    if (runDir !== undefined && runDir !== '' && existsSync(runDir)) {
      dir = makeOwnDir(runDir, 'process-')
    } else {
      removeStaleBundleDirs()
      dir = makeOwnDir(tmpdir(), BUNDLE_DIR_PREFIX)
    }
    const remove = (): void => rmSync(dir, { recursive: true, force: true })
    process.once('exit', remove)
    // vitest stops its fork workers with SIGTERM, which ends a process without 'exit': remove the
    // directory then too, and die of the signal as before unless someone else handles it.
    process.once('SIGTERM', () => {
      remove()
      if (process.listenerCount('SIGTERM') === 0) process.kill(process.pid, 'SIGTERM')
    })
    processRoot = dir
  }
  return processRoot
}

/**
 * For a vitest global setup: makes the run's one bundle directory (sweeping stale leftovers first)
 * and names it in {@link RUN_DIR_ENV}, which the test workers started after it inherit. Resolves
 * the teardown, which removes the directory with whatever killed workers left in it.
 */
export function startChildBundleRun(): () => void {
  removeStaleBundleDirs()
  const dir = makeOwnDir(tmpdir(), BUNDLE_DIR_PREFIX)
  const previous = process.env[RUN_DIR_ENV]
  process.env[RUN_DIR_ENV] = dir
  return () => {
    if (process.env[RUN_DIR_ENV] === dir) {
      if (previous === undefined) delete process.env[RUN_DIR_ENV]
      else process.env[RUN_DIR_ENV] = previous
    }
    rmSync(dir, { recursive: true, force: true })
  }
}
