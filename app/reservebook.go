package app

import (
	"log/slog"
	"net/http"

	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/reserve"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// OpenReservations builds the book of the machine self's reservations
// over its own records (ReservationStore), after its job manager: the
// ledger holds what the book holds (SetHeld "reservations"), from the
// records loaded at start on. The book places reservations on the GPUs of
// the latest telemetry (info).
func OpenReservations(self string, db *store.DB, jm *jobs.Manager, info func() agent.Info, log *slog.Logger) *reserve.Book {
	b := reserve.NewBook(reserve.Config{
		Node:       self,
		Units:      func() []alloc.Unit { return gpuUnits(self, info()) },
		Policy:     func() reserve.Policy { return jm.Policy().Reserve },
		Store:      ReservationStore{DB: db, Self: self},
		Log:        log,
		Changed:    func(gs []alloc.Grant) { jm.Ledger().SetHeld("reservations", gs) },
		SamePerson: jm.SamePerson,
		Lost: func(r reserve.Reservation) {
			log.Warn("a reservation lost to an earlier one; its record says so to its member",
				"reservation", r.ID, "member", r.Member, "reason", r.Reason)
		},
	})
	if err := b.Load(); err != nil {
		log.Error("load this machine's reservations", "err", err)
	}
	return b
}

// gpuUnits are the machine self's GPUs in info as the book places
// reservations on them.
func gpuUnits(self string, info agent.Info) []alloc.Unit {
	var out []alloc.Unit
	for _, g := range info.GPUs {
		out = append(out, alloc.Unit{ID: g.UUID, Kind: alloc.GPU, Node: self, Index: g.Index, MemBytes: g.MemTotalBytes})
	}
	return out
}

// ReserveCaller is who asks the reservations' peer API (reserve.Handler):
// the device the transport proved, with its role in the pool.
func ReserveCaller(pm *pool.Manager) func(*http.Request) reserve.Caller {
	return func(r *http.Request) reserve.Caller {
		id, _ := transport.PeerID(r)
		role, _ := pm.Role(id)
		return reserve.Caller{ID: id.String(), Role: string(role)}
	}
}
