import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** A fresh access token: 32 random bytes (256 bits), base64url. */
export function newAccessToken(): string {
  return randomBytes(32).toString('base64url')
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest()
}

/**
 * Whether `presented` is the token, compared in constant time: both are hashed first, so the
 * comparison neither depends on where they differ nor leaks the token's length.
 */
export function tokenMatches(expected: string, presented: string): boolean {
  return timingSafeEqual(digest(expected), digest(presented))
}
