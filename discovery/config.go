package discovery

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

const (
	// Service is the DNS-SD service type labpool announces and browses.
	Service = "_labpool._udp"
	// Domain is the mDNS domain.
	Domain = "local."
)

// maxLabel is the longest DNS label, in bytes.
const maxLabel = 63

// ErrConfig means a Config cannot be used; the message says which field.
var ErrConfig = errors.New("invalid discovery config")

// Config configures an Announcer or a Browser.
type Config struct {
	// Instance is the DNS-SD instance name, unique per machine: the host name
	// plus the short device ID (see InstanceName). Letters, digits, '-' and
	// '_', at most 63 bytes. A Browser skips answers for its own Instance.
	Instance string
	// Host is the mDNS host name our address records are published under,
	// without ".local." (see HostName); our own, because cloned machines
	// share the OS host name. Needed by an Announcer only.
	Host string
	// Port is the UDP port of this machine's QUIC endpoint, published in the
	// SRV record. Needed by an Announcer only.
	Port int
	// Ifaces names the network interfaces to use, as in "--iface eth0".
	// Empty means every interface that is up and multicast-capable, except
	// loopback and container bridges (see SelectInterfaces).
	Ifaces []string
	// Interval is how often a Browser queries the network again (the library
	// stops after its first answer) and an Announcer re-checks its
	// interfaces and addresses.
	Interval time.Duration
	// Quiet, when set, is asked at every Interval: while it answers true,
	// a Browser sends a query only every QuietInterval and an Announcer
	// re-checks its interfaces as rarely. The daemon answers true while
	// every member of its pool is connected, when there is nothing to look
	// for. Answering others' queries never slows down, and a false answer
	// takes effect at the next Interval.
	Quiet func() bool
	// QuietInterval is the period while Quiet (default 60 s).
	QuietInterval time.Duration
}

// DefaultQuietInterval is the browse period while Config.Quiet says true.
const DefaultQuietInterval = 60 * time.Second

// quiet reports whether a periodic task last done at last may wait at now.
func (c Config) quiet(last, now time.Time) bool {
	if c.Quiet == nil || !c.Quiet() {
		return false
	}
	every := c.QuietInterval
	if every <= 0 {
		every = DefaultQuietInterval
	}
	return now.Sub(last) < every
}

// DefaultConfig returns a Config that re-browses every 2 s on all suitable
// interfaces. The caller fills in Instance, Host and Port.
func DefaultConfig() Config {
	return Config{Interval: 2 * time.Second}
}

// InstanceName returns an instance name made of the first label of hostname
// and the short device ID, e.g. "lab1-K7Q2-MX4P", cut to fit one DNS label.
func InstanceName(hostname, shortID string) string {
	host, _, _ := strings.Cut(hostname, ".")
	host, id := labelChars(host, "_"), labelChars(shortID, "_")
	if host == "" {
		host = "labpool"
	}
	if len(id) > maxLabel-2 {
		id = id[:maxLabel-2]
	}
	if room := maxLabel - len(id) - 1; len(host) > room {
		host = host[:room]
	}
	return host + "-" + id
}

// HostName returns an mDNS host name of our own derived from the short
// device ID, e.g. "labpool-k7q2mx4p".
func HostName(shortID string) string {
	id := strings.ReplaceAll(strings.ToLower(labelChars(shortID, "")), "-", "")
	if len(id) > maxLabel-len("labpool-") {
		id = id[:maxLabel-len("labpool-")]
	}
	return "labpool-" + id
}

// labelChars keeps letters, digits, '-' and the characters in extra.
func labelChars(s, extra string) string {
	return strings.Map(func(r rune) rune {
		if isAlnum(r) || r == '-' || strings.ContainsRune(extra, r) {
			return r
		}
		return -1
	}, s)
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// validate checks the fields both roles need, and those of an Announcer too
// when announce is set.
func (c Config) validate(announce bool) error {
	if !validInstance(c.Instance) {
		return fmt.Errorf("check instance %q: want 1 to %d letters, digits, '-' or '_': %w", c.Instance, maxLabel, ErrConfig)
	}
	if c.Interval <= 0 {
		return fmt.Errorf("check interval %v: want > 0: %w", c.Interval, ErrConfig)
	}
	if !announce {
		return nil
	}
	if !validHost(c.Host) {
		return fmt.Errorf("check host %q: want a DNS label of letters, digits and '-': %w", c.Host, ErrConfig)
	}
	if c.Port < 1 || c.Port > 65535 {
		return fmt.Errorf("check port %d: want 1 to 65535: %w", c.Port, ErrConfig)
	}
	return nil
}

func validInstance(s string) bool {
	return len(s) >= 1 && len(s) <= maxLabel && labelChars(s, "_") == s
}

func validHost(s string) bool {
	return len(s) >= 1 && len(s) <= maxLabel && labelChars(s, "") == s &&
		s[0] != '-' && s[len(s)-1] != '-'
}
