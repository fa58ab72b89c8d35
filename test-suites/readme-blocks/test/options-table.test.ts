import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { optionsTableFields, optionsTableProblems } from '../src/index.js'

const node = z.strictObject({ host: z.string(), port: z.number() })
const schema = z.strictObject({
  path: z.string(),
  namespace: z.string().default('default'),
  cluster: z.strictObject({ nodes: z.array(node).min(1), name: z.string() }).optional(),
  clock: z.custom<() => number>((value) => typeof value === 'function').optional(),
})

const table = (rows: readonly string[]): string =>
  [
    '# pkg',
    '## Options',
    '',
    'Some text.',
    '',
    '| option | default | meaning |',
    '| ------ | ------- | ------- |',
    ...rows,
    '',
    'After the table: | `ignored` | x |',
    '### A subsection',
    '| `alsoIgnored` | x | a later table |',
    '## Next',
    '| `other` | x | y |',
  ].join('\n')

const ROWS = [
  '| `path`      | required    | the file |',
  '| `namespace` | `"default"` | isolates |',
  '| `cluster`   | none        | `{ nodes: [{ host, port }, …], name }` |',
  '| `clock`     | `Date.now`  | the clock |',
]

describe('optionsTableFields', () => {
  it("reads the first table of the heading's section: names, shown defaults, rows", () => {
    const rows = optionsTableFields(table(ROWS), '## Options')
    expect(rows.map((row) => [row.name, row.shown])).toEqual([
      ['path', 'required'],
      ['namespace', '`"default"`'],
      ['cluster', 'none'],
      ['clock', '`Date.now`'],
    ])
    expect(rows[2]?.text).toBe(ROWS[2])
  })

  it('refuses a missing heading or a section without a table', () => {
    expect(() => optionsTableFields(table(ROWS), '## Settings')).toThrow('no heading "## Settings"')
    expect(() =>
      optionsTableFields('## Options\n\nno table\n## Next\n| `a` | b |\n', '## Options'),
    ).toThrow('no options table under "## Options"')
  })
})

describe('optionsTableProblems', () => {
  const problems = (rows: readonly string[]): string[] =>
    optionsTableProblems(optionsTableFields(table(rows), '## Options'), schema)

  it('finds nothing when the table documents the schema', () => {
    expect(problems(ROWS)).toEqual([])
  })

  it('names a field without a row, a row without a field, and another order', () => {
    expect(problems(ROWS.filter((row) => !row.includes('`clock`')))).toEqual([
      'the table lists path, namespace, cluster; the schema has path, namespace, cluster, clock (no row for clock)',
    ])
    expect(problems([...ROWS, '| `typo` | none | x |'])).toEqual([
      'the table lists path, namespace, cluster, clock, typo; the schema has path, namespace, cluster, clock (not in the schema: typo)',
    ])
    expect(problems([ROWS[1], ROWS[0], ROWS[2], ROWS[3]] as string[])).toEqual([
      'the table lists namespace, path, cluster, clock; the schema has path, namespace, cluster, clock (another order)',
    ])
  })

  it('checks "required" against what the schema accepts', () => {
    expect(problems(ROWS.map((row) => row.replace('required', 'none    ')))).toEqual([
      'path: the schema requires it; the table shows "none"',
    ])
    expect(problems(ROWS.map((row) => row.replace('`Date.now`', 'required')))).toEqual([
      'clock: the table shows "required"; the schema does not require it',
    ])
  })

  it("recurses into object fields: each nested field is named in the field's row", () => {
    expect(problems(ROWS.map((row) => row.replace('{ host, port }', '{ host }')))).toEqual([
      'cluster: its row does not name its field(s) port',
    ])
    expect(problems(ROWS.map((row) => row.replace(', name }', ' }')))).toEqual([
      'cluster: its row does not name its field(s) name',
    ])
  })
})
