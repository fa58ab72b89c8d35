/**
 * The runtime tests' backend wrapper that counts every call by method name (one copy:
 * packages/runtime/test/counting-backend.ts), for the saver's call counts.
 */
export { countingBackend } from '../../../packages/runtime/test/counting-backend.js'
