//go:build !linux

package jobs

// hostMemory is unknown off Linux (jobs run on Linux nodes).
func hostMemory() int64 { return 0 }
