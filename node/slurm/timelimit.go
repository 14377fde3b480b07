package slurm

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseTimeLimit reads a job's time limit as a person writes it: a Go
// duration ("2h", "90m", "1h30m") or one of Slurm's forms ("90" minutes,
// "30:00" minutes:seconds, "2:00:00", "1-12", "1-12:30", "1-12:00:00").
func ParseTimeLimit(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if d, err := time.ParseDuration(in); err == nil && in != "0" {
		if d <= 0 {
			return 0, fmt.Errorf("time limit %q: want a positive duration", s)
		}
		return d, nil
	}
	d, ok := slurmTime(in)
	if !ok || d <= 0 {
		return 0, fmt.Errorf("time limit %q: want a duration (2h, 90m) or Slurm's form (90, 30:00, 2:00:00, 1-12:00:00)", s)
	}
	return d, nil
}

// slurmTime reads Slurm's forms of a time limit.
func slurmTime(s string) (time.Duration, bool) {
	days := 0
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || r == "" {
			return 0, false
		}
		days, rest = n, r
	}
	var parts []int
	for _, p := range strings.Split(rest, ":") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || len(p) == 0 {
			return 0, false
		}
		parts = append(parts, n)
	}
	var h, m, sec int
	switch {
	case len(parts) > 3:
		return 0, false
	case days > 0 || strings.Contains(s, "-"): // days-hours[:minutes[:seconds]]
		h = parts[0]
		if len(parts) > 1 {
			m = parts[1]
		}
		if len(parts) > 2 {
			sec = parts[2]
		}
	case len(parts) == 1: // minutes
		m = parts[0]
	case len(parts) == 2: // minutes:seconds
		m, sec = parts[0], parts[1]
	default: // hours:minutes:seconds
		h, m, sec = parts[0], parts[1], parts[2]
	}
	return time.Duration(days)*24*time.Hour + time.Duration(h)*time.Hour +
		time.Duration(m)*time.Minute + time.Duration(sec)*time.Second, true
}

// FormatTimeLimit writes d as sbatch's --time reads it: "2:00:00",
// "1-12:00:00" (whole seconds, rounded up: a limit is never cut short).
func FormatTimeLimit(d time.Duration) string {
	total := int64((d + time.Second - 1) / time.Second)
	days := total / 86400
	h, m, s := total%86400/3600, total%3600/60, total%60
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	}
	return fmt.Sprintf("%d:%02d:%02d", h, m, s)
}
