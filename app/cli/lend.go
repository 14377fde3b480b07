package cli

import (
	"fmt"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/lend"
	"github.com/spf13/pflag"
)

// lendFlags are the lend policy's flags of `labpool policy`.
type lendFlags struct {
	mode, after, yield, grace, hours string
}

func (f *lendFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.mode, "lend", "", "when this machine is lent to the pool: never, always (default) or idle")
	fl.StringVar(&f.after, "lend-after", "", "with --lend idle: how long you are away before guests run, e.g. 15m")
	fl.StringVar(&f.yield, "yield", "", "what guests get when you come back, after the grace: pause or stop")
	fl.StringVar(&f.grace, "grace", "", "how long guests have once warned: the most you wait, e.g. 10m")
	fl.StringVar(&f.hours, "lend-hours", "", `when guests may run, local time, e.g. "mon-fri 19:00-08:00, sat-sun" ("" any time)`)
}

// apply sets u's lend fields from the flags set.
func (f *lendFlags) apply(fl *pflag.FlagSet, u *app.PolicyUpdate) error {
	if fl.Changed("lend") {
		u.Lend = &f.mode
	}
	if fl.Changed("yield") {
		u.Yield = &f.yield
	}
	if fl.Changed("lend-hours") {
		u.LendHours = &f.hours
	}
	for _, s := range []struct {
		flag, in string
		dst      **int
	}{{"lend-after", f.after, &u.LendAfterSeconds}, {"grace", f.grace, &u.GraceSeconds}} {
		if !fl.Changed(s.flag) {
			continue
		}
		d, err := time.ParseDuration(s.in)
		if err != nil {
			return usageError{fmt.Errorf("--%s %q: give a duration, e.g. 10m", s.flag, s.in)}
		}
		secs := int(d / time.Second)
		*s.dst = &secs
	}
	return nil
}

// lendText says when the policy lends this machine.
func lendText(p lend.Policy) string {
	hours := "at any time"
	if p.Hours != "" {
		hours = "in " + p.Hours + " (local time)"
	}
	switch p.Mode {
	case lend.Never:
		return "never (guests' jobs do not run here)"
	case lend.Idle:
		return fmt.Sprintf("idle: %s, once you are away %s; when you come back guests are warned and %s after %s",
			hours, p.After(), yieldWord(p.Yield), p.Grace())
	}
	if p.Hours == "" {
		return "always (the pool's machine, as before lending)"
	}
	return fmt.Sprintf("always %s; outside them guests are warned and %s after %s", hours, yieldWord(p.Yield), p.Grace())
}

func yieldWord(y string) string {
	if y == lend.Stop {
		return "stopped (a job with a restart policy is queued again)"
	}
	return "paused"
}

// nodeLendNote is what a machine said about its lending, after its state
// in `labpool nodes`: "; lent (owner away 23 min)"; "" where it lends as
// machines did before lending (always, at any time) or said nothing.
func nodeLendNote(st *lend.Status, now time.Time) string {
	if st == nil || !st.Managed() {
		return ""
	}
	return "; " + st.Text(now)
}

// jobLendNote says why a guest job is paused, or when it will be, in
// `labpool ps`: " (paused since 14:32: the machine's owner took it back:
// owner present: I'm using it)".
func jobLendNote(j jobs.Job) string {
	n := j.Lend
	switch {
	case n == nil || j.State != jobs.Running:
		return ""
	case n.Paused:
		return fmt.Sprintf(" (paused since %s: the machine's owner took it back: %s)", n.At.Local().Format("15:04"), n.Why)
	}
	verb := "pauses"
	if n.Yield == lend.Stop {
		verb = "stops"
	}
	return fmt.Sprintf(" (%s at %s: the machine's owner takes it back: %s)", verb, n.At.Local().Format("15:04"), n.Why)
}
