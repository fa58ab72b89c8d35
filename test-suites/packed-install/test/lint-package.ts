import { readFileSync } from 'node:fs'
import { type Options, publint } from 'publint'
import { formatMessage } from 'publint/utils'

/**
 * What publint says of one packed tarball, every level (suggestions too), as
 * readable lines; empty means clean. The tarball is the one npm installs, so
 * the files checked are exactly the published ones.
 */
export async function lintTarball(tarball: string): Promise<string[]> {
  const bytes = readFileSync(tarball)
  const data = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
  // A tarball's files all sit under `package/`, npm's fixed top directory.
  return lint({ pkgDir: 'package', pack: { tarball: data as ArrayBuffer }, level: 'suggestion' })
}

/** publint on any packed input (see {@link lintTarball}). */
export async function lint(options: Options): Promise<string[]> {
  const { messages, pkg } = await publint(options)
  return messages.map(
    (message) =>
      `${message.type}: ${formatMessage(message, pkg, { color: false }) ?? message.code}`,
  )
}
