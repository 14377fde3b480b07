package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm"
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
	c := newClusterCard(nil, time.Second, time.Second)
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

// fakeCluster is a clusterSource that counts its reads and sends the
// events the test gives it.
type fakeCluster struct {
	reads  atomic.Int32
	events chan jobs.TaskEvent
}

func (f *fakeCluster) ReadCluster(context.Context) (slurm.Cluster, error) {
	n := f.reads.Add(1)
	return slurm.Cluster{Name: "lab", Running: int(n)}, nil
}

func (f *fakeCluster) Events(ctx context.Context) (<-chan jobs.TaskEvent, <-chan error) {
	out, errc := make(chan jobs.TaskEvent), make(chan error)
	go func() {
		defer close(errc)
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-f.events:
				out <- ev
			}
		}
	}()
	return out, errc
}

// TestClusterCardReads: the card is read at start, every interval, and at
// once when one of labpool's tasks changes; run returns with its
// goroutines gone.
func TestClusterCardReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCluster{events: make(chan jobs.TaskEvent)}
		c := newClusterCard(f, 5*time.Second, time.Second)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- c.run(ctx) }()
		synctest.Wait()
		if n := f.reads.Load(); n != 1 {
			t.Fatalf("%d reads at start, want 1", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := f.reads.Load(); n != 1 {
			t.Fatalf("%d reads before the interval with no task changed, want 1", n)
		}
		f.events <- jobs.TaskEvent{Handle: "42", Action: "state"}
		synctest.Wait()
		if n := f.reads.Load(); n != 2 || c.get().Running != 2 {
			t.Fatalf("%d reads after a task changed (card %+v), want 2", n, c.get())
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if n := f.reads.Load(); n != 3 {
			t.Fatalf("%d reads after the interval, want 3", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
