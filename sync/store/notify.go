package store

import "sync"

// notifier wakes subscribers after a commit that changed replicated state.
type notifier struct {
	mu   sync.Mutex // guards subs
	subs map[chan struct{}]struct{}
}

// Subscribe returns a channel that receives a value after every commit that
// added or replaced records (of any origin) or changed the member set, and a
// cancel func that stops it (safe to call more than once). Signals coalesce:
// the channel holds at most one, and a slow reader misses none of the state,
// only the count, so it re-reads (Since its last seq, Members) on each.
// Only writes through this DB are seen, not those of another process.
// The channel is never closed.
func (db *DB) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n := &db.notify
	n.mu.Lock()
	if n.subs == nil {
		n.subs = make(map[chan struct{}]struct{})
	}
	n.subs[ch] = struct{}{}
	n.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			n.mu.Lock()
			delete(n.subs, ch)
			n.mu.Unlock()
		})
	}
}

// broadcast signals every subscriber without blocking.
func (n *notifier) broadcast() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}
