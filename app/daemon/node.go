package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/discovery"
	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/sync/transport"
)

// runNodeRecord publishes this node's record (info, addresses, the card of
// the cluster it stands for) at start and whenever it changes: addresses
// are looked at every 15 s, the cluster's card as soon as it changes.
func (d *Daemon) runNodeRecord(ctx context.Context) error {
	var last []byte
	t := beat.NewTicker(15 * time.Second)
	defer t.Stop()
	var cardChanged <-chan struct{} // nil: no cluster
	if d.cluster != nil {
		cardChanged = d.cluster.changed
	}
	for {
		rec := app.NodeRecord{Info: d.telem.Info(), Addresses: d.addresses(), Containers: d.rt != nil || d.cluster != nil,
			Cluster: d.cluster.get()}
		if d.rtErr != nil {
			rec.ContainersError = d.rtErr.Error()
		}
		data, err := marshalNodeRecord(rec)
		if err != nil {
			d.log.Warn("encode node record", "err", err)
		} else if string(data) != string(last) {
			if _, err := d.db.Append(ctx, d.id.ID.String(), app.KindNode, "", time.Now(), data); err != nil {
				d.log.Warn("write node record", "err", err)
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
// of the selected interfaces (all up, non-loopback ones when none is).
func (d *Daemon) addresses() []string {
	port := d.ep.Addr().Port
	var ifaces []net.Interface
	if len(d.cfg.Ifaces) > 0 {
		// The named interfaces, multicast or not: without mDNS these
		// addresses are how members find this machine.
		for _, name := range d.cfg.Ifaces {
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

// hintKnownAddresses gives the followers the addresses each member last
// published, so a restarted node reconnects without waiting for mDNS.
func (d *Daemon) hintKnownAddresses(ctx context.Context) {
	ms, err := d.db.Members(ctx)
	if err != nil {
		return
	}
	for _, m := range ms {
		rec, ok, err := d.db.Latest(ctx, m.ID, app.KindNode, "")
		if err != nil || !ok {
			continue
		}
		if m.ID == d.id.ID.String() {
			continue
		}
		addrs := publishedAddrs(rec.Data)
		d.peers.Hint(m.ID, addrs...)
		d.peers.Publish(m.ID, addrs) // relayed to the others at once
	}
}

// publishedAddrs returns the addresses a node record says its node may be
// reached at (replica.Peers.Published).
func publishedAddrs(data []byte) []string {
	var nr app.NodeRecord
	if json.Unmarshal(data, &nr) != nil {
		return nil
	}
	return nr.Addresses
}

// hintFollower hints, before h serves a member's replication stream, the
// address the member's session came from: its handshake proved the member
// there, and a member that joined through this machine without mDNS is
// reached that way (its records, then its addresses, are relayed from here).
func (d *Daemon) hintFollower(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id, ok := transport.PeerID(r); ok && id != d.id.ID {
			d.peers.Hint(id.String(), r.RemoteAddr)
		}
		h.ServeHTTP(w, r)
	})
}

// startDiscovery announces this node and turns what mDNS finds into
// address hints for the followers.
func (d *Daemon) startDiscovery(ctx context.Context, g interface{ Go(func() error) }) error {
	cfg := discovery.DefaultConfig()
	cfg.Instance = discovery.InstanceName(d.name, d.id.ID.Short())
	cfg.Host = discovery.HostName(d.id.ID.Short())
	cfg.Port = d.ep.Addr().Port
	cfg.Ifaces = d.cfg.Ifaces
	cfg.Quiet = d.peers.AllOnline // every member connected: browse once a minute
	d.disc = cfg
	if _, err := discovery.SelectInterfaces(cfg.Ifaces); errors.Is(err, discovery.ErrNoMulticast) {
		// Said once: the pool still works, joined by HOST:PORT, and members
		// learn each other's addresses from the pool's streams (their
		// node records, relayed by every member).
		d.log.Warn("mdns discovery is off: join this machine by HOST:PORT; members learn addresses through the pool", "err", err)
		return nil
	}
	poolID, _, err := d.db.Setting(ctx, app.SettingPoolID)
	if err != nil {
		return err
	}
	d.ann = discovery.NewAnnouncer(cfg, d.txt(poolID), d.log)
	g.Go(func() error { return d.ann.Run(ctx) })
	br := discovery.NewBrowser(cfg, d.log)
	g.Go(func() error { return br.Run(ctx, d.found) })
	return nil
}

func (d *Daemon) txt(poolID string) discovery.TXT {
	return discovery.TXT{ID: d.id.ID.String(), APIVersion: app.APIVersion, Port: d.ep.Addr().Port, Pool: poolID}
}

// found is the browser's callback: remember the candidate for joins (in a
// table bounded by discovery.Remember) and hint its addresses, which the
// followers use only for members. It must not block.
func (d *Daemon) found(c discovery.Candidate) {
	d.mu.Lock()
	discovery.Remember(d.candidates, c)
	d.mu.Unlock()
	addrs := make([]string, 0, len(c.Addrs))
	for _, a := range c.Addrs {
		addrs = append(addrs, a.String())
	}
	if c.TXT.ID != "" && c.TXT.ID != d.id.ID.String() {
		d.peers.Hint(c.TXT.ID, addrs...)
	}
}

// poolCandidates lists the addresses of machines announcing poolID that
// were heard lately, the most recently heard first, each address once.
// They are claims: a join tries every one.
func (d *Daemon) poolCandidates(poolID string) []string {
	now := time.Now()
	d.mu.Lock()
	var cs []discovery.Candidate
	for _, c := range d.candidates {
		if c.TXT.Pool == poolID && c.TXT.ID != d.id.ID.String() && c.Fresh(now) {
			cs = append(cs, c)
		}
	}
	d.mu.Unlock()
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
