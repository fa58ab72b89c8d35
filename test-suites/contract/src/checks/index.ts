import type { ContractCheck } from '../check.js'
import { basicChecks } from './basic.js'
import { concurrencyChecks } from './concurrency.js'
import { crossKeyFenceChecks } from './cross-key-fence.js'
import { decisionChecks } from './decisions.js'
import { errorChecks } from './errors.js'
import { getManyChecks } from './get-many.js'
import { keyChecks } from './keys.js'
import { leaseEdgeChecks } from './lease-edges.js'
import { leaseChecks } from './leases.js'
import { listingChecks } from './listing.js'
import { propertyChecks } from './property.js'
import { ruleCombinationChecks } from './rule-combinations.js'
import { valueChecks } from './values.js'
import { versionChecks } from './versions.js'

/** Every in-process check of the contract, in report order. */
export const IN_PROCESS_CHECKS: readonly ContractCheck[] = [
  ...basicChecks,
  ...valueChecks,
  ...keyChecks,
  ...versionChecks,
  ...listingChecks,
  ...getManyChecks,
  ...leaseChecks,
  ...leaseEdgeChecks,
  ...crossKeyFenceChecks,
  ...ruleCombinationChecks,
  ...decisionChecks,
  ...concurrencyChecks,
  ...propertyChecks,
  ...errorChecks,
]
