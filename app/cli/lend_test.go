package cli

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/lend"
	"github.com/spf13/pflag"
)

// TestLendFlags: the flags of the example set the whole lend
// policy, which the policy check accepts and `labpool policy` shows.
func TestLendFlags(t *testing.T) {
	var lf lendFlags
	fl := pflag.NewFlagSet("policy", pflag.ContinueOnError)
	lf.add(fl)
	err := fl.Parse([]string{"--lend", "idle", "--lend-after", "15m", "--yield", "pause", "--grace", "10m", "--lend-hours", "mon-fri 19:00-08:00"})
	if err != nil {
		t.Fatal(err)
	}
	var u app.PolicyUpdate
	if err := lf.apply(fl, &u); err != nil {
		t.Fatal(err)
	}
	p := u.Apply(jobs.DefaultPolicy())
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	if p.Lend.Mode != "idle" || p.Lend.AfterSeconds != 900 || p.Lend.GraceSeconds != 600 || p.Lend.Hours != "mon-fri 19:00-08:00" {
		t.Errorf("lend policy = %+v", p.Lend)
	}
	var b strings.Builder
	if err := writePolicy(&b, p); err != nil {
		t.Fatal(err)
	}
	if want := "idle: in mon-fri 19:00-08:00 (local time), once you are away 15m0s; when you come back guests are warned and paused after 10m0s"; !strings.Contains(b.String(), want) {
		t.Errorf("policy shows\n%s\nwant a line with %q", b.String(), want)
	}

	u = app.PolicyUpdate{}
	fl = pflag.NewFlagSet("policy", pflag.ContinueOnError)
	lf.add(fl)
	_ = fl.Parse([]string{"--grace", "ten minutes"})
	var usage usageError
	if err := lf.apply(fl, &u); !errors.As(err, &usage) {
		t.Errorf("--grace 'ten minutes' = %v; want a usage error", err)
	}
}

// TestLendPolicyRefused: a lend window or grace that makes no sense is
// refused by the policy check, naming the rule.
func TestLendPolicyRefused(t *testing.T) {
	for _, tt := range []struct {
		u    app.PolicyUpdate
		rule string
	}{
		{app.PolicyUpdate{LendHours: ptr("mon-fri 25:00-08:00")}, "policy lend-hours"},
		{app.PolicyUpdate{LendHours: ptr("someday 19:00-08:00")}, "policy lend-hours"},
		{app.PolicyUpdate{LendHours: ptr("mon 19:00-19:00")}, "policy lend-hours"},
		{app.PolicyUpdate{GraceSeconds: ptr(0)}, "policy grace"},
		{app.PolicyUpdate{GraceSeconds: ptr(25 * 3600)}, "policy grace"},
		{app.PolicyUpdate{LendAfterSeconds: ptr(30)}, "policy lend-after"},
		{app.PolicyUpdate{Lend: ptr("sometimes")}, "policy lend"},
	} {
		err := tt.u.Apply(jobs.DefaultPolicy()).Check()
		var re *jobs.RefusedError
		if !errors.As(err, &re) || re.Rule != tt.rule {
			t.Errorf("%+v: Check() = %v; want a refusal by %s", tt.u, err, tt.rule)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestLendNotes: `labpool nodes` says how a machine is lent, `ps` why a
// guest is paused or when it will be; a machine lent as before lending
// (always, at any time) says nothing more.
func TestLendNotes(t *testing.T) {
	now := time.Date(2026, 3, 4, 14, 22, 0, 0, time.Local)
	nodes := []app.Node{
		{Name: "ws-a100", ShortID: "AAAA-0000", GPUs: []app.GPU{}, Online: true,
			Lend: &lend.Status{Mode: lend.Idle, Phase: lend.Lent, OwnerSeen: now.Add(-23 * time.Minute)}},
		{Name: "ws-4090", ShortID: "BBBB-0000", GPUs: []app.GPU{}, Online: true,
			Lend: &lend.Status{Mode: lend.Idle, Phase: lend.Warned, Yield: lend.Pause, Why: "owner present: I'm using it", Deadline: now.Add(10 * time.Minute)}},
		{Name: "dgx", ShortID: "CCCC-0000", GPUs: []app.GPU{}, Online: true, Lend: &lend.Status{Mode: lend.Always, Phase: lend.Lent}},
	}
	var b strings.Builder
	if err := writeNodes(&b, nodes, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{"online; lent (owner away 23 min)", "online; owner present: guests pause at 14:32 (I'm using it)", "online "} {
		if !strings.Contains(lines[i+1], want) {
			t.Errorf("nodes line %q lacks %q", lines[i+1], want)
		}
	}
	at := now.Add(-time.Minute)
	j := jobs.Job{State: jobs.Running, Lend: &jobs.LendNote{At: at, Paused: true, Yield: lend.Pause, Why: "owner present: I'm using it"}}
	if got, want := jobLendNote(j), " (paused since 14:21: the machine's owner took it back: owner present: I'm using it)"; got != want {
		t.Errorf("ps note of a paused guest = %q; want %q", got, want)
	}
	j.Lend.Paused, j.Lend.At = false, now.Add(10*time.Minute)
	if got, want := jobLendNote(j), " (pauses at 14:32: the machine's owner takes it back: owner present: I'm using it)"; got != want {
		t.Errorf("ps note of a warned guest = %q; want %q", got, want)
	}
}
