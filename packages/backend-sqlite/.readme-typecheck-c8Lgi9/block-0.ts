import { createSqliteBackend } from '@agent-state/sqlite'

const backend = createSqliteBackend({ path: './state.db', namespace: 'agent-1' })
const meta = await backend.put('notes/today', new TextEncoder().encode('hello'))
await backend.put('notes/today', new TextEncoder().encode('hello again'), { ifMatch: meta.version })
await backend.close()

export {}
