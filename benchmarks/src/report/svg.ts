import type { RunResult } from '../bench.js'
import type { CaseResult } from '../runner.js'
import type { PathKind } from '../subject.js'
import { escapeXml, formatRatio } from './format.js'
import { LATENCY_TARGET } from './markdown.js'

const SERIES: readonly { path: PathKind; color: string; label: string }[] = [
  { path: 'raw', color: '#4e79a7', label: 'vs raw client' },
  { path: 'keyv', color: '#f28e2b', label: 'vs Keyv' },
  { path: 'unstorage', color: '#59a14f', label: 'vs unstorage' },
]

/** Rows of the chart: the point workloads and the middle listing size. */
function chartRows(result: RunResult): CaseResult[] {
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
function latencyRows(result: RunResult): CaseResult[] {
  const wanted = new Set(['put-1KiB', 'cas', 'get-1KiB'])
  return result.cases.filter(
    (row) => wanted.has(row.workload) && row.ratios.some((ratio) => ratio.versus === 'raw'),
  )
}

/**
 * Two horizontal bar charts on a log scale from 0.01× to 100×: agent-state's
 * throughput ratio against each other path (right of 1× = faster), and its
 * p50 latency ratio against the raw client for put, CAS and get with the
 * 1.15× target marked (left of the target line = target met). Ratios are
 * medians over the interleaved repetitions.
 */
export function renderRatioSvg(result: RunResult): string {
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
  const width = labelWidth + plotWidth + 70
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
    `<text x="10" y="18" font-size="14" font-weight="bold">agent-state throughput ratio (median of interleaved repetitions, log scale)</text>`,
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
      if (seriesIndex === 0 || ratio.throughput < MIN || ratio.throughput > MAX) {
        parts.push(
          `<text x="${(Math.max(from, to) + 3).toFixed(1)}" y="${by + barHeight - 1}" font-size="8">${formatRatio(ratio.throughput)}</text>`,
        )
      }
    })
  })

  parts.push(
    `<text x="10" y="${secondTop - 30}" font-size="14" font-weight="bold">agent-state p50 latency ÷ raw client p50 (put, CAS, get; target ≤ ${LATENCY_TARGET}×)</text>`,
    `<text x="10" y="${secondTop - 14}">Left of the red line = target met. Log scale from 0.5× to 8×.</text>`,
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
    parts.push(
      `<text x="${labelWidth - 6}" y="${y + latencyRowHeight - 3}" text-anchor="end">${escapeXml(`${row.backend} ${row.workload} c=${row.concurrency}`)}</text>`,
      `<rect x="${Math.min(from, to).toFixed(1)}" y="${y + 2}" width="${Math.max(1, Math.abs(to - from)).toFixed(1)}" height="${latencyRowHeight - 4}" fill="${met ? '#4e79a7' : '#e15759'}"/>`,
      `<text x="${(Math.max(from, to) + 3).toFixed(1)}" y="${y + latencyRowHeight - 3}" font-size="9">${formatRatio(ratio.latency)}</text>`,
    )
  })
  parts.push('</svg>', '')
  return parts.join('\n')
}
