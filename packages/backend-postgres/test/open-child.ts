import { openWithHooks } from '../src/postgres-backend.js'

/**
 * A separate process opening the backend (migration tests). argv: the
 * connection string, the schema, `wait` (print `ready` once loaded, then
 * open when a line arrives on stdin, so every child migrates at the same
 * moment) or `now`, and a mode: `normal`; `no-lock` (the mutant
 * without the advisory lock); `slow` (holds the migration transaction 500 ms
 * after its DDL, so concurrent starts overlap); `hang` (prints `paused`
 * after the DDL and waits to be killed: a half-applied migration).
 */
const [connectionString, schema, start, mode] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
]
if (start === 'wait') {
  process.stdout.write('ready\n')
  await new Promise((resolve) => process.stdin.once('data', resolve))
  process.stdin.pause()
}
try {
  const backend = await openWithHooks(
    { connectionString, schema, namespace: 'migration' },
    {
      migration: {
        lock: mode !== 'no-lock',
        afterMigration: async () => {
          if (mode === 'hang') {
            process.stdout.write('paused\n')
            await new Promise(() => {})
          }
          if (mode === 'slow' || mode === 'no-lock') {
            await new Promise((resolve) => setTimeout(resolve, 500))
          }
        },
      },
    },
  )
  await backend.put('from-child', new Uint8Array([1]))
  await backend.close()
  process.stdout.write('ok\n')
} catch (error) {
  process.stdout.write(`error ${(error as { code?: string }).code ?? String(error)}\n`)
  process.exitCode = 1
}
