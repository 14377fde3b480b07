package slurm

import (
	"testing"
	"time"
)

func TestParseTimeLimit(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{"2h", 2 * time.Hour, false},
		{"90m", 90 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"90", 90 * time.Minute, false},
		{"30:00", 30 * time.Minute, false},
		{"2:00:00", 2 * time.Hour, false},
		{"1-12:00:00", 36 * time.Hour, false},
		{"1-12", 36 * time.Hour, false},
		{"2-0:30", 48*time.Hour + 30*time.Minute, false},
		{"0", 0, true},
		{"-2h", 0, true},
		{"", 0, true},
		{"1:2:3:4", 0, true},
		{"1-", 0, true},
		{"two hours", 0, true},
		{"1:-5", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTimeLimit(tt.in)
			if (err != nil) != tt.bad || got != tt.want {
				t.Errorf("ParseTimeLimit(%q) = %v, %v; want %v, bad %v", tt.in, got, err, tt.want, tt.bad)
			}
		})
	}
}

func TestFormatTimeLimit(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{2 * time.Hour, "2:00:00"},
		{90 * time.Minute, "1:30:00"},
		{36 * time.Hour, "1-12:00:00"},
		{1500 * time.Millisecond, "0:00:02"},
	}
	for _, tt := range tests {
		if got := FormatTimeLimit(tt.in); got != tt.want {
			t.Errorf("FormatTimeLimit(%v) = %q; want %q", tt.in, got, tt.want)
		}
		if tt.in%time.Second == 0 {
			if back, err := ParseTimeLimit(tt.want); err != nil || back != tt.in {
				t.Errorf("ParseTimeLimit(%q) = %v, %v; want %v", tt.want, back, err, tt.in)
			}
		}
	}
}
