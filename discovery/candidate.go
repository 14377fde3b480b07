package discovery

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/grandcat/zeroconf"
)

// Candidate is a labpool machine as the network described it: a hint where
// to connect, not an identity.
type Candidate struct {
	Instance string           // DNS-SD instance name
	TXT      TXT              // what the machine claims to be
	Addrs    []netip.AddrPort // IPv4 first; link-local IPv6 only with a zone
	Seen     time.Time        // when the answer arrived
}

// maxAddrs bounds the addresses kept from one answer.
const maxAddrs = 16

// maxInstance bounds the instance names accepted from the network, in bytes
// (a full DNS name is at most 255).
const maxInstance = 255

// toCandidate checks one answer from the network. zone names the only
// interface browsed, if there is just one: link-local IPv6 addresses get it,
// and without it they are dropped.
func toCandidate(e *zeroconf.ServiceEntry, zone string, seen time.Time) (Candidate, error) {
	if !validRemoteInstance(e.Instance) {
		return Candidate{}, fmt.Errorf("check instance %q: not a printable name of 1 to %d bytes", e.Instance, maxInstance)
	}
	txt, err := ParseTXT(e.Text)
	if err != nil {
		return Candidate{}, err
	}
	if e.Port < 1 || e.Port > 65535 {
		return Candidate{}, fmt.Errorf("check srv port %d: want 1 to 65535", e.Port)
	}
	addrs := entryAddrs(e, zone)
	if len(addrs) == 0 {
		return Candidate{}, fmt.Errorf("check addresses of %q: none usable", e.Instance)
	}
	c := Candidate{Instance: e.Instance, TXT: txt, Seen: seen}
	for _, a := range addrs {
		c.Addrs = append(c.Addrs, netip.AddrPortFrom(a, uint16(e.Port)))
	}
	return c, nil
}

// entryAddrs returns the usable addresses of an answer, IPv4 first, at most
// maxAddrs of them.
func entryAddrs(e *zeroconf.ServiceEntry, zone string) []netip.Addr {
	var out []netip.Addr
	for _, ip := range slices.Concat(e.AddrIPv4, e.AddrIPv6) {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			continue
		}
		a = a.Unmap()
		if a.Is6() && a.IsLinkLocalUnicast() {
			if zone == "" {
				continue
			}
			a = a.WithZone(zone)
		}
		if usableAddr(a) && !a.IsLinkLocalMulticast() {
			out = append(out, a)
		}
	}
	out = sortAddrs(out)
	return out[:min(len(out), maxAddrs)]
}

func validRemoteInstance(s string) bool {
	if s == "" || len(s) > maxInstance || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) })
}

// dispatcher turns answers into calls of found, dropping our own instance
// and repeats within window.
type dispatcher struct {
	self   string
	window time.Duration
	found  func(Candidate)
	log    *slog.Logger
	now    func() time.Time

	mu     sync.Mutex // guards recent; held while found runs, so found never runs concurrently
	recent map[string]delivery
}

// delivery is the last Candidate passed to found for an instance.
type delivery struct {
	key string
	at  time.Time
}

// maxRecent bounds dispatcher.recent against a network that invents names.
const maxRecent = 4096

func newDispatcher(self string, window time.Duration, found func(Candidate), log *slog.Logger, now func() time.Time) *dispatcher {
	return &dispatcher{self: self, window: window, found: found, log: log, now: now, recent: make(map[string]delivery)}
}

func (d *dispatcher) deliver(e *zeroconf.ServiceEntry, zone string) {
	if strings.EqualFold(e.Instance, d.self) {
		return
	}
	c, err := toCandidate(e, zone, d.now())
	if err != nil {
		d.log.Debug("mdns answer ignored", "err", err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.repeat(c) {
		return
	}
	d.found(c)
}

// repeat reports whether c was passed to found less than window ago, and
// records it otherwise.
func (d *dispatcher) repeat(c Candidate) bool {
	key := fmt.Sprint(c.TXT, c.Addrs)
	if last, ok := d.recent[c.Instance]; ok && last.key == key && c.Seen.Sub(last.at) < d.window {
		return true
	}
	if len(d.recent) >= maxRecent {
		d.prune(c.Seen)
	}
	d.recent[c.Instance] = delivery{key: key, at: c.Seen}
	return false
}

// prune forgets deliveries older than window, or all when that is not
// enough.
func (d *dispatcher) prune(now time.Time) {
	for k, v := range d.recent {
		if now.Sub(v.at) >= d.window {
			delete(d.recent, k)
		}
	}
	if len(d.recent) >= maxRecent {
		clear(d.recent)
	}
}
