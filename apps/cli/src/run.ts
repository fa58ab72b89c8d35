import { main } from './main.js'

// Entry point when running from source (see bin/agent-state.js).
process.exitCode = await main(process.argv.slice(2))
