package metrics

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// ErrHost refuses a request whose Host is not a name or address this
// endpoint serves: a DNS rebinding page.
var ErrHost = errors.New("metrics_host")

// RuleHost is the rule a request's Host breaks, as said to users.
const RuleHost = "a request names the endpoint by a loopback address or localhost; with --metrics-allow-remote " +
	"also by any IP address, this machine's host name (NAME or NAME.local) or a name given with --metrics-host, " +
	"never by another name, which a web page could point at this machine (DNS rebinding)"

// CheckHost refuses host (a request's Host header, with or without a port)
// unless it names this endpoint: a loopback address or localhost; with
// AllowRemote also any IP address (a browser that asks an IP is not misled
// by DNS), Hostname, Hostname.local and the names in Hosts.
func (c Config) CheckHost(host string) error {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		if ip.IsLoopback() || c.AllowRemote {
			return nil
		}
	} else if c.AllowRemote && name != "" && c.namesHost(name) {
		return nil
	}
	return fmt.Errorf("refused: Host %q is not an address or name this metrics endpoint serves (rule: %w: %s)",
		host, ErrHost, RuleHost)
}

func (c Config) namesHost(name string) bool {
	if own := strings.ToLower(c.Hostname); own != "" && (name == own || name == own+".local") {
		return true
	}
	for _, h := range c.Hosts {
		if strings.TrimSuffix(strings.ToLower(h), ".") == name {
			return true
		}
	}
	return false
}
