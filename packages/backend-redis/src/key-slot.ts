/**
 * The Cluster hash slot of `key` (CRC16-XMODEM of its hash tag, the text
 * between the first `{` and the next `}` when not empty, else of the whole
 * key, modulo 16384), as `CLUSTER KEYSLOT` computes it. Used to send a
 * script straight to the connection of the node that owns its keys' slot, so
 * the `WAIT` that confirms it can be shared on that connection.
 */
export function keySlot(key: string): number {
  const open = key.indexOf('{')
  const close = open < 0 ? -1 : key.indexOf('}', open + 1)
  const tagged = close > open + 1 ? key.slice(open + 1, close) : key
  let crc = 0
  for (const byte of Buffer.from(tagged)) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
    }
  }
  return crc % 16384
}
