//go:build !linux

package jobs

// hostMemory is unknown off Linux (jobs run on Linux nodes).
func hostMemory() int64 { return 0 }

// fileOwner is unknown off Linux.
func fileOwner(string) (uid, gid uint32, ok bool) { return 0, 0, false }
