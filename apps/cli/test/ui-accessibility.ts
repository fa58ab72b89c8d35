import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { Page } from 'playwright-core'

/**
 * axe-core's engine, read once from node_modules (a devDependency of the CLI: the tests
 * inject it, the package never ships it, and nothing is fetched from a CDN).
 */
const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
)

/** The impacts the UI must not have (axe's `serious` and `critical`). */
const REFUSED_IMPACTS = new Set(['serious', 'critical'])

/** What axe reports of one violated rule (the part a failure message names). */
interface Violation {
  id: string
  impact: string | null
  help: string
  nodes: { target: unknown[] }[]
}

/**
 * Runs axe-core on what `page` shows now and lists each serious or critical violation as
 * `<where>: <rule> (<impact>): <help>, at <selectors>`; empty when there is none. The page's
 * CSP refuses inline scripts, which `addScriptTag({ content })` adds: the page must come from
 * a browser context made with `bypassCSP: true` (the checker is the test's, not the page's).
 */
export async function accessibilityFailures(page: Page, where: string): Promise<string[]> {
  if ((await page.evaluate('typeof window.axe')) === 'undefined')
    await page.addScriptTag({ content: AXE_SOURCE })
  // A string, not a function: this package is type-checked without the DOM.
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })),
    })))`,
  )) as Violation[]
  return violations
    .filter((v) => v.impact !== null && REFUSED_IMPACTS.has(v.impact))
    .map(
      (v) =>
        `${where}: ${v.id} (${v.impact}): ${v.help}, at ${v.nodes
          .slice(0, 3)
          .map((n) => n.target.join(' '))
          .join('; ')}${v.nodes.length > 3 ? ` and ${v.nodes.length - 3} more` : ''}`,
    )
}
