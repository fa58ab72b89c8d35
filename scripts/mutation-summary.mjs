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
// The first entry may instead be `{ name, baseline: 'path' }` (see readBaseline): the per-file
// counts and survivors of earlier runs whose reports were not kept; a later run that mutated a
// whole file replaces the baseline's data for that file (a range rerun of such a file is refused).
// An optional second argument is the output path (default: the committed summary).
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
     * @param {string[] | { original: string, occurrence: number, total: number }} source the
     *   source of the mutant's file as the run saw it, or the line's key from `lineKey`
     */
    classOf(mutant, source) {
      const key = Array.isArray(source) ? lineKey(source, mutant.line) : source
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
  // A third argument writes elsewhere (the test that the committed summary is reproducible).
  const target = process.argv[3] ?? OUT
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
  /** The counts and survivors of earlier runs whose reports were not kept (see `readBaseline`). */
  let baseline
  /** Files a run after the baseline measured whole: the baseline's data for them is replaced. */
  const remeasured = new Set()
  for (const [index, run] of runs.entries()) {
    if (run.baseline !== undefined) {
      if (index !== 0) throw new Error(`${manifest}: a baseline must be the first run`)
      baseline = readBaseline(run.baseline)
      for (const r of baseline.runs) perRun.push({ ...r, fromBaseline: true })
      continue
    }
    const ranges = run.mutate.split(',').map((m) => m.trim())
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
      if (baseline?.files[file] !== undefined) {
        // A range rerun cannot replace the baseline's counts: they are per file, not per mutant.
        if (!ranges.includes(file)) {
          throw new Error(
            `run ${run.name} measured part of ${file}, which the baseline holds: rerun the whole file`,
          )
        }
        remeasured.add(file)
      }
      for (const m of mutants) {
        counts[statusOf(m)]++
        const { start, end } = m.location
        const id = `${file}:${start.line}:${start.column}-${end.line}:${end.column}:${m.mutatorName}:${m.replacement}`
        merged.set(id, {
          key: lineKey(lines, start.line),
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
  const kept = []
  for (const [file, counts] of Object.entries(baseline?.files ?? {})) {
    if (remeasured.has(file)) continue
    files.set(file, { ...empty(), ...counts })
    for (const status of STATUSES) total[status] += counts[status]
    kept.push(...baseline.survivors.filter((s) => s.file === file))
  }
  const survivors = [
    ...[...merged.values()].filter((m) => m.status === 'Survived' || m.status === 'NoCoverage'),
    ...kept,
  ]
    .sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line)
    .map((m) => ({ ...m, equivalent: equivalence.classOf(m, m.key) }))
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
          ...(baseline !== undefined
            ? [
                `This summary starts from the baseline \`${runs[0].baseline}\`: the per-file counts and the`,
                `survivors of the runs marked "baseline" below, taken from the summary committed at ${baseline.from}`,
                '(their reports were not kept). A later run replaces the baseline for every file it measured',
                `whole (here: ${remeasured.size === 0 ? 'none' : [...remeasured].map((f) => `\`${f}\``).join(', ')}); the other files keep the baseline's verdicts:`,
              ]
            : runs.length === 1 && runs[0].mutate === 'stryker.config.mjs'
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
            const s = r.fromBaseline ? { valid: r.mutants, percent: r.score } : score(r.counts)
            return `| ${r.fromBaseline ? `${r.name} (baseline)` : r.name} | ${r.commit ?? ''} | ${r.start ?? ''} | ${r.minutes === undefined ? '' : r.minutes.toFixed(1)} | ${r.concurrency ?? ''} | ${s.valid} | ${s.percent} % | ${r.mutate
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
  writeFileSync(target, out.join('\n'))
  console.log(
    `mutation score ${all.percent} % (${all.detected}/${all.valid}); ${survivors.length} survivors listed in ${target}`,
  )
}

/**
 * A baseline: what a committed summary held of runs whose reports were not kept, enough to join
 * them with later whole-file runs: `{ from, runs: [{ name, commit, start, minutes, concurrency,
 * mutants, score, mutate }], files: { [file]: { Killed, Timeout, Survived, NoCoverage } },
 * survivors: [{ file, line, status, mutator, original, occurrence, total, replacement, run }] }`
 * (`original` the trimmed line, `occurrence` and `total` as `lineKey` gives them).
 * @param {string} path
 */
function readBaseline(path) {
  const base = JSON.parse(readFileSync(path, 'utf8'))
  if (
    typeof base?.from !== 'string' ||
    !Array.isArray(base.runs) ||
    !Array.isArray(base.survivors)
  ) {
    throw new Error(`${path}: a baseline needs from, runs, files and survivors`)
  }
  for (const s of base.survivors) {
    const counts = base.files[s.file]
    if (counts === undefined)
      throw new Error(`${path}: survivor in ${s.file}, a file without counts`)
    s.key = { original: s.original, occurrence: s.occurrence, total: s.total }
  }
  return base
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
