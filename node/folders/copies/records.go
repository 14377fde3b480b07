package copies

import (
	"context"
	"encoding/json"
	"slices"
)

// Record is a copy started through this machine, with its state as last
// seen. The list is kept in the Store, so that the window lists copies
// across restarts of either machine.
type Record struct {
	Node string   `json:"node"`
	ID   string   `json:"id"`
	Last Transfer `json:"last"`
}

// settingTransfers is the Store's key of the copies started here.
const settingTransfers = "transfers"

// loadLocked reads the list of started copies once; r.mu is held.
func (r *Receiver) loadLocked(ctx context.Context) {
	if r.loaded {
		return
	}
	v, ok, err := r.deps.Store.Setting(ctx, settingTransfers)
	if err != nil {
		r.deps.Log.Warn("read the list of copies", "err", err)
		return // read again next time
	}
	r.loaded = true
	if !ok {
		return
	}
	var list []Record
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		r.deps.Log.Warn("unreadable list of copies: starting a new one", "err", err)
		return
	}
	r.started = append(list, r.started...)
}

// save writes the list of started copies.
func (r *Receiver) save(ctx context.Context) {
	r.mu.Lock()
	b, err := json.Marshal(r.started)
	r.mu.Unlock()
	if err == nil {
		err = r.deps.Store.SetSetting(context.WithoutCancel(ctx), settingTransfers, string(b))
	}
	if err != nil {
		r.deps.Log.Warn("save the list of copies", "err", err)
	}
}

// remember records a copy started through this machine (the last
// Config.Kept).
func (r *Receiver) remember(ctx context.Context, t Transfer) {
	r.mu.Lock()
	r.loadLocked(ctx)
	r.started = append(r.started, Record{t.Node, t.ID, t})
	if n := len(r.started); n > r.cfg.Kept {
		r.started = r.started[n-r.cfg.Kept:]
	}
	r.mu.Unlock()
	r.save(ctx)
}

// Transfers lists the copies started through this machine, newest first:
// each as its receiver reports it while it runs, as it ended, or as last
// known when the receiver cannot be reached (it may have restarted:
// copying again resumes).
func (r *Receiver) Transfers(ctx context.Context) ([]Transfer, error) {
	r.mu.Lock()
	r.loadLocked(ctx)
	started := slices.Clone(r.started)
	r.mu.Unlock()
	out := []Transfer{}
	changed := map[string]Transfer{}
	for i := len(started) - 1; i >= 0; i-- {
		s := started[i]
		if s.Last.ended() {
			out = append(out, s.Last) // final: no need to ask
			continue
		}
		t, err := r.Transfer(ctx, s.Node, s.ID, 0)
		switch {
		case err == nil:
			if t.State != s.Last.State {
				changed[s.ID] = t
			}
		case s.Last.ID != "":
			t = s.Last
			t.State, t.Error = "unknown", "the receiving machine does not answer about this copy: "+err.Error()
		default:
			t = Transfer{ID: s.ID, Node: s.Node, State: "unknown", Error: err.Error()}
		}
		out = append(out, t)
	}
	if len(changed) > 0 {
		r.mu.Lock()
		for i := range r.started {
			if t, ok := changed[r.started[i].ID]; ok {
				r.started[i].Last = t
			}
		}
		r.mu.Unlock()
		r.save(ctx)
	}
	return out, nil
}
