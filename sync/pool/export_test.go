package pool

import "testing"

// Limits are the bounds on a log's growth; SetLimits sets them until the
// test ends, so that a test fills a log of a few records.
type Limits struct {
	Log, ReserveAdmin, ReserveOwner  int
	AdmitsAdmin, AdmitsMember, Slack int
}

func SetLimits(tb testing.TB, lim Limits) {
	old := Limits{maxLog, reserveAdmin, reserveOwner, maxAdmitsAdmin, maxAdmitsMember, maxInviteSlack}
	tb.Cleanup(func() { setLimits(old) })
	setLimits(lim)
}

func setLimits(l Limits) {
	maxLog, reserveAdmin, reserveOwner = l.Log, l.ReserveAdmin, l.ReserveOwner
	maxAdmitsAdmin, maxAdmitsMember, maxInviteSlack = l.AdmitsAdmin, l.AdmitsMember, l.Slack
}
