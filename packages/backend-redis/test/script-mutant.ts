import type { LuaScript } from '../src/lua-scripts.js'

/**
 * A hand-written mutant of one of the backend's Lua scripts: the exact text
 * `from` (which must occur exactly once, so the mutant is the one named and
 * not silently nothing) replaced with `to`.
 */
export interface ScriptMutant {
  readonly script: LuaScript
  readonly from: string
  readonly to: string
}

/**
 * Runs `body` with the mutant applied to the script's source, and restores
 * it afterwards. Backends created inside `body` load the mutated script (each
 * connection hashes a script's source the first time it runs it, and the
 * server compiles what it has not seen); create them inside, close them
 * inside.
 */
export async function withScriptMutant<T>(
  mutant: ScriptMutant | null,
  body: () => Promise<T>,
): Promise<T> {
  if (mutant === null) return body()
  const script = mutant.script as { source: string }
  const original = script.source
  const at = original.indexOf(mutant.from)
  if (at < 0 || original.indexOf(mutant.from, at + 1) >= 0) {
    throw new Error(
      `the mutant's text occurs ${at < 0 ? 'nowhere' : 'twice'} in ${mutant.script.name}`,
    )
  }
  script.source = original.replace(mutant.from, mutant.to)
  try {
    return await body()
  } finally {
    script.source = original
  }
}
