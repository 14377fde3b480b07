//go:build unix

package replica

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, user and system: what a
// benchmark reports beside its wall time, on a machine shared with others.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
