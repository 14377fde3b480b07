package discovery

import "time"

// Anyone on the link can answer mDNS, under as many instance names as it
// likes: a table of candidates is bounded and forgets what it stops hearing.
const (
	// MaxCandidates bounds a table kept with Remember.
	MaxCandidates = 256
	// CandidateTTL is how long a candidate stays fresh without being
	// heard again (a live machine is heard about every Config.Interval).
	CandidateTTL = 10 * time.Minute
)

// Fresh reports whether c was heard less than CandidateTTL before now.
func (c Candidate) Fresh(now time.Time) bool {
	return now.Sub(c.Seen) < CandidateTTL
}

// Remember records c in m under its instance name, first forgetting the
// candidates that are no longer fresh at c.Seen and, if m still holds
// MaxCandidates, the one heard longest ago. The caller guards m.
func Remember(m map[string]Candidate, c Candidate) {
	if _, ok := m[c.Instance]; !ok && len(m) >= MaxCandidates {
		var oldest string
		for k, v := range m {
			if !v.Fresh(c.Seen) {
				delete(m, k)
			} else if oldest == "" || v.Seen.Before(m[oldest].Seen) {
				oldest = k
			}
		}
		if len(m) >= MaxCandidates {
			delete(m, oldest)
		}
	}
	m[c.Instance] = c
}
