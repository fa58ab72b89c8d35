import { MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { describeQueueCrash } from './queue-crash-suite.js'
import { withQueuePaths } from './queue-paths.js'

// The native path of every backend that has one (Redis), in a file of its own so it runs
// beside the generic runs instead of after them; 100 triggers per producer by default
// (DAEMON_QUEUE_CRASH_NATIVE_TRIGGERS, see queue-crash-suite.ts).
describeQueueCrash(withQueuePaths(MULTI_PROCESS_BACKENDS, ['native']))
