import { describe, expect, it } from 'vitest'
import { type NextWakeCell, nextWakeText } from '../src/commands/agent-views.js'

/**
 * The NEXT WAKE cell of `agent-state workers` for each way a parked worker can
 * be woken. The end-to-end view test (`daemon-run-views.test.ts`) seeds a
 * timeout and a topic; a webhook trigger's `webhook call` is only shown here.
 */
const now = Date.UTC(2030, 0, 1)

/** The webhook check, run on the real cell and on a broken one below. */
function expectWebhookNamed(text: (cell: NextWakeCell | null, at: number) => string): void {
  expect(text({ wake: null, topic: null, webhook: true }, now)).toBe('webhook call')
  expect(
    text(
      {
        wake: { wakeId: 'w1', cause: 'timeout', dueAt: now + 59 * 60_000 },
        topic: 'fix-chosen',
        webhook: true,
      },
      now,
    ),
  ).toBe('timeout in 59m 0s, or event fix-chosen, or webhook call')
}

describe('the NEXT WAKE cell', () => {
  it('names a webhook trigger as `webhook call`, after the due wake and the topic', () => {
    expectWebhookNamed(nextWakeText)
  })

  it('the webhook check catches a cell that drops the webhook trigger (mutant)', () => {
    const dropsWebhook = (cell: NextWakeCell | null, at: number) =>
      nextWakeText(cell === null || 'error' in cell ? cell : { ...cell, webhook: false }, at)
    expect(() => expectWebhookNamed(dropsWebhook)).toThrow(/webhook call/)
  })

  it('shows `-` for a worker that is not parked or has nothing that wakes it, and an error by its code', () => {
    expect(nextWakeText(null, now)).toBe('-')
    expect(nextWakeText({ wake: null, topic: null, webhook: false }, now)).toBe('-')
    expect(nextWakeText({ error: { code: 'WAKE_CORRUPT', message: 'bad record' } }, now)).toBe(
      'WAKE_CORRUPT',
    )
  })

  it('escapes a topic like every other string it prints', () => {
    expect(nextWakeText({ wake: null, topic: 'a\u202eb', webhook: false }, now)).not.toContain(
      '\u202e',
    )
  })
})
