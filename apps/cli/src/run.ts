import { main } from './main.js'

// The AWS SDK prints a multi-line notice about Node < 22 once per process; a
// command (and every process the contract suite starts) would repeat it in
// the middle of its output. The README says so; set the variable to `false`
// to see it.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ||= 'true'

// Entry point of the CLI process (see bin/agent-state.js). Exits explicitly:
// a client that keeps a socket or timer open after its work must not keep the
// command alive once it has its answer.
const code = await main(process.argv.slice(2))
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)))
