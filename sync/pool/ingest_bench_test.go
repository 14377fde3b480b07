//go:build unix

package pool_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/pool"
)

// bigLog returns a valid log of about n records, as a pool that grew to
// it honestly writes it: admins admitted by the creator, each admitting
// members with invites of its own, every record extending the last.
func bigLog(tb testing.TB, n int) (*fixture, []pool.Record) {
	tb.Helper()
	f := newFixture(tb, false)
	const perAdmin = 900
	admins := n/perAdmin + 1
	inv, adminCode := f.invite("creator", pool.RoleAdmin, admins, 24*time.Hour)
	f.apply(inv)
	for a := range admins {
		name := fmt.Sprintf("admin%d", a)
		f.keys[name] = f.newKey(name)
		f.apply(f.admit("creator", name, adminCode))
	}
	held := len(f.l.Records())
	for a := 0; held < n; a++ {
		by := fmt.Sprintf("admin%d", a)
		inv, code := f.invite(by, pool.RoleMember, perAdmin, 24*time.Hour)
		f.apply(inv)
		held++
		for i := 0; i < perAdmin-1 && held < n; i++ {
			name := fmt.Sprintf("m%d.%d", a, i)
			f.keys[name] = f.newKey(name)
			f.apply(f.admit(by, name, code))
			held++
		}
	}
	return f, f.l.Records()
}

// bigLogs caches bigLog's logs by size: b.Run calls a benchmark more than once.
var bigLogs = map[int]struct {
	f    *fixture
	recs []pool.Record
}{}

// BenchmarkIngestLog checks a whole log of n records, as a joiner does with
// a member's answer and as a member does with a relayed batch that brings
// it all.
func BenchmarkIngestLog(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c, ok := bigLogs[n]
			if !ok {
				c.f, c.recs = bigLog(b, n)
				bigLogs[n] = c
			}
			f, recs := c.f, c.recs
			b.ResetTimer()
			cpu := cpuTime(b)
			for range b.N {
				if _, err := pool.Verify(f.l.Pool(), recs, f.now); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuTime(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(len(recs)), "records")
		})
	}
}

// cpuTime returns the CPU time (user and system) this process used so far:
// the machine is shared, so wall time says little.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
