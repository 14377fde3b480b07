package membership

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/labpool/labpool/sync/peer"
)

// TestEvictionQueueKeepsAll: however many removals are pending while one
// eviction runs, each removed device is evicted once, none dropped.
func TestEvictionQueueKeepsAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q evictionQueue
		ctx, cancel := context.WithCancel(context.Background())
		block := make(chan struct{})
		evicted := map[peer.ID]int{}
		done := make(chan struct{})
		go func() {
			q.run(ctx, func(_ context.Context, id peer.ID) {
				if len(evicted) == 0 {
					<-block // the first eviction is slow: the others pile up
				}
				evicted[id]++
			})
			close(done)
		}()
		ids := make([]peer.ID, 100)
		for i := range ids {
			ids[i] = peer.NewID(fmt.Appendf(nil, "device %d", i))
			q.add(ids[i])
		}
		q.add(ids[5]) // removed twice before its eviction ran: evicted once
		close(block)
		synctest.Wait()
		cancel()
		<-done
		for _, id := range ids {
			if evicted[id] != 1 {
				t.Errorf("device %s evicted %d times, want 1", id.Short(), evicted[id])
			}
		}
		if len(evicted) != len(ids) {
			t.Errorf("%d devices evicted, want %d", len(evicted), len(ids))
		}
	})
}
