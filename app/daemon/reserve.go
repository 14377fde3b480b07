package daemon

import (
	"net/http"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/reserve"
	"github.com/labpool/labpool/sync/transport"
)

// openReservations sets up the book of this machine's reservations over
// its own records, after openJobs: the ledger holds what the book holds
// (SetHeld "reservations"), from the records loaded at start on.
func (d *Daemon) openReservations() {
	self := d.id.ID.String()
	d.book = reserve.NewBook(reserve.Config{
		Node:    self,
		Units:   d.gpuUnits,
		Policy:  func() reserve.Policy { return d.jobs.Policy().Reserve },
		Store:   app.ReservationStore{DB: d.db, Self: self},
		Log:     d.log,
		Changed: func(gs []alloc.Grant) { d.jobs.Ledger().SetHeld("reservations", gs) },
		Lost: func(r reserve.Reservation) {
			d.log.Warn("a reservation lost to an earlier one; its record says so to its member",
				"reservation", r.ID, "member", r.Member, "reason", r.Reason)
		},
	})
	if err := d.book.Load(); err != nil {
		d.log.Error("load this machine's reservations", "err", err)
	}
}

// gpuUnits are this machine's GPUs as the book places reservations on
// them.
func (d *Daemon) gpuUnits() []alloc.Unit {
	self := d.id.ID.String()
	var out []alloc.Unit
	for _, g := range d.telem.Info().GPUs {
		out = append(out, alloc.Unit{ID: g.UUID, Kind: alloc.GPU, Node: self, Index: g.Index, MemBytes: g.MemTotalBytes})
	}
	return out
}

// reserveCaller is who asks the reservations API: the device the
// transport proved, with its role in the pool.
func (d *Daemon) reserveCaller(r *http.Request) reserve.Caller {
	id, _ := transport.PeerID(r)
	role, _ := d.pool.Role(id)
	return reserve.Caller{ID: id.String(), Role: string(role)}
}
