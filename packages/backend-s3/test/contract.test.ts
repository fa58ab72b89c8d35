import { fileURLToPath } from 'node:url'
import { describeBackendContract } from '@agent-state/contract'
import { createS3Backend } from '../src/index.js'
import { s3Config } from './s3-config.js'

const config = s3Config()
// Small enough that the suite can test VALUE_TOO_LARGE.
const maxValueBytes = 8 * 1024 * 1024

describeBackendContract({
  name: 's3 (Ceph RGW)',
  create: (ctx) =>
    createS3Backend({ ...config, maxValueBytes, namespace: ctx.namespace, clock: ctx.clock }),
  process: {
    module: fileURLToPath(new URL('./child-factory.ts', import.meta.url)),
    options: { ...config, maxValueBytes },
  },
  // Every request costs 2-3 ms on RGW and the machine has 2 cores: fewer increments per
  // instance. The crash tier runs the default 50 cycles like every other backend (a cycle
  // costs about one child start-up, not S3 time).
  scale: { instances: 16, increments: 5, processes: 4 },
})
