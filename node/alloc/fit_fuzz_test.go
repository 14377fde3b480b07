package alloc

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzFit feeds Fit grants as a node's published record would carry them
// (JSON from the network) and checks what it grants never breaks the
// rule: chosen units are the ones asked for, none is down, none is held
// whole by another holder, and the shares of a unit never pass 1.
func FuzzFit(f *testing.F) {
	f.Add([]byte(`[{"holder":{"kind":"job","id":"j1"},"units":["a-gpu0"]}]`), 2, 0.0, uint64(0), int64(0))
	f.Add([]byte(`[{"holder":{"kind":"job","id":"s"},"units":["a-gpu1"],"share":0.75,"mem_bytes":1}]`), 1, 0.25, uint64(1<<30), int64(3600))
	f.Add([]byte(`[{"holder":{"kind":"reservation","id":"r","member":"m"},"units":["a-gpu0","a-gpu1"],"from":"2026-11-26T15:00:00Z","until":"2026-11-26T16:00:00Z"}]`), 1, 0.0, uint64(0), int64(7200))
	f.Add([]byte(`[{"holder":{"kind":"job","id":"j"},"units":["a-gpu0"],"share":-3}]`), 3, 1.5, uint64(1<<62), int64(-5))
	units := append(gpus("a", 4, 80<<30), Unit{ID: "hpc", Kind: Cluster, Node: "c", Count: 8})
	units[3].Down = "quarantined"
	f.Fuzz(func(t *testing.T, record []byte, count int, share float64, mem uint64, secs int64) {
		var grants []Grant
		if json.Unmarshal(record, &grants) != nil {
			return
		}
		r := Request{Holder: Holder{Kind: Job, ID: "new", Member: "m2"}, Count: count % 16, Share: share, MemBytes: mem}
		if secs > 0 {
			r.Until = t0.Add(time.Duration(secs%1e6) * time.Second)
		}
		d := Fit(units, grants, r, t0)
		if !d.Fits {
			return
		}
		if d.GPUs == 0 && len(d.Units) != d.Want {
			t.Fatalf("%d units for %d asked", len(d.Units), d.Want)
		}
		for _, u := range d.Units {
			if u.Down != "" {
				t.Fatalf("granted %s, down", u.ID)
			}
			used := shareOf(r)
			for _, g := range grants {
				if !g.overlaps(t0, t0.Add(time.Nanosecond)) || g.Holder.Kind == Reservation || g.GPUs > 0 {
					continue
				}
				for _, id := range g.Units {
					if id == u.ID {
						used += g.share()
					}
				}
			}
			if u.Kind != Cluster && used > 1+1e-9 {
				t.Fatalf("unit %s granted past a whole: %v", u.ID, used)
			}
		}
	})
}
