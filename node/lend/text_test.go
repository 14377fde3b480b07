package lend

import (
	"testing"
	"time"
)

func TestStatusText(t *testing.T) {
	now := time.Date(2026, 3, 4, 14, 22, 0, 0, time.UTC)
	tests := []struct {
		st   Status
		want string
	}{
		{Status{Mode: Idle, Phase: Lent, OwnerSeen: now.Add(-23 * time.Minute)}, "lent (owner away 23 min)"},
		{Status{Mode: Idle, Phase: Lent, OwnerSeen: now.Add(-125 * time.Minute)}, "lent (owner away 2 h 5 min)"},
		{Status{Mode: Always, Phase: Lent, Hours: "sat-sun"}, "lent (sat-sun)"},
		{Status{Mode: Idle, Phase: Warned, Yield: Pause, Why: "owner present: I'm using it", Deadline: now.Add(10 * time.Minute)}, "owner present: guests pause at 14:32 (I'm using it)"},
		{Status{Mode: Idle, Phase: Yielded, Yield: Stop, Why: "owner present: your GPU processes", Since: now.Add(-time.Hour)}, "owner present: guests stopped since 13:22 (your GPU processes)"},
		{Status{Mode: Always, Phase: Warned, Yield: Pause, Why: "outside the lend hours (mon-fri 19:00-08:00)", Deadline: now.Add(10 * time.Minute)}, "outside the lend hours (mon-fri 19:00-08:00): guests pause at 14:32"},
		{Status{Mode: Idle, Phase: Kept, Why: "owner away less than 15m0s"}, "owner's: owner away less than 15m0s"},
		{Status{Mode: Never, Phase: Kept, Why: "lend never"}, "owner's: lend never"},
	}
	for _, tt := range tests {
		if got := tt.st.Text(now); got != tt.want {
			t.Errorf("Text(%+v) = %q; want %q", tt.st, got, tt.want)
		}
	}
}
