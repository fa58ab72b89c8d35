import type { Backend, ListOptions, ListPage } from './backend.js'

/**
 * Every page of a listing in order, following each page's cursor until a page
 * comes without one. This is the one loop for code that needs the whole
 * listing under a prefix (counting, copying, indexes); a view that shows one
 * page at a time should call `list` itself and hand the cursor on. A page may
 * be empty yet carry a cursor (the contract allows it), so callers must not
 * stop at an empty page.
 */
export async function* walkList(
  backend: Pick<Backend, 'list'>,
  options: Omit<ListOptions, 'cursor'> = {},
): AsyncGenerator<ListPage, void, undefined> {
  let cursor: string | undefined
  do {
    const page = await backend.list(cursor === undefined ? options : { ...options, cursor })
    yield page
    cursor = page.cursor
  } while (cursor !== undefined)
}
