import { MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { describeQueueCrash } from './queue-crash-suite.js'

// Every multi-process backend but S3, which has its own file (daemon-queue-crash-s3.test.ts).
describeQueueCrash(MULTI_PROCESS_BACKENDS.filter((backend) => backend.name !== 's3'))
