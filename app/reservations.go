package app

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/labpool/labpool/node/reserve"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// KindReservation is a machine's record of one reservation of its own
// GPUs (key: its ID; data: reserve.Reservation), written by that machine
// only (node/reserve.Book through ReservationStore).
const KindReservation = schema.KindReservation

// Reservation is one reservation as the pool sees it: the record of the
// machine whose GPUs it holds, with names for people.
type Reservation struct {
	reserve.Reservation
	Node       string `json:"node"` // the record's origin: the machine whose GPUs these are
	NodeName   string `json:"node_name"`
	MemberName string `json:"member_name,omitempty"`
	// Problem says why a record is not believed (and holds nothing): it
	// names GPUs that are not its machine's, or is malformed.
	Problem string `json:"problem,omitempty"`
}

// ReservationStore keeps this machine's reservations as its own records
// (reserve.Store): every member reads them, and the book loads them back
// at start.
type ReservationStore struct {
	DB   *store.DB
	Self string // this machine's device ID: the records' origin
}

// reservationKeep is how long the records of reservations over are kept
// (every origin's: the replica prunes them by their time, their end).
const reservationKeep = 7 * 24 * time.Hour

// SaveReservation writes r as this machine's record; its time is r's end,
// so that the records of reservations over for reservationKeep are pruned
// first, keeping the kind's count cap for the reservations to come.
func (s ReservationStore) SaveReservation(r reserve.Reservation) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	ctx := context.Background()
	if _, err := s.DB.Prune(ctx, KindReservation, time.Now().Add(-reservationKeep)); err != nil {
		return fmt.Errorf("prune reservations over: %w", err)
	}
	_, err = s.DB.Append(ctx, s.Self, KindReservation, r.ID, r.Until, data)
	return err
}

// LoadReservations reads this machine's reservation records back.
func (s ReservationStore) LoadReservations() ([]reserve.Reservation, error) {
	recs, err := s.DB.Range(context.Background(), s.Self, KindReservation, time.Time{}, farFuture)
	if err != nil {
		return nil, err
	}
	var out []reserve.Reservation
	for _, rec := range recs {
		var r reserve.Reservation
		if json.Unmarshal(rec.Data, &r) != nil || r.ID != rec.Key {
			continue // not one this machine wrote as such: it holds nothing
		}
		out = append(out, r)
	}
	return out, nil
}

// farFuture bounds a read of every reservation record by time.
var farFuture = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)

// Reservations returns the reservations of every machine of the pool,
// soonest first. A record is believed only of its origin's own GPUs: one
// that names another machine's GPUs (a member forging a reservation of
// GPUs it does not have) is listed with its Problem and holds nothing.
func (r *Reader) Reservations(ctx context.Context) ([]Reservation, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	members, err := memberNames(ctx, r.db)
	if err != nil {
		return nil, err
	}
	var out []Reservation
	for _, n := range nodes {
		recs, err := r.db.Range(ctx, n.ID, KindReservation, time.Time{}, farFuture)
		if err != nil {
			return nil, fmt.Errorf("read reservations of %s: %w", n.Name, err)
		}
		own, err := r.ownGPUs(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			v := Reservation{Node: n.ID, NodeName: n.Name}
			v.Problem = believe(rec, own, &v.Reservation)
			v.MemberName = members[v.Member]
			out = append(out, v)
		}
	}
	slices.SortStableFunc(out, func(a, b Reservation) int { return a.From.Compare(b.From) })
	return out, nil
}

// ownGPUs are the GPUs (UUIDs) machine id says are its own, in its node
// record.
func (r *Reader) ownGPUs(ctx context.Context, id string) (map[string]bool, error) {
	own := map[string]bool{}
	rec, ok, err := r.db.Latest(ctx, id, KindNode, "")
	if err != nil || !ok {
		return own, err
	}
	var nr NodeRecord
	if json.Unmarshal(rec.Data, &nr) == nil {
		for _, g := range nr.Info.GPUs {
			own[g.UUID] = true
		}
	}
	return own, nil
}

// believe decodes rec into res and says why it is not to be believed, ""
// when it is.
func believe(rec store.Record, own map[string]bool, res *reserve.Reservation) string {
	if err := json.Unmarshal(rec.Data, res); err != nil {
		res.ID = rec.Key
		return "malformed record: " + err.Error()
	}
	switch {
	case res.ID != rec.Key:
		return fmt.Sprintf("record %.40q carries reservation %.40q", rec.Key, res.ID)
	case !res.Until.After(res.From):
		return "its span is empty"
	}
	for _, u := range res.Units {
		if !own[u] {
			return fmt.Sprintf("GPU %.64s is not its machine's: only a machine reserves its own GPUs", u)
		}
	}
	return ""
}

// ReserveRequest asks a machine for a reservation (`labpool reserve`).
type ReserveRequest struct {
	Node    string    `json:"node"`             // name, ID or ID prefix
	Member  string    `json:"member,omitempty"` // name or ID; "": this member
	GPUs    int       `json:"gpus,omitempty"`
	GPUIDs  []int     `json:"gpu_ids,omitempty"`
	From    time.Time `json:"from"`
	Seconds int64     `json:"seconds"`
}

// Reserve asks the machine req names for a reservation: the machine
// decides, by its own policy, and publishes it.
func (s *Service) Reserve(ctx context.Context, req ReserveRequest) (Reservation, error) {
	n, err := s.NodeByRef(ctx, req.Node)
	if err != nil {
		return Reservation{}, err
	}
	member := ""
	if req.Member != "" {
		ms, err := s.db.Members(ctx)
		if err != nil {
			return Reservation{}, fmt.Errorf("read the pool's members: %w", err)
		}
		if member, err = resolveDevice(ms, req.Member); err != nil {
			return Reservation{}, err
		}
	}
	r, err := reserve.Client{Conn: s.Peer(n.ID)}.Ask(ctx, reserve.Request{Member: member, GPUs: req.GPUs, GPUIDs: req.GPUIDs, From: req.From, Seconds: req.Seconds})
	if err != nil {
		return Reservation{}, err
	}
	names, _ := memberNames(ctx, s.db) // a name for people; the ID stands without one
	return Reservation{Reservation: r, Node: n.ID, NodeName: n.Name, MemberName: names[r.Member]}, nil
}

// Unreserve cancels reservation id (or a unique prefix of it) on its
// machine, which decides who may.
func (s *Service) Unreserve(ctx context.Context, id string) (Reservation, error) {
	rs, err := s.Reservations(ctx)
	if err != nil {
		return Reservation{}, err
	}
	var match []Reservation
	for _, r := range rs {
		if r.ID == id {
			match = []Reservation{r}
			break
		}
		if len(id) >= 6 && len(r.ID) >= len(id) && r.ID[:len(id)] == id {
			match = append(match, r)
		}
	}
	switch {
	case len(match) == 0:
		return Reservation{}, fmt.Errorf("%w: no reservation %q in the pool", ErrNotFound, id)
	case len(match) > 1:
		return Reservation{}, fmt.Errorf("%w: %q matches %d reservations", ErrInvalid, id, len(match))
	}
	m := match[0]
	got, err := reserve.Client{Conn: s.Peer(m.Node)}.Cancel(ctx, m.ID)
	if err != nil {
		return Reservation{}, err
	}
	m.Reservation = got
	return m, nil
}
