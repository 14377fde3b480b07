package lend

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxWindows bounds the windows of one Hours.
const maxWindows = 32

// Window is a span of wall-clock time on some days of the week, in the
// local zone. A span that ends before it starts crosses midnight: it
// belongs to the day it starts on ("fri 19:00-08:00" is Friday 19:00 to
// Saturday 08:00).
type Window struct {
	Days       [7]bool // by time.Weekday
	Start, End int     // minutes after midnight; End may be 1440 (24:00)
}

// Hours are the windows in which a machine is lent; none is any time.
type Hours []Window

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// ParseHours reads windows separated by commas, each DAYS [HH:MM-HH:MM]:
// DAYS is a day (mon), a range (mon-fri, fri-mon wraps over the weekend)
// or "daily"; without a span, the whole day. "" is any time.
func ParseHours(s string) (Hours, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxWindows {
		return nil, refuse("policy lend-hours", "%d windows: at most %d", len(parts), maxWindows)
	}
	var hs Hours
	for _, part := range parts {
		w, err := parseWindow(strings.ToLower(strings.TrimSpace(part)))
		if err != nil {
			return nil, refuse("policy lend-hours", "%q: %v", strings.TrimSpace(part), err)
		}
		hs = append(hs, w)
	}
	return hs, nil
}

func parseWindow(s string) (Window, error) {
	var w Window
	fields := strings.Fields(s)
	if len(fields) == 0 || len(fields) > 2 {
		return w, fmt.Errorf("give days and a span, as mon-fri 19:00-08:00")
	}
	if err := w.parseDays(fields[0]); err != nil {
		return w, err
	}
	w.Start, w.End = 0, 24*60
	if len(fields) == 2 {
		from, to, ok := strings.Cut(fields[1], "-")
		if !ok {
			return w, fmt.Errorf("span %q: give HH:MM-HH:MM", fields[1])
		}
		var err error
		if w.Start, err = clock(from, false); err != nil {
			return w, err
		}
		if w.End, err = clock(to, true); err != nil {
			return w, err
		}
		if w.Start == w.End {
			return w, fmt.Errorf("span %s is empty", fields[1])
		}
		if w.End == 0 { // "19:00-00:00": until midnight, as 24:00
			w.End = 24 * 60
		}
	}
	return w, nil
}

func (w *Window) parseDays(s string) error {
	if s == "daily" {
		w.Days = [7]bool{true, true, true, true, true, true, true}
		return nil
	}
	from, to, isRange := strings.Cut(s, "-")
	a, ok := dayNames[from]
	if !ok {
		return fmt.Errorf("day %q: use mon, tue, wed, thu, fri, sat, sun or daily", from)
	}
	b := a
	if isRange {
		if b, ok = dayNames[to]; !ok {
			return fmt.Errorf("day %q: use mon, tue, wed, thu, fri, sat, sun or daily", to)
		}
	}
	for d := a; ; d = (d + 1) % 7 {
		w.Days[d] = true
		if d == b {
			return nil
		}
	}
}

// clock reads HH:MM as minutes after midnight; 24:00 only as an end.
func clock(s string, end bool) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	switch {
	case !ok || err1 != nil || err2 != nil || len(m) != 2 || len(h) == 0 || len(h) > 2:
		return 0, fmt.Errorf("time %q: give HH:MM", s)
	case hh == 24 && mm == 0 && end:
		return 24 * 60, nil
	case hh < 0 || hh > 23 || mm < 0 || mm > 59:
		return 0, fmt.Errorf("time %q: hours 00-23, minutes 00-59 (24:00 only as an end)", s)
	}
	return hh*60 + mm, nil
}

// In says whether t, read on the wall clock of t's zone, is in the
// hours; no windows is any time.
func (hs Hours) In(t time.Time) bool {
	if len(hs) == 0 {
		return true
	}
	for _, w := range hs {
		if w.in(t) {
			return true
		}
	}
	return false
}

func (w Window) in(t time.Time) bool {
	d, m := t.Weekday(), t.Hour()*60+t.Minute()
	if w.Start < w.End {
		return w.Days[d] && m >= w.Start && m < w.End
	}
	return (w.Days[d] && m >= w.Start) || (w.Days[(d+6)%7] && m < w.End)
}
