//go:build linux && cgo

package gpu

import "time"

// SetClock makes s read the time from now (tests drive samples through
// minutes without waiting).
func SetClock(s *Sampler, now func() time.Time) { s.now = now }
