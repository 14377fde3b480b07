package app

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// drain returns the events waiting in ch, without blocking.
func drain(ch <-chan Event) []Event {
	var out []Event
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return out
			}
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestHubFanOut(t *testing.T) {
	h := NewHub()
	var subs []<-chan Event
	for range 3 {
		ch, cancel := h.Subscribe()
		defer cancel()
		subs = append(subs, ch)
	}
	want := []Event{{EventNodes, []Node{}}, {EventSample, Sample{Node: "a"}}, {"other", 3}}
	for _, ev := range want {
		h.Emit(ev.Name, ev.Data)
	}
	for i, ch := range subs {
		if diff := cmp.Diff(want, drain(ch)); diff != "" {
			t.Errorf("subscriber %d (-want +got):\n%s", i, diff)
		}
	}
}

func TestHubSlowSubscriberDrops(t *testing.T) {
	h := NewHub()
	slow, cancelSlow := h.Subscribe() // never read while emitting
	defer cancelSlow()
	fast, cancelFast := h.Subscribe()
	defer cancelFast()

	const n = 200
	var got []int
	ack := make(chan struct{})
	go func() {
		for ev := range fast {
			got = append(got, ev.Data.(int))
			ack <- struct{}{}
		}
	}()
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		for i := range n {
			h.Emit("tick", i)
			<-ack // the fast subscriber keeps up
		}
	}()
	select {
	case <-emitted:
	case <-time.After(10 * time.Second):
		t.Fatal("Emit blocked on a subscriber that does not read")
	}
	if len(got) != n {
		t.Errorf("fast subscriber got %d events, want all %d", len(got), n)
	}
	held := drain(slow)
	if len(held) == 0 || len(held) >= n {
		t.Fatalf("slow subscriber holds %d events, want its buffer's worth of %d", len(held), n)
	}
	for i, ev := range held {
		if ev.Data.(int) != i {
			t.Fatalf("slow subscriber's event %d is %v: it should keep the oldest and drop the rest", i, ev.Data)
		}
	}
}

func TestHubCancel(t *testing.T) {
	h := NewHub()
	ch, cancel := h.Subscribe()
	other, cancelOther := h.Subscribe()
	defer cancelOther()
	h.Emit("before", 1)
	cancel()
	cancel() // idempotent
	if evs := drain(ch); len(evs) != 1 || evs[0].Name != "before" {
		t.Errorf("events before cancel = %v, want the one emitted", evs)
	}
	if _, ok := <-ch; ok {
		t.Error("channel still open after cancel")
	}
	h.Emit("after", 2) // must not send on the closed channel
	if evs := drain(other); len(evs) != 2 {
		t.Errorf("the other subscriber got %v, want both events", evs)
	}
}

func TestHubConcurrentCancel(t *testing.T) {
	h := NewHub()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				ch, cancel := h.Subscribe()
				h.Emit("x", nil)
				go cancel()
				cancel()
				for range ch {
				}
			}
		})
	}
	for range 200 {
		h.Emit("y", nil)
	}
	wg.Wait()
}

// TestHubWatched: Watched is closed by the first subscriber, at once while
// one is there, and open again once all left.
func TestHubWatched(t *testing.T) {
	h := NewHub()
	w := h.Watched()
	select {
	case <-w:
		t.Fatal("watched without a subscriber")
	default:
	}
	_, cancel := h.Subscribe()
	select {
	case <-w:
	default:
		t.Fatal("the first subscriber did not close Watched")
	}
	select {
	case <-h.Watched():
	default:
		t.Fatal("Watched is open while a subscriber is there")
	}
	cancel()
	select {
	case <-h.Watched():
		t.Fatal("watched after the last subscriber left")
	default:
	}
}
