package cli

import (
	"fmt"
	"strings"
	"time"
)

// weekdays are the names --from takes for a day of the week: three
// letters or the whole name, in any case.
var weekdays = map[string]time.Weekday{}

func init() {
	for d := time.Sunday; d <= time.Saturday; d++ {
		name := strings.ToLower(d.String())
		weekdays[name], weekdays[name[:3]] = d, d
	}
}

// parseWhen reads a start time as a person writes it, in the zone loc:
// RFC 3339 ("2026-03-05T14:00:00+01:00"), "YYYY-MM-DD HH:MM", or a weekday
// and a time ("thu 14:00": the next such time after now; today's, if it
// is still to come). A local time that the zone skips (clocks go forward)
// is refused, and so is a time before now.
func parseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	t, err := whenOf(s, now, loc)
	if err != nil {
		return time.Time{}, err
	}
	if t.Before(now) {
		return time.Time{}, fmt.Errorf("%q is %s, in the past", s, t.Format("Mon 2 Jan 2006 15:04 MST"))
	}
	return t, nil
}

func whenOf(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02 15:04", s); err == nil { // its fields; the zone is loc's

		return local(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), loc, s)
	}
	day, clock, ok := strings.Cut(s, " ")
	wd, isDay := weekdays[strings.ToLower(day)]
	if !ok || !isDay {
		return time.Time{}, fmt.Errorf("%q: give RFC 3339, \"YYYY-MM-DD HH:MM\" or a weekday and a time such as \"thu 14:00\"", s)
	}
	hm, err := time.Parse("15:04", strings.TrimSpace(clock))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: the time of day is HH:MM, such as 14:00", s)
	}
	today := now.In(loc)
	for i := range 8 { // today, if still to come, else the next 7 days
		d := time.Date(today.Year(), today.Month(), today.Day()+i, 12, 0, 0, 0, loc) // noon: never in a DST gap
		if d.Weekday() != wd {
			continue
		}
		t, err := local(d.Year(), d.Month(), d.Day(), hm.Hour(), hm.Minute(), loc, s)
		if err != nil {
			return time.Time{}, err
		}
		if !t.Before(now) {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q: no such time in the coming week", s) // not reached: a week has every weekday
}

// local is the time h:m on that day in loc, refused when the zone skips it.
func local(y int, mo time.Month, d, h, m int, loc *time.Location, s string) (time.Time, error) {
	t := time.Date(y, mo, d, h, m, 0, 0, loc)
	if t.Hour() != h || t.Minute() != m || t.Day() != d {
		return time.Time{}, fmt.Errorf("%q: %02d:%02d does not exist on %s in %s (the clocks go forward)", s, h, m, t.Format("2 Jan 2006"), loc)
	}
	return t, nil
}
