package store

import "sync"

// notifier wakes subscribers after a commit that changed replicated state.
type notifier struct {
	mu   sync.Mutex             // guards subs
	subs map[chan struct{}]bool // value: local changes only
}

// Subscribe returns a channel that receives a value after every commit that
// added or replaced records (of any origin) or changed the member set, and a
// cancel func that stops it (safe to call more than once). Signals coalesce:
// the channel holds at most one, and a slow reader misses none of the state,
// only the count, so it re-reads (Since its last seq, Members) on each.
// Only writes through this DB are seen, not those of another process.
// The channel is never closed.
func (db *DB) Subscribe() (<-chan struct{}, func()) { return db.subscribe(false) }

// SubscribeLocal is Subscribe for the changes this process made itself:
// records it appended (its own origin's), and the member set and pool
// records. Records Put from other origins do not signal it, so a stream of
// our own records is not woken by every record the followers store.
func (db *DB) SubscribeLocal() (<-chan struct{}, func()) { return db.subscribe(true) }

func (db *DB) subscribe(local bool) (<-chan struct{}, func()) { return db.notify.subscribe(local) }

// subscribeAll subscribes to every broadcast of n.
func (n *notifier) subscribeAll() (<-chan struct{}, func()) { return n.subscribe(false) }

func (n *notifier) subscribe(local bool) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.subs == nil {
		n.subs = make(map[chan struct{}]bool)
	}
	n.subs[ch] = local
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

// broadcast signals every subscriber without blocking; those of
// SubscribeLocal only when the change is local.
func (n *notifier) broadcast(local bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch, localOnly := range n.subs {
		if localOnly && !local {
			continue
		}
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}
