package app

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/labpool/labpool/node/lend"
	"github.com/labpool/labpool/sync/schema"
)

// KindLend is the replica record of whether a machine is lent to the
// pool now and why not, written by that machine (key "", data:
// lend.Status). It is the machine's own word about itself, shown to
// people; no grant is decided by it (the machine's ledger holds the
// owner's grant).
const KindLend = schema.KindLend

// LendState is this machine's lending and its "I'm using it" switch.
type LendState = lend.State

// LendUsing turns the "I'm using it" switch on or off.
type LendUsing struct {
	Using bool `json:"using"`
}

// Lending is this machine's lender (node/lend), once its daemon runs one.
type Lending interface {
	State() lend.State
	SetUsing(on bool)
}

// lending holds the lender the daemon set (nil: none yet, or no job
// engine here).
type lending struct{ p atomic.Pointer[Lending] }

// SetLending gives the service this machine's lender.
func (s *Service) SetLending(l Lending) { s.lend.p.Store(&l) }

func (s *Service) lender() (Lending, error) {
	l := s.lend.p.Load()
	if l == nil || *l == nil {
		return nil, fmt.Errorf("%w: this machine lends nothing: it runs no jobs", ErrNotFound)
	}
	return *l, nil
}

// Lend returns this machine's lending now.
func (s *Service) Lend(ctx context.Context) (LendState, error) {
	l, err := s.lender()
	if err != nil {
		return LendState{}, err
	}
	return l.State(), nil
}

// SetLendUsing turns this machine's "I'm using it" switch on or off: on,
// no guest is placed here from now, and guests yield after the grace. It
// is the machine's own user's: the local API alone reaches it, never a
// peer.
func (s *Service) SetLendUsing(ctx context.Context, u LendUsing) (LendState, error) {
	l, err := s.lender()
	if err != nil {
		return LendState{}, err
	}
	l.SetUsing(u.Using)
	return l.State(), nil
}

// nodeLend reads what machine id last said about its lending (nil:
// nothing, or a record that does not decode).
func (r *Reader) nodeLend(ctx context.Context, id string) *lend.Status {
	rec, found, err := r.db.Latest(ctx, id, KindLend, "")
	if err != nil || !found {
		return nil
	}
	var st lend.Status
	if json.Unmarshal(rec.Data, &st) != nil || st.Phase == "" {
		return nil
	}
	return &st
}
