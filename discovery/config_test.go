package discovery

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestInstanceName(t *testing.T) {
	tests := []struct{ host, short, want string }{
		{"lab1", "K7Q2-MX4P", "lab1-K7Q2-MX4P"},
		{"lab1.example.org", "K7Q2-MX4P", "lab1-K7Q2-MX4P"},
		{"my box!", "K7Q2-MX4P", "mybox-K7Q2-MX4P"},
		{"", "K7Q2-MX4P", "labpool-K7Q2-MX4P"},
		{strings.Repeat("h", 80), "K7Q2-MX4P", strings.Repeat("h", 63-len("-K7Q2-MX4P")) + "-K7Q2-MX4P"},
		{"lab1", strings.Repeat("K", 80), "l-" + strings.Repeat("K", 61)}, // the ID makes it unique: keep it
	}
	for _, tt := range tests {
		got := InstanceName(tt.host, tt.short)
		if got != tt.want || !validInstance(got) {
			t.Errorf("InstanceName(%q, %q) = %q (valid %v); want %q", tt.host, tt.short, got, validInstance(got), tt.want)
		}
	}
}

func TestHostName(t *testing.T) {
	if got, want := HostName("K7Q2-MX4P"), "labpool-k7q2mx4p"; got != want {
		t.Errorf("HostName = %q; want %q", got, want)
	}
	if got := HostName(testID); !validHost(got) {
		t.Errorf("HostName(%q) = %q: not a valid host label", testID, got)
	}
}

func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.Instance, good.Host, good.Port = "lab1-K7Q2-MX4P", "labpool-k7q2mx4p", 4242
	tests := []struct {
		name     string
		edit     func(*Config)
		announce bool
		wantErr  bool
	}{
		{"good announcer", func(*Config) {}, true, false},
		{"browser needs no host or port", func(c *Config) { c.Host, c.Port = "", 0 }, false, false},
		{"no instance", func(c *Config) { c.Instance = "" }, false, true},
		{"instance with dot", func(c *Config) { c.Instance = "a.b" }, false, true},
		{"instance with space", func(c *Config) { c.Instance = "a b" }, false, true},
		{"instance too long", func(c *Config) { c.Instance = string(make([]byte, 64)) }, false, true},
		{"zero interval", func(c *Config) { c.Interval = 0 }, false, true},
		{"no host", func(c *Config) { c.Host = "" }, true, true},
		{"host with dot", func(c *Config) { c.Host = "a.local" }, true, true},
		{"host leading dash", func(c *Config) { c.Host = "-a" }, true, true},
		{"no port", func(c *Config) { c.Port = 0 }, true, true},
		{"port too big", func(c *Config) { c.Port = 70000 }, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.edit(&c)
			err := c.validate(tt.announce)
			if (err != nil) != tt.wantErr || err != nil && !errors.Is(err, ErrConfig) {
				t.Errorf("validate(%v) = %v; want error %v", tt.announce, err, tt.wantErr)
			}
		})
	}
	if DefaultConfig().Interval != 2*time.Second {
		t.Errorf("DefaultConfig().Interval = %v; want 2s", DefaultConfig().Interval)
	}
}

func TestQuiet(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	quiet := true
	c := Config{Interval: 2 * time.Second, Quiet: func() bool { return quiet }, QuietInterval: 30 * time.Second}
	for _, tt := range []struct {
		quiet bool
		since time.Duration
		want  bool
	}{
		{true, 2 * time.Second, true},
		{true, 29 * time.Second, true},
		{true, 30 * time.Second, false},
		{false, 2 * time.Second, false},
	} {
		quiet = tt.quiet
		if got := c.quiet(t0, t0.Add(tt.since)); got != tt.want {
			t.Errorf("quiet (Quiet() = %v, %v after the last round) = %v; want %v", tt.quiet, tt.since, got, tt.want)
		}
	}
	if (Config{}).quiet(t0, t0) {
		t.Error("quiet without a Quiet func = true")
	}
	c.QuietInterval = 0
	quiet = true
	if !c.quiet(t0, t0.Add(DefaultQuietInterval-time.Second)) || c.quiet(t0, t0.Add(DefaultQuietInterval)) {
		t.Errorf("a zero QuietInterval is not DefaultQuietInterval (%v)", DefaultQuietInterval)
	}
}
