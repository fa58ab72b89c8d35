import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'
import { AgentStateError } from '@agent-state/core'
import { errnoOf } from './errors.js'
import {
  decodeRecordFile,
  decodeRecordHeader,
  MAX_HEADER_BYTES,
  type RecordFile,
} from './record-file.js'

/**
 * Reading record files: no lock, one open + read + close. A record file is
 * only ever replaced whole by `rename`, so a reader sees the old or the new
 * file, never a mix. Every `CORRUPT` error names the file's path.
 */

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0
const READ_FLAGS = constants.O_RDONLY | O_NOFOLLOW | (constants.O_NONBLOCK ?? 0)

/**
 * Scratch space for record reads. Reads are synchronous, so one buffer per
 * thread is never shared by two reads; what a read returns is copied out.
 */
const scratch = Buffer.allocUnsafe(64 * 1024)

/** Enough of a file for any valid envelope. */
const HEADER_READ_BYTES = Math.max(MAX_HEADER_BYTES, 4096)

function fileContext(path: string, key: string | undefined): Record<string, unknown> {
  return key === undefined ? { file: path } : { key, file: path }
}

function notARegularFile(path: string, key: string | undefined): AgentStateError {
  return new AgentStateError('CORRUPT', `Record file ${path} is not a regular file`, {
    context: fileContext(path, key),
  })
}

/** Opens a record file without following a symlink; `null` when absent. */
function openRecord(path: string, key: string | undefined): number | null {
  try {
    return openSync(path, READ_FLAGS)
  } catch (error) {
    const code = errnoOf(error)
    if (code === 'ENOENT') return null
    if (code === 'ELOOP') {
      throw new AgentStateError('CORRUPT', `Record file ${path} is a symbolic link`, {
        context: fileContext(path, key),
        cause: error,
      })
    }
    throw error
  }
}

/**
 * Reads up to `length` bytes from the start of a record file into the
 * scratch buffer. `O_NONBLOCK` (in READ_FLAGS) kept a planted FIFO from
 * blocking the open; a directory or FIFO fails here as not a regular file.
 */
function readStart(fd: number, length: number, path: string, key: string | undefined): number {
  try {
    return readSync(fd, scratch, 0, length, 0)
  } catch (error) {
    if (!fstatSync(fd).isFile()) throw notARegularFile(path, key)
    throw error
  }
}

/**
 * Reads a record file; `null` when absent. `key`, when given, must be the key
 * stored inside.
 *
 * open, one read, close: a read that does not fill the scratch buffer has
 * reached the end of a regular file, so no fstat is needed for its size (a
 * short read for any other reason fails the checksums: CORRUPT, never
 * misread). Larger files are read whole after an fstat.
 */
export function readRecordFile(path: string, key: string | undefined): RecordFile | null {
  const fd = openRecord(path, key)
  if (fd === null) return null
  try {
    let filled = readStart(fd, scratch.byteLength, path, key)
    let bytes: Buffer
    if (filled < scratch.byteLength) {
      bytes = Buffer.from(scratch.subarray(0, filled))
    } else {
      const stat = fstatSync(fd)
      if (!stat.isFile()) throw notARegularFile(path, key)
      bytes = Buffer.allocUnsafe(Math.max(stat.size, filled))
      scratch.copy(bytes, 0, 0, filled)
      while (filled < bytes.byteLength) {
        const read = readSync(fd, bytes, filled, bytes.byteLength - filled, filled)
        if (read === 0) break
        filled += read
      }
      bytes = bytes.subarray(0, filled)
    }
    return decodeRecordFile(bytes, path, key)
  } finally {
    closeSync(fd)
  }
}

/**
 * The version in a record file's envelope (checked: magic, format, lengths,
 * checksum, key), reading only its first bytes; `null` when absent. What the
 * write path compares while it holds the commit slot: the record's own bytes
 * were already decoded and checked by core's read before the write began.
 */
export function readRecordVersion(path: string, key: string): string | null {
  const fd = openRecord(path, key)
  if (fd === null) return null
  try {
    const filled = readStart(fd, HEADER_READ_BYTES, path, key)
    return decodeRecordHeader(scratch.subarray(0, filled), path, key).version
  } finally {
    closeSync(fd)
  }
}
