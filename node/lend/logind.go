package lend

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Logind reads the desktop's idle hint from systemd-logind (loginctl):
// the owner is present while a graphical session of a user is active,
// not idle and not locked. Where there is no logind (no loginctl, no
// systemd, a Mac) it says nothing, and asks again only after Retry.
type Logind struct {
	// Run runs loginctl with args and returns its output (exec by
	// default; a test fakes it).
	Run func(ctx context.Context, args ...string) ([]byte, error)
	// Every is how often logind is asked (1 s, two loginctl runs; the
	// lender asks only under --lend idle); between two asks the last
	// answer stands. Retry is how long an absent logind is left
	// alone (5 min).
	Every, Retry time.Duration
	Now          func() time.Time

	mu      sync.Mutex // guards the fields below
	next    time.Time  // when to ask again
	present bool
	failed  bool // the last ask failed: no signal
}

// NewLogind asks loginctl.
func NewLogind() *Logind {
	return &Logind{Run: runLoginctl, Every: time.Second, Retry: 5 * time.Minute, Now: time.Now}
}

func runLoginctl(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "loginctl", args...).Output()
}

// DesktopInUse is the sign logind gives.
const DesktopInUse = "your desktop is in use"

// Signal is l as a Signal.
func (l *Logind) Signal(ctx context.Context) (bool, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.Now()
	if now.Before(l.next) {
		return l.present && !l.failed, DesktopInUse
	}
	present, err := l.ask(ctx)
	l.present, l.failed = present, err != nil
	l.next = now.Add(l.Every - l.Every/4) // a caller on a beat of Every, a little early, still asks
	if err != nil {
		l.next = now.Add(l.Retry)
	}
	return l.present && !l.failed, DesktopInUse
}

// Available says whether the last ask got an answer.
func (l *Logind) Available() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.failed
}

// ask lists the sessions, then reads theirs all in one call.
func (l *Logind) ask(ctx context.Context) (bool, error) {
	out, err := l.Run(ctx, "list-sessions", "--no-legend", "--no-pager")
	if err != nil {
		return false, err
	}
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			ids = append(ids, f[0])
		}
	}
	if len(ids) == 0 {
		return false, nil
	}
	args := append([]string{"show-session", "--no-pager", "-p", "Type", "-p", "Class", "-p", "Active", "-p", "IdleHint", "-p", "LockedHint"}, ids...)
	out, err = l.Run(ctx, args...)
	if err != nil {
		return false, err
	}
	return anyDesktopInUse(out), nil
}

// anyDesktopInUse reads show-session's blocks (KEY=VALUE lines, a blank
// line between sessions): is one a user's graphical session, active, not
// idle and not locked?
func anyDesktopInUse(out []byte) bool {
	s := map[string]string{}
	inUse := func() bool {
		switch s["Type"] {
		case "x11", "wayland", "mir":
		default:
			return false
		}
		return s["Class"] == "user" && s["Active"] == "yes" && s["IdleHint"] == "no" && s["LockedHint"] != "yes"
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			if inUse() {
				return true
			}
			clear(s)
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			if _, seen := s[k]; seen && inUse() { // no blank line between blocks
				return true
			}
			if _, seen := s[k]; seen {
				clear(s)
			}
			s[k] = v
		}
	}
	return inUse()
}
