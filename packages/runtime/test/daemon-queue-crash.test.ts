import { MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { describeQueueCrash } from './queue-crash-suite.js'
import { withQueuePaths } from './queue-paths.js'

// Every multi-process backend but S3, which has its own file (daemon-queue-crash-s3.test.ts),
// on the generic path; the native path's runs are in daemon-queue-crash-native.test.ts.
describeQueueCrash(
  withQueuePaths(
    MULTI_PROCESS_BACKENDS.filter((backend) => backend.name !== 's3'),
    ['generic'],
  ),
)
