package lend

import (
	"strings"
	"testing"
	"time"
)

// TestMachine walks the graded response through the example
// (idle, 15 min away, pause after 10 min of grace, lent mon-fri
// 19:00-08:00): each row is one step, minutes after Wednesday 18:50.
func TestMachine(t *testing.T) {
	p := Policy{Mode: Idle, AfterSeconds: 15 * 60, Yield: Pause, GraceSeconds: 10 * 60, Hours: "mon-fri 19:00-08:00"}
	t0 := time.Date(2026, 3, 4, 18, 50, 0, 0, time.Local)
	steps := []struct {
		min     int
		present bool
		running int
		phase   Phase
		want    Actions
	}{
		{0, true, 0, Kept, Actions{}},   // the owner at their desk, before the hours
		{5, true, 0, Kept, Actions{}},   // last seen at 18:55
		{15, false, 0, Kept, Actions{}}, // in the hours, away 10 of 15 min
		{20, false, 0, Lent, Actions{Return: true}},
		{30, false, 2, Lent, Actions{}}, // guests run
		{40, true, 2, Warned, Actions{Warn: true}},
		{45, true, 2, Warned, Actions{}}, // within the grace
		{50, true, 2, Yielded, Actions{Yield: true}},
		{51, true, 0, Yielded, Actions{}},                   // paused
		{52, true, 1, Yielded, Actions{Yield: true}},        // one kept running: told again
		{60, false, 0, Yielded, Actions{}},                  // away 8 min
		{67, false, 0, Lent, Actions{Return: true}},         // away 15 min: resumed
		{13*60 + 10, false, 2, Warned, Actions{Warn: true}}, // Thursday 08:00: the hours end
		{13*60 + 20, false, 2, Yielded, Actions{Yield: true}},
		{24 * 60, false, 0, Yielded, Actions{}},             // Thursday 18:50: still out of the hours
		{24*60 + 10, false, 0, Lent, Actions{Return: true}}, // 19:00: lent again, the paused resumed
	}
	m := NewMachine(p, t0)
	for _, s := range steps {
		now := t0.Add(time.Duration(s.min) * time.Minute)
		got := m.Step(Input{Now: now, Present: s.present, Why: "I'm using it", Running: s.running})
		st := m.Status()
		if got != s.want || st.Phase != s.phase {
			t.Fatalf("%s: Step = %+v, phase %s (%s); want %+v, %s", now.Format("Mon 15:04"), got, st.Phase, st.Why, s.want, s.phase)
		}
		if st.Phase == Warned && st.Deadline.Sub(st.Since) != p.Grace() {
			t.Errorf("%s: deadline %s after the warning; want the grace, %s", now.Format("15:04"), st.Deadline.Sub(st.Since), p.Grace())
		}
		if m.Held() != (st.Phase != Lent) {
			t.Errorf("%s: held %v in phase %s", now.Format("15:04"), m.Held(), st.Phase)
		}
	}
}

// TestMachineModes: never lends nothing, always lends regardless of the
// owner, in its hours; a policy that does not check lends nothing.
func TestMachineModes(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.Local) // Wednesday noon
	tests := []struct {
		name    string
		p       Policy
		present bool
		want    Phase
	}{
		{"never", Policy{Mode: Never, AfterSeconds: 60, Yield: Pause, GraceSeconds: 60}, false, Kept},
		{"always, owner present", Policy{Mode: Always, AfterSeconds: 60, Yield: Pause, GraceSeconds: 60}, true, Lent},
		{"always out of hours", Policy{Mode: Always, AfterSeconds: 60, Yield: Pause, GraceSeconds: 60, Hours: "sat-sun"}, false, Kept},
		{"idle, owner away long", Policy{Mode: Idle, AfterSeconds: 60, Yield: Pause, GraceSeconds: 60}, false, Lent},
		{"idle, owner present", Policy{Mode: Idle, AfterSeconds: 60, Yield: Pause, GraceSeconds: 60}, true, Kept},
		{"always, the switch on", Policy{Mode: Always, AfterSeconds: 60, Yield: Pause, GraceSeconds: 60}, false, Kept},
		{"unchecked policy", Policy{Mode: Always, AfterSeconds: 60, Yield: Pause, GraceSeconds: 0}, false, Kept},
	}
	for _, tt := range tests {
		m := NewMachine(tt.p, now.Add(-time.Hour))
		m.Step(Input{Now: now, Present: tt.present, Why: "your GPU processes", Using: strings.Contains(tt.name, "switch")})
		if got := m.Status().Phase; got != tt.want {
			t.Errorf("%s: phase %s (%s); want %s", tt.name, got, m.Status().Why, tt.want)
		}
	}
}

// TestMachineRestart: an agent that restarts on a machine lent to running
// guests, its owner away, keeps it lent (no warning, no pause); with the
// owner there, the guests are warned at once.
func TestMachineRestart(t *testing.T) {
	p := Policy{Mode: Idle, AfterSeconds: 15 * 60, Yield: Pause, GraceSeconds: 10 * 60}
	now := time.Date(2026, 3, 4, 23, 0, 0, 0, time.Local)
	m := NewMachine(p, now)
	if a := m.Step(Input{Now: now, Running: 2}); a.Warn || m.Status().Phase != Lent {
		t.Errorf("restart, owner away: %+v, phase %s; want lent, nobody warned", a, m.Status().Phase)
	}
	m = NewMachine(p, now)
	if a := m.Step(Input{Now: now, Running: 2, Present: true, Why: "your GPU processes"}); !a.Warn || m.Status().Phase != Warned {
		t.Errorf("restart, owner present: %+v, phase %s; want the guests warned", a, m.Status().Phase)
	}
	m = NewMachine(p, now)
	if m.Step(Input{Now: now}); m.Status().Phase != Kept {
		t.Errorf("restart without guests: phase %s; want the owner's until they are away 15 min", m.Status().Phase)
	}
	// The guests' jobs are adopted a few seconds after the lender's first
	// step: still theirs.
	if a := m.Step(Input{Now: now.Add(3 * time.Second), Running: 2}); a.Warn || m.Status().Phase != Lent {
		t.Errorf("guests adopted after the first step: %+v, phase %s; want lent", a, m.Status().Phase)
	}
	// Once the owner was seen, guests found running are warned.
	m = NewMachine(p, now)
	m.Step(Input{Now: now, Present: true, Why: "your GPU processes"})
	if a := m.Step(Input{Now: now.Add(time.Minute), Running: 1}); !a.Warn {
		t.Errorf("a guest running on a machine its owner holds: %+v; want it warned", a)
	}
}
