// The page of `agent-state ui`: plain DOM, no framework, no build step (see the CLI README).
// Every string from the server is put on the page by setText, as text: never as markup.
// The server has already escaped control and bidirectional formatting characters in it.

/** The one place data becomes page content: always as text, never as markup. */
function setText(node, value) {
  node.textContent = value
  return node
}

/** An element with attributes (fixed names; values from this file or base64url refs) and children. */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag)
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, value)
  for (const child of children) {
    if (child === null || child === undefined) continue
    node.append(typeof child === 'string' ? setText(document.createElement('span'), child) : child)
  }
  return node
}

function table(headers, rows, rowClass) {
  return el(
    'table',
    {},
    el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { scope: 'col' }, h)))),
    el(
      'tbody',
      {},
      ...rows.map((cells, i) =>
        el('tr', { class: rowClass?.(i) ?? '' }, ...cells.map((c) => el('td', {}, c))),
      ),
    ),
  )
}

async function api(path) {
  const response = await fetch(path, { credentials: 'same-origin', cache: 'no-store' })
  const body = await response.json().catch(() => ({ error: `HTTP ${response.status}` }))
  if (!response.ok) throw new Error(body.error ?? `HTTP ${response.status}`)
  return body
}

/** The operator actions the server allows (`{ operator, token }`), or null: read-only. */
let actions = null

/** Sends one operator action; resolves to what the server says it did. */
async function act(name, body) {
  const response = await fetch(`/api/action/${name}`, {
    method: 'POST',
    credentials: 'same-origin',
    cache: 'no-store',
    headers: { 'Content-Type': 'application/json', 'X-Agent-State-Action-Token': actions.token },
    body: JSON.stringify(body),
  })
  const answer = await response.json().catch(() => ({ error: `HTTP ${response.status}` }))
  if (!response.ok) throw new Error(answer.error ?? `HTTP ${response.status}`)
  return answer.done
}

/** A labelled form control (`input`, `select` or `textarea`) with the id `id`. */
function control(id, label, node) {
  node.id = id
  return el('p', {}, el('label', { for: id }, label), ' ', node)
}

/**
 * An action panel with its confirmation step: `ask` checks the fields and returns the
 * question (or throws what is missing); only Confirm sends the action; Cancel sends nothing.
 * The outcome is shown in `#action-status`, which outlives the view's re-render.
 */
function actionPanel(prefix, title, controls, ask, run) {
  const status = document.getElementById('action-status')
  const question = el('p', { id: `${prefix}-question` })
  const confirm = el(
    'div',
    { class: 'confirm', id: `${prefix}-confirmation`, role: 'alertdialog', 'aria-label': title },
    question,
    el('button', { type: 'button', id: `${prefix}-confirm` }, 'Confirm'),
    ' ',
    el('button', { type: 'button', id: `${prefix}-cancel` }, 'Cancel'),
  )
  confirm.hidden = true
  const problem = el('p', { class: 'error', id: `${prefix}-problem`, role: 'alert' })
  const askButton = el('button', { type: 'button', id: `${prefix}-ask` }, `${title}…`)
  askButton.addEventListener('click', () => {
    setText(problem, '')
    try {
      setText(question, ask())
      confirm.hidden = false
      confirm.querySelector('button').focus()
    } catch (error) {
      setText(problem, String(error.message ?? error))
    }
  })
  confirm.querySelector(`#${prefix}-cancel`).addEventListener('click', () => {
    confirm.hidden = true
    askButton.focus()
  })
  confirm.querySelector(`#${prefix}-confirm`).addEventListener('click', async () => {
    confirm.hidden = true
    document.activeElement?.blur()
    status.className = ''
    setText(status, `${title}: working…`)
    let outcome
    let done = false
    try {
      outcome = await run()
      done = true
    } catch (error) {
      outcome = `${title} refused: ${String(error.message ?? error)}`
    }
    // The view after the action first, then the outcome: once it shows, the page is current.
    await render(true, true)
    setText(status, outcome)
    status.className = done ? 'done' : 'error'
  })
  return el(
    'section',
    { class: 'action', id: `${prefix}-panel`, 'aria-label': title },
    el('h2', {}, title),
    el('p', { class: 'note' }, `As operator ${actions.operator}; audited.`),
    ...controls,
    askButton,
    problem,
    confirm,
  )
}

function required(id, what) {
  const value = document.getElementById(id).value.trim()
  if (value === '') throw new Error(`${what} is required`)
  return value
}

function bytes(n) {
  return n === null || n === undefined ? '-' : `${n} B`
}

async function overviewView() {
  const o = await api('/api/overview')
  const c = o.counts
  const more = (part) => (part.truncated ? ` (first ${o.scanLimit} read)` : '')
  const caps = o.backend.capabilities
  return [
    el('h1', {}, 'Overview'),
    el('h2', {}, 'Needs attention'),
    o.attention.length === 0
      ? el('p', { class: 'note', id: 'attention-none' }, 'Nothing needs attention.')
      : el(
          'ul',
          { class: 'attention', id: 'attention' },
          ...o.attention.map((item) =>
            el(
              'li',
              { class: `attention kind-${item.kind}`, 'data-kind': item.kind },
              el('a', { href: `#/${item.view}` }, item.kind),
              ' ',
              el('strong', {}, item.subject),
              ': ',
              item.detail,
            ),
          ),
        ),
    el('h2', {}, 'Counts'),
    table(
      ['kind', 'count', 'by state'],
      [
        ['sessions', `${c.sessions.total}${more(c.sessions)}`, ''],
        [
          'workers',
          `${c.workers.total}${more(c.workers)}`,
          Object.entries(c.workers.byState)
            .map(([k, v]) => `${k}: ${v}`)
            .join(', '),
        ],
        [
          'runs',
          `${c.runs.total}${more(c.runs)}`,
          Object.entries(c.runs.byStatus)
            .map(([k, v]) => `${k}: ${v}`)
            .join(', '),
        ],
        ['daemons', `${c.daemons.total}${more(c.daemons)}`, ''],
      ],
    ),
    el('h2', {}, 'Backend'),
    table(
      ['field', 'value'],
      [
        ['backend', o.backend.name],
        ['url', o.backend.url],
        ['namespace', o.backend.namespace],
        ...Object.entries(caps).map(([k, v]) => [
          `capabilities.${k}`,
          typeof v === 'object' ? JSON.stringify(v) : String(v),
        ]),
      ],
    ),
  ]
}

async function listView(name) {
  const v = await api(`/api/view/${name}`)
  const unknownColumn = v.headers.indexOf('UNKNOWN')
  // Each run, worker, daemon and session has a page of its own: the first cell links to it.
  const detail = { runs: 'run', workers: 'worker', daemons: 'daemon', sessions: 'session' }[name]
  const body = table(
    v.headers,
    v.rows.map((r) =>
      detail === undefined || r.broken
        ? r.cells
        : [el('a', { href: `#/${detail}/${r.ref}` }, r.cells[0]), ...r.cells.slice(1)],
    ),
    (i) => (v.rows[i].broken ? 'broken' : v.rows[i].attention ? 'attention' : ''),
  )
  if (unknownColumn >= 0) {
    // Unknown effects stand out: the cell of every run that has one.
    body.querySelectorAll('tbody tr').forEach((tr, i) => {
      if (Number(v.rows[i].cells[unknownColumn]) > 0)
        tr.children[unknownColumn].classList.add('state-unknown')
    })
  }
  return [
    el('h1', {}, name[0].toUpperCase() + name.slice(1)),
    v.rows.length === 0 ? el('p', { class: 'note' }, `No ${name}.`) : body,
    v.truncated ? el('p', { class: 'note' }, `Only the first ${v.scanLimit} are shown.`) : null,
  ]
}

async function keysView(params) {
  const prefixRef = params.get('prefix') ?? ''
  const cursor = params.get('cursor')
  const query = new URLSearchParams({ prefix: prefixRef })
  if (cursor !== null) query.set('cursor', cursor)
  const page = await api(`/api/keys?${query}`)
  const rows = [
    ...page.prefixes.map((p) => [
      el('a', { href: `#/keys?prefix=${p.ref}` }, p.name),
      'prefix',
      '',
      '',
      '',
    ]),
    ...page.keys.map((k) => [
      el('a', { href: `#/key/${k.ref}` }, k.name),
      'key',
      bytes(k.size),
      k.updatedAt ?? '-',
      k.version,
    ]),
  ]
  return [
    el('h1', {}, 'Keys'),
    el(
      'p',
      {},
      'Prefix: ',
      el('code', { id: 'prefix' }, page.prefix.name === '' ? '(root)' : page.prefix.name),
    ),
    rows.length === 0
      ? el('p', { class: 'note' }, 'No keys here.')
      : table(['name', 'type', 'size', 'updated', 'version'], rows),
    page.next === null
      ? el('p', { class: 'note', id: 'last-page' }, 'Last page.')
      : el(
          'p',
          {},
          el(
            'a',
            {
              id: 'next-page',
              href: `#/keys?${new URLSearchParams({ prefix: prefixRef, cursor: page.next })}`,
            },
            'Next page',
          ),
        ),
  ]
}

/** What a value preview from the server is: its kind and size, and how much of it is shown. */
function previewText(p) {
  return p === null
    ? 'no value'
    : p.kind === 'not-read'
      ? `${p.size} bytes: over the preview's read limit, not read`
      : `${p.kind}, ${p.truncated ? `first ${p.shownBytes} of ${p.size} bytes shown` : `${p.size} bytes`}`
}

async function keyView(ref) {
  const k = await api(`/api/key?ref=${encodeURIComponent(ref)}`)
  const p = k.preview
  const m = k.meta
  const described = previewText(p)
  return [
    el('h1', {}, 'Key'),
    el('p', {}, el('code', { id: 'key-name' }, k.key.name)),
    table(
      ['field', 'value'],
      [
        ['version', m?.version ?? '-'],
        ['size', m === null ? 'no value' : `${m.size} bytes`],
        ['writer', m?.writer ?? '-'],
        ['updated', m?.updatedAt ?? '-'],
        [
          'lease',
          k.lease === null
            ? 'none'
            : `held by ${k.lease.holder}, token ${k.lease.token}, until ${k.lease.expiresAt}`,
        ],
      ],
    ),
    el('h2', {}, 'Value'),
    el('p', { id: 'preview-kind' }, described),
    p === null || p.kind === 'not-read' ? null : lines('preview', p.lines),
    actions === null || m === null
      ? null
      : actionPanel(
          'quarantine',
          'Quarantine this record',
          [control('quarantine-reason', 'Reason (required)', el('input', { type: 'text' }))],
          () =>
            `Move ${k.key.name} aside to quarantine/ (its bytes kept, the key removed), because: ${required('quarantine-reason', 'A reason')}?`,
          () =>
            act('quarantine', {
              key: ref,
              reason: required('quarantine-reason', 'A reason'),
            }),
        ),
  ]
}

/**
 * A block that may scroll (a `pre`, the timeline): a tab stop, so a keyboard user can
 * scroll it too (axe-core's `scrollable-region-focusable`).
 */
function scrollable(node) {
  node.setAttribute('tabindex', '0')
  return node
}

function lines(id, values) {
  return scrollable(setText(el('pre', { id }), values.join('\n')))
}

/** The run page's panel to resolve a submitted or unknown effect (`resolveEffect`). */
function resolvePanel(runRef, r) {
  const open = r.effects.filter((e) => e.state === 'unknown' || e.state === 'submitted')
  if (actions === null || open.length === 0) return null
  const effect = el('select', {}, ...open.map((e) => el('option', { value: e.ref }, e.effectId)))
  const action = el(
    'select',
    {},
    el('option', { value: 'confirm' }, 'confirm: it happened, with this result'),
    el('option', { value: 'fail' }, 'fail: it did not and must not happen'),
    el('option', { value: 'retry' }, 'allow a retry with the same idempotency key'),
  )
  const value = (id) => document.getElementById(id).value
  const body = () => {
    const chosen = value('resolve-action')
    const b = { run: runRef, effect: value('resolve-effect'), action: chosen }
    b.reason = required('resolve-reason', 'A reason')
    if (chosen === 'confirm') {
      b.result = required('resolve-result', 'The result (JSON)')
      JSON.parse(b.result)
    }
    if (chosen === 'fail') b.message = required('resolve-message', 'A failure message')
    return b
  }
  const named = () => effect.selectedOptions[0]?.textContent ?? ''
  return actionPanel(
    'resolve',
    'Resolve an effect',
    [
      control('resolve-effect', 'Effect', effect),
      control('resolve-action', 'Decision', action),
      control('resolve-result', 'Result (JSON, for confirm)', el('textarea', { rows: '2' })),
      control('resolve-message', 'Failure message (for fail)', el('input', { type: 'text' })),
      control('resolve-reason', 'Reason (required)', el('input', { type: 'text' })),
    ],
    () => {
      const b = body()
      return `${b.action} effect ${named()} of run ${r.runId}, because: ${b.reason}?`
    },
    () => act('resolve-effect', body()),
  )
}

const SVG = 'http://www.w3.org/2000/svg'

/** An SVG element with attributes (fixed names; numbers, classes and ISO times as values). */
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag)
  for (const [name, value] of Object.entries(attrs ?? {})) node.setAttribute(name, String(value))
  for (const child of children) node.append(child)
  return node
}

/** An SVG `title` (the tooltip and accessible name), its text set as text. */
function svgTitle(text) {
  const node = document.createElementNS(SVG, 'title')
  node.textContent = text
  return node
}

/** Geometry of the timeline: label column, plot width, row height (pixels). */
const TL = { left: 170, width: 640, row: 22, top: 26 }

/**
 * The run's timeline: one row for the run's audit trail (creation, each attempt, each
 * operator resolution), one per committed step of the page of steps, and one per unsettled effect with
 * each transition, on one time axis from the first recorded time to the last. Each mark
 * carries its recorded time (`data-at`), so the page can be checked against the records.
 */
function timeline(r) {
  const rows = [
    {
      label: 'run (audit)',
      marks: r.audit.map((a) => ({ at: a.at, kind: a.event, what: a.event })),
    },
  ]
  for (const step of r.stepList)
    if (!step.missing)
      rows.push({
        label: `step #${step.seq}`,
        marks: [{ at: step.committedAt, kind: 'step', what: `${step.step} committed` }],
      })
  for (const e of r.effects)
    rows.push({
      label: `effect ${e.effectId}`,
      marks: e.transitions.map((t) => ({ at: t.at, kind: t.state, what: t.state })),
    })
  const times = rows.flatMap((row) => row.marks.map((m) => Date.parse(m.at)))
  const t0 = Math.min(...times)
  const t1 = Math.max(...times)
  const span = t1 > t0 ? t1 - t0 : 1
  const x = (at) => TL.left + ((Date.parse(at) - t0) / span) * TL.width
  const height = TL.top + rows.length * TL.row + 8
  const labelOf = (ms) => new Date(ms).toISOString()
  const picture = svg(
    'svg',
    {
      id: 'timeline',
      role: 'img',
      width: TL.left + TL.width + 20,
      height,
      viewBox: `0 0 ${TL.left + TL.width + 20} ${height}`,
      'aria-labelledby': 'timeline-title',
    },
    svg('title', { id: 'timeline-title' }),
    svg('text', { x: TL.left, y: 14, class: 'tl-axis', id: 'timeline-start' }),
    svg('text', {
      x: TL.left + TL.width,
      y: 14,
      class: 'tl-axis',
      'text-anchor': 'end',
      id: 'timeline-end',
    }),
  )
  setText(
    picture.querySelector('#timeline-title'),
    `Timeline of run ${r.runId}, ${labelOf(t0)} to ${labelOf(t1)}`,
  )
  setText(picture.querySelector('#timeline-start'), labelOf(t0))
  setText(picture.querySelector('#timeline-end'), labelOf(t1))
  rows.forEach((row, i) => {
    const y = TL.top + i * TL.row + TL.row / 2
    const label = svg('text', { x: 4, y: y + 4, class: 'tl-label' })
    label.textContent = row.label
    picture.append(
      label,
      svg('line', { x1: TL.left, x2: TL.left + TL.width, y1: y, y2: y, class: 'tl-line' }),
    )
    for (const m of row.marks) {
      picture.append(
        svg(
          'circle',
          {
            cx: x(m.at),
            cy: y,
            r: 5,
            class: `tl-mark tl-${m.kind}`,
            'data-row': row.label,
            'data-at': m.at,
          },
          svgTitle(`${row.label}: ${m.what} at ${m.at}`),
        ),
      )
    }
  })
  return picture
}

/**
 * The paging of a run's unsettled effects: the counts (exact, or a lower bound past the
 * server's count limit), what this page read by state, the filter (all, or unknown only)
 * and the next page. The server reads one page of effect records per view, never them all.
 */
function effectPaging(ref, r) {
  const at = (query) => `#/run/${ref}${query.size === 0 ? '' : `?${query}`}`
  const more = r.counts.exact ? '' : ' or more'
  const byState = Object.entries(r.effectPage.byState)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ')
  const filtered = r.effectPage.state
  const links = [
    el(
      'a',
      {
        id: 'effects-filter',
        href: at(new URLSearchParams(filtered === null ? { state: 'unknown' } : {})),
      },
      filtered === null ? 'Unknown only' : 'All unsettled',
    ),
  ]
  if (!r.effectPage.first)
    links.push(
      ' ',
      el(
        'a',
        {
          id: 'effects-first',
          href: at(new URLSearchParams(filtered === null ? {} : { state: filtered })),
        },
        'First page',
      ),
    )
  if (r.effectPage.next !== null) {
    const next = new URLSearchParams({ effects: r.effectPage.next })
    if (filtered !== null) next.set('state', filtered)
    links.push(' ', el('a', { id: 'effects-next', href: at(next) }, 'Next page of effects'))
  }
  return [
    el(
      'p',
      { id: 'effect-counts' },
      `${r.counts.unsettled}${more} unsettled of ${r.counts.effects}${more} effects; this page read ${r.effectPage.read} (${byState || 'none unsettled'})${filtered === null ? '' : `, showing ${filtered} only`}.`,
    ),
    el('p', {}, ...links),
  ]
}

/**
 * A page of the run's committed steps, newest first, each with its outputs (pretty-printed
 * JSON, or its first bytes and size when large), and links to the newer and older pages
 * (`?steps=<newest seq of the page>`, the effects' paging kept).
 */
function stepSection(ref, r, params) {
  const at = (newest) => {
    const query = new URLSearchParams(params)
    if (newest === null) query.delete('steps')
    else query.set('steps', String(newest))
    return `#/run/${ref}${query.size === 0 ? '' : `?${query}`}`
  }
  const p = r.stepPage
  if (p.count === 0) return [el('p', { class: 'note', id: 'steps-none' }, 'No step committed.')]
  const links = []
  if (p.newer !== null)
    links.push(
      el('a', { id: 'steps-newest', href: at(null) }, 'Newest steps'),
      ' ',
      el('a', { id: 'steps-newer', href: at(p.newer) }, 'Newer steps'),
    )
  if (p.older !== null)
    links.push(
      links.length > 0 ? ' ' : null,
      el('a', { id: 'steps-older', href: at(p.older) }, 'Older steps'),
    )
  return [
    el('p', { id: 'step-paging' }, `Steps ${p.newest} to ${p.oldest} of ${p.count}, newest first.`),
    links.length > 0 ? el('p', {}, ...links) : null,
    ...r.stepList.map((step) =>
      step.missing
        ? el(
            'p',
            { class: 'note attention', id: `step-${step.seq}` },
            `#${step.seq}: gone since the run was read`,
          )
        : el(
            'div',
            { class: 'step', id: `step-${step.seq}` },
            el('h3', {}, `#${step.seq} ${step.step}`),
            el(
              'p',
              { id: `step-${step.seq}-meta` },
              `committed at ${step.committedAt} by attempt ${step.attemptId}; next: ${step.next ?? '- (the end)'}; outputs: ${previewText(step.outputs)}`,
            ),
            lines(`step-${step.seq}-outputs`, step.outputs.lines),
          ),
    ),
  ]
}

async function runView(ref, params) {
  const query = new URLSearchParams({ ref })
  for (const name of ['effects', 'state', 'steps']) {
    const value = params.get(name)
    if (value !== null) query.set(name, value)
  }
  const r = await api(`/api/run?${query}`)
  const effects = table(
    ['effect', 'kind', 'state', 'idempotency key', 'retry allowed', 'history'],
    r.effects.map((e) => [
      e.effectId,
      e.kind,
      e.state,
      e.idempotencyKey,
      String(e.retryAllowed),
      e.history.join('\n'),
    ]),
    (i) => (r.effects[i].state === 'unknown' ? 'attention' : ''),
  )
  effects.querySelectorAll('tbody tr').forEach((tr, i) => {
    tr.children[2].classList.add(`state-${r.effects[i].state}`)
  })
  return [
    el('h1', {}, 'Run ', el('code', { id: 'run-id' }, r.runId)),
    table(
      ['field', 'value'],
      [
        ['status', r.status],
        ['attempt', `${r.attempt.id} (holder ${r.attempt.holder})`],
        ['attempts', String(r.attempt.count)],
        ['steps', String(r.steps)],
        ['next', r.next ?? '-'],
        [
          'settled effects',
          r.settled === null
            ? `not counted (over ${r.counts.limit} unsettled)`
            : `${r.settled}${r.counts.exact ? '' : ' or more'}`,
        ],
        ['created', r.createdAt],
        ['updated', r.updatedAt],
      ],
    ),
    el('h2', {}, 'Timeline'),
    scrollable(el('div', { class: 'timeline' }, timeline(r))),
    el('h2', {}, 'Effects not settled (unknown first)'),
    ...effectPaging(ref, r),
    r.effects.length > 0
      ? effects
      : r.counts.unsettled === 0
        ? el(
            'p',
            { class: 'note', id: 'effects-none' },
            'None: every effect is confirmed or failed.',
          )
        : el('p', { class: 'note', id: 'effects-none-here' }, 'None on this page.'),
    resolvePanel(ref, r),
    el('h2', {}, 'Steps and their outputs'),
    ...stepSection(ref, r, params),
    el('h2', {}, 'Audit trail'),
    table(
      ['event', 'at', 'attempt', 'detail'],
      r.audit.map((a) => [a.event, a.at, a.attemptId, a.detail]),
    ),
  ]
}

/**
 * `in 9m 58s` until the time `iso`, or `expired 3s ago`: the page's clock against a lease's
 * recorded expiry (the backend's clock when its leases use it; the same machine's here).
 */
function countdown(iso) {
  const ms = Date.parse(iso) - Date.now()
  const s = Math.floor(Math.abs(ms) / 1000)
  const h = Math.floor(s / 3600)
  const text = `${h > 0 ? `${h}h ` : ''}${Math.floor((s % 3600) / 60)}m ${s % 60}s`
  return ms > 0 ? `in ${text}` : `expired ${text} ago`
}

/** Moves every countdown on the page on (once a second, from {@link start}). */
function tickCountdowns() {
  for (const node of document.querySelectorAll('[data-countdown]'))
    setText(node, countdown(node.getAttribute('data-countdown')))
}

async function workerView(ref) {
  const w = await api(`/api/worker?ref=${encodeURIComponent(ref)}`)
  return [
    el('h1', {}, 'Worker ', el('code', { id: 'worker-id' }, w.workerId)),
    table(
      ['field', 'value'],
      [
        ['state', w.status],
        ['turns', String(w.iterationsCompleted)],
        [
          'lease',
          w.lease === null
            ? 'none'
            : el(
                'span',
                {},
                `held by ${w.lease.holder}, fencing token ${w.lease.token}, until ${w.lease.expiresAt}, `,
                el(
                  'span',
                  { id: 'lease-countdown', 'data-countdown': w.lease.expiresAt },
                  countdown(w.lease.expiresAt),
                ),
              ),
        ],
        ['lease expired', w.leaseExpired ? 'yes: running, and nobody holds it' : 'no'],
        ['summary', w.summary ?? '-'],
        ['next wake', w.nextWake],
        ['transcript', `${w.transcriptLength} entries`],
        ['created', w.createdAt],
        ['updated', w.updatedAt],
      ],
      (i) => (i === 3 && w.leaseExpired ? 'attention' : ''),
    ),
    actions === null || w.status !== 'suspended'
      ? null
      : actionPanel(
          'close',
          'Close this worker',
          [],
          () => `Close worker ${w.workerId} for good (later resumes fail with WORKER_CLOSED)?`,
          () => act('close-worker', { worker: ref }),
        ),
    el('h2', {}, 'Suspension'),
    w.suspension === null
      ? el('p', { class: 'note' }, 'Not suspended.')
      : lines('suspension', w.suspension),
    el('h2', {}, 'Resume conditions'),
    w.conditions === null ? el('p', { class: 'note' }, 'None.') : lines('conditions', w.conditions),
    el('h2', {}, 'State'),
    lines('state', w.state),
    el('h2', {}, 'Audit trail'),
    w.audit.length === 0 ? el('p', { class: 'note' }, 'Empty.') : lines('audit', w.audit),
  ]
}

async function daemonView(ref) {
  const d = await api(`/api/daemon?ref=${encodeURIComponent(ref)}`)
  const f = d.inflight
  return [
    el('h1', {}, 'Daemon ', el('code', { id: 'daemon-id' }, d.daemonId)),
    table(
      ['field', 'value'],
      [
        ['state', d.state],
        ['queue', `${d.queued} of ${d.capacity}${d.full ? ': full, triggers are refused' : ''}`],
        ['pending', String(d.pending)],
        ['acknowledged', String(d.acknowledged)],
        ['wake interval', d.wakeIntervalMs === null ? '-' : `${d.wakeIntervalMs} ms`],
        ['watch paths', d.watchPaths.length === 0 ? '-' : d.watchPaths.join('\n')],
        ['saved', d.savedAt ?? '-'],
      ],
      (i) => (i === 1 && d.full ? 'attention' : ''),
    ),
    el('h2', {}, 'In-flight delivery'),
    f === null
      ? el('p', { class: 'note', id: 'inflight-none' }, 'None: no delivery holds an event.')
      : table(
          ['field', 'value'],
          [
            ['event', `#${f.seq} (${f.eventId})`],
            ['attempt', String(f.attempt)],
            ['holder', f.holder],
            ['triggered', f.triggeredAt],
            [
              'visibility deadline',
              `${f.visibleAgainAt}${f.expired ? ': passed, delivered again on the next claim' : ''}`,
            ],
          ],
          (i) => (i === 4 && f.expired ? 'attention' : ''),
        ),
    el('h2', {}, 'Head event'),
    d.head === null
      ? el('p', { class: 'note', id: 'head-none' }, 'The queue is empty.')
      : el(
          'div',
          {},
          el('p', { id: 'head-delivery' }, d.head.delivery),
          lines('head-event', d.head.event),
        ),
  ]
}

async function sessionView(ref, params) {
  const cursor = params.get('cursor')
  const query = new URLSearchParams({ ref })
  if (cursor !== null) query.set('cursor', cursor)
  const s = await api(`/api/session?${query}`)
  const h = s.handoff
  return [
    el('h1', {}, 'Session ', el('code', { id: 'session-id' }, s.sessionId)),
    table(
      ['field', 'value'],
      [
        ['conflict policy', s.conflictPolicy],
        ['writers', s.writers.length === 0 ? '-' : s.writers.join('\n')],
        ['marker version', s.version],
      ],
    ),
    el('h2', {}, 'Conflict-policy overrides'),
    s.overrides.length === 0
      ? el('p', { class: 'note', id: 'overrides-none' }, 'None: every handle kept the policy.')
      : el(
          'div',
          { id: 'overrides' },
          table(
            ['writer', 'policy', 'at'],
            s.overrides.map((o) => [o.writer, o.policy, o.at]),
            () => 'attention',
          ),
        ),
    el('h2', {}, 'Handoff'),
    h === null
      ? el('p', { class: 'note', id: 'handoff-none' }, 'No handoff written.')
      : 'error' in h
        ? el('p', { class: 'error', id: 'handoff-error' }, h.error)
        : el(
            'div',
            {},
            el('p', { id: 'handoff-by' }, `by ${h.writer} at ${h.writtenAt}`),
            lines('handoff', h.envelope),
          ),
    el('h2', {}, 'Keys'),
    s.keys.length === 0
      ? el('p', { class: 'note', id: 'session-keys-none' }, 'No keys.')
      : el(
          'div',
          { id: 'session-keys' },
          table(
            ['key', 'writer', 'size', 'updated', 'version'],
            s.keys.map((k) => [
              el('a', { href: `#/key/${k.ref}` }, k.name),
              k.writer ?? '-',
              bytes(k.size),
              k.updatedAt ?? '-',
              k.version,
            ]),
          ),
        ),
    s.next === null
      ? null
      : el(
          'p',
          {},
          el(
            'a',
            {
              id: 'session-next',
              href: `#/session/${ref}?${new URLSearchParams({ cursor: s.next })}`,
            },
            'Next page of keys',
          ),
        ),
  ]
}

const ROUTES = [
  [/^overview$/, () => overviewView(), 'overview'],
  [/^keys$/, (_m, params) => keysView(params), 'keys'],
  [/^key\/([A-Za-z0-9_-]*)$/, (m) => keyView(m[1]), 'key'],
  [/^run\/([A-Za-z0-9_-]+)$/, (m, params) => runView(m[1], params), 'run'],
  [/^worker\/([A-Za-z0-9_-]+)$/, (m) => workerView(m[1]), 'worker'],
  [/^daemon\/([A-Za-z0-9_-]+)$/, (m) => daemonView(m[1]), 'daemon'],
  [/^session\/([A-Za-z0-9_-]+)$/, (m, params) => sessionView(m[1], params), 'session'],
  [/^(runs|workers|daemons|sessions)$/, (m) => listView(m[1]), null],
]

let rendering = 0

/**
 * Renders the view the address names; `refresh`: the same view again, after a change, unless
 * the operator is in an action panel (then later: it would wipe what they typed), or `force`.
 */
async function render(refresh = false, force = false) {
  const main = document.getElementById('view')
  const hash = location.hash
  const [path, search] = hash.replace(/^#\/?/, '').split('?')
  const route = ROUTES.find(([pattern]) => pattern.test(path || 'overview'))
  const name = path || 'overview'
  const current = ++rendering
  if (!refresh) main.removeAttribute('data-ready')
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#/${name.split('/')[0]}`) a.setAttribute('aria-current', 'page')
    else a.removeAttribute('aria-current')
  }
  let content
  let view
  try {
    if (route === undefined) throw new Error('no such view')
    const [pattern, build, label] = route
    const match = pattern.exec(name)
    view = label ?? match[1]
    content = await build(match, new URLSearchParams(search ?? ''))
  } catch (error) {
    view = 'error'
    content = [
      el('h1', {}, 'Error'),
      el('p', { class: 'error', id: 'error' }, String(error.message ?? error)),
    ]
  }
  if (current !== rendering) return
  if (refresh && !force && editing()) {
    setTimeout(() => void render(true), 1000)
    return
  }
  const scrolled = window.scrollY
  main.replaceChildren(...content.filter((c) => c !== null))
  main.setAttribute('data-ready', view)
  // Counts renders, so a test (or a user script) can tell a new render from the previous one.
  main.setAttribute('data-render', String(current))
  main.setAttribute('data-hash', hash)
  // A new view takes the focus (for keyboard and screen-reader users); a refresh keeps the
  // reader's place instead.
  if (refresh) window.scrollTo(0, scrolled)
  else main.focus()
}

/** Whether the operator is filling in or confirming an action (focus in its panel). */
function editing() {
  return document.activeElement?.closest('.action') != null
}

/** Re-renders on every `change` of the server's event stream, one render at a time. */
function listen() {
  const status = document.getElementById('live')
  const events = new EventSource('/api/events')
  let busy = false
  let again = false
  const refresh = async () => {
    // A live refresh would wipe what the operator is typing into an action: wait until done.
    if (editing()) {
      setTimeout(() => void refresh(), 1000)
      return
    }
    if (busy) {
      again = true
      return
    }
    busy = true
    try {
      do {
        again = false
        await render(true)
      } while (again)
    } finally {
      busy = false
    }
  }
  events.addEventListener('hello', (event) => {
    const { mode } = JSON.parse(event.data)
    setText(status, mode === 'push' ? 'live' : 'live (every 5 s)')
  })
  events.addEventListener('change', () => void refresh())
  events.addEventListener('error', () => setText(status, 'not live: reconnecting'))
}

async function start() {
  try {
    const b = await api('/api/backend')
    actions = b.actions
    setText(
      document.getElementById('backend'),
      `${b.name} ${b.url} (namespace ${b.namespace})${actions === null ? '' : `, operator ${actions.operator}`}`,
    )
  } catch {
    // The view itself shows the error.
  }
  window.addEventListener('hashchange', () => render())
  setInterval(tickCountdowns, 1000)
  listen()
  await render()
}

start()
