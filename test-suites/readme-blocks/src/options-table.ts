/** One row of a README's options table. */
export interface OptionsTableRow {
  /** The option, from the row's first cell (a code span: `` `root` ``). */
  readonly name: string
  /** The second cell, trimmed: the default as the README shows it (`required`, `` `true` ``, `64 MiB`). */
  readonly shown: string
  /** The whole row, for what its other cells say. */
  readonly text: string
}

/**
 * A zod object schema, as far as {@link optionsTableProblems} reads it: its `shape`, whose fields
 * parse values (zod's `safeParse`); nested objects are found through `unwrap()` (optional,
 * default, nullable) and `element` (arrays).
 */
export interface OptionsSchemaLike {
  readonly shape: Readonly<Record<string, unknown>>
}

const ROW = /^\| `([A-Za-z_$][\w$]*)` +\| ([^|]*?) *\|/

/**
 * The rows of the options table in the section under `heading` (the exact heading line, such as
 * `## Options`): the first table between that heading and the next heading of the same or a
 * higher level, each row whose first cell is a code span, in order. Throws when the section or
 * its table is missing, so a renamed heading fails loudly instead of comparing nothing.
 */
export function optionsTableFields(markdown: string, heading: string): OptionsTableRow[] {
  const lines = markdown.split('\n')
  const start = lines.findIndex((line) => line.trimEnd() === heading)
  if (start === -1) throw new Error(`no heading ${JSON.stringify(heading)}`)
  const level = /^#+/.exec(heading)?.[0].length ?? 0
  const rows: OptionsTableRow[] = []
  let inTable = false
  for (const line of lines.slice(start + 1)) {
    const deeper = /^(#+) /.exec(line)
    if (deeper !== null && (deeper[1] ?? '').length <= level) break
    if (line.startsWith('|')) {
      inTable = true
      const match = ROW.exec(line)
      if (match !== null) rows.push({ name: match[1] ?? '', shown: match[2] ?? '', text: line })
    } else if (inTable) break
  }
  if (rows.length === 0) throw new Error(`no options table under ${JSON.stringify(heading)}`)
  return rows
}

/** The fields of `schema` when it is an object, or wraps one (optional, default, array of…). */
function nestedShape(schema: unknown): Readonly<Record<string, unknown>> | undefined {
  let current = schema
  // Wrappers nest a few levels at most (`z.array(node).min(1).optional()`); the bound only
  // guards against a schema that unwraps to itself.
  for (let depth = 0; depth < 16; depth++) {
    if (typeof current !== 'object' || current === null) return undefined
    const s = current as { shape?: unknown; element?: unknown; unwrap?: () => unknown }
    if (typeof s.shape === 'object' && s.shape !== null) return s.shape as Record<string, unknown>
    if (s.element !== undefined) current = s.element
    else if (typeof s.unwrap === 'function') current = s.unwrap()
    else return undefined
  }
  return undefined
}

/** Whether a field of the schema must be given (it accepts no `undefined`: no default, not optional). */
function isRequired(field: unknown): boolean {
  const parse = (field as { safeParse?: (value: unknown) => { success: boolean } }).safeParse
  if (typeof parse !== 'function') throw new Error('not a zod schema field')
  return !parse.call(field, undefined).success
}

/** The nested field names of `shape`, all levels down (`nodes`, `host`, `port`, `name`). */
function nestedNames(shape: Readonly<Record<string, unknown>>): string[] {
  return Object.entries(shape).flatMap(([name, field]) => {
    const inner = nestedShape(field)
    return [name, ...(inner === undefined ? [] : nestedNames(inner))]
  })
}

/**
 * What differs between an options table (from {@link optionsTableFields}) and the zod object
 * schema it documents; empty when they agree:
 * - the rows name exactly the schema's fields, in the schema's order;
 * - a row shows `required` exactly when its field accepts no `undefined` (no default, not optional);
 * - a field whose value is an object (or wraps one: optional, default, array of objects) has each
 *   of its own fields named in its row, recursively: `` `{ nodes: [{ host, port }, …], name }` ``.
 * Defaults shown in other ways (`64 MiB`, `Date.now`) are each package's own checks.
 */
export function optionsTableProblems(
  rows: readonly OptionsTableRow[],
  schema: OptionsSchemaLike,
): string[] {
  const problems: string[] = []
  const fields = Object.keys(schema.shape)
  const named = rows.map((row) => row.name)
  if (named.join(',') !== fields.join(',')) {
    const missing = fields.filter((field) => !named.includes(field))
    const extra = named.filter((name) => !fields.includes(name))
    problems.push(
      `the table lists ${named.join(', ')}; the schema has ${fields.join(', ')}` +
        (missing.length > 0 ? ` (no row for ${missing.join(', ')})` : '') +
        (extra.length > 0 ? ` (not in the schema: ${extra.join(', ')})` : '') +
        (missing.length === 0 && extra.length === 0 ? ' (another order)' : ''),
    )
  }
  for (const row of rows) {
    const field = schema.shape[row.name]
    if (field === undefined) continue
    const required = isRequired(field)
    if (required !== (row.shown === 'required'))
      problems.push(
        required
          ? `${row.name}: the schema requires it; the table shows ${JSON.stringify(row.shown)}`
          : `${row.name}: the table shows "required"; the schema does not require it`,
      )
    const inner = nestedShape(field)
    if (inner === undefined) continue
    const unnamed = nestedNames(inner).filter(
      (name) => !new RegExp(`(^|[^\\w$])${name.replaceAll('$', '\\$')}([^\\w$]|$)`).test(row.text),
    )
    if (unnamed.length > 0)
      problems.push(`${row.name}: its row does not name its field(s) ${unnamed.join(', ')}`)
  }
  return problems
}
