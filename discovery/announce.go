package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/grandcat/zeroconf"
)

// selfCheckTimeout bounds the wait for our own record after registering.
const selfCheckTimeout = time.Second

// Announcer publishes this machine on the local network.
type Announcer struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{} // one slot: SetTXT asks Run to publish again

	mu  sync.Mutex // guards txt
	txt TXT
}

// NewAnnouncer returns an Announcer for cfg and txt; a zero txt.Port means
// cfg.Port. Run checks both.
func NewAnnouncer(cfg Config, txt TXT, log *slog.Logger) *Announcer {
	if txt.Port == 0 {
		txt.Port = cfg.Port
	}
	return &Announcer{cfg: cfg, log: log, txt: txt, wake: make(chan struct{}, 1)}
}

// TXT returns the record being announced.
func (a *Announcer) TXT() TXT {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.txt
}

// SetTXT replaces the announced record, for instance once the machine joins
// a pool; a running Announcer publishes it at once. A zero t.Port means
// Config.Port. It is safe to call from any goroutine, before or during Run,
// and does not block.
func (a *Announcer) SetTXT(t TXT) error {
	if t.Port == 0 {
		t.Port = a.cfg.Port
	}
	if err := t.Validate(); err != nil {
		return fmt.Errorf("set txt: %w", err)
	}
	a.mu.Lock()
	a.txt = t
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	return nil
}

// Run announces this machine until ctx is cancelled, then sends a goodbye.
// It fails at once on a bad Config or TXT or an unknown interface; later
// trouble (no address yet, an interface gone) is logged and retried every
// Config.Interval. A change of interfaces, addresses or TXT re-registers.
func (a *Announcer) Run(ctx context.Context) error {
	if err := a.cfg.validate(true); err != nil {
		return fmt.Errorf("announce: %w", err)
	}
	if err := a.TXT().Validate(); err != nil {
		return fmt.Errorf("announce: %w", err)
	}
	if _, err := SelectInterfaces(a.cfg.Ifaces); err != nil {
		return fmt.Errorf("announce: %w", err)
	}
	var reg registration
	defer reg.stop()
	advice := a.adviseOnce(ctx)
	defer func() {
		if advice != nil {
			<-advice // its goroutine is done once it sends
		}
	}()
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	var last time.Time // of the last refresh
	woken := true
	for {
		if now := time.Now(); woken || !a.cfg.quiet(last, now) {
			last = now
			a.refresh(ctx, &reg)
		}
		woken = false
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-a.wake:
			woken = true
		case reg.advice = <-advice:
			advice = nil
			if reg.advice != "" {
				a.log.Warn(reg.advice)
			}
		}
	}
}

// adviseOnce asks the OS, in the background, what keeps mDNS from the LAN
// (NetworkAdvice); the channel yields the answer once.
func (a *Announcer) adviseOnce(ctx context.Context) chan string {
	c := make(chan string, 1)
	go func() { c <- NetworkAdvice(ctx) }()
	return c
}

// registration is what Run has published.
type registration struct {
	srv     *zeroconf.Server // nil when nothing is published
	since   time.Time        // when srv was registered
	key     string           // interfaces, addresses and TXT of srv
	lastLog string           // last problem logged, so that a retry is logged once
	advice  string           // what to change on this machine (NetworkAdvice)
}

// zeroconfSettle is how long a zeroconf server must have run before its Shutdown:
// its receive goroutines join its WaitGroup only once they run, and a
// Shutdown waiting on it before that races them (zeroconf v1.0.0; the race
// detector caught it when an announcer stopped right after it started).
const zeroconfSettle = 100 * time.Millisecond

func (r *registration) stop() {
	if r.srv != nil {
		time.Sleep(zeroconfSettle - time.Since(r.since)) // no wait once settled
		r.srv.Shutdown()
		r.srv = nil
	}
	r.key = ""
}

// refresh publishes again when interfaces, addresses or TXT have changed.
func (a *Announcer) refresh(ctx context.Context, reg *registration) {
	ifaces, err := SelectInterfaces(a.cfg.Ifaces)
	if err != nil {
		reg.stop()
		a.logOnce(reg, slog.LevelWarn, "mdns announce paused", "err", err)
		return
	}
	addrs := interfaceAddrs(ifaces)
	txt := a.TXT()
	recs, _ := txt.Encode() // validated by SetTXT and Run
	key := fmt.Sprint(ifaces, addrs, recs)
	if key == reg.key {
		return
	}
	reg.stop()
	if len(addrs) == 0 {
		a.logOnce(reg, slog.LevelInfo, "mdns announce waiting for an ip address", "ifaces", interfaceNames(ifaces))
		return
	}
	srv, err := zeroconf.RegisterProxy(a.cfg.Instance, Service, Domain, a.cfg.Port, a.cfg.Host,
		addrStrings(addrs), recs, ifaces)
	if err = explainBlocked(err, ifaces, reg.advice); errors.Is(err, ErrBlocked) {
		a.logOnce(reg, slog.LevelWarn, err.Error())
		return
	} else if err != nil {
		a.logOnce(reg, slog.LevelWarn, "mdns announce failed, will retry", "err", err)
		return
	}
	reg.srv, reg.since, reg.key, reg.lastLog = srv, time.Now(), key, ""
	a.log.Info("mdns registered", "instance", a.cfg.Instance, "host", a.cfg.Host,
		"port", a.cfg.Port, "addrs", addrs, "ifaces", interfaceNames(ifaces), "pool", txt.Pool)
	if !hearSelf(ctx, ifaces, a.cfg.Instance) && ctx.Err() == nil {
		a.log.Warn("this machine's mDNS announcement was not heard back: multicast may be blocked on this network; "+Fallback,
			"instance", a.cfg.Instance, "advice", reg.advice)
	}
}

// logOnce logs a problem unless it is the one logged last.
func (a *Announcer) logOnce(reg *registration, level slog.Level, msg string, args ...any) {
	line := msg + fmt.Sprint(args...)
	if line != reg.lastLog {
		reg.lastLog = line
		a.log.Log(context.Background(), level, msg, args...)
	}
}

func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

// hearSelf queries for our own instance and waits for the answer. Besides
// checking that multicast works, this makes the responder answer by
// multicast at once, so every browser on the link hears the new record now
// and not a random 0 to 500 ms later, at zeroconf's first announcement.
func hearSelf(ctx context.Context, ifaces []net.Interface, instance string) bool {
	for _, family := range []zeroconf.IPType{zeroconf.IPv4, zeroconf.IPv6} {
		res, err := zeroconf.NewResolver(zeroconf.SelectIfaces(ifaces), zeroconf.SelectIPTraffic(family))
		if err != nil {
			continue // no such family here: try the other one
		}
		return lookupOnce(ctx, res, instance)
	}
	return false
}

// lookupOnce waits up to selfCheckTimeout for one answer about instance.
func lookupOnce(ctx context.Context, res *zeroconf.Resolver, instance string) bool {
	ctx, cancel := context.WithTimeout(ctx, selfCheckTimeout)
	defer cancel()
	entries := make(chan *zeroconf.ServiceEntry, 1)
	_ = res.Lookup(ctx, instance, Service, Domain, entries) // an error cancels, closing entries
	heard := false
	for e := range entries { // until zeroconf closes it, so that its loop exits
		if strings.EqualFold(e.Instance, instance) {
			heard = true
			cancel()
		}
	}
	return heard
}
