// Package alerting runs this machine's alerting (node/alerts) over the
// replica: the store of alerts and alerting settings (sync/store), the
// evaluator's inputs (the ledger's grants, the shared folders, the
// liveness of the pool's GPU machines), the adoption of the rules an
// owner's or admin's machine published while this one was away, and the
// webhook: only owners' and admins' machines hold its URL (a member's
// drops it), and one of them relays the alerts of the machines that do not.
//
// Open reads the local settings back; Alerting.Run evaluates, posts to the
// webhook, adopts and prunes until ctx is cancelled, and returns only after
// every goroutine it started has exited.
package alerting
