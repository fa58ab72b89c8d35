import { AssertionError } from 'node:assert'
import { expect } from 'vitest'
import { CONTRACT_CHECKS, type ContractCheck } from '../src/index.js'

/**
 * The error a check failed with must be the suite's own verdict (an
 * `AssertionError`, directly or as the cause fast-check wraps it in), never
 * a crash of the mutant or of the harness.
 */
export function contractVerdict(error: unknown): AssertionError | undefined {
  for (let e = error; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    if (e instanceof AssertionError) return e
  }
  return undefined
}

/**
 * Awaits a check that must fail and returns the suite's verdict: a check that
 * passes, or fails with anything but an `AssertionError` (a crash), fails the
 * test.
 */
export async function failingVerdict(run: Promise<unknown>): Promise<AssertionError> {
  let caught: unknown
  try {
    await run
  } catch (error) {
    caught = error
  }
  expect(caught, 'the check must fail').toBeDefined()
  const found = contractVerdict(caught)
  expect(found, `a contract verdict, not a crash: ${String(caught)}`).toBeInstanceOf(AssertionError)
  return found as AssertionError
}

/** The check with this id among `checks`; an unknown id throws, so a renamed check fails loudly. */
export function findCheck<Check extends { id: string }>(
  checks: readonly Check[],
  id: string,
): Check {
  const found = checks.find((c) => c.id === id)
  if (found === undefined) throw new Error(`no check ${id}`)
  return found
}

/** The contract check with this id. */
export function checkById(id: string): ContractCheck {
  return findCheck(CONTRACT_CHECKS, id)
}
