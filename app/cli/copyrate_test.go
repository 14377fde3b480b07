package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCopyText: the copy bar says no rate until it watched the copy for
// rateHold (its first tick said "24 TB/s": the bytes done before it, over
// microseconds), then the rate since it first saw it, in binary units.
func TestCopyText(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name               string
		done, total, done0 int64
		elapsed            time.Duration
		want               string
	}{
		{"first tick, much done before", 300 * mib, 1024 * mib, 300 * mib, 0, "300.0 MiB of 1.0 GiB"},
		{"a moment later", 301 * mib, 1024 * mib, 300 * mib, 4 * time.Microsecond, "301.0 MiB of 1.0 GiB"},
		{"just short of the hold", 390 * mib, 1024 * mib, 300 * mib, rateHold - time.Millisecond, "390.0 MiB of 1.0 GiB"},
		{"held", 500 * mib, 1024 * mib, 300 * mib, 2 * time.Second, "500.0 MiB of 1.0 GiB, 100.0 MiB/s, 5s left"},
		{"stalled", 500 * mib, 1024 * mib, 500 * mib, 3 * time.Second, "500.0 MiB of 1.0 GiB, stalled"},
		{"done", 1024 * mib, 1024 * mib, 0, 4 * time.Second, "1.0 GiB of 1.0 GiB, 256.0 MiB/s"},
	} {
		if got := copyText(tc.done, tc.total, tc.done0, tc.elapsed); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCopyBarFirstTick: the bar's first tick, with most of the copy done
// before it, says no rate, and no decimal unit stands next to a binary
// one.
func TestCopyBarFirstTick(t *testing.T) {
	var out bytes.Buffer
	b := newCopyBar(&out, 1<<30)
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	b.set(900<<20, at)
	b.set(901<<20, at.Add(time.Millisecond))
	for _, bad := range []string{"/s", " MB", " GB", " TB", " kB"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("first ticks %q hold %q", out.String(), bad)
		}
	}
	if last := lastFrame(out.String()); !strings.Contains(last, "87% |") || !strings.HasSuffix(last, "901.0 MiB of 1.0 GiB ") {
		t.Errorf("second tick %q; want 87%%, 901.0 MiB of 1.0 GiB", last)
	}
	b.set(1000<<20, at.Add(2*time.Second))
	if last := lastFrame(out.String()); !strings.HasSuffix(last, "1000.0 MiB of 1.0 GiB, 50.0 MiB/s, 0s left ") {
		t.Errorf("after 2 s %q; want 50.0 MiB/s", last)
	}
}

// lastFrame is what a terminal shows of a bar's output: its last frame.
func lastFrame(s string) string { return s[strings.LastIndex(s, "\r")+1:] }
