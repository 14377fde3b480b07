package lend

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestAnyDesktopInUse(t *testing.T) {
	const (
		active = "Type=wayland\nClass=user\nActive=yes\nIdleHint=no\nLockedHint=no\n"
		idle   = "Type=wayland\nClass=user\nActive=yes\nIdleHint=yes\nLockedHint=no\n"
		locked = "Type=x11\nClass=user\nActive=yes\nIdleHint=no\nLockedHint=yes\n"
		ssh    = "Type=tty\nClass=user\nActive=yes\nIdleHint=no\nLockedHint=no\n"
		greet  = "Type=x11\nClass=greeter\nActive=yes\nIdleHint=no\nLockedHint=no\n"
		away   = "Type=x11\nClass=user\nActive=no\nIdleHint=no\nLockedHint=no\n" // switched to another seat's user
	)
	tests := []struct {
		name, out string
		want      bool
	}{
		{"active desktop", active, true},
		{"idle desktop", idle, false},
		{"locked", locked, false},
		{"ssh only", ssh, false},
		{"greeter", greet, false},
		{"inactive", away, false},
		{"ssh, then the desktop", ssh + "\n" + active, true},
		{"idle, then ssh", idle + "\n" + ssh, false},
		{"blocks without blank lines", ssh + active, true},
		{"nothing", "", false},
	}
	for _, tt := range tests {
		if got := anyDesktopInUse([]byte(tt.out)); got != tt.want {
			t.Errorf("%s: %v; want %v", tt.name, got, tt.want)
		}
	}
}

// TestLogindAbsent: without logind the signal says nothing and asks
// again only after Retry: no error loop.
func TestLogindAbsent(t *testing.T) {
	calls := 0
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	l := &Logind{Every: 2 * time.Second, Retry: 5 * time.Minute, Now: func() time.Time { return now },
		Run: func(context.Context, ...string) ([]byte, error) {
			calls++
			return nil, errors.New("System has not been booted with systemd as init system (PID 1). Can't operate.")
		}}
	for range 100 {
		if ok, _ := l.Signal(context.Background()); ok {
			t.Fatal("no logind, yet the owner is present")
		}
		now = now.Add(time.Second)
	}
	if calls != 1 || l.Available() {
		t.Errorf("loginctl ran %d times in 100 s without logind; want once", calls)
	}
}

// TestLogindAsks: sessions listed, their hints read in one call, and
// the answer kept for Every.
func TestLogindAsks(t *testing.T) {
	var asked []string
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	l := &Logind{Every: time.Second, Retry: time.Minute, Now: func() time.Time { return now },
		Run: func(_ context.Context, args ...string) ([]byte, error) {
			asked = append(asked, strings.Join(args, " "))
			if args[0] == "list-sessions" {
				return []byte("     2 1000 ana seat0 tty2\n     c1  120 gdm seat0 tty1\n"), nil
			}
			return []byte("Type=wayland\nClass=user\nActive=yes\nIdleHint=no\nLockedHint=no\n\nType=x11\nClass=greeter\nActive=no\nIdleHint=yes\nLockedHint=no\n"), nil
		}}
	if ok, why := l.Signal(context.Background()); !ok || why != DesktopInUse {
		t.Errorf("Signal = %v, %q; want present", ok, why)
	}
	now = now.Add(time.Second / 2)
	l.Signal(context.Background())
	if len(asked) != 2 || !strings.HasSuffix(asked[1], " 2 c1") {
		t.Errorf("asked %q; want list-sessions, then show-session of both, and not again within half a second", asked)
	}
	now = now.Add(time.Second/2 - 10*time.Millisecond) // the next beat, a little early
	l.Signal(context.Background())
	if len(asked) != 4 {
		t.Errorf("asked %d times by the next second's beat, 10 ms early; want it asked again", len(asked)/2)
	}
}
