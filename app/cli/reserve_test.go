package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

func TestReserveRequest(t *testing.T) {
	now := time.Date(2026, 3, 24, 10, 0, 0, 0, time.UTC) // a Tuesday
	tests := []struct {
		name    string
		f       reserveFlags
		wantErr string
		secs    int64
		from    time.Time
	}{
		{"thu for 3h", reserveFlags{gpus: 2, from: "thu 14:00", span: "3h"}, "", 3 * 3600, time.Date(2026, 3, 26, 14, 0, 0, 0, time.UTC)},
		{"slurm length", reserveFlags{gpuIDs: []int{0, 1}, from: "2026-03-25 09:00", span: "1-12:00:00"}, "", 36 * 3600, time.Date(2026, 3, 25, 9, 0, 0, 0, time.UTC)},
		{"both gpus and ids", reserveFlags{gpus: 2, gpuIDs: []int{0}, from: "thu 14:00", span: "3h"}, "not both", 0, time.Time{}},
		{"no gpus", reserveFlags{from: "thu 14:00", span: "3h"}, "how many GPUs", 0, time.Time{}},
		{"no length", reserveFlags{gpus: 1, from: "thu 14:00"}, "how long", 0, time.Time{}},
		{"bad length", reserveFlags{gpus: 1, from: "thu 14:00", span: "soon"}, "--for", 0, time.Time{}},
		{"past", reserveFlags{gpus: 1, from: "2026-03-20 14:00", span: "1h"}, "in the past", 0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.now, tt.f.loc = func() time.Time { return now }, time.UTC
			req, err := tt.f.request("dgx")
			if tt.wantErr != "" {
				var u usageError
				if !errors.As(err, &u) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("request = %+v, %v; want a usage error saying %q", req, err, tt.wantErr)
				}
				return
			}
			if err != nil || req.Seconds != tt.secs || !req.From.Equal(tt.from) || req.Node != "dgx" {
				t.Fatalf("request = %+v, %v; want %v for %ds", req, err, tt.from, tt.secs)
			}
		})
	}
}

func TestLengthOf(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "30d": 30 * 24 * time.Hour, "24h": 24 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := lengthOf(in); err != nil || got != want {
			t.Errorf("lengthOf(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"400d", "-1d", "soon"} {
		if _, err := lengthOf(in); err == nil {
			t.Errorf("lengthOf(%q) succeeded", in)
		}
	}
}

func TestStopNote(t *testing.T) {
	now := time.Date(2026, 3, 24, 13, 46, 0, 0, time.UTC)
	at := now.Add(14 * time.Minute)
	j := jobs.Job{State: jobs.Running, StopAt: &at, StopWhy: "stopped: its GPUs are reserved for bob from Tue 24 Mar 14:00 UTC (rsv-1)"}
	if got, want := stopNote(j, now), " (stopped in 14m0s: its GPUs are reserved for bob from Tue 24 Mar 14:00 UTC (rsv-1))"; got != want {
		t.Errorf("stopNote = %q; want %q", got, want)
	}
	j.StopWhy = "requeued: its GPUs are reserved for bob from Tue 24 Mar 14:00 UTC (rsv-1)"
	if got, want := stopNote(j, now), " (requeued in 14m0s: its GPUs are reserved for bob from Tue 24 Mar 14:00 UTC (rsv-1))"; got != want {
		t.Errorf("stopNote of a job the policy requeues = %q; want %q", got, want)
	}
	j.State = jobs.Exited
	if got := stopNote(j, now); got != "" {
		t.Errorf("stopNote of an ended job = %q", got)
	}
}

func TestLength(t *testing.T) {
	for secs, want := range map[int64]string{30 * 24 * 3600: "30d", 24 * 3600: "1d", 2 * 3600: "2h", 900: "15m", 5400: "1h30m", 45: "45s"} {
		if got := length(secs); got != want {
			t.Errorf("length(%d) = %q; want %q", secs, got, want)
		}
	}
}
