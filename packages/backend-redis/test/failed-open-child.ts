// Run as a child process by failed-open.test.ts: opens a backend on a server
// that refuses it (argv: port, optional password), runs two operations, prints
// what each threw as one JSON line, and deliberately never calls close(): the
// process must still exit by itself.
import { isAgentStateError } from '@agent-state/core'
import { createRedisBackend } from '../src/index.js'

const [port, password] = process.argv.slice(2)
const backend = createRedisBackend({
  port: Number(port),
  namespace: 'failed-open',
  connectTimeoutMs: 2000,
  ...(password === undefined ? {} : { password }),
})
const outcomes: { code: string; retryable?: boolean }[] = []
for (const operation of [() => backend.get('k'), () => backend.put('k', new Uint8Array([1]))]) {
  try {
    await operation()
    outcomes.push({ code: 'OK' })
  } catch (error) {
    outcomes.push(
      isAgentStateError(error)
        ? { code: error.code, retryable: error.retryable }
        : { code: `raw: ${String(error)}` },
    )
  }
}
process.stdout.write(`${JSON.stringify(outcomes)}\n`)
