package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/reserve"
	"github.com/labpool/labpool/node/slurm"
	"github.com/spf13/pflag"
)

// reservePolicyFlags are the flags of `labpool policy` that set the
// reservation policy.
type reservePolicyFlags struct {
	who, atStart          string
	maxGPUs, perMember    int
	maxHours, ahead, warn string
}

func (f *reservePolicyFlags) flags(fl *pflag.FlagSet) {
	fl.StringVar(&f.who, "reserve", "", "who may reserve this machine's GPUs: members, admins or nobody")
	fl.IntVar(&f.maxGPUs, "reserve-max-gpus", 0, "GPUs per reservation (0 = all of them)")
	fl.IntVar(&f.perMember, "reserve-per-member", 0, "reservations to come one member may hold here (0 = the default, 8)")
	fl.StringVar(&f.maxHours, "reserve-max-hours", "", "the longest reservation, e.g. 24h (0 = the default, 24h)")
	fl.StringVar(&f.ahead, "reserve-ahead", "", "how far ahead a reservation may start, e.g. 30d or 720h (0 = the default, 30 days)")
	fl.StringVar(&f.atStart, "reserve-at-start", "", "what others' jobs on a reservation's GPUs get at its start: stop, or requeue (a job with --restart on-failure goes back to the queue)")
	fl.StringVar(&f.warn, "reserve-warn", "", "how long before a reservation's start others' jobs on its GPUs are told, e.g. 15m")
}

// apply sets in u the parts of the policy the flags changed.
func (f *reservePolicyFlags) apply(fl *pflag.FlagSet, u *app.PolicyUpdate) error {
	if fl.Changed("reserve") {
		u.ReserveWho = &f.who
	}
	if fl.Changed("reserve-max-gpus") {
		u.ReserveMaxGPUs = &f.maxGPUs
	}
	if fl.Changed("reserve-at-start") {
		u.ReserveAtStart = &f.atStart
	}
	if fl.Changed("reserve-per-member") {
		u.ReservePerMember = &f.perMember
	}
	for _, s := range []struct {
		flag, in string
		dst      **int64
	}{{"reserve-max-hours", f.maxHours, &u.ReserveMaxSeconds}, {"reserve-ahead", f.ahead, &u.ReserveAheadSeconds}, {"reserve-warn", f.warn, &u.ReserveWarnSeconds}} {
		if !fl.Changed(s.flag) {
			continue
		}
		d, err := lengthOf(s.in)
		if err != nil {
			return usageError{fmt.Errorf("--%s: %w", s.flag, err)}
		}
		secs := int64(d / time.Second)
		*s.dst = &secs
	}
	return nil
}

// lengthOf reads 2h, 90m, 30d, 1-12:00:00 or 0.
func lengthOf(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	var days int
	if n, err := fmt.Sscanf(s, "%dd", &days); err == nil && n == 1 && fmt.Sprintf("%dd", days) == s {
		if days < 0 || days > 366 {
			return 0, fmt.Errorf("%q: up to 366 days", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return slurm.ParseTimeLimit(s)
}

// reservePolicyText says the reservation policy in one line.
func reservePolicyText(p reserve.Policy) string {
	e := p.Effective()
	gpus := "any number of GPUs"
	if e.MaxGPUs > 0 {
		gpus = "up to " + count(e.MaxGPUs, "GPU")
	}
	return fmt.Sprintf("%s; %s for up to %s, starting up to %s ahead, %d to come per member; others' jobs told %s ahead, then %s",
		e.Who, gpus, length(e.MaxSeconds), length(e.AheadSeconds), e.PerMember, length(e.WarnSeconds), e.AtStart)
}

// length writes seconds as 30d, 2h, 90m, 1h30m.
func length(secs int64) string {
	if secs > 0 && secs%(24*3600) == 0 {
		return fmt.Sprintf("%dd", secs/(24*3600))
	}
	d := (time.Duration(secs) * time.Second).String()
	if strings.HasSuffix(d, "m0s") {
		d = strings.TrimSuffix(d, "0s")
	}
	if strings.HasSuffix(d, "h0m") {
		d = strings.TrimSuffix(d, "0m")
	}
	return d
}
