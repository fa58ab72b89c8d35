/**
 * `agent-state ui`'s time to first render in a real browser (`bench:ui-render`): Debian's
 * headless Chromium, driven by playwright-core, loads the page of an in-process UI server
 * (`startUiServer`, the command's own) and each view is timed from the navigation's start to
 * the moment the view's content is in the page (`#view` gets `data-ready`, set after the
 * view's data arrived and was rendered), read in the page by a MutationObserver installed
 * before any of the page's scripts: so the figure is the page's own clock, not the driver's.
 * Each load is a full one (from `about:blank`: HTML, script, stylesheet, `/api/backend`, the
 * event stream, the view's data). The server's backend calls during each load are counted
 * (test/ui-backend-tally.ts); they do not depend on load, the times do.
 *
 * Per backend, the namespace of test/ui-scale-seed.ts: 100,000 keys `big/k-…` and run `big`
 * with 10,000 effects (5,000 unknown). Views: the overview, run `big` (its first page of
 * effects), the key browser's first page of `big/`, and one key. Median of REPS loads after a
 * warm-up load of each view.
 *
 * Knobs: UI_RENDER_BACKENDS (memory,fs,sqlite,redis,postgres), UI_RENDER_KEYS (100000),
 * UI_RENDER_EFFECTS (10000), UI_RENDER_REPS (7), AGENT_STATE_CHROMIUM (/usr/bin/chromium).
 * Writes results/ui-render.json and .md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { startUiServer } from '../../apps/cli/src/ui/ui-server.js'
import { countingBackend } from '../../apps/cli/test/ui-backend-tally.js'
import { scaleKey, seedUiScale, unknownOf } from '../../apps/cli/test/ui-scale-seed.js'
import { median } from './stats.js'
import { UiBenchBackends } from './ui-backends.js'

const BACKENDS = (process.env.UI_RENDER_BACKENDS ?? 'memory,fs,sqlite,redis,postgres').split(',')
const KEYS = Number(process.env.UI_RENDER_KEYS ?? 100_000)
const EFFECTS = Number(process.env.UI_RENDER_EFFECTS ?? 10_000)
const REPS = Number(process.env.UI_RENDER_REPS ?? 7)
const CHROMIUM = process.env.AGENT_STATE_CHROMIUM ?? '/usr/bin/chromium'

const ref = (text: string) => Buffer.from(text, 'utf8').toString('base64url')

/** The views timed: name, address, and the `data-ready` the page sets once it is rendered. */
const VIEWS: readonly [string, string, string][] = [
  ['overview', '#/overview', 'overview'],
  [`run (${EFFECTS} effects, first page)`, `#/run/${ref('big')}`, 'run'],
  [`key page (big/ of ${KEYS} keys)`, `#/keys?prefix=${ref('big/')}`, 'keys'],
  ['one key', `#/key/${ref(scaleKey(KEYS - 1))}`, 'key'],
]

/**
 * Runs in the page before its own scripts: records, on the page's clock (milliseconds since
 * the navigation started), when `#view` first gets `data-ready`.
 */
const FIRST_RENDER_PROBE = `
new MutationObserver((_, observer) => {
  if (document.getElementById('view')?.hasAttribute('data-ready')) {
    window.__firstRender = performance.now()
    observer.disconnect()
  }
}).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-ready'] })
`

interface Cell {
  backend: string
  view: string
  medianMs: number
  minMs: number
  maxMs: number
  /** The server's backend calls during one load, by method (the same every load). */
  calls: Record<string, number>
}

const root = mkdtempSync(join(tmpdir(), 'agent-state-ui-render-'))
const backends = new UiBenchBackends(root)
const browser = await chromium.launch({ executablePath: CHROMIUM, chromiumSandbox: false })
const cells: Cell[] = []
const seeded: Record<string, number> = {}
try {
  for (const name of BACKENDS) {
    const raw = await backends.open(name, `render-${name}-${Date.now()}`)
    const started = performance.now()
    await seedUiScale(raw, { keys: KEYS, effects: EFFECTS })
    seeded[name] = (performance.now() - started) / 1000
    console.log(
      `${name}: seeded ${KEYS} keys and ${EFFECTS} effects in ${seeded[name]?.toFixed(1)} s`,
    )
    const counted = countingBackend(raw)
    const server = await startUiServer({
      backend: counted.backend,
      info: { url: `${name}:`, namespace: 'ui', name: raw.name, capabilities: raw.capabilities },
      host: '127.0.0.1',
      port: 0,
    })
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
    await context.addInitScript(FIRST_RENDER_PROBE)
    const page = await context.newPage()
    try {
      // The token becomes the context's cookie: every later load needs only the address.
      await page.goto(server.url)
      await page.waitForSelector('#view[data-ready]')
      for (const [view, hash, ready] of VIEWS) {
        const load = async (): Promise<{ ms: number; calls: Record<string, number> }> => {
          await page.goto('about:blank')
          counted.reset()
          await page.goto(`${server.origin}/${hash}`)
          await page.waitForSelector(`#view[data-ready="${ready}"]`)
          const ms = (await page.evaluate('window.__firstRender')) as number
          return { ms, calls: { ...counted.tally().calls } }
        }
        await load()
        const times: number[] = []
        let calls: Record<string, number> = {}
        for (let rep = 0; rep < REPS; rep++) {
          const one = await load()
          times.push(one.ms)
          calls = one.calls
        }
        const cell = {
          backend: name,
          view,
          medianMs: median(times),
          minMs: Math.min(...times),
          maxMs: Math.max(...times),
          calls,
        }
        cells.push(cell)
        console.log(
          `${name} ${view}: median ${cell.medianMs.toFixed(1)} ms (min ${cell.minMs.toFixed(1)}, max ${cell.maxMs.toFixed(1)}), backend calls ${JSON.stringify(calls)}`,
        )
      }
    } finally {
      await context.close()
      await server.close()
      await raw.close()
    }
  }
} finally {
  await browser.close()
  await backends.stop()
  rmSync(root, { recursive: true, force: true })
}

const load = loadavg().map((l) => l.toFixed(2))
const out = new URL('../results/', import.meta.url)
writeFileSync(
  new URL('ui-render.json', out),
  `${JSON.stringify({ keys: KEYS, effects: EFFECTS, reps: REPS, loadavg: load, seededS: seeded, at: new Date().toISOString(), cells }, null, 2)}\n`,
)
const callsText = (calls: Record<string, number>) =>
  Object.entries(calls)
    .map(([method, n]) => `${method} ${n}`)
    .join(', ')
writeFileSync(
  new URL('ui-render.md', out),
  [
    `# agent-state ui: time to first render in headless Chromium (${REPS} loads each, load average ${load.join(' ')} at the end)`,
    '',
    `A namespace of ${KEYS} keys and run \`big\` of ${EFFECTS} effects (${unknownOf(EFFECTS)} unknown), per backend;`,
    "each load a full one, timed on the page's clock from navigation start to the view rendered.",
    'Measured on a shared 2-core machine loaded by other work at the same time: the times are noisy;',
    'the backend calls per load are not.',
    '',
    '| backend | view | median ms | min–max ms | backend calls per load |',
    '| --- | --- | ---: | ---: | --- |',
    ...cells.map(
      (c) =>
        `| ${c.backend} | ${c.view} | ${c.medianMs.toFixed(1)} | ${c.minMs.toFixed(1)}–${c.maxMs.toFixed(1)} | ${callsText(c.calls)} |`,
    ),
    '',
  ].join('\n'),
)
console.log(`load average ${load.join(' ')}; results/ui-render.md`)
