/**
 * The runtime tests' backend wrapper that counts every call by method name (one copy:
 * packages/runtime/test/counting-backend.ts), for the CLI's row-cost checks.
 */
export { countingBackend } from '../../../packages/runtime/test/counting-backend.js'
