import { MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { describeQueueCrash } from './queue-crash-suite.js'
import { withQueuePaths } from './queue-paths.js'

// S3 alone: the slowest queue crash run, in a file of its own so it runs beside the others.
describeQueueCrash(
  withQueuePaths(
    MULTI_PROCESS_BACKENDS.filter((backend) => backend.name === 's3'),
    ['generic'],
  ),
)
