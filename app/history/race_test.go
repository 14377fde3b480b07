//go:build race

package history_test

// raceEnabled: the race detector slows SQLite (pure Go) tenfold, too much
// for the backfill scenario's timing.
const raceEnabled = true
