//go:build linux

package pool

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/store"
)

// ownerManager returns the Manager of a pool's creator, over a store in a
// temporary directory, and that directory.
func ownerManager(t testing.TB) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	id, err := peer.LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	m, err := NewManager(context.Background(), ManagerConfig{Identity: id, DB: db, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Create(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// batch returns n invites m's device signs on a copy of its log, as a
// member relays records this device has not seen.
func batch(t testing.TB, m *Manager, n int) []json.RawMessage {
	t.Helper()
	m.mu.Lock()
	l := m.log.Clone()
	m.mu.Unlock()
	now := m.cfg.Now()
	var out []json.RawMessage
	for range n {
		r, _, err := l.NewInvite(m.key, RoleViewer, 1, now.Add(time.Hour), now)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Apply(r, now); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		out = append(out, b)
	}
	return out
}

// TestReceiveResolvesOutsideTheLock is the audit's finding: a relayed batch
// was resolved under the Manager's mutex, so every role check waited for
// it. The batch is applied to a copy of the log, with the mutex free.
func TestReceiveResolvesOutsideTheLock(t *testing.T) {
	m, _ := ownerManager(t)
	recs := batch(t, m, 5)
	ran := false
	m.testHookIngest = func() {
		ran = true
		if !m.mu.TryLock() {
			t.Error("the Manager's mutex is held while a relayed batch is applied")
			return
		}
		m.mu.Unlock()
		if _, ok := m.Role(m.Self()); !ok {
			t.Error("a role check during the ingest finds no owner")
		}
	}
	if err := m.Receive(context.Background(), m.Self(), recs); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the ingest hook never ran")
	}
	if got := len(m.log.Invites()); got != 6 {
		t.Errorf("%d invites after the batch; want 6", got)
	}
}

// TestReceiveStoresUnderACancelledContext is the audit's finding: the
// replication watchdog cancelled the context of a long ingest, the save
// failed, and the ingest repeated at every restart. The save has a context
// of its own.
func TestReceiveStoresUnderACancelledContext(t *testing.T) {
	m, dir := ownerManager(t)
	recs := batch(t, m, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Receive(ctx, m.Self(), recs); err != nil {
		t.Fatalf("Receive under a cancelled context: %v", err)
	}
	db, err := store.Open(filepath.Join(dir, "replica.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.PoolRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3+3 { // genesis, rules, first invite, the batch
		t.Errorf("the store holds %d records; want 6", len(rows))
	}
}

// BenchmarkReceiveBatch receives a batch of 10,000 records, as a member
// that joined long ago and was offline does, and stores them, while role
// checks run every millisecond: it reports the CPU of the ingest and the
// longest a role check waited.
func BenchmarkReceiveBatch(b *testing.B) {
	const n = 9_990 // and the genesis and first invite: a full log
	var cpu time.Duration
	var worst atomic.Int64
	for range b.N {
		b.StopTimer()
		m, _ := ownerManager(b)
		recs := batch(b, m, n)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				m.Role(m.Self())
				if d := int64(time.Since(start)); d > worst.Load() {
					worst.Store(d)
				}
				time.Sleep(time.Millisecond)
			}
		}()
		b.StartTimer()
		before := cpuTime(b)
		if err := m.Receive(context.Background(), m.Self(), recs); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime(b) - before
		close(stop)
		<-done
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(worst.Load())/1e6, "role-wait-max-ms")
}

// cpuTime returns the CPU time (user and system) this process used so far
// (role checks that run beside an ingest included).
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
