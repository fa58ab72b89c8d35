/**
 * Runs a check's body, then its harness's clean-up whatever the body did. Returns the first
 * failure (the body's, else the clean-up's), or `undefined`: a clean-up failure never hides
 * the check's own.
 */
export async function runThenCleanUp(
  body: () => Promise<void>,
  cleanup: () => Promise<void>,
): Promise<unknown> {
  let failure: unknown
  try {
    await body()
  } catch (error) {
    failure = error
  }
  try {
    await cleanup()
  } catch (error) {
    failure ??= error
  }
  return failure
}
