/**
 * The `agent-state ui` server's work per view (`bench:ui`): the median time of each view's
 * answer, built by the server's own functions and serialized as the server sends it (no
 * socket, no browser), and the backend calls it made, on namespaces of 1,000, 10,000 and
 * 100,000 keys. Not a timed test: figures for FINDINGS.md and the CLI README.
 *
 * Each size N seeds, per backend, N keys `big/k-…` (64-byte values) and run `big` with N/10
 * effects (every other one unknown, so N/20 unsettled), then measures each view REPS times
 * after one warm-up: the overview, the runs list, the key browser's root and its first and
 * sixth page of `big/` (the sixth through the cursor), one key, and run `big`'s first page
 * of unsettled effects. The backend calls of a view do not depend on load; the times do: the
 * machine's load average is printed with them.
 *
 * Knobs: UI_BENCH_BACKENDS (memory,sqlite; fs, redis and postgres also work, see ui-backends.ts),
 * UI_BENCH_SIZES (1000,10000,100000), UI_BENCH_REPS (15). Writes results/ui-views.json and .md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { keyDetail, keyPage, listView, overview, runDetail } from '../../apps/cli/src/ui/ui-data.js'
import { countingBackend } from '../../apps/cli/test/ui-backend-tally.js'
import { scaleKey, seedUiScale } from '../../apps/cli/test/ui-scale-seed.js'
import { median } from './stats.js'
import { UiBenchBackends } from './ui-backends.js'

const BACKENDS = (process.env.UI_BENCH_BACKENDS ?? 'memory,sqlite').split(',')
const SIZES = (process.env.UI_BENCH_SIZES ?? '1000,10000,100000').split(',').map(Number)
const REPS = Number(process.env.UI_BENCH_REPS ?? 15)
const root = mkdtempSync(join(tmpdir(), 'agent-state-ui-bench-'))
const backends = new UiBenchBackends(root)

interface Cell {
  backend: string
  keys: number
  view: string
  medianMs: number
  minMs: number
  maxMs: number
  bytes: number
  calls: Record<string, number>
}

const cells: Cell[] = []
for (const name of BACKENDS) {
  for (const keys of SIZES) {
    const cell = `${name}-${keys}`
    const raw = await backends.open(name, cell)
    const started = performance.now()
    await seedUiScale(raw, { keys, effects: keys / 10 })
    const seedS = (performance.now() - started) / 1000
    const { backend, tally, reset } = countingBackend(raw)
    const info = {
      url: `${name}:`,
      namespace: 'ui',
      name: raw.name,
      capabilities: raw.capabilities,
    }
    // The sixth page's cursor, as a reader paging through would hold it.
    let cursor: string | undefined
    for (let page = 0; page < 5; page++) {
      const from: { cursor?: string } = cursor === undefined ? {} : { cursor }
      cursor = (await backend.list({ prefix: 'big/', delimiter: '/', limit: 100, ...from })).cursor
    }
    const views: [string, () => Promise<unknown>][] = [
      ['overview', () => overview(backend, info)],
      ['runs', () => listView(backend, 'runs')],
      ['keys root', () => keyPage(backend, '', undefined)],
      ['keys big/ page 1', () => keyPage(backend, 'big/', undefined)],
      ['keys big/ page 6', () => keyPage(backend, 'big/', cursor)],
      ['key', () => keyDetail(backend, scaleKey(keys - 1))],
      ['run (first page)', () => runDetail(backend, 'big')],
    ]
    for (const [view, build] of views) {
      await build()
      reset()
      const times: number[] = []
      let bytes = 0
      for (let rep = 0; rep < REPS; rep++) {
        const t0 = performance.now()
        bytes = Buffer.byteLength(JSON.stringify(await build()))
        times.push(performance.now() - t0)
      }
      const calls = Object.fromEntries(
        Object.entries(tally().calls).map(([method, n]) => [method, n / REPS]),
      )
      cells.push({
        backend: name,
        keys,
        view,
        medianMs: median(times),
        minMs: Math.min(...times),
        maxMs: Math.max(...times),
        bytes,
        calls,
      })
      const last = cells[cells.length - 1] as Cell
      console.log(
        `${name} ${keys} keys (seeded in ${seedS.toFixed(1)} s) ${view}: median ${last.medianMs.toFixed(2)} ms (min ${last.minMs.toFixed(2)}, max ${last.maxMs.toFixed(2)}), ${bytes} bytes, calls ${JSON.stringify(calls)}`,
      )
    }
    await raw.close()
  }
}
await backends.stop()
rmSync(root, { recursive: true, force: true })

const load = loadavg().map((l) => l.toFixed(2))
const json = { reps: REPS, loadavg: load, at: new Date().toISOString(), cells }
const out = new URL('../results/', import.meta.url)
writeFileSync(new URL('ui-views.json', out), `${JSON.stringify(json, null, 2)}\n`)
const rows = cells.map(
  (c) =>
    `| ${c.backend} | ${c.keys} | ${c.view} | ${c.medianMs.toFixed(2)} | ${c.minMs.toFixed(2)}–${c.maxMs.toFixed(2)} | ${c.bytes} | ${Object.entries(
      c.calls,
    )
      .map(([m, n]) => `${m} ${n}`)
      .join(', ')} |`,
)
writeFileSync(
  new URL('ui-views.md', out),
  [
    `# agent-state ui: server work per view (${REPS} reps, load average ${load.join(' ')} at the end)`,
    '',
    'Median time of each view built and serialized in process (no socket, no browser), on a',
    'shared, loaded machine: the times are noisy; the backend calls per view are not.',
    '',
    '| backend | keys | view | median ms | min–max ms | answer bytes | backend calls per view |',
    '| --- | ---: | --- | ---: | ---: | ---: | --- |',
    ...rows,
    '',
  ].join('\n'),
)
console.log(`load average ${load.join(' ')}; results/ui-views.md`)
