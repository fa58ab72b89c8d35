// Writes test-suites/contract/mutation-summary.md from StrykerJS JSON reports: the score, the
// counts per mutated file, and every surviving or uncovered mutant with its line and replacement,
// so a run's result can be committed without the HTML report.
//
// `node scripts/mutation-summary.mjs` summarises reports/mutation/mutation.json (what
// `npx -y pnpm@12.4.2 mutation` writes: one run over stryker.config.mjs's whole `mutate` list).
// `node scripts/mutation-summary.mjs runs.json` summarises several partial runs (`--mutate
// 'path:lines'`), listed in runs.json as [{ name, report, mutate, start, end, commit, concurrency }]:
// the summary names each run, its ranges and its own score, and the score over their union (a
// mutant measured twice counts once, by the later run). It never states more than was run.
//
// test-suites/contract/mutation-equivalent.json lists the survivors argued equivalent in
// mutation-testing.md, by `file:line` (and, where a line also holds other survivors, the
// replacement), each with its class: the summary marks them and gives the score over the
// non-equivalent mutants beside the raw one. An entry matches the line numbers of the runs'
// commit; an entry that matches no survivor is listed as stale.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'

const OUT = 'test-suites/contract/mutation-summary.md'
const EQUIVALENT = 'test-suites/contract/mutation-equivalent.json'
/** @type {{ at: string, replacement?: string, class: string }[]} */
const equivalents = existsSync(EQUIVALENT) ? JSON.parse(readFileSync(EQUIVALENT, 'utf8')) : []
const used = new Set()
function equivalenceOf(m) {
  const at = `${m.file}:${m.line}`
  const found = equivalents.find(
    (e) => e.at === at && (e.replacement === undefined || e.replacement === m.replacement),
  )
  if (found !== undefined) used.add(found)
  return found?.class
}
const manifest = process.argv[2]
const runs =
  manifest === undefined
    ? [{ name: 'full', report: 'reports/mutation/mutation.json', mutate: 'stryker.config.mjs' }]
    : JSON.parse(readFileSync(manifest, 'utf8'))

const STATUSES = ['Killed', 'Timeout', 'Survived', 'NoCoverage']
const empty = () => ({ Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0, other: 0 })
const statusOf = (m) => (STATUSES.includes(m.status) ? m.status : 'other')
const score = (c) => {
  const detected = c.Killed + c.Timeout
  const valid = detected + c.Survived + c.NoCoverage
  return { detected, valid, percent: valid === 0 ? 'n/a' : ((100 * detected) / valid).toFixed(2) }
}
const cell = (text) => String(text).replaceAll('|', '\\|').replaceAll('\n', ' ').slice(0, 120)

/** Every mutant of every run, the later run's verdict winning for a mutant measured twice. */
const merged = new Map()
const perRun = []
for (const run of runs) {
  const report = JSON.parse(readFileSync(run.report, 'utf8'))
  const perf = report.performance
  // Newer report schemas time the run's phases (ms); otherwise the manifest's start and end.
  const minutes =
    perf !== undefined
      ? (perf.setup + perf.initialRun + perf.mutation) / 60_000
      : run.start !== undefined && run.end !== undefined
        ? (Date.parse(run.end) - Date.parse(run.start)) / 60_000
        : undefined
  const counts = empty()
  for (const [file, { mutants, source }] of Object.entries(report.files)) {
    const lines = source.split('\n')
    for (const m of mutants) {
      counts[statusOf(m)]++
      const { start, end } = m.location
      const id = `${file}:${start.line}:${start.column}-${end.line}:${end.column}:${m.mutatorName}:${m.replacement}`
      merged.set(id, {
        run: run.name,
        file,
        line: start.line,
        status: statusOf(m),
        mutator: m.mutatorName,
        replacement: m.replacement,
        original: (lines[start.line - 1] ?? '').trim(),
      })
    }
  }
  perRun.push({ ...run, counts, minutes })
}

const files = new Map()
const total = empty()
for (const m of merged.values()) {
  const counts = files.get(m.file) ?? empty()
  counts[m.status]++
  total[m.status]++
  files.set(m.file, counts)
}
const survivors = [...merged.values()]
  .filter((m) => m.status === 'Survived' || m.status === 'NoCoverage')
  .sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line)
  .map((m) => ({ ...m, equivalent: equivalenceOf(m) }))
const all = score(total)
// Classes E…: equivalent. Classes S…: reached only by a store other than the run's (a failing
// store, a caller's own MemoryStore), counted apart so the reader can put them back.
const equivalentCount = survivors.filter((s) => s.equivalent?.startsWith('E') === true).length
const storeOnlyCount = survivors.filter((s) => s.equivalent?.startsWith('S') === true).length
const percentOf = (part, whole) => (whole === 0 ? 'n/a' : ((100 * part) / whole).toFixed(2))
const nonEquivalent = all.valid - equivalentCount
const nonEquivalentScore = percentOf(all.detected, nonEquivalent)
const reachableScore = percentOf(all.detected, nonEquivalent - storeOnlyCount)
const stale = equivalents.filter((e) => !used.has(e))
const single = manifest === undefined

const out = [
  '# Mutation testing of the contract suite: latest run',
  '',
  'Generated by `node scripts/mutation-summary.mjs` from StrykerJS JSON reports (configuration:',
  '`stryker.config.mjs`). Which survivors are equivalent, and why, is argued in',
  '[mutation-testing.md](mutation-testing.md).',
  '',
  ...(single
    ? []
    : [
        ...(runs.length === 1 && runs[0].mutate === 'stryker.config.mjs'
          ? ['One full run over the whole configuration:']
          : runs[0].mutate === 'stryker.config.mjs'
            ? [
                `This summary joins one full run over the whole configuration with ${runs.length - 1} partial rerun(s) of`,
                "the ranges named below (a later run's verdict replaces the full run's for the mutants it measured):",
              ]
            : [
                `This summary joins ${runs.length} partial runs (\`--mutate\` ranges below), not one run over the`,
                'whole configuration: the score is over the mutants those ranges hold, and nothing outside',
                'them was measured.',
              ]),
        '',
        '| run | commit | started (UTC) | minutes | workers | mutants | score | `--mutate` |',
        '| --- | --- | --- | --- | --- | --- | --- | --- |',
        ...perRun.map((r) => {
          const s = score(r.counts)
          return `| ${r.name} | ${r.commit ?? ''} | ${r.start ?? ''} | ${r.minutes === undefined ? '' : r.minutes.toFixed(1)} | ${r.concurrency ?? ''} | ${s.valid} | ${s.percent} % | ${r.mutate
            .split(',')
            .map((m) => `\`${m}\``)
            .join(' ')} |`
        }),
        '',
      ]),
  ...(single && perRun[0]?.minutes !== undefined
    ? [`The run took ${perRun[0].minutes.toFixed(1)} min.`, '']
    : []),
  `Mutation score${single ? '' : ' over the runs above'}: **${all.percent} %** (${all.detected} of ${all.valid} mutants detected: ${total.Killed} killed, ${total.Timeout} timed out; ${total.Survived} survived, ${total.NoCoverage} not covered).`,
  '',
  `Over the non-equivalent mutants: **${nonEquivalentScore} %** (${all.detected} of ${nonEquivalent}; ${equivalentCount} survivors argued equivalent, classes E…, in [mutation-testing.md](mutation-testing.md) and listed in \`mutation-equivalent.json\`). Leaving out also the ${storeOnlyCount} survivors that only a store other than the run's reaches (classes S…, covered by unit tests instead): ${reachableScore} % (${all.detected} of ${nonEquivalent - storeOnlyCount}).`,
  '',
  '| file | killed | timed out | survived | no coverage |',
  '| --- | --- | --- | --- | --- |',
  ...[...files.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(
      ([file, c]) => `| ${file} | ${c.Killed} | ${c.Timeout} | ${c.Survived} | ${c.NoCoverage} |`,
    ),
  '',
  '## Survivors',
  '',
  `| file:line | status | mutator | original line | replacement | equivalent (class) |${single ? '' : ' run |'}`,
  `| --- | --- | --- | --- | --- | --- |${single ? '' : ' --- |'}`,
  ...survivors.map(
    (s) =>
      `| ${s.file}:${s.line} | ${s.status} | ${s.mutator} | \`${cell(s.original)}\` | \`${cell(s.replacement)}\` | ${s.equivalent ?? '**no**'} |${single ? '' : ` ${s.run} |`}`,
  ),
  '',
  ...(stale.length === 0
    ? []
    : [
        '## Stale equivalence entries',
        '',
        'These entries of `mutation-equivalent.json` match no survivor of the runs above:',
        '',
        ...stale.map(
          (e) => `- \`${e.at}\`${e.replacement === undefined ? '' : ` → \`${e.replacement}\``}`,
        ),
        '',
      ]),
]
writeFileSync(OUT, out.join('\n'))
console.log(
  `mutation score ${all.percent} % (${all.detected}/${all.valid}); ${survivors.length} survivors listed in ${OUT}`,
)
