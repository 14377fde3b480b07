// Package nodestore keeps the state of this machine's node parts
// (node/jobs, node/folders) in its replica (sync/store): job records in
// the replicated log, so every member sees them; job environments, the
// policy, GPU quarantines and share definitions in the local settings,
// which never leave this machine.
package nodestore
