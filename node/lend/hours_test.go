package lend

import (
	"errors"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin wherever the test runs
)

func TestParseHoursRefuses(t *testing.T) {
	for _, in := range []string{
		"mon-fri 19:00-19:00", // empty range
		"mon 00:00-00:00",     // empty too, not a whole day
		"mon-fry 19:00-08:00", // unknown day
		"mon 25:00-08:00",     // no such hour
		"mon 19:00-24:01",
		"mon 24:00-08:00", // 24:00 only ends
		"mon 19:0-08:00",
		"mon 19:00",
		"mon 19:00-08:00 extra",
		"19:00-08:00",
		"mon,",
	} {
		_, err := ParseHours(in)
		var re *RuleError
		if !errors.As(err, &re) || re.Rule != "policy lend-hours" {
			t.Errorf("ParseHours(%q) = %v; want a refusal by policy lend-hours", in, err)
		}
	}
}

func TestHoursIn(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		hours, at string
		want      bool
	}{
		{"", "2026-03-04 12:00", true},
		{"mon-fri 19:00-08:00", "2026-03-04 12:00", false}, // a Wednesday noon
		{"mon-fri 19:00-08:00", "2026-03-04 19:00", true},
		{"mon-fri 19:00-08:00", "2026-03-05 07:59", true}, // crosses midnight
		{"mon-fri 19:00-08:00", "2026-03-05 08:00", false},
		{"mon-fri 19:00-08:00", "2026-03-07 07:00", true},  // Saturday morning: Friday's night
		{"mon-fri 19:00-08:00", "2026-03-08 07:00", false}, // Sunday morning: Saturday lends nothing
		{"mon-fri 19:00-08:00", "2026-03-09 07:00", false}, // Monday morning: Sunday lends nothing
		{"sat-sun", "2026-03-08 23:59", true},
		{"sat-sun", "2026-03-09 00:00", false},
		{"fri-mon 20:00-06:00", "2026-03-10 05:00", true}, // wraps over the weekend: Monday's night
		{"fri-mon 20:00-06:00", "2026-03-11 05:00", false},
		{"mon-fri 19:00-08:00, sat-sun", "2026-03-08 12:00", true},
		{"daily 00:00-24:00", "2026-03-08 12:00", true},
		{"mon 19:00-00:00", "2026-03-09 23:59", true}, // until midnight, as 24:00
		{"mon 19:00-00:00", "2026-03-10 00:00", false},
		// DST: Berlin springs forward on Sun 2026-03-29 02:00 -> 03:00
		// and falls back on Sun 2026-10-25 03:00 -> 02:00. Windows are
		// wall-clock time.
		{"sun 01:00-03:30", "2026-03-29 01:59", true},
		{"sun 01:00-03:30", "2026-03-29 03:15", true},
		{"sun 01:00-03:30", "2026-03-29 03:30", false},
		{"sat 22:00-02:30", "2026-10-25 02:15", true},
		{"sat 22:00-02:30", "2026-10-25 02:45", false},
	}
	for _, tt := range tests {
		hs, err := ParseHours(tt.hours)
		if err != nil {
			t.Fatalf("ParseHours(%q): %v", tt.hours, err)
		}
		if got := hs.In(at(tt.at)); got != tt.want {
			t.Errorf("%q.In(%s) = %v; want %v", tt.hours, tt.at, got, tt.want)
		}
	}
}

// TestHoursInAcrossFallBack walks the night Berlin falls back an hour
// minute by minute: the window "sat 22:00-02:30" holds the wall clock's
// 02:00-02:30 twice, and is left at the second 02:30.
func TestHoursInAcrossFallBack(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	hs, _ := ParseHours("sat 22:00-02:30")
	start := time.Date(2026, 10, 24, 22, 0, 0, 0, berlin)
	var in time.Duration
	for tm := start; tm.Before(start.Add(8 * time.Hour)); tm = tm.Add(time.Minute) {
		if hs.In(tm) {
			in += time.Minute
		}
	}
	if want := 5 * time.Hour; in != want { // 4h30 on the wall clock, and 02:00-02:30 again
		t.Errorf("lent %s of the night; want %s", in, want)
	}
}

func TestPolicyCheck(t *testing.T) {
	ok := DefaultPolicy()
	tests := []struct {
		name string
		edit func(*Policy)
		rule string
	}{
		{"default", func(*Policy) {}, ""},
		{"idle at night", func(p *Policy) { p.Mode, p.Hours = Idle, "mon-fri 19:00-08:00" }, ""},
		{"unknown mode", func(p *Policy) { p.Mode = "sometimes" }, "policy lend"},
		{"grace 0", func(p *Policy) { p.GraceSeconds = 0 }, "policy grace"},
		{"grace over a day", func(p *Policy) { p.GraceSeconds = 24*3600 + 1 }, "policy grace"},
		{"lend after under a minute", func(p *Policy) { p.AfterSeconds = 59 }, "policy lend-after"},
		{"unknown yield", func(p *Policy) { p.Yield = "ask" }, "policy yield"},
		{"bad hours", func(p *Policy) { p.Hours = "mon 25:00-08:00" }, "policy lend-hours"},
	}
	for _, tt := range tests {
		p := ok
		tt.edit(&p)
		err := p.Check()
		var re *RuleError
		switch {
		case tt.rule == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.rule != "" && (!errors.As(err, &re) || re.Rule != tt.rule):
			t.Errorf("%s: Check() = %v; want a refusal by %s", tt.name, err, tt.rule)
		}
	}
}

// FuzzParseHours: whatever the text, ParseHours refuses it naming the
// rule or gives windows that make sense.
func FuzzParseHours(f *testing.F) {
	for _, s := range []string{"mon-fri 19:00-08:00", "sat-sun", "daily 00:00-24:00", "fri-mon 20:00-06:00, sun 01:00-03:30", "mon 24:00-01:00", "mon,", "7:5-8:00"} {
		f.Add(s)
	}
	at := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := ParseHours(s)
		if err != nil {
			var re *RuleError
			if !errors.As(err, &re) || re.Rule != "policy lend-hours" {
				t.Fatalf("ParseHours(%q) = %v; want a refusal by policy lend-hours", s, err)
			}
			return
		}
		for _, w := range hs {
			days := 0
			for _, d := range w.Days {
				if d {
					days++
				}
			}
			if days == 0 || w.Start < 0 || w.Start >= 24*60 || w.End <= 0 || w.End > 24*60 || w.Start == w.End {
				t.Fatalf("ParseHours(%q) gave a window that makes no sense: %+v", s, w)
			}
		}
		hs.In(at)
	})
}
