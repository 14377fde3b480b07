package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
)

func TestAlertSpan(t *testing.T) {
	for in, want := range map[string]time.Duration{"0": 0, "90s": 90 * time.Second, "2h": 2 * time.Hour, "7d": 7 * 24 * time.Hour, "1.5d": 36 * time.Hour} {
		if got, err := alertSpan(in); err != nil || got != want {
			t.Errorf("alertSpan(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1h", "xd", "7w"} {
		if _, err := alertSpan(in); err == nil {
			t.Errorf("alertSpan(%q) accepted", in)
		}
	}
}

func TestWriteAlertsAndCountdown(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	zero := 0
	cleared := now.Add(-time.Minute)
	var b strings.Builder
	err := writeAlerts(&b, []app.Alert{
		{ID: "a1", Node: "N1", Rule: "gpu-temp", Severity: "critical", GPU: &zero, Message: "GPU 0 at 91 °C", FiredAt: now.Add(-2 * time.Minute), Muted: true,
			Folded: []string{"gpu-health", "gpu-throttle"}},
		{ID: "a2", Node: "N2", Rule: "gpu-idle-allocation", Severity: "warning", Message: "idle", FiredAt: now.Add(-time.Hour), ClearedAt: &cleared},
	}, map[string]string{"N1": "gpu1"}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"firing (muted)", "critical", "gpu1", "gpu-temp (+gpu-health, gpu-throttle)", "GPU 0 at 91 °C", "a1", "cleared", "N2"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("alerts table lacks %q:\n%s", want, b.String())
		}
	}
	at := now.Add(12 * time.Minute)
	j := jobs.Job{State: jobs.Running, ReclaimAt: &at}
	if got := reclaimNote(j, now); got != " (GPUs idle: stopped in 12m0s unless busy)" {
		t.Errorf("reclaimNote = %q", got)
	}
	j.State = jobs.Exited
	if got := reclaimNote(j, now); got != "" {
		t.Errorf("reclaimNote of an ended job = %q", got)
	}
}
