package app

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/peer"
)

// TestSlurmProof: the proof reads the nodes' NodeAddr from the latest card
// (none on a machine that stands for no cluster), and this machine holds
// no session that proves itself, or a malformed device ID.
func TestSlurmProof(t *testing.T) {
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	noSessions := func(peer.ID) []netip.Addr { panic("asked the endpoint") }
	noPolicy := func() jobs.Policy { return jobs.Policy{} }
	if got := NewSlurmProof(id.ID, noSessions, nil, noPolicy).Nodes(); got != nil {
		t.Errorf("nodes with no cluster = %v", got)
	}
	card := slurm.NewCard(oneNode{}, time.Hour)
	if got := NewSlurmProof(id.ID, noSessions, card, noPolicy).Nodes(); got != nil {
		t.Errorf("nodes before the first read = %v", got)
	}
	readOnce(t, card)
	p := NewSlurmProof(id.ID, noSessions, card, noPolicy)
	if got := p.Nodes(); len(got) != 1 || got[0].Addr != "10.0.1.1" {
		t.Errorf("nodes = %v; want node1 at 10.0.1.1", got)
	}
	for _, dev := range []string{id.ID.String(), "not-a-device"} {
		if got := p.Sessions(dev); got != nil { // asking the endpoint would panic
			t.Errorf("sessions of %q = %v", dev, got)
		}
	}
	if got := p.Enrolled("node1"); got != "" { // an empty policy: no machine enrolled
		t.Errorf("enrolled for node1 with no policy = %q", got)
	}
	enrolled := func() jobs.Policy { return jobs.Policy{SlurmNodes: map[string]string{"Node1": id.ID.String()}} }
	if got := NewSlurmProof(id.ID, noSessions, card, enrolled).Enrolled("node1"); got != id.ID.String() {
		t.Errorf("enrolled for node1 = %q; want the device the policy names (case aside)", got)
	}
}

// oneNode is a cluster of one node, node1 at 10.0.1.1.
type oneNode struct{}

func (oneNode) ReadCluster(context.Context) (slurm.Cluster, error) {
	return slurm.Cluster{Nodes: []slurm.Node{{Name: "node1", Addr: "10.0.1.1"}}}, nil
}

// readOnce has card read its cluster once.
func readOnce(t *testing.T, card *slurm.Card) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- card.Run(ctx) }()
	<-card.Changed()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
