import type { JsonValue } from '@agent-state/runtime'

/**
 * Keys and values written to attack the page: markup that would run a script (each sets
 * `window.__pwned`, which the browser test asserts stays unset), bidirectional overrides,
 * and control characters (C1 in keys, which forbid C0; C0 next to NUL in values).
 */
export const HOSTILE = {
  keys: [
    `hostile/<img src=x onerror="window.__pwned='key-img'">`,
    `hostile/"><svg onload="window.__pwned='key-svg'">`,
    // Holds `/`: listed as a prefix at `hostile/`.
    `hostile/<script>window.__pwned='key-script'</script>`,
    'hostile/bidi-\u202egnp.exe',
    'hostile/c1-\u009b31m-\u0085-end',
  ],
  writer: `<img src=x onerror="window.__pwned='writer'">\u202e`,
  htmlValue: {
    key: 'hostile/value.html',
    value: `<img src=x onerror="window.__pwned='value'"><script>window.__pwned='value-script'</script>\u0000\u0001\u001b[31m\u202eend`,
  },
  jsonValue: {
    key: 'hostile/value.json',
    value: JSON.stringify({
      html: `"><img src=x onerror="window.__pwned='json'">`,
      bidi: '\u202eabc',
      n: 1,
    }),
  },
  /**
   * The outputs of step 3 of run `steps` (test/seed-ui.ts), shown on the run's page (its keys
   * in sorted order, as the runtime's canonical JSON stores them).
   */
  stepOutputs: {
    bidi: '\u202eabc\u0000\u001b[31m',
    html: `"><img src=x onerror="window.__pwned='step'"><script>window.__pwned='step-script'</script>`,
  },
  /** Over the preview's 16 KiB: shown truncated, with its size. */
  bigValue: { key: 'hostile/big.txt', size: 20_000 },
} as const

/** How many steps run `steps` (test/seed-ui.ts) commits: more than a page of the run's view. */
export const STEP_RUN_STEPS = 12

/**
 * The outputs of run `steps`'s step `seq`: {@link HOSTILE}'s step outputs for step 3, 6,000
 * characters (over the run page's 4 KiB cut) for the last, a small object otherwise.
 */
export function stepRunOutputs(seq: number): JsonValue {
  if (seq === 3) return HOSTILE.stepOutputs
  if (seq === STEP_RUN_STEPS) return { seq, text: 'o'.repeat(6000) }
  return { seq, done: [`item ${seq}`] }
}
