//go:build race

package pool_test

// raceEnabled: the race detector slows the property tests tenfold.
const raceEnabled = true
