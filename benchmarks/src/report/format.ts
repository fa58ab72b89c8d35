/** Number formatting shared by the Markdown and SVG reports. */

import type { Spread } from '../stats.js'

/** A latency in microseconds, at a precision that suits its size. */
export function formatMicros(micros: number): string {
  if (!Number.isFinite(micros)) return '–'
  if (micros >= 100_000) return `${(micros / 1000).toFixed(0)} ms`
  if (micros >= 10_000) return `${(micros / 1000).toFixed(1)} ms`
  if (micros >= 1000) return `${(micros / 1000).toFixed(2)} ms`
  if (micros >= 100) return `${micros.toFixed(0)} µs`
  return `${micros.toFixed(1)} µs`
}

/** Operations per second with thousands separators. */
export function formatRate(rate: number): string {
  if (!Number.isFinite(rate)) return '–'
  if (rate >= 100) return Math.round(rate).toLocaleString('en-US')
  return rate.toFixed(1)
}

/** A ratio like `1.07×`. */
export function formatRatio(ratio: number | undefined): string {
  if (ratio === undefined || !Number.isFinite(ratio)) return '–'
  if (ratio >= 10) return `${ratio.toFixed(0)}×`
  if (ratio >= 0.1) return `${ratio.toFixed(2)}×`
  return `${ratio.toFixed(3)}×`
}

/** Escapes the characters Markdown tables and XML text cannot hold as-is. */
export function escapeCell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ')
}

/** Escapes text for XML. */
export function escapeXml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
}

/** A figure over several full runs: `median [min–max]`, or just the value when it comes from one run. */
export function formatSpread(
  spread: Spread | undefined,
  format: (value: number) => string,
): string {
  if (spread === undefined || spread.n === 0) return '–'
  const middle = format(spread.median)
  if (spread.n === 1) return middle
  return `${middle} [${format(spread.min)}–${format(spread.max)}]`
}
