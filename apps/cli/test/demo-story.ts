/**
 * The lines a successful `agent-state demo` on the embedded default prints, in the terms that
 * prove the story: the owner killed mid-effect, the effect reconciled through the provider rather
 * than dispatched again, the in-flight event re-delivered first, the ticket filed exactly once.
 * `test/demo.test.ts` checks them in a real terminal; the packed-install suite checks the same
 * lines from the published packages.
 */
export const DEMO_STORY: readonly RegExp[] = [
  /^1\. a session with a handoff$/m,
  /research stage read the handoff: status ready/,
  /^2\. a worker consumes queued events and files a ticket; SIGKILL lands mid-effect$/m,
  /provider \d+\s+a ticket tracker on 127\.0\.0\.1:\d+/,
  /agent \d+\s+spawned daemon researcher: a worker \(lease token 1\)/,
  /triggered 4 events/,
  /handled events 0-1: each acknowledged with a checkpoint/,
  /took event 2 \(file a ticket\), opened run researcher-ticket, recorded the effect as submitted/,
  /killed agent \d+ with SIGKILL after the provider filed the ticket, before its answer reached the agent/,
  /left behind: effect ticket-1 "submitted" .*event 2 unacknowledged at the head, snapshot at turn 2/,
  /the lease expired: nobody owns the worker now/,
  /agent \d+\s+resumed worker researcher at turn 2 with fencing token 2 \(the killed owner had 1\)/,
  /opened run researcher-ticket \(attempt 2\): asked the provider by idempotency key; it had filed T-101, so the ledger recorded "confirmed"/,
  /agent \d+\s+tried to resume the same worker and run: refused, CONCURRENT_RESUME and RUN_OWNED/,
  /event 2 re-delivered first \(attempt 2: it was in flight at the kill\); its effect returned the recorded T-101 without dispatching/,
  /finished the worker at turn 4 \(done\) and the run \(completed\); the provider filed the ticket exactly once/,
  /^6\. a worker parks on a timeout and an event; a wake dispatcher wakes it on the event and it continues its run$/m,
  /demo\s+worker reviewer filed T-102 in run reviewer-fix and parked: woken by event fix-chosen, or by its 5-minute timeout \(a pending wake\)/,
  /demo\s+started a wake dispatcher in this process/,
  /demo\s+published event fix-chosen: a wake for reviewer registered/,
  /dispatcher\s+fired the event wake \d+ ms after the publish: resumed reviewer with the event as input; its timeout wake cancelled, not fired/,
  /reviewer\s+reopened run reviewer-fix under its new lease \(token 2, attempt 2\): review-1 not repeated, filed T-103; run completed, worker done/,
  /^every step behaved as expected/m,
  /^recovered after the kill, and why:$/m,
  /agent-state workers --url 'file:\.\/\.agent-state' --namespace demo-\d{14}-[0-9a-f]{4}/,
  /agent-state stat runs\/researcher-ticket\/run\.json --url/,
  /agent-state daemons --url 'file:\.\/\.agent-state' --namespace demo-/,
  /agent-state runs --url 'file:\.\/\.agent-state' --namespace demo-/,
  /^or all of it in a browser \(read-only, on 127\.0\.0\.1; Ctrl-C stops it\):$/m,
  /agent-state ui --url 'file:\.\/\.agent-state' --namespace demo-\d{14}-[0-9a-f]{4}/,
  /^ {2}\(to resolve effects or close workers from it: add --allow-actions --operator <you>\)$/m,
]

/**
 * What `agent-state runs --json` shows of the demo's first run afterwards: completed, one effect
 * settled. It is the first of {@link DEMO_RUN_ROWS}.
 */
export const DEMO_RUN_ROW = {
  runId: 'researcher-ticket',
  status: 'completed',
  attempt: { attemptId: 'researcher-ticket@2', count: 2 },
  position: { seq: 2, next: null },
  effects: { unknown: 0, submitted: 0, planned: 0, settled: 1, incomplete: [] },
  error: null,
}

/** What `agent-state runs --json` shows of the woken reviewer's run: opened, reopened after the wake, completed. */
export const DEMO_WAKE_RUN_ROW = {
  runId: 'reviewer-fix',
  status: 'completed',
  attempt: { attemptId: 'reviewer-fix@2', count: 2 },
  position: { seq: 0, next: null },
  effects: { unknown: 0, submitted: 0, planned: 0, settled: 2, incomplete: [] },
  error: null,
}

/** Every run `agent-state runs --json` shows after the demo, in its order. */
export const DEMO_RUN_ROWS = [DEMO_RUN_ROW, DEMO_WAKE_RUN_ROW]
