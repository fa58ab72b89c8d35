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
  // Runs and workers have a page of their own: their first cell links to it.
  const detail = { runs: 'run', workers: 'worker' }[name]
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

async function keyView(ref) {
  const k = await api(`/api/key?ref=${encodeURIComponent(ref)}`)
  const p = k.preview
  const m = k.meta
  const described =
    p === null
      ? 'no value'
      : p.kind === 'not-read'
        ? `${p.size} bytes: over the preview's read limit, not read`
        : `${p.kind}, ${p.truncated ? `first ${p.shownBytes} of ${p.size} bytes shown` : `${p.size} bytes`}`
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
    p === null || p.kind === 'not-read'
      ? null
      : setText(el('pre', { id: 'preview' }), p.lines.join('\n')),
  ]
}

function lines(id, values) {
  return setText(el('pre', { id }), values.join('\n'))
}

async function runView(ref) {
  const r = await api(`/api/run?ref=${encodeURIComponent(ref)}`)
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
        ['next', r.lastStep?.next ?? '-'],
        ['settled effects', String(r.settled)],
        ['created', r.createdAt],
        ['updated', r.updatedAt],
      ],
    ),
    el('h2', {}, 'Effects not settled (unknown first)'),
    r.effects.length === 0
      ? el('p', { class: 'note', id: 'effects-none' }, 'None: every effect is confirmed or failed.')
      : effects,
    el('h2', {}, 'Last step'),
    r.lastStep === null
      ? el('p', { class: 'note' }, 'No step committed.')
      : el(
          'div',
          {},
          el('p', {}, `#${r.lastStep.seq} ${r.lastStep.step} at ${r.lastStep.committedAt}`),
          lines('outputs', r.lastStep.outputs),
        ),
    el('h2', {}, 'Audit trail'),
    table(
      ['event', 'at', 'attempt', 'detail'],
      r.audit.map((a) => [a.event, a.at, a.attemptId, a.detail]),
    ),
  ]
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
            : `held by ${w.lease.holder}, token ${w.lease.token}, until ${w.lease.expiresAt}`,
        ],
        ['lease expired', w.leaseExpired ? 'yes: running, and nobody holds it' : 'no'],
        ['summary', w.summary ?? '-'],
        ['transcript', `${w.transcriptLength} entries`],
        ['created', w.createdAt],
        ['updated', w.updatedAt],
      ],
      (i) => (i === 3 && w.leaseExpired ? 'attention' : ''),
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

const ROUTES = [
  [/^overview$/, () => overviewView(), 'overview'],
  [/^keys$/, (_m, params) => keysView(params), 'keys'],
  [/^key\/([A-Za-z0-9_-]*)$/, (m) => keyView(m[1]), 'key'],
  [/^run\/([A-Za-z0-9_-]+)$/, (m) => runView(m[1]), 'run'],
  [/^worker\/([A-Za-z0-9_-]+)$/, (m) => workerView(m[1]), 'worker'],
  [/^(runs|workers|daemons|sessions)$/, (m) => listView(m[1]), null],
]

let rendering = 0

/** Renders the view the address names; `refresh`: the same view again, after a change. */
async function render(refresh = false) {
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

/** Re-renders on every `change` of the server's event stream, one render at a time. */
function listen() {
  const status = document.getElementById('live')
  const events = new EventSource('/api/events')
  let busy = false
  let again = false
  const refresh = async () => {
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
    setText(document.getElementById('backend'), `${b.name} ${b.url} (namespace ${b.namespace})`)
  } catch {
    // The view itself shows the error.
  }
  window.addEventListener('hashchange', () => render())
  listen()
  await render()
}

start()
