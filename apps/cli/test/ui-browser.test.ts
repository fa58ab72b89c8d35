/**
 * `agent-state ui` in a real browser: Debian's Chromium, headless, driven by playwright-core
 * (which downloads no browser: it is handed the executable). The real command serves state
 * the runtime wrote (test/seed-state.ts, seed-runs.ts, seed-ui.ts) on the filesystem backend
 * and on Redis; each view is opened, checked against that state, and saved as a screenshot
 * under `apps/cli/reports/ui/` (gitignored). Hostile keys and values must show as text with
 * no script run, and two committed mutants of the page (markup rendering; and with the CSP
 * off as well) prove those checks fail when the page is broken. The keyboard alone reaches
 * every view, and axe-core finds no serious or critical violation on any (each check with its
 * mutant: a navigation link out of the tab order, form controls without labels). One browser
 * for the file; the demo and each backend's seeding start with the file and run beside the
 * views tested before them (child processes that mostly wait), each awaited where needed.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Backend, escapeForDisplay, openBackend } from '@agent-state/core'
import {
  daemonSnapshot,
  inspectRun,
  inspectWorker,
  listQuarantined,
  openRun,
  openSession,
  resumeRun,
  resumeSession,
  startWorker,
} from '@agent-state/runtime'
import {
  decodeHandoffEnvelope,
  handoffKey,
  readMarker,
  readStep,
  sessionDataPrefix,
  workerSnapshotKey,
} from '@agent-state/runtime/internal'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importBackendPackage } from '../src/backend-importer.js'
import { writerText } from '../src/commands/keys.js'
import { removeTemps, runCli, runScript, tempDir } from './cli-process.js'
import { freshName, redisUrl } from './services.js'
import { accessibilityFailures } from './ui-accessibility.js'
import { HOSTILE, STEP_RUN_STEPS } from './ui-hostile.js'
import { http, tokenCookie } from './ui-http.js'
import { startUi, type UiProcess } from './ui-process.js'

/** The Chromium to drive (Debian's `chromium` package; test-all.mjs installs it). */
const CHROMIUM = process.env.AGENT_STATE_CHROMIUM ?? '/usr/bin/chromium'
const SHOTS = fileURLToPath(new URL('../reports/ui/', import.meta.url))

let browser: Browser
beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true })
  browser = await chromium.launch({ executablePath: CHROMIUM, chromiumSandbox: false })
}, 60_000)
afterAll(async () => {
  await browser?.close()
  removeTemps()
})

const ref = (text: string) => Buffer.from(text, 'utf8').toString('base64url')

/** Opens the printed URL in a fresh page: the token becomes a cookie and leaves the address. */
async function openUi(context: BrowserContext, ui: UiProcess): Promise<Page> {
  const page = await context.newPage()
  await page.goto(ui.url)
  await page.waitForSelector('#view[data-ready]')
  expect(page.url()).toBe(`${ui.origin}/`)
  return page
}

/**
 * Waits for a render of `hash` after the one numbered `before` (the page numbers its renders in
 * `data-render` and names the address each was for in `data-hash`, so a live refresh of the
 * previous view is never taken for the new one). The page callbacks are strings: this package
 * is type-checked without the DOM.
 */
async function nextRender(page: Page, before: string | null, hash: string): Promise<void> {
  await page.waitForSelector(
    `#view[data-ready][data-hash=${JSON.stringify(hash)}]:not([data-render="${before}"])`,
  )
}

/** Shows the view at `hash` and waits for its new render; checks which view it is. */
async function show(page: Page, hash: string, view: string): Promise<void> {
  const before = await page.getAttribute('#view', 'data-render')
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`)
  await nextRender(page, before, hash)
  expect(await page.getAttribute('#view', 'data-ready')).toBe(view)
}

/** The text of every cell of the view's first table, row by row. */
function tableRows(page: Page, selector = '#view table'): Promise<string[][]> {
  return page.$$eval(`${selector} tbody tr`, (rows) =>
    rows.map((tr) => [...tr.children].map((td) => td.textContent ?? '')),
  )
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
}

/** A JSON value as the page shows it whole: pretty-printed, each line escaped for display. */
function prettyText(value: unknown): string {
  return JSON.stringify(value, null, 2).split('\n').map(escapeForDisplay).join('\n')
}

/**
 * The newest page of run `runId`'s committed steps as the runtime reads them: the newest
 * step and the 9 before it (the run page's first page of steps).
 */
async function newestSteps(backend: Backend, runId: string) {
  const run = await inspectRun(backend, runId)
  const seqs = Array.from({ length: Math.min(10, run.steps) }, (_, i) => run.steps - i)
  return Promise.all(seqs.map((seq) => readStep(backend, runId, seq, run.head.attempt.token)))
}

/**
 * Opens run `runId`'s page and follows its "Older steps" links to the first step, and lists
 * every way the steps shown differ from the records the runtime reads (`readStep`): each
 * step's name, time, attempt, next position and outputs (pretty-printed JSON when the stored
 * JSON is at most 4 KiB, else its first 4 KiB with its size), newest first, 10 a page, every
 * step once. Empty: they match.
 */
async function stepFailures(page: Page, backend: Backend, runId: string): Promise<string[]> {
  const failures: string[] = []
  const run = await inspectRun(backend, runId)
  const seen: number[] = []
  const hash = `#/run/${ref(runId)}`
  if ((await page.evaluate('location.hash')) !== hash) await show(page, hash, 'run')
  for (;;) {
    const shown = await page.$$eval('#view div.step', (divs) =>
      divs.map((d) => ({
        id: d.id,
        title: d.querySelector('h3')?.textContent ?? null,
        meta: d.querySelector('p')?.textContent ?? null,
        outputs: d.querySelector('pre')?.textContent ?? null,
      })),
    )
    if (shown.length > 10) failures.push(`${shown.length} steps on one page`)
    for (const step of shown) {
      const seq = Number(step.id.slice('step-'.length))
      seen.push(seq)
      const record = await readStep(backend, runId, seq, run.head.attempt.token)
      if (record === null) {
        failures.push(`step ${seq}: shown, not stored`)
        continue
      }
      const stored = JSON.stringify(record.outputs)
      const size = Buffer.byteLength(stored)
      const [described, text] =
        size > 4096
          ? [`text, first 4096 of ${size} bytes shown`, escapeForDisplay(stored.slice(0, 4096))]
          : [`json, ${size} bytes`, prettyText(record.outputs)]
      const meta = `committed at ${record.committedAt} by attempt ${record.attemptId}; next: ${record.next ?? '- (the end)'}; outputs: ${described}`
      if (step.title !== escapeForDisplay(`#${seq} ${record.step}`))
        failures.push(`step ${seq}: titled ${step.title}`)
      if (step.meta !== meta)
        failures.push(`step ${seq}: described as ${step.meta}, stored ${meta}`)
      if (step.outputs !== text)
        failures.push(
          `step ${seq}: outputs shown ${JSON.stringify(step.outputs)}, stored ${stored}`,
        )
    }
    const older = await page.$('#steps-older')
    if (older === null) break
    await show(page, (await older.getAttribute('href')) ?? '', 'run')
  }
  const committed = Array.from({ length: run.steps }, (_, i) => run.steps - i)
  if (JSON.stringify(seen) !== JSON.stringify(committed))
    failures.push(`steps shown ${JSON.stringify(seen)}, committed ${JSON.stringify(committed)}`)
  return failures
}

/**
 * Opens the hostile keys and values and lists every way they did not show as exactly their
 * escaped text, or ran: an element their markup made, a name or preview that differs, or
 * `window.__pwned` set. Empty when the page is safe.
 */
async function hostileFailures(page: Page): Promise<string[]> {
  const failures: string[] = []
  const settle = async (where: string) => {
    // Let whatever markup got in load and fire its handlers before looking at the flag.
    // Not `waitForFunction`: its string predicate is re-run in the page by a polling loop the
    // page's CSP (no 'unsafe-eval') refuses whenever an image is still loading; a one-off
    // page.evaluate runs through the DevTools protocol, which the CSP does not apply to.
    await page.evaluate(
      `Promise.all([...document.images].filter((img) => !img.complete).map((img) =>
        new Promise((resolve) => {
          img.addEventListener('load', resolve, { once: true })
          img.addEventListener('error', resolve, { once: true })
        })))`,
    )
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 50)))
    // The run page's timeline is the page's own SVG; any other is made from data.
    const made = await page.$$eval(
      '#view img, #view svg:not(#timeline), #view script',
      (els) => els.length,
    )
    if (made > 0) failures.push(`${where}: ${made} element(s) made from data`)
  }
  await show(page, `#/keys?prefix=${ref('hostile/')}`, 'keys')
  const names = (await tableRows(page)).map((row) => row[0])
  for (const key of HOSTILE.keys) {
    // The key holding `/` is listed as its prefix group.
    const listed = key.includes('</') ? key.slice(0, key.indexOf('</') + 2) : key
    if (!names.includes(escapeForDisplay(listed)))
      failures.push(`listing: ${listed} not shown as text`)
  }
  await settle('listing')
  for (const key of HOSTILE.keys.filter((k) => !k.includes('</'))) {
    await show(page, `#/key/${ref(key)}`, 'key')
    const shown = await page.textContent('#key-name')
    if (shown !== escapeForDisplay(key)) failures.push(`key ${key}: shown as ${shown}`)
    await settle(`key ${key}`)
  }
  await show(page, `#/key/${ref(HOSTILE.htmlValue.key)}`, 'key')
  const preview = await page.textContent('#preview')
  if (preview !== escapeForDisplay(HOSTILE.htmlValue.value))
    failures.push(`value shown as ${preview}`)
  const writer = (await tableRows(page)).find((row) => row[0] === 'writer')?.[1]
  if (writer !== escapeForDisplay(HOSTILE.writer)) failures.push(`writer shown as ${writer}`)
  await settle('html value')
  await show(page, `#/key/${ref(HOSTILE.jsonValue.key)}`, 'key')
  const json = await page.textContent('#preview')
  const pretty = JSON.stringify(JSON.parse(HOSTILE.jsonValue.value), null, 2)
  if (json !== pretty.split('\n').map(escapeForDisplay).join('\n'))
    failures.push(`json shown as ${json}`)
  await settle('json value')
  await show(page, `#/run/${ref('steps')}?steps=3`, 'run')
  const outputs = await page.textContent('#step-3-outputs')
  if (outputs !== prettyText(HOSTILE.stepOutputs)) failures.push(`step outputs shown as ${outputs}`)
  await settle('step outputs')
  const pwned = await page.evaluate('window.__pwned')
  if (pwned !== undefined) failures.push(`a script ran: window.__pwned = ${String(pwned)}`)
  return failures
}

/** The operator the UI is started as (`--allow-actions --operator alice`). */
const OPERATOR = 'alice'

/**
 * Clicks an action's Confirm and waits until the page shows the outcome (which it does after
 * re-rendering the view, so the view is then current).
 */
async function confirmInPage(page: Page, prefix: string): Promise<void> {
  await page.click(`#${prefix}-confirm`)
  await page.waitForSelector('#action-status:is(.done, .error)')
}

/**
 * Resolves an effect on the run's page as an operator does: fills the panel, asks, checks the
 * confirmation's question, confirms, and waits for the page's re-render; resolves to what the
 * page then says was done (or refused).
 */
async function resolveInPage(
  page: Page,
  runId: string,
  effectId: string,
  action: 'confirm' | 'fail' | 'retry',
  fields: { result?: string; message?: string },
  reason: string,
): Promise<string> {
  const hash = `#/run/${ref(runId)}`
  if ((await page.evaluate('location.hash')) !== hash) await show(page, hash, 'run')
  // The reason first: with the focus in the panel, a live refresh waits (it would clear it).
  await page.fill('#resolve-reason', reason)
  await page.selectOption('#resolve-effect', ref(effectId))
  await page.selectOption('#resolve-action', action)
  if (fields.result !== undefined) await page.fill('#resolve-result', fields.result)
  if (fields.message !== undefined) await page.fill('#resolve-message', fields.message)
  await page.click('#resolve-ask')
  expect(await page.textContent('#resolve-question')).toBe(
    `${action} effect ${effectId} of run ${runId}, because: ${reason}?`,
  )
  await confirmInPage(page, 'resolve')
  return (await page.textContent('#action-status')) ?? ''
}

/**
 * Checks the run page's timeline against the run's records and lists every way it differs:
 * every recorded time of the audit trail, the newest page of steps and the unsettled effects'
 * transitions must be a mark on its row, placed on one linear axis from the first time to the
 * last (170 px of labels, then 640 px), the unknown transitions marked as such. Empty: it
 * matches.
 */
async function timelineFailures(page: Page, backend: Backend, runId: string): Promise<string[]> {
  const failures: string[] = []
  const run = await inspectRun(backend, runId)
  const steps = await newestSteps(backend, runId)
  const expected = [
    ...run.head.audit.map((a) => `run (audit) ${a.at}`),
    ...steps.map((step) => `step #${step?.seq} ${step?.committedAt}`),
    ...run.incomplete.flatMap((e) => e.history.map((h) => `effect ${e.effectId} ${h.at}`)),
  ].sort()
  const marks = await page.$$eval('#timeline circle[data-at]', (circles) =>
    circles.map((c) => ({
      row: c.getAttribute('data-row') ?? '',
      at: c.getAttribute('data-at') ?? '',
      x: Number(c.getAttribute('cx')),
      unknown: c.classList.contains('tl-unknown'),
    })),
  )
  const shown = marks.map((m) => `${m.row} ${m.at}`).sort()
  if (JSON.stringify(shown) !== JSON.stringify(expected))
    failures.push(`marks ${JSON.stringify(shown)}, records ${JSON.stringify(expected)}`)
  const times = marks.map((m) => Date.parse(m.at))
  const [t0, t1] = [Math.min(...times), Math.max(...times)]
  if (!(t1 > t0)) failures.push('the recorded times span no time')
  if ((await page.textContent('#timeline-start')) !== new Date(t0).toISOString())
    failures.push('the axis does not start at the first recorded time')
  if ((await page.textContent('#timeline-end')) !== new Date(t1).toISOString())
    failures.push('the axis does not end at the last recorded time')
  for (const m of marks) {
    const x = 170 + ((Date.parse(m.at) - t0) / (t1 - t0)) * 640
    if (Math.abs(m.x - x) > 1e-6) failures.push(`${m.row} at ${m.at}: x ${m.x}, not ${x}`)
  }
  const unknownAt = new Set(
    run.incomplete.flatMap((e) =>
      e.history.filter((h) => h.state === 'unknown').map((h) => `effect ${e.effectId} ${h.at}`),
    ),
  )
  const marked = new Set(marks.filter((m) => m.unknown).map((m) => `${m.row} ${m.at}`))
  if (JSON.stringify([...marked].sort()) !== JSON.stringify([...unknownAt].sort()))
    failures.push('the unknown transitions are not the marks shown as unknown')
  return failures
}

/**
 * Worker `napper`'s page (suspended with a 60-minute timeout a moment ago): its next wake is
 * that timeout, due in about an hour (50 minutes or more, for a loaded machine).
 */
async function expectNextWake(page: Page): Promise<void> {
  await show(page, `#/worker/${ref('napper')}`, 'worker')
  const rows = Object.fromEntries(await tableRows(page))
  expect(rows.state, 'napper: state').toBe('suspended')
  expect(rows['next wake'], 'napper: next wake').toMatch(/^timeout in (5\dm \d{1,2}s|1h 0m)$/)
}

/**
 * Every view (each list, a page of each kind of record, with the operator's action panels and
 * the resolve confirmation open, and the error view) checked by axe-core; lists each serious
 * or critical violation, empty when there is none. `page` is of a `bypassCSP` context (see
 * {@link accessibilityFailures}).
 */
async function everyViewAccessibilityFailures(page: Page): Promise<string[]> {
  const views: [string, string][] = [
    ['#/overview', 'overview'],
    ['#/keys', 'keys'],
    [`#/keys?prefix=${ref('many/')}`, 'keys'],
    [`#/key/${ref('plain/a b ✓')}`, 'key'],
    [`#/key/${ref('bin/all-bytes')}`, 'key'],
    [`#/key/${ref(HOSTILE.bigValue.key)}`, 'key'],
    ['#/runs', 'runs'],
    [`#/run/${ref('ledger')}`, 'run'],
    [`#/run/${ref('steps')}`, 'run'],
    ['#/workers', 'workers'],
    [`#/worker/${ref('w2')}`, 'worker'],
    ['#/daemons', 'daemons'],
    [`#/daemon/${ref('inbox')}`, 'daemon'],
    ['#/sessions', 'sessions'],
    [`#/session/${ref('policy-7')}`, 'session'],
    ['#/no-such-view', 'error'],
  ]
  const failures: string[] = []
  for (const [hash, view] of views) {
    await show(page, hash, view)
    failures.push(...(await accessibilityFailures(page, hash)))
  }
  // The run page with its confirmation step open.
  await show(page, `#/run/${ref('ledger')}`, 'run')
  await page.fill('#resolve-reason', 'checking the page')
  await page.selectOption('#resolve-action', 'retry')
  await page.click('#resolve-ask')
  expect(await page.isVisible('#resolve-confirmation')).toBe(true)
  failures.push(...(await accessibilityFailures(page, 'resolve confirmation')))
  return failures
}

/**
 * Opens the page of record `id` of `kind` (`daemon`, `session`) from its link in the table of
 * its kind, as a reader would; resolves to the failure when the table has no such link.
 */
async function openFromList(page: Page, kind: string, id: string): Promise<string[]> {
  const hash = `#/${kind}/${ref(id)}`
  if ((await page.evaluate('location.hash')) !== `#/${kind}s`)
    await show(page, `#/${kind}s`, `${kind}s`)
  if ((await page.$(`#view a[href="${hash}"]`)) === null) return [`no link to ${hash}`]
  await show(page, hash, kind)
  return []
}

/**
 * Opens daemon `daemonId`'s page from its link in the daemons table and lists every way it
 * differs from the runtime's `daemonSnapshot`: the queue's depth against its capacity (marked
 * when full), pending and acknowledged counts, the in-flight delivery (event, attempt,
 * holder, visibility deadline) and the head event. Empty: it matches.
 */
async function daemonFailures(page: Page, backend: Backend, daemonId: string): Promise<string[]> {
  const failures = await openFromList(page, 'daemon', daemonId)
  if (failures.length > 0) return failures
  const snap = await daemonSnapshot(backend, daemonId, { pageSize: 1 })
  const full = snap.queuedEventCount >= snap.eventQueueCapacity
  const fields = Object.fromEntries(await tableRows(page, '#view table:nth-of-type(1)'))
  const expected = {
    state: snap.daemonState,
    queue: `${snap.queuedEventCount} of ${snap.eventQueueCapacity}${full ? ': full, triggers are refused' : ''}`,
    pending: String(snap.pendingEventCount),
    acknowledged: String(snap.totalIterations),
  }
  for (const [name, value] of Object.entries(expected))
    if (fields[name] !== value) failures.push(`${name}: shown ${fields[name]}, recorded ${value}`)
  const queueRow = await page.getAttribute('#view table:nth-of-type(1) tr:nth-child(2)', 'class')
  if ((queueRow === 'attention') !== full) failures.push(`queue row marked ${queueRow}`)
  const f = snap.inflightEvent
  const head = f?.event ?? snap.pendingEvents[0]
  if (f === null) {
    if ((await page.$('#inflight-none')) === null) failures.push('an in-flight delivery shown')
  } else {
    const shown = Object.fromEntries(await tableRows(page, '#view table:nth-of-type(2)'))
    const want = {
      event: `#${f.seq} (${f.eventId})`,
      attempt: String(f.attempt),
      holder: f.holder,
      'visibility deadline': new Date(f.expiresAt).toISOString(),
    }
    for (const [name, value] of Object.entries(want))
      if (shown[name] !== value)
        failures.push(`in flight ${name}: shown ${shown[name]}, recorded ${value}`)
  }
  const headShown =
    (await page.$('#head-event')) === null ? null : await page.textContent('#head-event')
  const headWanted = head === undefined ? null : JSON.stringify(head, null, 2)
  if (headShown !== headWanted)
    failures.push(`head event: shown ${headShown}, recorded ${headWanted}`)
  return failures
}

/**
 * Opens session `sessionId`'s page from its link in the sessions table and lists every way it
 * differs from what the runtime stored: the conflict policy and its recorded overrides (who,
 * which policy, when), the handoff envelope, and the session's keys with each one's writer.
 * Empty: it matches.
 */
async function sessionFailures(page: Page, backend: Backend, sessionId: string): Promise<string[]> {
  const failures = await openFromList(page, 'session', sessionId)
  if (failures.length > 0) return failures
  const differs = (what: string, shown: unknown, stored: unknown) => {
    if (JSON.stringify(shown) !== JSON.stringify(stored))
      failures.push(`${what}: shown ${JSON.stringify(shown)}, stored ${JSON.stringify(stored)}`)
  }
  const marker = await readMarker(backend, sessionId)
  const fields = Object.fromEntries(await tableRows(page, '#view table:nth-of-type(1)'))
  differs('conflict policy', fields['conflict policy'], marker.conflictPolicy)
  differs(
    'overrides',
    (await page.$('#overrides')) === null ? [] : await tableRows(page, '#overrides table'),
    marker.overrides.map((o) => [o.writerId, o.policy, o.at]),
  )
  const stored = await backend.get(handoffKey(sessionId))
  differs(
    'handoff',
    (await page.$('#handoff')) === null ? null : await page.textContent('#handoff'),
    stored === null
      ? null
      : JSON.stringify(decodeHandoffEnvelope(stored.value, sessionId), null, 2),
  )
  const prefix = sessionDataPrefix(sessionId)
  const { entries } = await backend.list({ prefix })
  const keys = await Promise.all(
    entries.map(async (e) => [
      e.key.slice(prefix.length),
      writerText((await backend.head(e.key))?.writer),
    ]),
  )
  differs(
    'keys and writers',
    (await page.$('#session-keys')) === null
      ? []
      : (await tableRows(page, '#session-keys table')).map((row) => row.slice(0, 2)),
    keys,
  )
  return failures
}

/**
 * Worker `workerId`'s page (a running worker holding a 10-minute lease): its lease row names
 * the holder, the fencing token and the expiry the backend holds, and its countdown moves on
 * by itself (within one render) and agrees with that expiry within 3 s. Lists what differs.
 */
async function countdownFailures(
  page: Page,
  backend: Backend,
  workerId: string,
): Promise<string[]> {
  await show(page, `#/worker/${ref(workerId)}`, 'worker')
  const failures: string[] = []
  const lease = await backend.getLease(workerSnapshotKey(workerId))
  if (lease === null) return [`${workerId} holds no lease`]
  const expiry = new Date(lease.expiresAt).toISOString()
  const shown = Object.fromEntries(await tableRows(page)).lease ?? ''
  const wanted = `held by ${lease.holder}, fencing token ${lease.token}, until ${expiry}, in `
  if (!shown.startsWith(wanted)) failures.push(`lease shown ${shown}, held ${wanted}…`)
  // The text must change within one render: a live refresh (the worker's own writes
  // announce one) redraws it too, so a change across renders proves nothing.
  const reading = async () => ({
    render: await page.getAttribute('#view', 'data-render'),
    text: await page.textContent('#lease-countdown'),
  })
  let base = await reading()
  let later = base
  for (let n = 0; n < 40; n++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    later = await reading()
    if (later.render !== base.render) base = later
    else if (later.text !== base.text) break
  }
  if (later.text === base.text) failures.push(`the countdown stayed at ${base.text} for 4 s`)
  const match = /^in (\d+)m (\d+)s$/.exec(later.text ?? '')
  const left = match === null ? Number.NaN : Number(match[1]) * 60 + Number(match[2])
  const expected = (lease.expiresAt - Date.now()) / 1000
  if (!(Math.abs(left - expected) <= 3))
    failures.push(`countdown ${later.text}, ${expected.toFixed(1)} s left of the lease`)
  return failures
}

/** The href of the focused element, or null. */
function focusedHref(page: Page): Promise<string | null> {
  return page.evaluate('document.activeElement?.getAttribute("href") ?? null') as Promise<
    string | null
  >
}

/**
 * Presses `key` until the focus is on a link whose href `wanted` accepts (at most `presses`
 * times); resolves to that href, or null when none was reached.
 */
async function tabTo(
  page: Page,
  key: 'Tab' | 'Shift+Tab',
  wanted: (href: string) => boolean,
  presses = 40,
): Promise<string | null> {
  for (let n = 0; n < presses; n++) {
    await page.keyboard.press(key)
    const href = await focusedHref(page)
    if (href !== null && wanted(href)) return href
  }
  return null
}

/** The navigation's views, in an order where each Enter changes the view (the overview last). */
const NAV_VIEWS = ['keys', 'runs', 'workers', 'daemons', 'sessions', 'overview'] as const

/** From each list, the links to a record's page the keyboard must reach (the keys: two deep). */
const RECORD_LINKS: Readonly<Record<string, readonly [string, string][]>> = {
  keys: [
    ['#/keys?prefix=', 'keys'],
    ['#/key/', 'key'],
  ],
  runs: [['#/run/', 'run']],
  workers: [['#/worker/', 'worker']],
  daemons: [['#/daemon/', 'daemon']],
  sessions: [['#/session/', 'session']],
}

/**
 * With the keyboard alone, from the overview freshly loaded: for each view of the navigation,
 * Shift+Tab back from the view (which takes the focus after each render) to its link, Enter,
 * and the address and the view must be that link's; from the keys, runs and workers lists,
 * Tab on to the first link to a record's page and Enter it, the same way. Lists each view not
 * reached, or reached at another address; empty when every view is.
 */
async function keyboardFailures(page: Page, origin: string): Promise<string[]> {
  const failures: string[] = []
  await page.goto('about:blank')
  await page.goto(`${origin}/#/overview`)
  await page.waitForSelector('#view[data-ready="overview"]')
  const enter = async (href: string, view: string) => {
    const before = await page.getAttribute('#view', 'data-render')
    await page.keyboard.press('Enter')
    await nextRender(page, before, href)
    const [url, shown] = [page.url(), await page.getAttribute('#view', 'data-ready')]
    if (url !== `${origin}/${href}` || shown !== view)
      failures.push(`${view}: Enter on ${href} showed ${shown} at ${url}`)
  }
  for (const view of NAV_VIEWS) {
    const href = await tabTo(page, 'Shift+Tab', (h) => h === `#/${view}`, 12)
    if (href === null) {
      failures.push(`${view}: its navigation link is not reached by the keyboard`)
      continue
    }
    await enter(href, view)
    for (const [prefix, record] of RECORD_LINKS[view] ?? []) {
      const link = await tabTo(page, 'Tab', (h) => h.startsWith(prefix))
      if (link === null) failures.push(`${record}: no link ${prefix}… reached from ${view}`)
      else await enter(link, record)
    }
  }
  return failures
}

const BACKENDS = [
  {
    name: 'fs',
    url: () => `file:${join(tempDir('agent-state-ui-'), 'state')}`,
    mutants: true,
    accessibility: true,
  },
  {
    name: 'redis',
    url: () => `${redisUrl()}?keyPrefix=${freshName('ui')}`,
    mutants: false,
    accessibility: false,
  },
]

/** A running `agent-state ui`, the backend it serves opened by the test too, and a page on it. */
interface Inspector {
  ui: UiProcess
  backend: Backend
  context: BrowserContext
  page: Page
}

/**
 * Starts `agent-state ui <url> <args…>`, opens the backend at `url` (in `namespace`, if
 * given) for the test's own reads, and a page on the UI in a context of its own.
 */
async function openInspector(
  url: string,
  args: readonly string[],
  namespace?: string,
): Promise<Inspector> {
  const backend = await openBackend(url, {
    importer: importBackendPackage,
    ...(namespace === undefined ? {} : { namespace }),
  })
  const ui = await startUi([url, ...args])
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } })
  return { ui, backend, context, page: await openUi(context, ui) }
}

/** Closes what {@link openInspector} opened (whatever of it did open); the UI must stop on SIGTERM. */
async function closeInspector(opened: Partial<Inspector>): Promise<void> {
  await opened.context?.close()
  await opened.backend?.close()
  if (opened.ui !== undefined) expect(await opened.ui.stop()).toBe(143)
}

/**
 * Work each part of the file waits on, started once, from the file's start (the top-level
 * `beforeAll`): the demo and the seeding of each backend are child processes that mostly wait
 * (the demo on a lease running out), so they run beside the views tested before them instead
 * of one after another. A failure is the awaiting hook's failure.
 */
const started = new Map<string, Promise<unknown>>()
function once<T>(name: string, work: () => Promise<T>): Promise<T> {
  let promise = started.get(name) as Promise<T> | undefined
  if (promise === undefined) {
    promise = work()
    // Awaited by its hook; until then a rejection is not an unhandled one.
    promise.catch(() => undefined)
    started.set(name, promise)
  }
  return promise
}

/**
 * `target`'s backend, seeded by test/seed-state.ts, seed-runs.ts and seed-ui.ts side by side
 * (they write records of their own, under ids of their own): its URL.
 */
function seeded(target: (typeof BACKENDS)[number]): Promise<string> {
  return once(`seed ${target.name}`, async () => {
    const url = target.url()
    const scripts = [
      ['./seed-state.ts', [url]],
      ['./seed-runs.ts', [url]],
      ['./seed-ui.ts', [url, 'seed']],
    ] as const
    const done = await Promise.all(scripts.map(([script, args]) => runScript(script, args)))
    for (const [i, [script]] of scripts.entries())
      expect(done[i]?.status, `${script}: ${done[i]?.stderr}`).toBe(0)
    return url
  })
}

/** `agent-state demo` run on a filesystem backend: its URL and the namespace it printed. */
function demoLeft(): Promise<{ url: string; namespace: string }> {
  return once('demo', async () => {
    const url = `file:${join(tempDir('agent-state-ui-demo-'), 'state')}`
    const demo = await runCli(['demo', url], { timeoutMs: 240_000 })
    expect(demo.status, `${demo.stdout}${demo.stderr}`).toBe(0)
    const namespace = /--namespace (demo-\S+)/.exec(demo.stdout)?.[1] ?? ''
    expect(namespace).toMatch(/^demo-/)
    return { url, namespace }
  })
}

beforeAll(() => {
  void demoLeft()
  for (const target of BACKENDS) void seeded(target)
})

for (const target of BACKENDS) {
  describe(`agent-state ui on ${target.name}`, () => {
    let url: string
    let ui: UiProcess
    let backend: Backend
    let context: BrowserContext
    let page: Page
    beforeAll(async () => {
      url = await seeded(target)
      ;({ ui, backend, context, page } = await openInspector(url, [
        '--allow-actions',
        '--operator',
        OPERATOR,
      ]))
    }, 180_000)
    afterAll(() => closeInspector({ ui, backend, context }))

    it('overview: what needs attention first, counts per kind, the backend without credentials', async () => {
      await show(page, '#/overview', 'overview')
      const attention = await page.$$eval('#attention li', (items) =>
        items.map(
          (li) => `${li.getAttribute('data-kind')} ${li.querySelector('strong')?.textContent}`,
        ),
      )
      expect(attention).toEqual([
        'unknown-effect ledger / e-unknown',
        'unknown-effect recon / e-lost',
        'run-needs-attention ledger',
        'run-needs-attention recon',
        'unreadable-record bad',
        'unreadable-record w3',
        'unreadable-record broken',
        'lease-expired stale',
        'queue-full full',
      ])
      const tables = await page.$$('#view table')
      expect(tables).toHaveLength(2)
      expect(await tableRows(page, '#view table:nth-of-type(1)')).toEqual([
        ['sessions', '2', ''],
        ['workers', '6', 'running: 4, suspended: 1, unreadable: 1'],
        ['runs', '4', 'unreadable: 1, needs attention: 2, open: 1'],
        ['daemons', '3', ''],
      ])
      const info = Object.fromEntries(await tableRows(page, '#view table:nth-of-type(2)'))
      expect(info.backend).toBe(target.name)
      expect(info.url).toBe(escapeForDisplay(url.replace(/\/\/[^@]*@/, '//***@')))
      expect(info.url).not.toContain(':cli-test-pw')
      expect(info['capabilities.leaseClock']).toBe(backend.capabilities.leaseClock)
      expect(await page.textContent('#backend')).toContain(target.name)
      await shot(page, `${target.name}-overview`)
    })

    it('keys: groups at "/", pages of 100 through the backend cursor, meta and previews', async () => {
      await show(page, '#/keys', 'keys')
      expect((await tableRows(page)).map((row) => row.slice(0, 2))).toEqual(
        ['bin/', 'daemons/', 'hostile/', 'many/', 'plain/', 'runs/', 'sessions/', 'workers/'].map(
          (p) => [p, 'prefix'],
        ),
      )
      await shot(page, `${target.name}-keys`)
      await show(page, `#/keys?prefix=${ref('many/')}`, 'keys')
      const first = await tableRows(page)
      expect(first.map((row) => row[0])).toEqual(
        Array.from({ length: 100 }, (_, i) => `many/k-${String(i).padStart(3, '0')}`),
      )
      const before = await page.getAttribute('#view', 'data-render')
      const nextPage = await page.getAttribute('#next-page', 'href')
      await page.click('#next-page')
      await nextRender(page, before, nextPage ?? '')
      const second = await tableRows(page)
      expect(second.map((row) => row[0])).toEqual(
        Array.from({ length: 50 }, (_, i) => `many/k-${String(i + 100).padStart(3, '0')}`),
      )
      expect(await page.textContent('#last-page')).toBe('Last page.')

      const key = 'plain/a b ✓'
      const meta = await backend.head(key)
      await show(page, `#/key/${ref(key)}`, 'key')
      expect(Object.fromEntries(await tableRows(page))).toEqual({
        version: meta?.version,
        size: '5 bytes',
        writer: 'me (stage=s1)',
        updated: new Date(meta?.updatedAt ?? 0).toISOString(),
        lease: 'none',
      })
      expect(await page.textContent('#preview-kind')).toBe('text, 5 bytes')
      expect(await page.textContent('#preview')).toBe('check')
      await shot(page, `${target.name}-key`)

      const lease = await backend.getLease('plain/leased')
      await show(page, `#/key/${ref('plain/leased')}`, 'key')
      expect(Object.fromEntries(await tableRows(page)).lease).toBe(
        `held by someone, token ${lease?.token}, until ${new Date(lease?.expiresAt ?? 0).toISOString()}`,
      )

      await show(page, `#/key/${ref('bin/all-bytes')}`, 'key')
      expect(await page.textContent('#preview-kind')).toBe('hex, 256 bytes')
      const hex = ((await page.textContent('#preview')) ?? '').split('\n')
      expect(hex).toHaveLength(16)
      expect(hex[0]).toBe(
        '00000000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f  |................|',
      )
      expect(hex[4]).toBe(
        '00000040  40 41 42 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f  |@ABCDEFGHIJKLMNO|',
      )

      await show(page, `#/key/${ref(HOSTILE.bigValue.key)}`, 'key')
      expect(await page.textContent('#preview-kind')).toBe('text, first 16384 of 20000 bytes shown')
      expect(await page.textContent('#preview')).toBe('a'.repeat(16_384))

      await show(page, `#/key/${ref(HOSTILE.jsonValue.key)}`, 'key')
      expect(await page.textContent('#preview-kind')).toBe(
        `json, ${Buffer.byteLength(HOSTILE.jsonValue.value)} bytes`,
      )
      await shot(page, `${target.name}-key-json`)
    })

    it('runs, workers, daemons, sessions: rows needing attention marked; an unknown effect is settled after resolveEffect', async () => {
      await show(page, '#/runs', 'runs')
      const runs = await tableRows(page)
      expect(runs.map((row) => row[0])).toEqual(['bad', 'ledger', 'recon', 'steps'])
      const unknown = await page.$$eval('#view td.state-unknown', (tds) =>
        tds.map((td) => td.textContent),
      )
      expect(unknown).toEqual(['1', '1'])
      const classes = await page.$$eval('#view tbody tr', (trs) => trs.map((tr) => tr.className))
      expect(classes).toEqual(['broken', 'attention', 'attention', ''])
      // recon: status, attempt, attempts, steps, next, unknown, submitted, planned, settled.
      const attempt = (await inspectRun(backend, 'recon')).head.attempt.attemptId
      expect(runs[2]?.slice(1)).toEqual(['open', attempt, '1', '0', '-', '1', '0', '0', '0'])
      await shot(page, `${target.name}-runs`)
      // The run's own page, from its link: unknown first (e-crash sorts before e-unknown).
      const toLedger = await page.getAttribute('#view tbody tr:nth-child(2) a', 'href')
      expect(toLedger).toBe(`#/run/${ref('ledger')}`)
      await show(page, toLedger ?? '', 'run')
      expect(await page.textContent('#run-id')).toBe('ledger')
      const ledgerEffects = await tableRows(page, '#view table:nth-of-type(2)')
      expect(ledgerEffects.map((row) => [row[0], row[1], row[2]])).toEqual([
        ['e-unknown', 'pay', 'unknown'],
        ['e-crash', 'pay', 'submitted'],
      ])
      expect(ledgerEffects[0]?.[5]).toMatch(
        /^planned at .*\nsubmitted at .*\nunknown at .* \(timeout/,
      )
      expect(
        await page.$$eval('#view td.state-unknown', (tds) => tds.map((td) => td.textContent)),
      ).toEqual(['unknown'])
      expect(Object.fromEntries(await tableRows(page, '#view table:nth-of-type(1)'))).toMatchObject(
        {
          status: 'open',
          steps: '1',
          next: 'charge',
          'settled effects': '2',
        },
      )
      expect(await page.textContent('#step-1-outputs')).toBe(JSON.stringify({ ok: true }, null, 2))
      expect(await timelineFailures(page, backend, 'ledger')).toEqual([])
      await shot(page, `${target.name}-run`)
      await show(page, `#/run/${ref('recon')}`, 'run')
      expect((await tableRows(page, '#view table:nth-of-type(2)')).map((row) => row[2])).toEqual([
        'unknown',
      ])
      // The effects are paged (ui-scale.test.ts proves the bound); one page here, and its filter.
      expect(await page.textContent('#effect-counts')).toBe(
        '1 unsettled of 1 effects; this page read 1 (1 unknown).',
      )
      expect(await page.$('#effects-next')).toBeNull()
      await show(page, `#/run/${ref('recon')}?state=unknown`, 'run')
      expect(await page.textContent('#effect-counts')).toBe(
        '1 unsettled of 1 effects; this page read 1 (1 unknown), showing unknown only.',
      )
      expect(await page.getAttribute('#effects-filter', 'href')).toBe(`#/run/${ref('recon')}`)
      await show(page, `#/run/${ref('recon')}`, 'run')

      // The operator confirms it on the page (the panel is tested in full below).
      expect(
        await resolveInPage(
          page,
          'recon',
          'e-lost',
          'confirm',
          { result: '{"paid": true}' },
          'the provider shows the charge',
        ),
      ).toBe(`${OPERATOR} resolved effect e-lost of run recon: confirm, now confirmed`)
      await show(page, '#/overview', 'overview')
      const attention = await page.$$eval('#attention li strong', (items) =>
        items.map((s) => s.textContent),
      )
      expect(attention).not.toContain('recon / e-lost')
      expect(attention).toContain('ledger / e-unknown')
      await show(page, '#/runs', 'runs')
      const after = (await tableRows(page)).find((row) => row[0] === 'recon')
      // The operator's resolution was an attempt of its own: the second.
      const second = await inspectRun(backend, 'recon')
      expect(second.head.attempt.attemptId).not.toBe(attempt)
      expect(second.incomplete).toEqual([])
      expect(after?.slice(1)).toEqual([
        'open',
        second.head.attempt.attemptId,
        '2',
        '0',
        '-',
        '0',
        '0',
        '0',
        '1',
      ])
      expect(await page.$$eval('#view tbody tr', (trs) => trs.map((tr) => tr.className))).toEqual([
        'broken',
        'attention',
        '',
        '',
      ])
      await show(page, `#/run/${ref('recon')}`, 'run')
      expect(await page.textContent('#effects-none')).toBe(
        'None: every effect is confirmed or failed.',
      )
      expect(Object.fromEntries(await tableRows(page, '#view table:nth-of-type(1)'))).toMatchObject(
        {
          attempts: '2',
          'settled effects': '1',
        },
      )
      const audit = (await tableRows(page, '#view table:nth-of-type(2)')).map((row) => row[0])
      expect(audit).toContain('operator_resolved')

      await show(page, '#/workers', 'workers')
      const workers = await tableRows(page)
      expect(workers.map((row) => [row[0], row[1]])).toEqual([
        ['full', 'running'],
        ['inbox', 'running'],
        ['stale', 'running'],
        ['w1', 'running'],
        ['w2', 'suspended'],
        ['w3', 'SNAPSHOT_CORRUPT'],
      ])
      expect(await page.$$eval('#view tbody tr', (trs) => trs.map((tr) => tr.className))).toEqual([
        '',
        '',
        'attention',
        '',
        '',
        'broken',
      ])
      await shot(page, `${target.name}-workers`)
      await show(page, `#/worker/${ref('stale')}`, 'worker')
      const stale = Object.fromEntries(await tableRows(page))
      expect(stale).toMatchObject({
        state: 'running',
        'lease expired': 'yes: running, and nobody holds it',
        lease: 'none',
      })
      // Worker `napper`, suspended with a 60-minute timeout: a pending timeout wake.
      const napper = await startWorker(backend, { workerId: 'napper', holder: 'test' })
      await napper.suspend({ reason: 'naps', conditions: { timeout: { durationMinutes: 60 } } })
      await expectNextWake(page)
      await show(page, `#/worker/${ref('w2')}`, 'worker')
      expect(Object.fromEntries(await tableRows(page))).toMatchObject({
        state: 'suspended',
        'lease expired': 'no',
        // Parked by hand, with no resume conditions: no wake registered.
        'next wake': '-',
      })
      expect(await page.textContent('#suspension')).toContain('"reason": "waiting for a human"')
      await shot(page, `${target.name}-worker`)

      await show(page, '#/daemons', 'daemons')
      const daemons = await tableRows(page)
      expect(daemons.map((row) => [row[0], row[1], row[7], row[8]])).toEqual([
        ['broken', 'QUEUE_CORRUPT', '-', '-'],
        ['full', 'idle', '2', '2'],
        ['inbox', 'active', '3', '8'],
      ])
      await shot(page, `${target.name}-daemons`)
      expect(await daemonFailures(page, backend, 'inbox')).toEqual([])
      await shot(page, `${target.name}-daemon`)
      expect(await daemonFailures(page, backend, 'full')).toEqual([])

      await show(page, '#/sessions', 'sessions')
      expect((await tableRows(page)).map((row) => [row[0], row[3]])).toEqual([
        ['empty-1', '-'],
        ['review-42', 'needs_review'],
      ])
      await shot(page, `${target.name}-sessions`)
      expect(await sessionFailures(page, backend, 'review-42')).toEqual([])
      // Session policy-7: stored policy `error`, then a handle of another writer chose
      // `ignore` (an override the marker records) and wrote a key of its own.
      const strict = await openSession(backend, {
        sessionId: 'policy-7',
        writer: 'planner',
        conflictPolicy: 'error',
      })
      await strict.write('notes/a.md', 'a')
      const hasty = await resumeSession(backend, 'policy-7', {
        writer: 'hasty',
        conflictPolicy: 'ignore',
      })
      await hasty.write('notes/b.md', 'b')
      await hasty.handoff({ status: 'rushed' })
      await show(page, '#/sessions', 'sessions')
      expect(await sessionFailures(page, backend, 'policy-7')).toEqual([])
      expect(await page.$$eval('#overrides tbody tr', (trs) => trs.length)).toBe(1)
      await shot(page, `${target.name}-session`)
    })

    it("a run's steps: every step's outputs, newest first, 10 a page, large ones cut with their size", async () => {
      expect(await stepFailures(page, backend, 'steps')).toEqual([])
      await show(page, `#/run/${ref('steps')}`, 'run')
      expect(await page.textContent('#step-paging')).toBe(
        `Steps ${STEP_RUN_STEPS} to ${STEP_RUN_STEPS - 9} of ${STEP_RUN_STEPS}, newest first.`,
      )
      expect(await page.textContent(`#step-${STEP_RUN_STEPS}-outputs`)).toMatch(/^\{"seq":12,/)
      expect(await page.$('#steps-newer')).toBeNull()
      await shot(page, `${target.name}-run-steps`)
    })

    /**
     * Run `runId`'s effect `e-r`, left unknown (its dispatch hangs past its timeout and its
     * reconciler cannot tell), is shown on `view` as unknown on the run's page and in the
     * overview's attention list; once the next owner's reconciliation confirms it, as settled,
     * with the audit entry, and gone from the attention list.
     */
    const expectReconciliationShown = async (view: Page, runId: string): Promise<void> => {
      const pay = {
        retrySafe: false,
        timeoutMs: 50,
        reconcile: async () => ({ status: 'unknown' as const }),
        dispatch: () => new Promise<never>(() => undefined),
      }
      const run = await openRun(backend, runId, { handlers: { pay } })
      await run.effect('pay', 'e-r', { amount: 7 }).catch(() => undefined)
      await run.close()
      const attentionItems = () =>
        view.$$eval('#attention li', (items) =>
          items.map(
            (li) => `${li.getAttribute('data-kind')} ${li.querySelector('strong')?.textContent}`,
          ),
        )
      await show(view, `#/run/${ref(runId)}`, 'run')
      const before = await tableRows(view, '#view table:nth-of-type(2)')
      expect(
        before.map((row) => [row[0], row[2]]),
        'before reconciliation: the effect shown',
      ).toEqual([['e-r', 'unknown']])
      await show(view, '#/overview', 'overview')
      expect(await attentionItems()).toContain(`unknown-effect ${runId} / e-r`)
      // The provider says it happened: the next owner's reconciliation records it confirmed.
      const reconcile = async () => ({ status: 'confirmed' as const, result: { paid: 7 } })
      const resumed = await resumeRun(backend, runId, {
        handlers: { pay: { ...pay, reconcile } },
      })
      await resumed.close()
      expect((await inspectRun(backend, runId)).incomplete).toEqual([])
      await show(view, `#/run/${ref(runId)}`, 'run')
      expect(
        await view.$eval('#view', (v) => v.querySelector('#effects-none')?.textContent ?? null),
        'after reconciliation: no unsettled effect shown',
      ).toBe('None: every effect is confirmed or failed.')
      const fields = Object.fromEntries(await tableRows(view, '#view table:nth-of-type(1)'))
      expect(fields['settled effects']).toBe('1')
      const trail = await tableRows(view, '#view table:nth-of-type(2)')
      const reconciled = trail.filter((row) => row[0] === 'effect_reconciled')
      expect(reconciled).toHaveLength(1)
      expect(reconciled[0]?.[3]).toContain('reconciler:confirmed')
      await show(view, '#/overview', 'overview')
      expect(await attentionItems()).not.toContain(`unknown-effect ${runId} / e-r`)
    }

    it('reconciliation: an unknown effect shows as unknown, and as settled once reopening the run reconciles it', async () => {
      await expectReconciliationShown(page, 'reconciled')
    })

    it("a worker's lease: holder, fencing token, expiry and a live countdown to it", async () => {
      await startWorker(backend, { workerId: 'ticker', holder: 'test', leaseTtlMs: 600_000 })
      expect(await countdownFailures(page, backend, 'ticker')).toEqual([])
    })

    it('the keyboard reaches every view: from the overview, Tab to each link and Enter', async () => {
      expect(await keyboardFailures(page, ui.origin)).toEqual([])
    })

    it('live: an open view shows a write made elsewhere, without being reloaded', async () => {
      expect(await page.textContent('#live')).toBe('live')
      await show(page, `#/keys?prefix=${ref('live/')}`, 'keys')
      expect(await page.textContent('#view')).toContain('No keys here.')
      await backend.put('live/new', new TextEncoder().encode('hello'))
      await page.waitForSelector('#view table a >> text="live/new"')
      expect(await page.getAttribute('#view', 'data-hash')).toBe(`#/keys?prefix=${ref('live/')}`)
    })

    it('hostile keys, values and writers show as text; no script runs', async () => {
      expect(await hostileFailures(page)).toEqual([])
      await show(page, `#/keys?prefix=${ref('hostile/')}`, 'keys')
      await shot(page, `${target.name}-hostile`)
    })

    // The markup does not depend on the backend: checked once, on the filesystem (about 5 s).
    if (target.accessibility) {
      it('accessibility: axe-core finds no serious or critical violation on any view', async () => {
        // The checker is injected as an inline script, which the page's CSP refuses (rightly).
        const checked = await browser.newContext({
          bypassCSP: true,
          viewport: { width: 1280, height: 800 },
        })
        try {
          expect(await everyViewAccessibilityFailures(await openUi(checked, ui))).toEqual([])
        } finally {
          await checked.close()
        }
      })
    }

    it('operator actions: a reason is required, Cancel sends nothing, each action is confirmed, runs through the runtime and is audited with the operator', async () => {
      const seeded = await runScript('./seed-ui.ts', [url, 'ops'])
      expect(seeded.status, seeded.stderr).toBe(0)
      const unresolved = async (runId: string) =>
        (await inspectRun(backend, runId)).incomplete.map((e) => [
          e.effectId,
          e.state,
          e.retryAllowed,
        ])
      expect(await unresolved('ops')).toEqual([
        ['e-a', 'unknown', false],
        ['e-b', 'unknown', false],
      ])
      const hash = `#/run/${ref('ops')}`
      await show(page, hash, 'run')
      // No reason: the page says so and asks nothing.
      await page.click('#resolve-ask')
      expect(await page.textContent('#resolve-problem')).toBe('A reason is required')
      expect(await page.isHidden('#resolve-confirmation')).toBe(true)
      // Asked, then cancelled: nothing is sent.
      await page.fill('#resolve-reason', 'changed my mind')
      await page.selectOption('#resolve-action', 'retry')
      await page.click('#resolve-ask')
      expect(await page.isVisible('#resolve-confirmation')).toBe(true)
      await shot(page, `${target.name}-action-confirm`)
      await page.click('#resolve-cancel')
      expect(await page.isHidden('#resolve-confirmation')).toBe(true)
      expect((await unresolved('ops')).map((e) => e[2])).toEqual([false, false])

      // Allow a retry of e-a, fail e-b: each an attempt of the operator, audited.
      expect(
        await resolveInPage(page, 'ops', 'e-a', 'retry', {}, 'the provider has no record of it'),
      ).toBe(`${OPERATOR} resolved effect e-a of run ops: retry, now unknown`)
      expect(
        await resolveInPage(
          page,
          'ops',
          'e-b',
          'fail',
          { message: 'declined by the bank' },
          'the bank says declined',
        ),
      ).toBe(`${OPERATOR} resolved effect e-b of run ops: fail, now failed`)
      expect(await unresolved('ops')).toEqual([['e-a', 'unknown', true]])
      const { head } = await inspectRun(backend, 'ops')
      const resolutions = head.audit.filter((a) => a.event === 'operator_resolved')
      expect(resolutions.map((a) => a.detail)).toEqual([
        {
          effectId: 'e-a',
          action: 'retry',
          reason: `the provider has no record of it (operator ${OPERATOR}, agent-state ui)`,
          from: 'unknown',
        },
        {
          effectId: 'e-b',
          action: 'fail',
          reason: `the bank says declined (operator ${OPERATOR}, agent-state ui)`,
          from: 'unknown',
        },
      ])
      for (const resolution of resolutions) {
        const started = head.audit.find(
          (a) => a.event === 'attempt_started' && a.attemptId === resolution.attemptId,
        )
        expect(started?.detail.holder).toBe(`agent-state-ui:${OPERATOR}`)
      }
      // The page shows the audit entries it caused.
      const trail = await tableRows(page, '#view table:nth-of-type(3)')
      expect(trail.filter((row) => row[0] === 'operator_resolved')).toHaveLength(2)

      // A run another process owns (ledger: its crashed process's lease is still held): the
      // runtime refuses, and the page says why.
      const owned = await resolveInPage(
        page,
        'ledger',
        'e-crash',
        'fail',
        { message: 'x' },
        'try it',
      )
      expect(owned).toMatch(/^Resolve an effect refused: RUN_OWNED: /)
      expect(await page.getAttribute('#action-status', 'class')).toBe('error')

      // Close the suspended worker w2.
      const w2 = `#/worker/${ref('w2')}`
      await show(page, w2, 'worker')
      await page.click('#close-ask')
      expect(await page.textContent('#close-question')).toBe(
        'Close worker w2 for good (later resumes fail with WORKER_CLOSED)?',
      )
      await confirmInPage(page, 'close')
      expect(await page.textContent('#action-status')).toBe(`${OPERATOR} closed worker w2`)
      const closed = await inspectWorker(backend, 'w2')
      expect(closed.status).toBe('closed')
      expect(closed.audit.at(-1)).toMatchObject({
        event: 'worker_closed',
        holder: `agent-state-ui:${OPERATOR}`,
      })
      expect(Object.fromEntries(await tableRows(page)).state).toBe('closed')
      expect(await page.$('#close-ask')).toBeNull()

      // Quarantine w3's unreadable snapshot from its key page.
      const key = workerSnapshotKey('w3')
      const keyHash = `#/key/${ref(key)}`
      await show(page, keyHash, 'key')
      await page.fill('#quarantine-reason', 'not a snapshot: written by hand')
      await page.click('#quarantine-ask')
      expect(await page.textContent('#quarantine-question')).toBe(
        `Move ${key} aside to quarantine/ (its bytes kept, the key removed), because: not a snapshot: written by hand?`,
      )
      await confirmInPage(page, 'quarantine')
      const [entry, ...others] = await listQuarantined(backend)
      expect(others).toEqual([])
      expect(entry?.report).toMatchObject({
        key,
        by: OPERATOR,
        reason: 'not a snapshot: written by hand',
      })
      expect(await page.textContent('#action-status')).toBe(
        `${OPERATOR} quarantined ${key}: report at ${entry?.report?.reportKey}`,
      )
      expect(await backend.head(key)).toBeNull()
      expect(Object.fromEntries(await tableRows(page)).size).toBe('no value')
      // The server's own log names each action too.
      await expect
        .poll(() => ui.output().stderr)
        .toContain(`agent-state ui: ${OPERATOR} quarantined ${key}`)
      expect(ui.output().stderr).toContain(`agent-state ui: ${OPERATOR} closed worker w2`)
    })

    if (target.mutants) {
      /**
       * Closes a context whose routes may still be handling a request of its page (a refresh the
       * check did not wait for): their route.fetch() or fulfill() would then throw "Response has
       * been disposed" into nobody's hands, an unhandled rejection that fails the whole suite
       * (seen once in a clean run). Routes removed first, their errors ignored, as Playwright
       * offers for this.
       */
      const closeRouted = async (context: BrowserContext): Promise<void> => {
        await context.unrouteAll({ behavior: 'ignoreErrors' })
        await context.close()
      }

      /**
       * Runs `check` on a page whose server answers `/api/<endpoint>` changed by `change`
       * (a mutant of the server's reader, as the page would see it), in a context of its own.
       */
      const withMutatedAnswer = async (
        endpoint: string,
        change: (body: Record<string, unknown>) => Record<string, unknown>,
        check: (page: Page) => Promise<void>,
      ): Promise<void> => {
        const mutated = await browser.newContext()
        try {
          await mutated.route(`${ui.origin}/api/${endpoint}?*`, async (route) => {
            const real = await route.fetch()
            const body = change(await real.json())
            await route.fulfill({ response: real, body: JSON.stringify(body) })
          })
          await check(await openUi(mutated, ui))
        } finally {
          await closeRouted(mutated)
        }
      }

      /**
       * Runs `check` on a page whose file at `path` (`/` or `/app.js`) has its one `from`
       * replaced by `to` (a mutant of the page), in a context of its own made with `options`.
       */
      const withMutatedAsset = async (
        path: '/' | '/app.js',
        from: string,
        to: string,
        options: { bypassCSP?: boolean },
        check: (page: Page) => Promise<void>,
      ): Promise<void> => {
        const cookie = { Cookie: tokenCookie(ui.port, ui.token) }
        const real = (await http(ui.origin, path, { headers: cookie })).body
        expect(real.split(from), `${from} once in ${path}`).toHaveLength(2)
        const mutated = await browser.newContext(options)
        try {
          await mutated.route(`${ui.origin}${path}`, (route) =>
            route.fulfill({
              status: 200,
              contentType: path === '/' ? 'text/html' : 'text/javascript',
              body: real.replace(from, to),
            }),
          )
          await check(await openUi(mutated, ui))
        } finally {
          await closeRouted(mutated)
        }
      }

      it('the live check fails on a page whose event stream is cut (mutant)', async () => {
        const cut = await browser.newContext()
        try {
          const live = `#/keys?prefix=${ref('live/')}`
          if ((await page.evaluate('location.hash')) !== live) await show(page, live, 'keys')
          await cut.route(`${ui.origin}/api/events`, (route) => route.abort())
          const mutant = await openUi(cut, ui)
          await show(mutant, `#/keys?prefix=${ref('live/')}`, 'keys')
          await backend.put('live/unseen', new TextEncoder().encode('hello'))
          // The same wait as the live check, bounded: it must not be met without the stream.
          await expect(
            mutant.waitForSelector('#view table a >> text="live/unseen"', { timeout: 3000 }),
          ).rejects.toThrow(/Timeout 3000ms exceeded/)
          // While the page that listens, at the same view, shows it.
          await page.waitForSelector('#view table a >> text="live/unseen"')
        } finally {
          await closeRouted(cut)
        }
      })

      it('the reconciliation check fails on a server that shows a run as it first read it (mutant)', async () => {
        // The mutant: the server's run answer kept from its first read of each run, so the
        // reconciled effect stays unknown on the run's page.
        const first = new Map<unknown, Record<string, unknown>>()
        await withMutatedAnswer(
          'run',
          (body) => {
            if (!first.has(body.runId)) first.set(body.runId, body)
            return first.get(body.runId) as Record<string, unknown>
          },
          async (other) => {
            await expect(expectReconciliationShown(other, 'reconciled-mutant')).rejects.toThrow(
              /after reconciliation: no unsettled effect shown/,
            )
          },
        )
      })

      it('the next-wake check fails on a server that shows no wake (mutant)', async () => {
        // The mutant: the server's worker answer as it would be if it ignored the wakes.
        await withMutatedAnswer(
          'worker',
          (body) => ({ ...body, nextWake: '-' }),
          async (other) => {
            await expect(expectNextWake(other)).rejects.toThrow(/napper: next wake/)
          },
        )
      })

      it("the steps check fails on a page that drops the steps' outputs (mutant)", async () => {
        // The render of each step's outputs, given no lines.
        await withMutatedAsset(
          '/app.js',
          '-outputs`, step.outputs.lines)',
          '-outputs`, [])',
          {},
          async (other) => {
            const failures = await stepFailures(other, backend, 'steps')
            expect(failures).toHaveLength(STEP_RUN_STEPS)
            expect(failures.every((f) => /^step \d+: outputs shown "", stored /.test(f))).toBe(true)
          },
        )
      })

      it('the daemon check fails on a server that counts the queue without its in-flight event (mutant)', async () => {
        const counted = (body: Record<string, unknown>) => ({ ...body, queued: body.pending })
        await withMutatedAnswer('daemon', counted, async (other) => {
          expect(await daemonFailures(other, backend, 'inbox')).toEqual([
            'queue: shown 2 of 8, recorded 3 of 8',
          ])
        })
      })

      it('the session check fails on a server that hides the conflict-policy overrides (mutant)', async () => {
        await withMutatedAnswer(
          'session',
          (body) => ({ ...body, overrides: [] }),
          async (other) => {
            const failures = await sessionFailures(other, backend, 'policy-7')
            expect(failures).toHaveLength(1)
            expect(failures[0]).toMatch(/^overrides: shown \[\], stored \[\["hasty","ignore","/)
          },
        )
      })

      it('the timeline check fails on a page whose time axis is not linear (mutant)', async () => {
        const SCALE = '((Date.parse(at) - t0) / span) * TL.width'
        const bent = 'Math.sqrt((Date.parse(at) - t0) / span) * TL.width'
        await withMutatedAsset('/app.js', SCALE, bent, {}, async (other) => {
          await show(other, `#/run/${ref('ledger')}`, 'run')
          const failures = await timelineFailures(other, backend, 'ledger')
          expect(failures.length).toBeGreaterThan(0)
          expect(failures.every((f) => /^effect e-|^run \(audit\)|^step #/.test(f))).toBe(true)
        })
      })

      it('the keyboard check fails on a page with a navigation link out of the tab order (mutant)', async () => {
        const LINK = '<a href="#/daemons">'
        const skipped = '<a href="#/daemons" tabindex="-1">'
        await withMutatedAsset('/', LINK, skipped, {}, async (other) => {
          expect(await keyboardFailures(other, ui.origin)).toEqual([
            'daemons: its navigation link is not reached by the keyboard',
          ])
        })
      })

      it('the accessibility check fails on a page whose form controls have no label (mutant)', async () => {
        const LABEL = "el('label', { for: id }, label)"
        const unlabeled = "el('span', {}, label)"
        // The checker needs the CSP off (see accessibilityFailures).
        await withMutatedAsset('/app.js', LABEL, unlabeled, { bypassCSP: true }, async (other) => {
          // The two pages with form controls (the whole walk is the real check's).
          const where = `#/key/${ref('plain/a b ✓')}`
          await show(other, where, 'key')
          const failures = await accessibilityFailures(other, where)
          await show(other, `#/run/${ref('ledger')}`, 'run')
          failures.push(...(await accessibilityFailures(other, `#/run/${ref('ledger')}`)))
          expect(failures).toContain(
            `${where}: label (critical): Form elements must have labels, at #quarantine-reason`,
          )
          expect(
            failures.some((f) => f.startsWith(`#/run/${ref('ledger')}: select-name (critical)`)),
          ).toBe(true)
        })
      })

      it('the countdown check fails on a page whose countdown does not tick (mutant)', async () => {
        const TICK = 'setInterval(tickCountdowns, 1000)'
        await withMutatedAsset('/app.js', TICK, 'void tickCountdowns', {}, async (other) => {
          const failures = await countdownFailures(other, backend, 'ticker')
          // The lease was taken when the suite seeded (10 min TTL), minutes ago on a loaded machine.
          expect(failures[0]).toMatch(/^the countdown stayed at in \d+m \d+s for 4 s$/)
          // And, 4 s stale by then, it may no longer agree with the lease.
          expect(failures.slice(1).every((f) => /^countdown in \d+m \d+s, /.test(f))).toBe(true)
        })
      })

      it('the hostile check fails on a page that renders data as markup (mutant), and catches the script once the CSP is off too', async () => {
        const RENDER = 'node.textContent = value'
        for (const bypassCSP of [false, true]) {
          await withMutatedAsset(
            '/app.js',
            RENDER,
            'node.innerHTML = value',
            { bypassCSP },
            async (other) => {
              const failures = await hostileFailures(other)
              expect(failures.some((f) => f.startsWith('listing:'))).toBe(true)
              expect(failures.some((f) => /element\(s\) made from data/.test(f))).toBe(true)
              // With the CSP on, the markup gets in but no handler runs: the second layer.
              expect(failures.some((f) => f.startsWith('a script ran'))).toBe(bypassCSP)
            },
          )
        }
      })
    }
  })
}

/**
 * The demo's scenario (`agent-state demo`, the real command, on the filesystem backend) and
 * then `agent-state ui` on the namespace it printed: the runs and workers tables against the
 * runtime's records, and the researcher's run, whose payment was `submitted` when its agent
 * was killed and was confirmed by the reconciliation of the next owner: no unsettled effect,
 * the audit trail (`effect_reconciled` among it) and every step's outputs as recorded. Last in
 * the file: the demo runs from the file's start ({@link demoLeft}), beside the other views.
 */
describe('agent-state ui on what agent-state demo left (fs)', () => {
  let ui: UiProcess
  let backend: Backend
  let context: BrowserContext
  let page: Page
  beforeAll(async () => {
    const { url, namespace } = await demoLeft()
    ;({ ui, backend, context, page } = await openInspector(
      url,
      ['--namespace', namespace],
      namespace,
    ))
  }, 300_000)
  afterAll(() => closeInspector({ ui, backend, context }))

  it("shows the demo's runs and workers as recorded, and the reconciled effect as settled", async () => {
    await show(page, '#/runs', 'runs')
    const runs = (await tableRows(page)).map((row) => row.slice(0, 4))
    const recorded = await Promise.all(
      ['researcher-ticket', 'reviewer-fix'].map(async (runId) => {
        const { head } = await inspectRun(backend, runId)
        return [runId, head.status, head.attempt.attemptId, String(head.attemptCount)]
      }),
    )
    expect(runs).toEqual(recorded)
    await show(page, '#/workers', 'workers')
    const workers = (await tableRows(page)).map((row) => row.slice(0, 2))
    expect(workers).toEqual(
      await Promise.all(
        ['researcher', 'reviewer'].map(async (id) => [
          id,
          (await inspectWorker(backend, id)).status,
        ]),
      ),
    )
    await show(page, '#/overview', 'overview')
    expect(await page.$$eval('#attention li', (items) => items.length)).toBe(0)
    // The payment: submitted at the kill, confirmed by the next owner's reconciliation.
    const run = await inspectRun(backend, 'researcher-ticket')
    expect(run.head.audit.map((a) => a.event)).toContain('effect_reconciled')
    await show(page, `#/run/${ref('researcher-ticket')}`, 'run')
    expect(await page.textContent('#effects-none')).toBe(
      'None: every effect is confirmed or failed.',
    )
    const trail = await tableRows(page, '#view table:nth-of-type(2)')
    expect(trail.map((row) => [row[0], row[1], row[2]])).toEqual(
      run.head.audit.map((a) => [a.event, a.at, a.attemptId]),
    )
    await shot(page, 'demo-run')
    expect(await stepFailures(page, backend, 'researcher-ticket')).toEqual([])
  })
})
