package daemon

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// nodeRecord publishes this node's record (info, addresses, the card of
// the cluster it stands for) at start and whenever it changes: addresses
// are looked at every 15 s, the cluster's card as soon as it changes.
type nodeRecord struct {
	self   string
	db     *store.DB
	tel    *agent.Telemetry
	port   int      // where peers reach this node
	ifaces []string // Config.Ifaces
	ex     *executor
	log    *slog.Logger
}

func newNodeRecord(self string, db *store.DB, tel *agent.Telemetry, port int, ifaces []string, ex *executor, log *slog.Logger) *nodeRecord {
	return &nodeRecord{self: self, db: db, tel: tel, port: port, ifaces: ifaces, ex: ex, log: log}
}

// Run publishes the record until ctx is cancelled.
func (n *nodeRecord) Run(ctx context.Context) error {
	var last []byte
	t := beat.NewTicker(15 * time.Second)
	defer t.Stop()
	card := n.ex.card
	var cardChanged <-chan struct{} // nil: no cluster
	if card != nil {
		cardChanged = card.changed
	}
	for {
		rec := app.NodeRecord{Info: n.tel.Info(), Addresses: addresses(n.port, n.ifaces),
			Containers: n.ex.rt != nil || card != nil, Cluster: card.get()}
		if n.ex.err != nil {
			rec.ContainersError = n.ex.err.Error()
		}
		data, err := marshalNodeRecord(rec)
		if err != nil {
			n.log.Warn("encode node record", "err", err)
		} else if string(data) != string(last) {
			if _, err := n.db.Append(ctx, n.self, app.KindNode, "", time.Now(), data); err != nil {
				n.log.Warn("write node record", "err", err)
			} else {
				last = data
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-cardChanged:
		}
	}
}

// addresses lists HOST:PORT where peers may reach this node: each address
// of the interfaces named (all up, non-loopback ones when none is).
func addresses(port int, names []string) []string {
	var ifaces []net.Interface
	if len(names) > 0 {
		// The named interfaces, multicast or not: without mDNS these
		// addresses are how members find this machine.
		for _, name := range names {
			if ifc, err := net.InterfaceByName(name); err == nil {
				ifaces = append(ifaces, *ifc)
			}
		}
	} else {
		all, _ := net.Interfaces()
		for _, ifc := range all {
			if ifc.Flags&net.FlagUp != 0 && ifc.Flags&net.FlagLoopback == 0 {
				ifaces = append(ifaces, ifc)
			}
		}
	}
	out := []string{}
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			pfx, err := netip.ParsePrefix(a.String())
			if err != nil || pfx.Addr().IsLinkLocalUnicast() || pfx.Addr().IsLoopback() {
				continue
			}
			out = append(out, netip.AddrPortFrom(pfx.Addr(), uint16(port)).String())
		}
	}
	slices.Sort(out)
	return out
}
