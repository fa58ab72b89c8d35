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
// mutation-testing.md, each with its class, keyed by what was mutated, not where: the file, the
// mutated line's source text (`original`, trimmed, as the summary's "original line" column
// shows it), optionally the `replacement` (where the line holds other survivors too), and, only
// when that text occurs on more than one line of the file, its `occurrence` (1 for the first such
// line). Code moving up or down keeps every entry matched; an edit of the mutated line itself
// un-matches it, and the summary then lists the entry as stale (the argument must be re-read).
// An entry whose text occurs on several lines and that names no occurrence matches nothing and is
// listed as ambiguous. The summary marks the matched survivors and gives the score over the
// non-equivalent mutants beside the raw one.
import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const OUT = 'test-suites/contract/mutation-summary.md'
const EQUIVALENT = 'test-suites/contract/mutation-equivalent.json'

/**
 * Where a line sits by its text: its trimmed source, how many lines of the file (up to and
 * including it) have that text, and how many the whole file has.
 * @param {string[]} lines the file's source lines
 * @param {number} line 1-based
 */
export function lineKey(lines, line) {
  const original = (lines[line - 1] ?? '').trim()
  let occurrence = 0
  let total = 0
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== original) continue
    total++
    if (i < line) occurrence++
  }
  return { original, occurrence, total }
}

/**
 * @typedef {{ file: string, original: string, occurrence?: number, replacement?: string, class: string }} Equivalent
 */

/**
 * Checks the entries' shape: line-keyed entries (`at: "file:line"`, the old form) are refused,
 * since a move would silently un-mark them.
 * @param {unknown} entries
 * @returns {Equivalent[]}
 */
export function readEquivalents(entries) {
  if (!Array.isArray(entries)) throw new Error(`${EQUIVALENT} must be an array`)
  for (const e of entries) {
    if (
      typeof e?.file !== 'string' ||
      typeof e.original !== 'string' ||
      typeof e.class !== 'string'
    ) {
      throw new Error(
        `${EQUIVALENT}: every entry needs file, original (the mutated line's trimmed text) and class; got ${JSON.stringify(e)}`,
      )
    }
    if (e.occurrence !== undefined && !(Number.isSafeInteger(e.occurrence) && e.occurrence >= 1)) {
      throw new Error(
        `${EQUIVALENT}: occurrence must be a positive integer in ${JSON.stringify(e)}`,
      )
    }
  }
  return entries
}

/**
 * Matches mutants to equivalence entries by file, line text (and occurrence when the text is
 * not unique in the file) and replacement.
 * @param {Equivalent[]} equivalents
 */
export function equivalenceMatcher(equivalents) {
  const used = new Set()
  const ambiguous = new Set()
  return {
    /**
     * The class of the entry that matches the mutant, or undefined.
     * @param {{ file: string, line: number, replacement: string }} mutant
     * @param {string[]} lines the source of the mutant's file, as the run saw it
     */
    classOf(mutant, lines) {
      const key = lineKey(lines, mutant.line)
      const found = equivalents.find((e) => {
        if (e.file !== mutant.file || e.original !== key.original) return false
        if (e.replacement !== undefined && e.replacement !== mutant.replacement) return false
        if (e.occurrence === undefined && key.total > 1) {
          ambiguous.add(e)
          return false
        }
        return e.occurrence === undefined || e.occurrence === key.occurrence
      })
      if (found !== undefined) used.add(found)
      return found?.class
    },
    /** Entries that matched no mutant so far (ambiguous ones included). */
    stale: () => equivalents.filter((e) => !used.has(e)),
    /** Entries whose text occurs on several lines of a run's file and that name no occurrence. */
    ambiguous: () => equivalents.filter((e) => ambiguous.has(e) && !used.has(e)),
  }
}

/**
 * Entries that no line of the current tree matches (their text edited or gone, or ambiguous):
 * each needs its argument re-read and its key updated before the next run.
 * @param {Equivalent[]} equivalents
 * @param {(file: string) => string} read the current source of a file
 */
export function unmatchedInTree(equivalents, read) {
  return equivalents.filter((e) => {
    const lines = read(e.file).split('\n')
    const at = lines.findIndex((line) => line.trim() === e.original)
    if (at < 0) return true
    const { total } = lineKey(lines, at + 1)
    return e.occurrence === undefined ? total > 1 : e.occurrence > total
  })
}

function main() {
  const equivalence = equivalenceMatcher(
    existsSync(EQUIVALENT) ? readEquivalents(JSON.parse(readFileSync(EQUIVALENT, 'utf8'))) : [],
  )
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
          lines,
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
    .map((m) => ({ ...m, equivalent: equivalence.classOf(m, m.lines) }))
  const all = score(total)
  // Classes E…: equivalent. Classes S…: reached only by a store other than the run's (a failing
  // store, a caller's own MemoryStore), counted apart so the reader can put them back.
  const equivalentCount = survivors.filter((s) => s.equivalent?.startsWith('E') === true).length
  const storeOnlyCount = survivors.filter((s) => s.equivalent?.startsWith('S') === true).length
  const percentOf = (part, whole) => (whole === 0 ? 'n/a' : ((100 * part) / whole).toFixed(2))
  const nonEquivalent = all.valid - equivalentCount
  const nonEquivalentScore = percentOf(all.detected, nonEquivalent)
  const reachableScore = percentOf(all.detected, nonEquivalent - storeOnlyCount)
  const ambiguous = equivalence.ambiguous()
  const stale = equivalence.stale().filter((e) => !ambiguous.includes(e))
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
          ...stale.map(describeEntry),
          '',
        ]),
    ...(ambiguous.length === 0
      ? []
      : [
          '## Ambiguous equivalence entries',
          '',
          'These entries of `mutation-equivalent.json` name a line text that occurs more than once in',
          'its file, and no `occurrence`: they match nothing until they say which line they mean:',
          '',
          ...ambiguous.map(describeEntry),
          '',
        ]),
  ]
  writeFileSync(OUT, out.join('\n'))
  console.log(
    `mutation score ${all.percent} % (${all.detected}/${all.valid}); ${survivors.length} survivors listed in ${OUT}`,
  )
}

/** @param {Equivalent} e */
function describeEntry(e) {
  return `- ${e.file}: \`${e.original}\`${e.occurrence === undefined ? '' : ` (occurrence ${e.occurrence})`}${e.replacement === undefined ? '' : ` → \`${e.replacement}\``} (${e.class})`
}

// Run as a script, not when a test imports the matcher.
if (
  process.argv[1] !== undefined &&
  realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  main()
}
