package transport

import (
	"bytes"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	var logs bytes.Buffer
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(LimiterConfig{What: "tests", Burst: 3, Rate: 1, Sources: 100}, slog.New(slog.NewTextHandler(&logs, nil)))
	l.now = func() time.Time { return now }
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("::ffff:10.0.0.2")
	for i := range 3 {
		if !l.Allow(a) {
			t.Fatalf("event %d of a burst of 3 refused", i+1)
		}
	}
	for range 5 {
		if l.Allow(a) {
			t.Fatal("an event over the burst allowed")
		}
	}
	if !l.Allow(b) {
		t.Error("another source refused")
	}
	now = now.Add(1500 * time.Millisecond)
	if !l.Allow(a) || l.Allow(a) {
		t.Error("1.5 s at 1/s did not give back exactly one event")
	}
	if n := strings.Count(logs.String(), "source over its budget"); n != 1 {
		t.Errorf("%d log lines in the first minute; want 1:\n%s", n, logs.String())
	}
	now = now.Add(time.Minute)
	l.Allow(a)
	l.Allow(a)
	l.Allow(a)
	l.Allow(a)
	if n := strings.Count(logs.String(), "source over its budget"); n != 2 {
		t.Errorf("%d log lines after a minute; want 2", n)
	}
	if !strings.Contains(logs.String(), "source=10.0.0.1") {
		t.Errorf("log does not name the source:\n%s", logs.String())
	}
}

// TestLimiterBounded: sources invented without end keep the table at its
// bound; those that refilled are forgotten, the rest share one budget.
func TestLimiterBounded(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLimiter(LimiterConfig{What: "tests", Burst: 2, Rate: 1, Sources: 100}, slog.New(slog.DiscardHandler))
	l.now = func() time.Time { return now }
	for i := range 10000 {
		l.Allow(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}))
	}
	if n := len(l.srcs); n > 101 {
		t.Errorf("%d sources tracked; want at most 100 and the shared one", n)
	}
	now = now.Add(10 * time.Second)
	fresh := netip.MustParseAddr("192.168.1.1")
	if !l.Allow(fresh) {
		t.Error("a new source refused after the table refilled")
	}
	if _, ok := l.srcs[fresh]; !ok {
		t.Error("refilled sources were not forgotten to make room")
	}
	if l.Spent(netip.MustParseAddr("10.0.0.5")) {
		t.Error("a source that refilled is spent")
	}
}
