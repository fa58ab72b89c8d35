import type { Backend } from '@agent-state/core'
import type { BackendFlags } from './common-options.js'
import { connect } from './connect.js'
import type { ExitCode } from './exit-codes.js'
import { describeFailure } from './failure.js'
import { errLine } from './output.js'

/** Runs a command's body, turning any failure into one line on stderr and an exit code. */
export async function guarded(
  name: string,
  urls: readonly string[],
  body: () => Promise<ExitCode>,
): Promise<ExitCode> {
  try {
    return await body()
  } catch (error) {
    const { message, exitCode } = describeFailure(error, urls)
    errLine(`agent-state ${name}: ${message}`)
    return exitCode
  }
}

/** Opens the backend the flags name (bounded, checked), runs `body`, closes it. */
export async function withBackend(
  flags: BackendFlags,
  body: (backend: Backend) => Promise<ExitCode>,
): Promise<ExitCode> {
  const backend = await connect(flags.url, {
    timeoutMs: flags.timeout,
    ...(flags.namespace === undefined ? {} : { namespace: flags.namespace }),
  })
  try {
    return await body(backend)
  } finally {
    await backend.close().catch(() => undefined)
  }
}
