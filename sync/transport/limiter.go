package transport

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// LimiterConfig is the budget of one source address.
type LimiterConfig struct {
	// What is limited, for the log ("handshakes", "refused requests").
	What string
	// Burst is how many events a source may spend at once; 0 turns the
	// limiter off.
	Burst int
	// Rate is how many events a source regains per second.
	Rate float64
	// Sources bounds the sources tracked (4096). When the table is full,
	// new sources share one budget until old ones have refilled.
	Sources int
}

// logEvery is how often one refused source is logged.
const logEvery = time.Minute

// Limiter is a token bucket per source IP. A source that has regained its
// whole budget is forgotten, so the table holds only sources seen lately.
// A refused source is logged at most once a minute. Its methods are safe
// for concurrent use; a nil *Limiter allows everything.
type Limiter struct {
	cfg LimiterConfig
	log *slog.Logger
	now func() time.Time

	mu        sync.Mutex // guards srcs and lastPrune
	srcs      map[netip.Addr]*bucket
	lastPrune time.Time
}

type bucket struct {
	tokens  float64
	at      time.Time // of tokens
	logged  time.Time // last log line about this source
	refused int       // refusals since that line
}

// overflow is the key of the budget shared by sources that find the table
// full.
var overflow = netip.Addr{}

// NewLimiter returns a limiter with cfg's budget per source.
func NewLimiter(cfg LimiterConfig, log *slog.Logger) *Limiter {
	if cfg.Sources <= 0 {
		cfg.Sources = 4096
	}
	if log == nil {
		log = slog.Default()
	}
	return &Limiter{cfg: cfg, log: log, now: time.Now, srcs: map[netip.Addr]*bucket{}}
}

// Allow spends one event of ip's budget, or reports false (and logs the
// refusal) when none is left.
func (l *Limiter) Allow(ip netip.Addr) bool {
	if l == nil || l.cfg.Burst <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, now := l.bucket(ip)
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	l.refuse(ip, b, now)
	return false
}

// Exhausted reports whether ip has no event left, logging the refusal if
// so; it spends nothing.
func (l *Limiter) Exhausted(ip netip.Addr) bool {
	if l == nil || l.cfg.Burst <= 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, now := l.bucket(ip)
	if b.tokens >= 1 {
		return false
	}
	l.refuse(ip, b, now)
	return true
}

// Charge spends one event of ip's budget if any is left.
func (l *Limiter) Charge(ip netip.Addr) {
	if l == nil || l.cfg.Burst <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, _ := l.bucket(ip); b.tokens >= 1 {
		b.tokens--
	}
}

// Spent reports whether ip has no event left, quietly.
func (l *Limiter) Spent(ip netip.Addr) bool {
	if l == nil || l.cfg.Burst <= 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.srcs[ip.Unmap().WithZone("")]
	return ok && l.refill(b, l.now()) < 1
}

// bucket returns ip's bucket refilled to now. l.mu must be held.
func (l *Limiter) bucket(ip netip.Addr) (*bucket, time.Time) {
	ip = ip.Unmap().WithZone("")
	now := l.now()
	if b, ok := l.srcs[ip]; ok {
		l.refill(b, now)
		return b, now
	}
	if len(l.srcs) >= l.cfg.Sources && now.Sub(l.lastPrune) >= time.Second {
		l.prune(now)
	}
	if len(l.srcs) >= l.cfg.Sources {
		ip = overflow
		if b, ok := l.srcs[ip]; ok {
			l.refill(b, now)
			return b, now
		}
	}
	b := &bucket{tokens: float64(l.cfg.Burst), at: now}
	l.srcs[ip] = b
	return b, now
}

func (l *Limiter) refill(b *bucket, now time.Time) float64 {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(float64(l.cfg.Burst), b.tokens+d.Seconds()*l.cfg.Rate)
		b.at = now
	}
	return b.tokens
}

// prune forgets the sources that have regained their whole budget. l.mu
// must be held.
func (l *Limiter) prune(now time.Time) {
	l.lastPrune = now
	for ip, b := range l.srcs {
		if l.refill(b, now) >= float64(l.cfg.Burst) {
			delete(l.srcs, ip)
		}
	}
}

// refuse counts a refusal of ip and logs it if a minute has passed since
// the last line about ip. l.mu must be held.
func (l *Limiter) refuse(ip netip.Addr, b *bucket, now time.Time) {
	b.refused++
	if now.Sub(b.logged) < logEvery {
		return
	}
	src := ip.String()
	if !ip.IsValid() {
		src = "(any of many)"
	}
	l.log.Warn("source over its budget: refused", "what", l.cfg.What, "source", src,
		"refused", b.refused, "budget", l.cfg.Burst, "per_minute", l.cfg.Rate*60)
	b.logged, b.refused = now, 0
}

// sourceIP is the IP of a remote address ("host:port" or a net.Addr).
func sourceIP(addr string) netip.Addr {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}

func netAddrIP(a net.Addr) netip.Addr {
	if a == nil {
		return netip.Addr{}
	}
	return sourceIP(a.String())
}
