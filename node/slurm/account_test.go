package slurm

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestJobAccountRules: the executor refuses to start with a job account
// that is root or the agent's own user, or that may reach the agent's
// state or data directory; each refusal names its rule.
func TestJobAccountRules(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: chown of the test's directories")
	}
	nogroup := func(t *testing.T, mode os.FileMode) string {
		d := privateDir(t)
		if err := os.Chown(d, 0, 65534); err != nil { // nobody's group
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	tests := []struct {
		name string
		cfg  func(t *testing.T, c *Config)
		rule string // "": accepted
	}{
		{"closed", func(t *testing.T, c *Config) {}, ""},
		{"closed to its group", func(t *testing.T, c *Config) { c.Private = []string{nogroup(t, 0o701)} }, ""},
		{"no job account", func(t *testing.T, c *Config) { c.JobUser = "" }, "no job account"},
		{"root", func(t *testing.T, c *Config) { c.JobUser = "root" }, "rule: a job account is not the agent's user"},
		{"the agent's user", func(t *testing.T, c *Config) { c.User = "nobody" }, "rule: a job account is not the agent's user"},
		{"not a user name", func(t *testing.T, c *Config) { c.JobUser = "-u0" }, "not a Unix user name"},
		{"state open to others", func(t *testing.T, c *Config) { os.Chmod(c.StateDir, 0o711) }, "rule: the agent's data is closed to job accounts"},
		{"data open to its group", func(t *testing.T, c *Config) { c.Private = []string{nogroup(t, 0o750)} }, "rule: the agent's data is closed to job accounts"},
		{"data listed by others", func(t *testing.T, c *Config) {
			d := privateDir(t)
			os.Chmod(d, 0o704)
			c.Private = []string{d}
		}, "rule: the agent's data is closed to job accounts"},
		{"closed to its group, open to others", func(t *testing.T, c *Config) { c.Private = []string{nogroup(t, 0o705)} }, ""}, // POSIX: the group's bits apply
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorded{out: map[string][]byte{}}
			cfg := fakeConfig(privateDir(t), r, &fakeClock{t: time.Unix(1795600200, 0)})
			tt.cfg(t, &cfg)
			_, err := New(context.Background(), cfg)
			switch {
			case tt.rule == "" && err != nil:
				t.Errorf("New = %v, want accepted", err)
			case tt.rule != "" && (err == nil || !errors.Is(err, ErrJobAccount) || !strings.Contains(err.Error(), tt.rule)):
				t.Errorf("New = %v, want a refusal naming %q", err, tt.rule)
			}
		})
	}
}
