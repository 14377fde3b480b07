package discovery

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Hinter is told where the network says a device may be reached (the
// replica's followers, which use the hint only for members).
type Hinter interface {
	Hint(id string, addrs ...string)
}

// Presence announces this machine and browses for the others: what it hears
// becomes address hints, and candidates for a join (PoolCandidates).
type Presence struct {
	cfg    Config
	txt    TXT // Pool is set by Run and SetPool
	poolID func(ctx context.Context) (string, error)
	hints  Hinter
	log    *slog.Logger

	mu         sync.Mutex // guards candidates, ann and txt.Pool
	candidates map[string]Candidate
	ann        *Announcer // nil until Run announces
}

// NewPresence returns the announcer and browser of the device txt.ID
// (txt.Pool is read from poolID when Run starts).
func NewPresence(cfg Config, txt TXT, poolID func(ctx context.Context) (string, error), hints Hinter, log *slog.Logger) *Presence {
	return &Presence{cfg: cfg, txt: txt, poolID: poolID, hints: hints, log: log, candidates: map[string]Candidate{}}
}

// Run announces and browses until ctx is cancelled. Where no interface can
// carry multicast it says so once and returns nil: the pool still works,
// joined by HOST:PORT.
func (s *Presence) Run(ctx context.Context) error {
	if _, err := SelectInterfaces(s.cfg.Ifaces); errors.Is(err, ErrNoMulticast) {
		// Said once: the pool still works, joined by HOST:PORT, and members
		// learn each other's addresses from the pool's streams (their
		// node records, relayed by every member).
		s.log.Warn("mdns discovery is off: join this machine by HOST:PORT; members learn addresses through the pool", "err", err)
		return nil
	}
	poolID, err := s.poolID(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.txt.Pool = poolID
	ann := NewAnnouncer(s.cfg, s.txt, s.log)
	s.ann = ann
	s.mu.Unlock()
	br := NewBrowser(s.cfg, s.log)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ann.Run(ctx) })
	g.Go(func() error { return br.Run(ctx, s.found) })
	return g.Wait()
}

// SetPool announces poolID, the pool this machine entered (the pool's
// Entered hook); before Run announces, Run reads it itself.
func (s *Presence) SetPool(poolID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ann == nil {
		return nil
	}
	s.txt.Pool = poolID
	return s.ann.SetTXT(s.txt)
}

// found is the browser's callback: remember the candidate for joins (in a
// table bounded by Remember) and hint its addresses. It must not block.
func (s *Presence) found(c Candidate) {
	s.mu.Lock()
	Remember(s.candidates, c)
	s.mu.Unlock()
	addrs := make([]string, 0, len(c.Addrs))
	for _, a := range c.Addrs {
		addrs = append(addrs, a.String())
	}
	if c.TXT.ID != "" && c.TXT.ID != s.txt.ID {
		s.hints.Hint(c.TXT.ID, addrs...)
	}
}

// PoolCandidates lists the addresses of machines announcing poolID that
// were heard lately, the most recently heard first, each address once.
// They are claims: a join tries every one.
func (s *Presence) PoolCandidates(poolID string) []string {
	now := time.Now()
	s.mu.Lock()
	var cs []Candidate
	for _, c := range s.candidates {
		if c.TXT.Pool == poolID && c.TXT.ID != s.txt.ID && c.Fresh(now) {
			cs = append(cs, c)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(cs, func(a, b Candidate) int { return b.Seen.Compare(a.Seen) })
	var out []string
	for _, c := range cs {
		for _, a := range c.Addrs {
			if addr := a.String(); !slices.Contains(out, addr) {
				out = append(out, addr)
			}
		}
	}
	return out
}
