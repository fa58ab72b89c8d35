#!/usr/bin/env node
// The `agent-state` command. Runs the compiled CLI when the package is built;
// in a workspace checkout without a build it runs the TypeScript sources
// through tsx with the `@agent-state/source` export condition, so
// `pnpm agent-state verify` works right after `pnpm install`.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const built = new URL('../dist/main.js', import.meta.url)
if (existsSync(built)) {
  const { main } = await import(built.href)
  process.exitCode = await main(process.argv.slice(2))
} else {
  const source = fileURLToPath(new URL('../src/run.ts', import.meta.url))
  // tsx resolved from this package, not from the caller's working directory.
  const tsx = import.meta.resolve('tsx')
  const result = spawnSync(
    process.execPath,
    ['--conditions=@agent-state/source', '--import', tsx, source, ...process.argv.slice(2)],
    { stdio: 'inherit', env: { ...process.env, AGENT_STATE_FROM_SOURCE: '1' } },
  )
  process.exitCode = result.status ?? 1
}
