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

// floods caches floodOf's records by size.
var floods = map[int]struct {
	f          *fixture
	base, recs []pool.Record
}{}

// floodOf returns a valid log of about n records (bigLog) and k records
// an admin signs on it, each naming the same state, from before the others
// (the flood admissions bounded by maxAdmitsAdmin): every one is
// concurrent with the ones before it, so none extends every head.
//
// Alternating, every other record extends every head instead, so that the
// log must resolve its own membership, made stale by the record before, to
// judge it.
func floodOf(tb testing.TB, n, k int, alternating bool) (*fixture, []pool.Record, []pool.Record) {
	tb.Helper()
	key := n*100_000 + k
	if alternating {
		key = -key
	}
	if c, ok := floods[key]; ok {
		return c.f, c.base, c.recs
	}
	f, _ := bigLog(tb, n)
	inv, code := f.invite("admin", pool.RoleMember, k, 24*time.Hour)
	f.apply(inv)
	base := f.l.Records()
	old, cur := f.l, f.l.Clone()
	var recs []pool.Record
	for i := range k {
		name := fmt.Sprintf("flood%d", i)
		f.keys[name] = f.newKey(name)
		f.l = old
		if alternating && i%2 == 1 {
			f.l = cur
		}
		r := admission(f, "admin", code, name, f.now)
		if _, err := cur.Apply(r, f.now); err != nil {
			tb.Fatal(err)
		}
		recs = append(recs, r)
	}
	f.l = old
	floods[key] = struct {
		f          *fixture
		base, recs []pool.Record
	}{f, base, recs}
	return f, base, recs
}

// BenchmarkOldStateFlood applies k records that name an old state to a log
// of n, as a member does with a relayed batch of them: the membership of
// the state they name is resolved once, and the log's own, made stale by
// each, at most every maxVoid records, or when a record extending every
// head is judged (alternating).
func BenchmarkOldStateFlood(b *testing.B) {
	for _, size := range []struct {
		n, k        int
		alternating bool
	}{{1000, 100, false}, {9000, 100, false}, {9000, 999, false}, {9000, 999, true}} {
		name := fmt.Sprintf("log=%d/flood=%d", size.n, size.k)
		if size.alternating {
			name += "/alternating"
		}
		b.Run(name, func(b *testing.B) {
			f, base, recs := floodOf(b, size.n, size.k, size.alternating)
			b.ResetTimer()
			var cpu time.Duration
			for range b.N {
				b.StopTimer()
				l, err := pool.Verify(f.l.Pool(), base, f.now)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				before := cpuTime(b)
				for _, r := range recs {
					if _, err := l.Apply(r, f.now); err != nil {
						b.Fatal(err)
					}
				}
				if len(l.Members()) == 0 { // the membership, resolved once more, as a role check would
					b.Fatal("no members")
				}
				cpu += cpuTime(b) - before
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}
