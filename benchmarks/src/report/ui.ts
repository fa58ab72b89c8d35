import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The `agent-state ui` section of `BENCHMARKS.md`: the tables `bench:ui-render`
 * (`results/ui-render.md`) and `bench:ui` (`results/ui-views.md`) last wrote,
 * quoted as they are (each states its load average), or nothing when neither
 * was written. Each file's own title becomes a subsection heading. What the
 * figures mean is analysis, kept in `benchmarks/FINDINGS.md` (agent-state ui).
 */
export function readUiSection(outDir: string): string[] | undefined {
  const tables = [
    ['`bench:ui-render` (`benchmarks/src/ui-render.ts`)', 'ui-render.md'],
    ['`bench:ui` (`benchmarks/src/ui-views.ts`)', 'ui-views.md'],
  ].flatMap(([command, file]) => {
    const path = join(outDir, file ?? '')
    if (!existsSync(path)) return []
    const [title = '', ...body] = readFileSync(path, 'utf8').trim().split('\n')
    return [`### ${command}: ${title.replace(/^#+\s*/, '')}`, ...body, '']
  })
  if (tables.length === 0) return undefined
  return [
    '## agent-state ui (`bench:ui-render`, `bench:ui`)',
    '',
    'Measured by `cd benchmarks && npx -y pnpm@12.4.2 bench:ui-render` (time to first render in headless',
    "Chromium, Debian's `chromium` through playwright-core) and `bench:ui` (each view built and serialized in",
    'process), on a 2-core host shared with other agents: the times are noisy; the backend calls per view are',
    'counts, which load does not change. What the figures mean: benchmarks/FINDINGS.md (agent-state ui).',
    '',
    ...tables,
  ]
}
