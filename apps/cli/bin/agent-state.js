#!/usr/bin/env node
// The `agent-state` command. It runs the CLI in a child process that leads its
// own process group, and stops that whole group when it is interrupted
// (SIGINT, SIGTERM, SIGHUP) or when the CLI ends: the contract suite's vitest
// workers and crash-test children, or the demo's processes, never outlive the
// command. It runs the compiled `dist/` when the package is built; in a
// workspace checkout without a build it runs the TypeScript sources through
// tsx with the `@agent-state/source` export condition, so the command works
// right after `pnpm install`.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { constants } from 'node:os'
import { fileURLToPath } from 'node:url'

const GRACE_MS = 5000
const argv = process.argv.slice(2)
const built = fileURLToPath(new URL('../dist/run.js', import.meta.url))
const env = { ...process.env }
let args
if (existsSync(built)) {
  args = [built, ...argv]
} else {
  // tsx resolved from this package, not from the caller's working directory.
  const tsx = import.meta.resolve('tsx')
  const source = fileURLToPath(new URL('../src/run.ts', import.meta.url))
  args = ['--conditions=@agent-state/source', '--import', tsx, source, ...argv]
  env.AGENT_STATE_FROM_SOURCE = '1'
}

const child = spawn(process.execPath, args, { stdio: 'inherit', env, detached: true })

function signalGroup(signal) {
  try {
    process.kill(-child.pid, signal)
  } catch {
    // The group is already gone.
  }
}

let received
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (received !== undefined) {
      signalGroup('SIGKILL')
      return
    }
    received = signal
    signalGroup(signal)
    setTimeout(() => signalGroup('SIGKILL'), GRACE_MS).unref()
  })
}

child.on('error', (error) => {
  process.stderr.write(`agent-state: cannot start the CLI process: ${error.message}\n`)
  process.exit(1)
})

child.on('exit', (code, signal) => {
  // Whatever the CLI left running in its group goes with it.
  signalGroup('SIGKILL')
  const stoppedBy = received ?? signal
  if (stoppedBy !== undefined && stoppedBy !== null) {
    process.stderr.write(`agent-state: stopped by ${stoppedBy}\n`)
    process.exit(128 + (constants.signals[stoppedBy] ?? 1))
  }
  process.exit(code ?? 1)
})
