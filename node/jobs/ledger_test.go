package jobs

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/labpool/labpool/node/gpu"
)

func fakeGPUs(n int) []gpu.Stats {
	out := make([]gpu.Stats, n)
	for i := range out {
		out[i] = gpu.Stats{Index: i, UUID: fmt.Sprintf("GPU-%04d", i), MemTotalBytes: 80 << 30}
	}
	return out
}

func TestLedgerGrant(t *testing.T) {
	l := NewLedger()
	gpus := fakeGPUs(4)
	gpus[3].Processes = []gpu.Process{{PID: 42, MemBytes: 1 << 30}} // used outside labpool
	got, err := l.Grant("j1", "alice", Request{Count: 2}, gpus)
	if err != nil || len(got) != 2 || got[0] != "GPU-0000" || got[1] != "GPU-0001" {
		t.Fatalf("grant 2: %v %v", got, err)
	}
	_, err = l.Grant("j2", "bob", Request{Count: 2}, gpus)
	var be *BusyError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "job j1 of alice") || !strings.Contains(err.Error(), "outside labpool") {
		t.Fatalf("grant over capacity: %v", err)
	}
	if got, err := l.Grant("j3", "bob", Request{Indexes: []int{2}}, gpus); err != nil || got[0] != "GPU-0002" {
		t.Fatalf("grant by index: %v %v", got, err)
	}
	if _, err := l.Grant("j4", "bob", Request{Count: 1, MinMemBytes: 100 << 30}, fakeGPUs(1)); err == nil {
		t.Fatalf("a GPU below the memory asked was granted")
	}
	l.Release("j1")
	if got, err := l.Grant("j2", "bob", Request{Count: 2}, gpus); err != nil || len(got) != 2 {
		t.Fatalf("grant after release: %v %v", got, err)
	}
}

// TestLedgerConcurrent: 1000 concurrent requests never double-allocate.
func TestLedgerConcurrent(t *testing.T) {
	l := NewLedger()
	gpus := fakeGPUs(8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	holders := map[string]string{}
	double := 0
	for i := range 1000 {
		wg.Go(func() {
			job := fmt.Sprintf("j%d", i)
			got, err := l.Grant(job, "o", Request{Count: 1 + i%3}, gpus)
			if err != nil {
				return
			}
			mu.Lock()
			for _, u := range got {
				if _, taken := holders[u]; taken {
					double++
				}
				holders[u] = job
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if double > 0 {
		t.Fatalf("%d GPUs granted twice", double)
	}
	if len(holders) == 0 || len(holders) > 8 {
		t.Fatalf("%d GPUs granted", len(holders))
	}
}
