package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// NodePublisher writes this machine's node record (KindNode) at start and
// whenever it changes: addresses are looked at every 15 s, the card of
// the cluster it stands for as soon as it changes.
type NodePublisher struct {
	self   string
	db     *store.DB
	info   func() agent.Info
	port   int      // where peers reach this machine
	ifaces []string // the interfaces it is reached on; none: all up, non-loopback ones
	card   *slurm.Card
	runs   error // why this machine runs no jobs; nil: it runs them
	log    *slog.Logger
}

// NewNodePublisher returns the writer of self's node record in db: info
// is the telemetry's, card the cluster's (nil: it stands for none), runs
// why it runs no jobs (nil: it runs them).
func NewNodePublisher(self string, db *store.DB, info func() agent.Info, port int, ifaces []string, card *slurm.Card,
	runs error, log *slog.Logger) *NodePublisher {
	return &NodePublisher{self: self, db: db, info: info, port: port, ifaces: ifaces, card: card, runs: runs, log: log}
}

// Run publishes the record until ctx is cancelled.
func (p *NodePublisher) Run(ctx context.Context) error {
	rec := latestRecord{db: p.db, origin: p.self, kind: KindNode}
	t := beat.NewTicker(15 * time.Second)
	defer t.Stop()
	var cardChanged <-chan struct{} // nil: no cluster
	if p.card != nil {
		cardChanged = p.card.Changed()
	}
	for {
		nr := NodeRecord{Info: p.info(), Addresses: addresses(p.port, p.ifaces), Containers: p.runs == nil,
			Cluster: p.card.Get()}
		if p.runs != nil {
			nr.ContainersError = p.runs.Error()
		}
		data, err := MarshalNodeRecord(nr)
		if err != nil {
			p.log.Warn("encode node record", "err", err)
		} else if _, err := rec.write(ctx, time.Now(), data); err != nil {
			p.log.Warn("write node record", "err", err)
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

// nodeRecordCap is the most bytes a node record may hold (sync/schema).
var nodeRecordCap = func() int {
	k, _ := schema.Lookup(KindNode)
	return k.MaxData
}()

// MarshalNodeRecord encodes rec within the node record's cap: a cluster's
// card too large for it loses the tail of its queue first (labpool's jobs
// lead it), then the tail of its node list.
func MarshalNodeRecord(rec NodeRecord) ([]byte, error) {
	data, err := json.Marshal(rec)
	if err != nil || len(data) <= nodeRecordCap || rec.Cluster == nil {
		return data, err
	}
	c := *rec.Cluster
	rec.Cluster = &c
	fit := func() ([]byte, bool) {
		data, err := json.Marshal(rec)
		return data, err == nil && len(data) <= nodeRecordCap
	}
	queue, nodes := c.Queue, c.Nodes
	if data, ok := longest(len(queue), func(n int) ([]byte, bool) { c.Queue = queue[:n]; return fit() }); ok {
		return data, nil
	}
	c.Queue = nil
	if data, ok := longest(len(nodes), func(n int) ([]byte, bool) { c.Nodes = nodes[:n]; return fit() }); ok {
		return data, nil
	}
	return nil, fmt.Errorf("node record is over its cap of %d bytes without the cluster's queue and nodes", nodeRecordCap)
}

// longest finds the largest n in [0, max] for which try fits (try fits
// every n below one that fits) and returns what it encoded.
func longest(max int, try func(n int) ([]byte, bool)) ([]byte, bool) {
	lo, hi := 0, max // the answer is in [lo, hi], if any
	data, ok := try(0)
	if !ok {
		return nil, false
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, ok := try(mid); ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo > 0 {
		data, _ = try(lo)
	}
	return data, true
}

// PublishedAddrs returns the addresses a node record (its data) says its
// node may be reached at (replica.Peers.Published).
func PublishedAddrs(data []byte) []string {
	var nr NodeRecord
	if json.Unmarshal(data, &nr) != nil {
		return nil
	}
	return nr.Addresses
}

// KnownAddresses returns the addresses each member but self last
// published, by member: a restarted node reconnects with them without
// waiting for mDNS.
func KnownAddresses(ctx context.Context, db *store.DB, self string) (map[string][]string, error) {
	ms, err := db.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the members' addresses: %w", err)
	}
	out := map[string][]string{}
	for _, m := range ms {
		rec, ok, err := db.Latest(ctx, m.ID, KindNode, "")
		if err != nil || !ok || m.ID == self {
			continue
		}
		out[m.ID] = PublishedAddrs(rec.Data)
	}
	return out, nil
}
