package slurm

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// bigCluster is a cluster of nodes nodes and a queue of QueueCap jobs
// whose names are name bytes long.
func bigCluster(nodes, name int) Cluster {
	c := Cluster{Name: "big", Running: 150, Pending: 4000}
	for i := range nodes {
		c.Nodes = append(c.Nodes, Node{Name: fmt.Sprintf("gpu%04d", i), State: "mixed", Partitions: []string{"gpu"},
			CPUs: 128, MemoryMB: 1 << 20, GPUs: []GPUCount{{Type: "h100", Total: 8, Alloc: 3}}})
	}
	for i := range QueueCap {
		c.Queue = append(c.Queue, QueueJob{ID: fmt.Sprint(1000 + i), Name: strings.Repeat("n", name), User: "lab",
			State: "PENDING", Reason: "Resources", Partition: "gpu", GPUs: 8, LabpoolJob: fmt.Sprintf("job%d", i)})
	}
	return c
}

// TestClusterCardChanges: a reading that differs only in its time does
// not wake the node record's writer; any other change does.
func TestClusterCardChanges(t *testing.T) {
	c := NewCard(nil, time.Second)
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
	if !woken(c) || c.Get().Queue[3].State != "RUNNING" {
		t.Error("a job's new state did not wake the writer")
	}
}

func woken(c *Card) bool {
	select {
	case <-c.changed:
		return true
	default:
		return false
	}
}

// fakeCluster is a ClusterReader that counts its reads.
type fakeCluster struct{ reads atomic.Int32 }

func (f *fakeCluster) ReadCluster(context.Context) (Cluster, error) {
	n := f.reads.Add(1)
	return Cluster{Name: "lab", Running: int(n)}, nil
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
		c := NewCard(f, 5*time.Second)
		store := c.WatchJobs(nopJobs{})
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
