import { afterAll } from 'vitest'
import { describeBackendContract } from '../src/index.js'
import { fileRecordOptions, removeFileRecordRoots } from './file-record-options.js'

// A durable, multi-process backend (test-only) so the multi-process and crash tiers run here.
// Fewer kill -9 cycles than the default 50 keep this package's own run under two minutes.
describeBackendContract(fileRecordOptions({ name: 'file-records (test-only)', crashCycles: 30 }))

afterAll(removeFileRecordRoots)
