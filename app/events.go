package app

import "sync"

// Emitter delivers events to a UI: the Wails runtime in the window, the SSE
// bridge in a browser, a recorder in tests. Emit must not block.
type Emitter interface {
	Emit(name string, data any)
}

// Hub fans events out to subscribers. A subscriber that falls behind loses
// events rather than slowing the publisher.
type Hub struct {
	mu      sync.Mutex // guards subs and watched
	subs    map[chan Event]struct{}
	watched chan struct{} // closed by the first subscriber; nil until asked
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: make(map[chan Event]struct{})} }

// Emit implements Emitter.
func (h *Hub) Emit(name string, data any) {
	ev := Event{Name: name, Data: data}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- ev:
		default: // slow subscriber: drop
		}
	}
}

// Subscribers returns how many subscribers the hub has now.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Watched returns a channel closed once the hub has a subscriber (at once
// when it has one now): a publisher that computes only for a UI waits on
// it instead of ticking while nobody watches.
func (h *Hub) Watched() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) > 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	if h.watched == nil {
		h.watched = make(chan struct{})
	}
	return h.watched
}

// Subscribe returns a channel of events and a func that ends the
// subscription. The channel is closed by cancel.
func (h *Hub) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 64)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	if h.watched != nil {
		close(h.watched)
		h.watched = nil
	}
	h.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, ch)
			h.mu.Unlock()
			close(ch)
		})
	}
}
