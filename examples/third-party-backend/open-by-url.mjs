// Opens the template by URL from plain node, as an application would: the scheme is registered
// to the package's name, and openBackend imports its built dist/index.js on first use.
import { openBackend, registerBackendScheme } from '@agent-state/core'

registerBackendScheme('files:', 'agent-state-backend-template')
const backend = await openBackend('files:./data', { namespace: 'my-app' })
await backend.put('greeting', new TextEncoder().encode('hello'))
const stored = await backend.get('greeting')
console.log(new TextDecoder().decode(stored?.value))
await backend.close()
