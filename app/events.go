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
	mu   sync.Mutex // guards subs
	subs map[chan Event]struct{}
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

// Subscribe returns a channel of events and a func that ends the
// subscription. The channel is closed by cancel.
func (h *Hub) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 64)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
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
