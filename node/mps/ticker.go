package mps

import "time"

// newTicker ticks every p (a non-positive p: every 5 s).
func newTicker(p time.Duration) *time.Ticker {
	if p <= 0 {
		p = 5 * time.Second
	}
	return time.NewTicker(p)
}
