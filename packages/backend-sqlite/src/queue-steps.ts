/*
 * The two decisions of the native queue's transactions (native-queue.ts) that
 * make its guarantees: how many events an append may store (the exact
 * capacity) and the delivery lease a claim takes (a fresh fencing token per
 * delivery). Core's rules (core's queue-steps.ts), re-exported from a module of this
 * backend's own that native-queue.ts passes to core's steps, so the
 * runtime's mutant tests can replace each with a broken one on SQLite and see
 * its check fail (packages/runtime/test/daemon-queue-native-mutants.test.ts).
 */
export { appendRoom, grantDelivery } from '@agent-state/core'
