import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { afterAll, describe, expect, it } from 'vitest'
import {
  type ConformanceSummary,
  describeBackendContract,
  formatSummary,
  lastSummaries,
  SummaryRecorder,
  skipCauseOf,
} from '../src/index.js'

const dir = mkdtempSync(join(tmpdir(), 'agent-state-summary-'))
const store = createMemoryStore()

// A URL as the name, with a password holding `/`: neither the summary nor its JSON may show it.
// The instance claims no change notification (claim and method removed), so the summary must
// report that tier as not claimed.
describeBackendContract({
  name: 'memory://user:pa/ss@host',
  create: (ctx) => {
    const full = createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
    const { changeNotification: _claim, ...capabilities } = full.capabilities
    const { watch: _watch, ...rest } = full
    return { ...rest, capabilities }
  },
  report: { json: join(dir, '[name].json') },
})

afterAll(() => {
  try {
    const summary = lastSummaries.get('memory://***@host') as ConformanceSummary
    expect(summary, 'summary under the redacted name').toBeDefined()
    const json = readFileSync(join(dir, 'memory_host.json'), 'utf8')
    for (const shown of [JSON.stringify(summary), json, formatSummary(summary)]) {
      expect(shown).not.toContain('pa/ss')
    }
    expect(summary.capabilities).toMatchObject({ durable: false, multiProcess: false })
    const byId = new Map(summary.checks.map((c) => [c.id, c]))
    expect(
      byId.get('listing/the-default-limit-is-1000-and-a-walk-over-more-keys-sees-each-once'),
    ).toMatchObject({ status: 'passed', scale: { keys: 1003 } })
    expect(byId.get('crash/acknowledged-writes-survive-kill-9-and-nothing-is-torn')).toMatchObject({
      status: 'skipped',
      skipCause: 'capability-not-claimed',
      reason: 'capability multiProcess is not claimed',
    })
    const notifications = summary.checks.filter((c) => c.category === 'change-notification')
    expect(notifications.length).toBeGreaterThan(0)
    for (const c of notifications) {
      expect(c).toMatchObject({
        status: 'skipped',
        skipCause: 'capability-not-claimed',
        reason: 'capability changeNotification is not claimed',
      })
    }
    expect(summary.capabilities).not.toHaveProperty('changeNotification')
    expect(JSON.parse(json).checks).toEqual(JSON.parse(JSON.stringify(summary.checks)))
    expect(formatSummary(summary)).toMatch(/\[ran at keys 1003\]/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

describe('skip causes', () => {
  it('tells a capability not claimed from a claim left untested', () => {
    expect(skipCauseOf('capability durable is not claimed')).toBe('capability-not-claimed')
    expect(skipCauseOf('not applicable: leaseClock server is not injectable')).toBe(
      'not-applicable',
    )
    expect(
      skipCauseOf(
        'maxValueBytes 67108864 is above AGENT_STATE_CONTRACT_MAX_VALUE_BYTES 1048576: the claim is not proved',
      ),
    ).toBe('not-testable')
  })
})

describe('declared limitations', () => {
  it('are counted and shown apart from passes, failures and skips', () => {
    const recorder = new SummaryRecorder('sqlite')
    recorder.record({ id: 'basic/x', category: 'basic', title: 'x', status: 'passed' })
    recorder.record({
      id: 'multi-process/frozen',
      category: 'multi-process',
      title: 'frozen',
      status: 'limitation',
      limitation: 'a holder frozen inside its write blocks the takeover',
      scale: { rounds: 10, limitedRounds: 10 },
    })
    const summary = recorder.summary()
    expect(summary.totals).toEqual({ passed: 1, failed: 0, skipped: 0, limitation: 1 })
    expect(summary.categories['multi-process']).toEqual({
      passed: 0,
      failed: 0,
      skipped: 0,
      limitation: 1,
    })
    const text = formatSummary(summary)
    expect(text).toContain(
      'declared limitation  multi-process/frozen [ran at rounds 10, limitedRounds 10]: a holder frozen inside its write blocks the takeover',
    )
    expect(text).toMatch(/total +passed 1 {2}failed 0 {2}skipped 0 {2}declared limitation 1/)
  })
})
