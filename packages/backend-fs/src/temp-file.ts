import {
  close,
  closeSync,
  constants,
  fsync,
  fsyncSync,
  open,
  openSync,
  write,
  writeSync,
} from 'node:fs'

/**
 * Writing a write's complete temp file, before any commit slot is taken:
 * `O_CREAT|O_EXCL|O_NOFOLLOW`, a unique name, written whole, fsynced (with
 * `fsync`), closed.
 */

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW

function callback<T>(run: (done: (error: Error | null, value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    run((error, value) => (error === null ? resolve(value) : reject(error)))
  })
}

/** Writes and fsyncs a new temp file on the thread pool (while other writes run). */
export async function writeTempAsync(temp: string, bytes: Buffer, sync: boolean): Promise<void> {
  const fd = await callback<number>((done) => open(temp, CREATE_FLAGS, 0o600, done))
  try {
    let written = 0
    while (written < bytes.byteLength) {
      const offset = written
      written += await callback<number>((done) =>
        write(fd, bytes, offset, bytes.byteLength - offset, null, done),
      )
    }
    if (sync) await callback<void>((done) => fsync(fd, (error) => done(error, undefined)))
  } finally {
    await callback<void>((done) => close(fd, (error) => done(error, undefined)))
  }
}

/** The same, synchronously: cheaper when no other write of this instance is waiting. */
export function writeTempSync(temp: string, bytes: Buffer, sync: boolean): void {
  const fd = openSync(temp, CREATE_FLAGS, 0o600)
  try {
    let written = 0
    while (written < bytes.byteLength) written += writeSync(fd, bytes, written)
    if (sync) fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
