package cli

import (
	"strings"
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	// Europe/Berlin goes to summer time on Sun 29 Mar 2026 at 02:00 (to
	// 03:00), back on Sun 25 Oct 2026 at 03:00 (to 02:00).
	at := func(s string) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name, in string
		now      time.Time
		want     time.Time // zero: an error
		err      string
	}{
		{"rfc 3339", "2026-03-30T14:00:00+02:00", at("2026-03-26 10:00"), at("2026-03-30 14:00"), ""},
		{"date and time", "2026-03-30 14:00", at("2026-03-26 10:00"), at("2026-03-30 14:00"), ""},
		{"weekday later this week", "thu 14:00", at("2026-03-24 10:00"), at("2026-03-26 14:00"), ""},
		{"weekday today, still to come", "tue 14:00", at("2026-03-24 10:00"), at("2026-03-24 14:00"), ""},
		{"weekday today, gone: next week", "tue 09:00", at("2026-03-24 10:00"), at("2026-03-31 09:00"), ""},
		{"whole name, any case", "Thursday 14:00", at("2026-03-24 10:00"), at("2026-03-26 14:00"), ""},
		// Across the change to summer time: Thu 26 Mar 14:00 CET, the
		// next Mon 14:00 is CEST, 6 days and 23 hours of clock later
		// than a week of 24-hour days would say.
		{"across spring forward", "mon 14:00", at("2026-03-26 14:00"), at("2026-03-30 14:00"), ""},
		{"across fall back", "mon 09:00", at("2026-10-23 09:00"), at("2026-10-26 09:00"), ""},
		{"in the gap", "2026-03-29 02:30", at("2026-03-26 10:00"), time.Time{}, "does not exist"},
		{"weekday in the gap", "sun 02:30", at("2026-03-26 10:00"), time.Time{}, "does not exist"},
		{"in the past", "2026-03-20 14:00", at("2026-03-26 10:00"), time.Time{}, "in the past"},
		{"rfc 3339 in the past", "2026-03-20T14:00:00Z", at("2026-03-26 10:00"), time.Time{}, "in the past"},
		{"not a day", "someday 14:00", at("2026-03-26 10:00"), time.Time{}, "weekday and a time"},
		{"not a time", "thu 2pm", at("2026-03-26 10:00"), time.Time{}, "HH:MM"},
		{"nothing", "", at("2026-03-26 10:00"), time.Time{}, "give RFC 3339"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWhen(tt.in, tt.now, berlin)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parseWhen(%q) = %v, %v; want an error saying %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || !got.Equal(tt.want) {
				t.Fatalf("parseWhen(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}
