import { BoundedCache } from './bounded-cache.js'

/**
 * The id of the newest checkpoint this saver wrote or found in a namespace,
 * by the namespace's checkpoints prefix: `getTuple` reads that record beside
 * its listing, a guess the listing then confirms (one round instead of two
 * when nobody else wrote meanwhile) or overrules (one read wasted).
 */
export class NewestCheckpoints extends BoundedCache<string> {}
