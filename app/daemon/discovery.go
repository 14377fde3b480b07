package daemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/discovery"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/replica"
	"github.com/labpool/labpool/sync/store"
)

// discoveryPart announces this node and turns what mDNS finds into
// address hints for the followers and candidates for joins.
type discoveryPart struct {
	cfg   discovery.Config
	self  string
	db    *store.DB
	peers *replica.Peers
	log   *slog.Logger

	mu         sync.Mutex // guards candidates and ann
	candidates map[string]discovery.Candidate
	ann        *discovery.Announcer // nil until Run announces
}

func newDiscovery(c Config, self peer.ID, name string, port int, db *store.DB, peers *replica.Peers, log *slog.Logger) *discoveryPart {
	cfg := discovery.DefaultConfig()
	cfg.Instance = discovery.InstanceName(name, self.Short())
	cfg.Host = discovery.HostName(self.Short())
	cfg.Port = port
	cfg.Ifaces = c.Ifaces
	cfg.Quiet = peers.AllOnline // every member connected: browse once a minute
	return &discoveryPart{cfg: cfg, self: self.String(), db: db, peers: peers, log: log,
		candidates: map[string]discovery.Candidate{}}
}

// Run announces and browses until ctx is cancelled.
func (p *discoveryPart) Run(ctx context.Context) error {
	if _, err := discovery.SelectInterfaces(p.cfg.Ifaces); errors.Is(err, discovery.ErrNoMulticast) {
		// Said once: the pool still works, joined by HOST:PORT, and members
		// learn each other's addresses from the pool's streams (their
		// node records, relayed by every member).
		p.log.Warn("mdns discovery is off: join this machine by HOST:PORT; members learn addresses through the pool", "err", err)
		return nil
	}
	poolID, _, err := p.db.Setting(ctx, app.SettingPoolID)
	if err != nil {
		return err
	}
	ann := discovery.NewAnnouncer(p.cfg, p.txt(poolID), p.log)
	p.mu.Lock()
	p.ann = ann
	p.mu.Unlock()
	br := discovery.NewBrowser(p.cfg, p.log)
	return runAll(ctx, ann.Run, func(ctx context.Context) error { return br.Run(ctx, p.found) })
}

func (p *discoveryPart) txt(poolID string) discovery.TXT {
	return discovery.TXT{ID: p.self, APIVersion: app.APIVersion, Port: p.cfg.Port, Pool: poolID}
}

// entered is the pool's Entered hook: announce the pool joined (announced
// with the pool ID when Run starts, if it has not yet).
func (p *discoveryPart) entered(poolID string) error {
	p.mu.Lock()
	ann := p.ann
	p.mu.Unlock()
	if ann == nil {
		return nil
	}
	return ann.SetTXT(p.txt(poolID))
}

// found is the browser's callback: remember the candidate for joins (in a
// table bounded by discovery.Remember) and hint its addresses, which the
// followers use only for members. It must not block.
func (p *discoveryPart) found(c discovery.Candidate) {
	p.mu.Lock()
	discovery.Remember(p.candidates, c)
	p.mu.Unlock()
	addrs := make([]string, 0, len(c.Addrs))
	for _, a := range c.Addrs {
		addrs = append(addrs, a.String())
	}
	if c.TXT.ID != "" && c.TXT.ID != p.self {
		p.peers.Hint(c.TXT.ID, addrs...)
	}
}

// poolCandidates lists the addresses of machines announcing poolID that
// were heard lately, the most recently heard first, each address once.
// They are claims: a join tries every one.
func (p *discoveryPart) poolCandidates(poolID string) []string {
	now := time.Now()
	p.mu.Lock()
	var cs []discovery.Candidate
	for _, c := range p.candidates {
		if c.TXT.Pool == poolID && c.TXT.ID != p.self && c.Fresh(now) {
			cs = append(cs, c)
		}
	}
	p.mu.Unlock()
	slices.SortFunc(cs, func(a, b discovery.Candidate) int { return b.Seen.Compare(a.Seen) })
	var out []string
	for _, c := range cs {
		for _, a := range c.Addrs {
			if s := a.String(); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}
