import { join } from 'node:path'
import { type Backend, openBackend } from '@agent-state/core'
import { createBackendFromUrl as openS3FromUrl } from '@agent-state/s3'
import {
  type ChildBackend,
  freshName,
  postgresChildBackend,
  redisChildBackend,
  s3ChildBackend,
  s3Config,
} from './services.js'

/**
 * A backend that several processes can share, as child processes see it (a URL
 * plus environment) and as the test process opens it.
 */
export interface UrlTarget extends ChildBackend {
  /** Opens the same storage in the test process, in `namespace` (default `"default"`, as `openBackend`). */
  open(namespace?: string): Promise<Backend>
}

/** A multi-process backend and how to reach it; `dir` is a fresh temporary directory. */
export interface MultiProcessBackend {
  readonly name: string
  target(dir: string): UrlTarget
}

function byUrl(child: ChildBackend): UrlTarget {
  return {
    ...child,
    open: (namespace) => openBackend(child.url, namespace === undefined ? {} : { namespace }),
  }
}

/**
 * Every multi-process backend in the repository. Redis and S3 use the servers
 * of the global setup; each S3 target takes a fresh key prefix.
 */
export const MULTI_PROCESS_BACKENDS: readonly MultiProcessBackend[] = [
  { name: 'sqlite', target: (dir) => byUrl({ url: `sqlite:${join(dir, 'state.db')}`, env: {} }) },
  { name: 'fs', target: (dir) => byUrl({ url: `file:${join(dir, 'fs-root')}`, env: {} }) },
  { name: 'redis', target: () => byUrl(redisChildBackend()) },
  { name: 'postgres', target: () => byUrl(postgresChildBackend()) },
  {
    name: 's3',
    target: () => {
      const child = s3ChildBackend(freshName('mp'))
      const { accessKeyId, secretAccessKey } = s3Config()
      // The test process passes the credentials that the children read from their environment.
      const credentials = { accessKeyId, secretAccessKey }
      return {
        ...child,
        open: async (namespace) =>
          openS3FromUrl(
            child.url,
            namespace === undefined ? { credentials } : { namespace, credentials },
          ),
      }
    },
  },
]
