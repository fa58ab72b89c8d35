import type pg from 'pg'

/**
 * The check that an answer is the statement's own. PgBouncer 1.18 in
 * transaction pooling returns to its pool a server connection whose client
 * died with a pipelined statement still running (a writer killed between its
 * write's answer and its change hint's) and hands it to the next client, whose
 * first statement then receives the dead client's answer as its own. Believed,
 * that answer is a false `CORRUPT` for a read, or a write's outcome (a refusal,
 * another meta) for a write that was sent and may apply. An answer whose
 * column names are not exactly the statement's is thrown as a lost connection
 * ({@link ForeignAnswerError}, no SQLSTATE): `connection.ts` discards the
 * connection and maps it to `INDETERMINATE` for a write, `UNAVAILABLE` for a read.
 */

/** The column names each statement returns, by its text (declared where it is built). */
const declared = new Map<string, readonly string[]>()

/** Declares that `text` answers with exactly `columns`, in order; returns `text`. */
export function declareAnswer(text: string, columns: readonly string[]): string {
  declared.set(text, columns)
  return text
}

/** The columns `text` was declared to answer with (`undefined`: not declared). */
export function declaredAnswer(text: string): readonly string[] | undefined {
  return declared.get(text)
}

/**
 * The failure of an answer that is not its statement's: a lost connection
 * (errors.ts classifies it by this class, never by its message), so the
 * connection is discarded and the call is `UNAVAILABLE` or `INDETERMINATE`.
 */
export class ForeignAnswerError extends Error {
  override name = 'ForeignAnswerError'
}

/**
 * Throws the "answered another statement" failure ({@link ForeignAnswerError})
 * unless `fields` are exactly `expected` (names, in order).
 */
export function assertOwnAnswer(
  fields: readonly { readonly name: string }[],
  expected: readonly string[],
): void {
  if (fields.length === expected.length && fields.every((f, i) => f.name === expected[i])) return
  throw new ForeignAnswerError(
    `PostgreSQL answered another statement (columns ${fields.map((f) => f.name).join(', ')}, expected ${expected.join(', ')}): a pooler passed on another client's answer`,
  )
}

/**
 * Makes every answer to a declared statement on `client` pass
 * {@link assertOwnAnswer}: installed once per connection, so every statement
 * of the backend is checked wherever it is sent. Statements declared nowhere
 * pass unchanged: the migration's (its reads check their own; its `BEGIN`,
 * `COMMIT` and `ROLLBACK` are the native queue's texts, so declared) and the
 * watcher's, whose answers are never read (change-notification.ts).
 */
export function checkAnswersOn(client: pg.ClientBase): void {
  // The prototype's `query` is looked up at each call, not bound once: a test that patches
  // `pg.Client.prototype.query` (native-queue.test.ts) still reaches the connections.
  const prototype = Object.getPrototypeOf(client) as { query: (...args: unknown[]) => unknown }
  ;(client as { query: unknown }).query = (...args: unknown[]): unknown => {
    const answer = prototype.query.apply(client, args)
    const expected = typeof args[0] === 'string' ? declaredAnswer(args[0]) : undefined
    if (expected === undefined || !(answer instanceof Promise)) return answer
    return answer.then((result: pg.QueryResult) => {
      assertOwnAnswer(result.fields, expected)
      return result
    })
  }
}
