import type { Spread } from '../stats.js'
import type { PathKind } from '../subject.js'
import { escapeXml, formatRatio, formatSpread } from './format.js'
import type { CaseSummary, RunSummary } from './summary.js'
import { LATENCY_TARGET } from './targets.js'

const SERIES: readonly { path: PathKind; color: string; label: string }[] = [
  { path: 'raw', color: '#4e79a7', label: 'vs raw client' },
  { path: 'keyv', color: '#f28e2b', label: 'vs Keyv' },
  { path: 'unstorage', color: '#59a14f', label: 'vs unstorage' },
]

/** Rows of the chart: the point workloads and the middle listing size. */
function chartRows(result: RunSummary): CaseSummary[] {
  const wanted = new Set([
    'put-1KiB',
    'cas',
    'create',
    'get-1KiB',
    'head',
    'delete',
    'lease',
    'list-10k',
  ])
  return result.cases.filter((row) => wanted.has(row.workload) && row.ratios.length > 0)
}

const MIN = 0.01
const MAX = 100

/** Rows of the latency panel: the operations the latency target covers. */
function latencyRows(result: RunSummary): CaseSummary[] {
  const wanted = new Set(['put-1KiB', 'cas', 'get-1KiB'])
  return result.cases.filter(
    (row) => wanted.has(row.workload) && row.ratios.some((ratio) => ratio.versus === 'raw'),
  )
}

/** A min–max whisker over a bar, when the figure comes from more than one full run. */
function whisker(spread: Spread | undefined, at: (ratio: number) => number, y: number): string[] {
  if (spread === undefined || spread.n < 2) return []
  const from = at(spread.min).toFixed(1)
  const to = at(spread.max).toFixed(1)
  return [
    `<line x1="${from}" y1="${y}" x2="${to}" y2="${y}" stroke="#000" stroke-width="1"/>`,
    `<line x1="${from}" y1="${y - 2}" x2="${from}" y2="${y + 2}" stroke="#000"/>`,
    `<line x1="${to}" y1="${y - 2}" x2="${to}" y2="${y + 2}" stroke="#000"/>`,
  ]
}

/**
 * Two horizontal bar charts on a log scale from 0.01× to 100×: agent-state's
 * throughput ratio against each other path (right of 1× = faster), and its
 * p50 latency ratio against the raw client for put, CAS and get with the
 * 1.15× target marked (left of the target line = target met). Ratios are
 * medians over the interleaved repetitions; headline rows measured in several
 * full runs show the median run's ratio with a min–max whisker.
 */
export function renderRatioSvg(result: RunSummary): string {
  const rows = chartRows(result)
  const latency = latencyRows(result)
  const labelWidth = 190
  const plotWidth = 560
  const barHeight = 6
  const rowHeight = SERIES.length * barHeight + 8
  const latencyRowHeight = 12
  const top = 70
  const firstBottom = top + rows.length * rowHeight
  const secondTop = firstBottom + 80
  const height = secondTop + latency.length * latencyRowHeight + 40
  const width = labelWidth + plotWidth + 150
  const scale =
    (min: number, max: number) =>
    (ratio: number): number => {
      const clamped = Math.min(max, Math.max(min, ratio))
      const share = (Math.log10(clamped) - Math.log10(min)) / (Math.log10(max) - Math.log10(min))
      return labelWidth + share * plotWidth
    }
  const x = scale(MIN, MAX)
  // The latency ratios sit between ~0.5x and a few x: a narrower log scale shows them.
  const xl = scale(0.5, 8)
  const axis = (
    from: number,
    to: number,
    marks: readonly number[],
    at: (ratio: number) => number = x,
  ): string[] =>
    marks.flatMap((tick) => {
      const tx = at(tick)
      const strong = tick === 1
      return [
        `<line x1="${tx.toFixed(1)}" y1="${from - 6}" x2="${tx.toFixed(1)}" y2="${to}" stroke="${strong ? '#000' : '#ddd'}" stroke-width="${strong ? 1.5 : 1}"/>`,
        `<text x="${tx.toFixed(1)}" y="${to + 14}" text-anchor="middle">${tick}×</text>`,
      ]
    })
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="10" y="18" font-size="14" font-weight="bold">agent-state throughput ratio (median of interleaved repetitions; headline rows: median of full runs, log scale)</text>`,
    `<text x="10" y="34">${escapeXml(`${result.startedAt.slice(0, 16)}Z, ${result.machine.cpuCount} × ${result.machine.cpus}, Node ${result.machine.node}. Right of 1× = agent-state faster.`)}</text>`,
  ]
  SERIES.forEach((series, index) => {
    const lx = labelWidth + index * 130
    parts.push(
      `<rect x="${lx}" y="44" width="12" height="10" fill="${series.color}"/>`,
      `<text x="${lx + 16}" y="53">${series.label}</text>`,
    )
  })
  parts.push(...axis(top, firstBottom + 4, [0.01, 0.1, 1, 10, 100]))
  rows.forEach((row, index) => {
    const y = top + index * rowHeight
    if (index > 0 && rows[index - 1]?.backend !== row.backend) {
      parts.push(`<line x1="0" y1="${y - 3}" x2="${width}" y2="${y - 3}" stroke="#999"/>`)
    }
    parts.push(
      `<text x="${labelWidth - 6}" y="${y + rowHeight / 2}" text-anchor="end">${escapeXml(`${row.backend} ${row.workload} c=${row.concurrency}`)}</text>`,
    )
    SERIES.forEach((series, seriesIndex) => {
      const ratio = row.ratios.find((candidate) => candidate.versus === series.path)
      if (ratio === undefined || !Number.isFinite(ratio.throughput)) return
      const by = y + seriesIndex * barHeight
      const from = x(1)
      const to = x(ratio.throughput)
      parts.push(
        `<rect x="${Math.min(from, to).toFixed(1)}" y="${by}" width="${Math.max(1, Math.abs(to - from)).toFixed(1)}" height="${barHeight - 1}" fill="${series.color}"><title>${escapeXml(`${row.backend} ${row.workload} c=${row.concurrency} ${series.label}: ${formatRatio(ratio.throughput)} throughput, ${formatRatio(ratio.latency)} p50 latency`)}</title></rect>`,
      )
      parts.push(...whisker(ratio.throughputSpread, x, by + (barHeight - 1) / 2))
      if (seriesIndex === 0 || ratio.throughput < MIN || ratio.throughput > MAX) {
        const right = Math.max(
          from,
          to,
          ratio.throughputSpread.n > 1 ? x(ratio.throughputSpread.max) : 0,
        )
        parts.push(
          `<text x="${(right + 3).toFixed(1)}" y="${by + barHeight - 1}" font-size="8">${escapeXml(formatSpread(ratio.throughputSpread, formatRatio))}</text>`,
        )
      }
    })
  })

  parts.push(
    `<text x="10" y="${secondTop - 30}" font-size="14" font-weight="bold">agent-state p50 latency ÷ raw client p50 (put, CAS, get; c=1 target ≤ ${LATENCY_TARGET}×)</text>`,
    `<text x="10" y="${secondTop - 14}">c=1: left of the red line = target met. Above c=1 (grey) the target is throughput, the latency is information. Log scale from 0.5× to 8×. Whiskers and brackets: min–max over the full runs.</text>`,
    ...axis(secondTop, secondTop + latency.length * latencyRowHeight + 4, [0.5, 1, 2, 4, 8], xl),
  )
  const targetX = xl(LATENCY_TARGET).toFixed(1)
  parts.push(
    `<line x1="${targetX}" y1="${secondTop - 6}" x2="${targetX}" y2="${secondTop + latency.length * latencyRowHeight + 4}" stroke="#d62728" stroke-dasharray="4 2"/>`,
  )
  latency.forEach((row, index) => {
    const y = secondTop + index * latencyRowHeight
    const ratio = row.ratios.find((candidate) => candidate.versus === 'raw')
    if (ratio === undefined || !Number.isFinite(ratio.latency)) return
    const from = xl(1)
    const to = xl(ratio.latency)
    const met = ratio.latency <= LATENCY_TARGET
    const fill = row.concurrency > 1 ? '#bab0ac' : met ? '#4e79a7' : '#e15759'
    parts.push(
      `<text x="${labelWidth - 6}" y="${y + latencyRowHeight - 3}" text-anchor="end">${escapeXml(`${row.backend} ${row.workload} c=${row.concurrency}`)}</text>`,
      `<rect x="${Math.min(from, to).toFixed(1)}" y="${y + 2}" width="${Math.max(1, Math.abs(to - from)).toFixed(1)}" height="${latencyRowHeight - 4}" fill="${fill}"/>`,
      ...whisker(ratio.latencySpread, xl, y + latencyRowHeight / 2),
      `<text x="${(Math.max(from, to, ratio.latencySpread.n > 1 ? xl(ratio.latencySpread.max) : 0) + 3).toFixed(1)}" y="${y + latencyRowHeight - 3}" font-size="9">${escapeXml(formatSpread(ratio.latencySpread, formatRatio))}</text>`,
    )
  })
  parts.push('</svg>', '')
  return parts.join('\n')
}
