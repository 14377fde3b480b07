package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/peer"
)

// bigCluster is a cluster of nodes nodes and a queue of slurm.QueueCap
// jobs whose names are name bytes long.
func bigCluster(nodes, name int) slurm.Cluster {
	c := slurm.Cluster{Name: "big", Running: 150, Pending: 4000}
	for i := range nodes {
		c.Nodes = append(c.Nodes, slurm.Node{Name: fmt.Sprintf("gpu%04d", i), State: "mixed", Partitions: []string{"gpu"},
			CPUs: 128, MemoryMB: 1 << 20, GPUs: []slurm.GPUCount{{Type: "h100", Total: 8, Alloc: 3}}})
	}
	for i := range slurm.QueueCap {
		c.Queue = append(c.Queue, slurm.QueueJob{ID: fmt.Sprint(1000 + i), Name: strings.Repeat("n", name), User: "lab",
			State: "PENDING", Reason: "Resources", Partition: "gpu", GPUs: 8, LabpoolJob: fmt.Sprintf("job%d", i)})
	}
	return c
}

func TestMarshalNodeRecordFitsTheCap(t *testing.T) {
	tests := []struct {
		name                 string
		cluster              slurm.Cluster
		wantQueue, wantNodes func(int) bool
	}{
		{"small: whole", bigCluster(16, 40),
			func(q int) bool { return q == slurm.QueueCap }, func(n int) bool { return n == 16 }},
		{"long job names: the queue's tail goes", bigCluster(16, 2000),
			func(q int) bool { return q > 0 && q < slurm.QueueCap }, func(n int) bool { return n == 16 }},
		{"thousands of nodes: the queue, then nodes' tail go", bigCluster(5000, 200),
			func(q int) bool { return q == 0 }, func(n int) bool { return n > 100 && n < 5000 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := app.NodeRecord{Addresses: []string{"10.0.0.1:7420"}, Cluster: &tt.cluster}
			data, err := marshalNodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > nodeRecordCap {
				t.Fatalf("record is %d bytes, over the cap of %d", len(data), nodeRecordCap)
			}
			var got app.NodeRecord
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			q, n := len(got.Cluster.Queue), len(got.Cluster.Nodes)
			if !tt.wantQueue(q) || !tt.wantNodes(n) {
				t.Errorf("kept %d queue entries and %d nodes", q, n)
			}
			if q > 0 && got.Cluster.Queue[0].LabpoolJob != "job0" {
				t.Errorf("queue starts with %+v, want its head kept (labpool's jobs lead)", got.Cluster.Queue[0])
			}
			if got.Cluster.Pending != 4000 || len(tt.cluster.Queue) != slurm.QueueCap {
				t.Errorf("counts %d pending, card's queue %d: the counts stay, the caller's card is not cut", got.Cluster.Pending, len(tt.cluster.Queue))
			}
			// The most that fits: one more queue entry (or node) would not.
			if q > 0 && q < slurm.QueueCap {
				more := *got.Cluster
				more.Queue = tt.cluster.Queue[:q+1]
				if b, _ := json.Marshal(app.NodeRecord{Addresses: rec.Addresses, Cluster: &more}); len(b) <= nodeRecordCap {
					t.Errorf("%d queue entries kept, %d fit", q, q+1)
				}
			}
		})
	}
}

// TestClusterCardChanges: a reading that differs only in its time does
// not wake the node record's writer; any other change does.
func TestClusterCardChanges(t *testing.T) {
	c := newClusterCard(nil, time.Second)
	t0 := time.Unix(1_800_000_000, 0)
	card := bigCluster(2, 10)
	card.Read = t0
	c.set(card)
	if !woken(c) {
		t.Fatal("the first card did not wake the writer")
	}
	card.Read = t0.Add(time.Second)
	c.set(card)
	if woken(c) {
		t.Error("a new reading time alone woke the writer")
	}
	next := bigCluster(2, 10)
	next.Queue[3].State, next.Queue[3].Reason = "RUNNING", ""
	c.set(next)
	if !woken(c) || c.get().Queue[3].State != "RUNNING" {
		t.Error("a job's new state did not wake the writer")
	}
}

func woken(c *clusterCard) bool {
	select {
	case <-c.changed:
		return true
	default:
		return false
	}
}

// fakeCluster is a clusterReader that counts its reads.
type fakeCluster struct{ reads atomic.Int32 }

func (f *fakeCluster) ReadCluster(context.Context) (slurm.Cluster, error) {
	n := f.reads.Add(1)
	return slurm.Cluster{Name: "lab", Running: int(n)}, nil
}

// nopJobs is a job store that keeps nothing.
type nopJobs struct{}

func (nopJobs) SaveJob(jobs.Job) error                   { return nil }
func (nopJobs) LoadJobs() ([]jobs.Job, error)            { return nil, nil }
func (nopJobs) SavePrivate(string, jobs.Private) error   { return nil }
func (nopJobs) LoadPrivate(string) (jobs.Private, error) { return jobs.Private{}, nil }

// TestClusterCardReads: the card is read at start, every interval, and at
// once when a labpool job's state changes (not when a job is saved with
// the same state); run returns when ctx ends.
func TestClusterCardReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCluster{}
		c := newClusterCard(f, 5*time.Second)
		store := c.watchJobs(nopJobs{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.Run(ctx) }()
		synctest.Wait()
		reads := func(want int32, when string) {
			t.Helper()
			synctest.Wait()
			if n := f.reads.Load(); n != want {
				t.Fatalf("%d reads %s, want %d", n, when, want)
			}
		}
		reads(1, "at start")
		time.Sleep(time.Second)
		reads(1, "before the interval, no job saved")
		store.SaveJob(jobs.Job{ID: "j1", State: jobs.Queued})
		reads(2, "after a job was queued")
		store.SaveJob(jobs.Job{ID: "j1", State: jobs.Queued, Error: "queued by the cluster's scheduler: Resources"})
		reads(2, "after a job was saved in the same state")
		store.SaveJob(jobs.Job{ID: "j1", State: jobs.Running})
		reads(3, "after the job started")
		time.Sleep(4 * time.Second)
		reads(4, "after the interval")
		store.SaveJob(jobs.Job{ID: "j1", State: jobs.Exited})
		reads(5, "after the job ended")
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

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
	if got := clusterProof(id.ID, noSessions, nil, noPolicy).Nodes(); got != nil {
		t.Errorf("nodes with no cluster = %v", got)
	}
	card := newClusterCard(nil, time.Second)
	if got := clusterProof(id.ID, noSessions, card, noPolicy).Nodes(); got != nil {
		t.Errorf("nodes before the first read = %v", got)
	}
	card.set(slurm.Cluster{Nodes: []slurm.Node{{Name: "node1", Addr: "10.0.1.1"}}})
	p := clusterProof(id.ID, noSessions, card, noPolicy)
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
	if got := clusterProof(id.ID, noSessions, card, enrolled).Enrolled("node1"); got != id.ID.String() {
		t.Errorf("enrolled for node1 = %q; want the device the policy names (case aside)", got)
	}
}
