import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describeBackendContract } from '@agent-state/contract'
import { openBackend, redactUrl } from '@agent-state/core'
import { backendLoading } from './backend-importer.js'
import { frozenWriterProfile } from './verify-profile.js'

// The test file `agent-state verify` hands to vitest. The URL comes through
// the environment because vitest runs this file in a worker.
const url = process.env.AGENT_STATE_VERIFY_URL
if (url === undefined) throw new Error('AGENT_STATE_VERIFY_URL is not set')

// The frozen-writer tier as the backend's package runs it: holders frozen inside their writes,
// and SQLite's declared limitation.
const { writeSteps, frozenWriterLimitation } = await frozenWriterProfile(url)

describeBackendContract({
  name: redactUrl(url),
  create: (ctx) =>
    openBackend(url, {
      namespace: ctx.namespace,
      clock: ctx.clock,
      ...backendLoading(url),
    }),
  // Same extension as this file: .ts from source, .js once built.
  process: {
    module: fileURLToPath(new URL(`./child-factory${extname(import.meta.url)}`, import.meta.url)),
    options: { url },
    ...(writeSteps === undefined ? {} : { writeSteps }),
  },
  ...(frozenWriterLimitation === undefined ? {} : { frozenWriterLimitation }),
})
