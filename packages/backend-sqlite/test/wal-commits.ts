import { existsSync, readFileSync } from 'node:fs'

/**
 * Counts the commits in a database's write-ahead log: the frames of the
 * current WAL generation (salts matching the header) whose "database size
 * after commit" field is non-zero, i.e. the last frame of each transaction.
 * A test compares the count before and after some operations to see how many
 * transactions they took, without any timing. Valid while no checkpoint
 * resets the log (small tests stay far below the 1000-page auto-checkpoint).
 */
export function walCommits(databasePath: string): number {
  const walPath = `${databasePath}-wal`
  if (!existsSync(walPath)) return 0
  const wal = readFileSync(walPath)
  if (wal.byteLength < 32) return 0
  const pageSize = wal.readUInt32BE(8)
  const salt1 = wal.readUInt32BE(16)
  const salt2 = wal.readUInt32BE(20)
  let commits = 0
  for (let at = 32; at + 24 + pageSize <= wal.byteLength; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break
    if (wal.readUInt32BE(at + 4) !== 0) commits++
  }
  return commits
}
