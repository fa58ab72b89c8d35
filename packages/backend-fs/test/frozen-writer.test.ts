import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createFsBackend } from '../src/index.js'
import { WRITE_STEPS } from './child-factory.js'
import { checkFrozenWriterTakeover } from './frozen-writer-check.js'
import { fixture, tempRoot } from './helpers.js'

/** Rounds of the frozen-writer check: at least 10; `AGENT_STATE_FROZEN_ROUNDS` for more. */
const ROUNDS = Math.max(20, Number(process.env.AGENT_STATE_FROZEN_ROUNDS ?? 0))
const TTL_MS = 400
/** The contract's bound on how late a takeover may be past the holder's TTL. */
const MARGIN_MS = 1000

describe('fs backend: a writer frozen mid-write', () => {
  it(
    `never blocks a takeover past TTL + ${MARGIN_MS} ms and is refused when it wakes (${ROUNDS} rounds)`,
    async () => {
      const root = tempRoot()
      const namespace = 'frozen'
      const factory = fileURLToPath(new URL('./child-factory.ts', import.meta.url))
      const rounds = await checkFrozenWriterTakeover({
        create: () => createFsBackend({ root, namespace }),
        spawnHolder: () =>
          spawn(
            process.execPath,
            [
              '--conditions=@agent-state/source',
              '--import',
              'tsx',
              fixture('frozen-holder.ts'),
              factory,
              JSON.stringify({ root }),
              namespace,
            ],
            { stdio: ['pipe', 'pipe', 'inherit'] },
          ),
        rounds: ROUNDS,
        ttlMs: TTL_MS,
        marginMs: MARGIN_MS,
        steps: WRITE_STEPS,
        log: (line) => console.log(line),
      })
      expect(rounds).toHaveLength(ROUNDS)
      // Every step of a write was hit, in a put and in a renew, when the rounds allow it.
      const modes = new Set(rounds.map((round) => round.mode))
      if (ROUNDS >= 4 * WRITE_STEPS.length) expect(modes.size).toBe(2 * WRITE_STEPS.length + 1)
      for (const round of rounds) expect(round.woke.writes).toBeGreaterThan(0)
    },
    60_000 + ROUNDS * 10_000,
  )
})
