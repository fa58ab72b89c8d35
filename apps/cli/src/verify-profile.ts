import type { Backend } from '@agent-state/core'
import { openBackend } from '@agent-state/core'
import { backendLoading } from './backend-importer.js'

/** How `agent-state verify` runs the frozen-writer tier on a URL's backend: as its package's suite does. */
export interface FrozenWriterProfile {
  /** The steps a stepped child reports (`ContractProcessOptions.writeSteps`), if the backend has any. */
  readonly writeSteps?: readonly string[]
  /** The declared limitation of the tier (SQLite's database lock), if any. */
  readonly frozenWriterLimitation?: {
    readonly code: string
    readonly message: RegExp
    readonly busyTimeoutMs: number
  }
}

function schemeOf(url: string): string | undefined {
  return /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase()
}

/**
 * The frozen-writer settings of the package a URL opens, taken from that
 * package (so verify and the package's own suite declare the same): fs stops
 * the holder at each step of its write path; SQLite stops it inside its write
 * transaction and declares that the database lock then blocks every contender
 * (with the URL's `busyTimeoutMs`, or the default). Redis, S3 and memory have
 * no write steps: their suites, like verify, freeze the holder at random
 * moments. A third-party scheme (`--module`) has none either.
 */
export async function frozenWriterProfile(url: string): Promise<FrozenWriterProfile> {
  const scheme = schemeOf(url)
  if (scheme === 'file') {
    const { FS_WRITE_STEPS } = await import('@agent-state/fs')
    return { writeSteps: FS_WRITE_STEPS }
  }
  if (scheme === 'sqlite') {
    const { SQLITE_WRITE_STEPS, sqliteFrozenWriterLimitation } = await import('@agent-state/sqlite')
    const query = url.indexOf('?')
    const raw = query < 0 ? null : new URLSearchParams(url.slice(query + 1)).get('busyTimeoutMs')
    // An in-memory database is one process: the multi-process tiers do not run on it.
    return {
      writeSteps: SQLITE_WRITE_STEPS,
      frozenWriterLimitation: sqliteFrozenWriterLimitation(raw === null ? undefined : Number(raw)),
    }
  }
  return {}
}

/**
 * A child's backend for the frozen-writer tier that reports `onStep(step)`
 * at the steps of {@link frozenWriterProfile}: the fs write path's hooks, or
 * the SQLite clock read inside the write transaction.
 */
export async function openSteppedBackend(
  url: string,
  namespace: string,
  onStep: (step: string) => void,
): Promise<Backend> {
  const scheme = schemeOf(url)
  if (scheme === 'file') {
    const { createFsBackendWithHooks, rootFromFileUrl } = await import('@agent-state/fs')
    return createFsBackendWithHooks(
      { root: rootFromFileUrl(url), namespace },
      { onStep: (step) => onStep(step) },
    )
  }
  if (scheme === 'sqlite') {
    const { steppedSqliteClock } = await import('@agent-state/sqlite')
    return openBackend(url, {
      namespace,
      clock: steppedSqliteClock(onStep),
      ...backendLoading(url),
    })
  }
  throw new Error(
    `${scheme ?? url} has no write steps: the frozen-writer tier freezes it at random`,
  )
}
