package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/grandcat/zeroconf"
)

// errNoInterface means the automatic selection found no usable interface.
var errNoInterface = errors.New("no multicast-capable network interface")

// Browser finds labpool machines on the local network.
type Browser struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
}

// NewBrowser returns a Browser for cfg; Run checks cfg. Only Instance,
// Ifaces and Interval matter to a Browser.
func NewBrowser(cfg Config, log *slog.Logger) *Browser {
	return &Browser{cfg: cfg, log: log, now: time.Now}
}

// Run browses until ctx is cancelled and calls found for every answer heard,
// except those for Config.Instance. Repeats are dropped only within half an
// Interval, so found hears from each live machine about once per Interval:
// each call refreshes a liveness hint.
//
// found must not block: it runs on the goroutine that reads the network,
// never concurrently with itself, and not after Run has returned. Hand the
// Candidate to a channel with a default case, or to a mutex-guarded map.
//
// Run fails at once on a bad Config or an unknown interface; later trouble
// (no interface up, one gone) is logged and retried every Interval.
func (b *Browser) Run(ctx context.Context, found func(Candidate)) error {
	if err := b.cfg.validate(false); err != nil {
		return fmt.Errorf("browse: %w", err)
	}
	if _, err := SelectInterfaces(b.cfg.Ifaces); err != nil {
		return fmt.Errorf("browse: %w", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	d := newDispatcher(b.cfg.Instance, b.cfg.Interval/2, found, b.log, b.now)
	tick := time.NewTicker(b.cfg.Interval)
	defer tick.Stop()
	lastErr := ""
	var last time.Time // of the last round started
	for {
		if now := b.now(); b.cfg.quiet(last, now) {
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
			continue
		}
		last = b.now()
		err := b.startRound(ctx, &wg, d)
		switch {
		case err == nil:
			lastErr = ""
		case err.Error() == lastErr: // logged already
		case errors.Is(err, errNoInterface): // offline: nothing to fix
			b.log.Info("mdns browse waiting", "err", err)
		case errors.Is(err, ErrBlocked): // a sentence of its own
			b.log.Warn(err.Error())
		default:
			b.log.Warn("mdns browse paused", "err", err)
		}
		if err != nil {
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// startRound starts one query round: a resolver per IP family that sends a
// query now and listens for two Intervals, so that consecutive rounds
// overlap and an unsolicited announcement is never missed. zeroconf reports
// each instance once per resolver, hence the fresh ones each round.
func (b *Browser) startRound(ctx context.Context, wg *sync.WaitGroup, d *dispatcher) error {
	ifaces, err := SelectInterfaces(b.cfg.Ifaces)
	if err == nil && len(ifaces) == 0 {
		err = errNoInterface
	}
	if err != nil {
		return err
	}
	zone := ""
	if len(ifaces) == 1 {
		zone = ifaces[0].Name // the only link a link-local address can be on
	}
	rctx, rcancel := context.WithTimeout(ctx, 2*b.cfg.Interval)
	v4, err4 := browseFamily(rctx, ifaces, zeroconf.IPv4)
	v6, err6 := browseFamily(rctx, ifaces, zeroconf.IPv6)
	if v4 == nil && v6 == nil {
		rcancel()
		if err := blockedAll(ifaces, "", err4, err6); errors.Is(err, ErrBlocked) {
			return err
		}
		return fmt.Errorf("start mdns browse on %s: %w", interfaceNames(ifaces), errors.Join(err4, err6))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer rcancel() // the channels close only once rctx is done: this frees its timer
		drain(v4, v6, func(e *zeroconf.ServiceEntry) { d.deliver(e, zone) })
	}()
	return nil
}

// drain reads both channels until both are closed; either may be nil.
func drain(a, b <-chan *zeroconf.ServiceEntry, f func(*zeroconf.ServiceEntry)) {
	for a != nil || b != nil {
		select {
		case e, ok := <-a:
			if !ok {
				a = nil
				continue
			}
			f(e)
		case e, ok := <-b:
			if !ok {
				b = nil
				continue
			}
			f(e)
		}
	}
}

// browseFamily starts browsing on one IP family. The channel it returns is
// closed once ctx is done; it must be read until then.
func browseFamily(ctx context.Context, ifaces []net.Interface, family zeroconf.IPType) (<-chan *zeroconf.ServiceEntry, error) {
	res, err := zeroconf.NewResolver(zeroconf.SelectIfaces(ifaces), zeroconf.SelectIPTraffic(family))
	if err != nil {
		return nil, err
	}
	entries := make(chan *zeroconf.ServiceEntry, 8)
	// An error here has already cancelled the browse, which closes entries;
	// the query is sent again next round.
	_ = res.Browse(ctx, Service, Domain, entries)
	return entries, nil
}
