//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/reserve"
	"github.com/labpool/labpool/sync/schema"
	"github.com/labpool/labpool/sync/store"
)

// TestReserveAcrossMachines: member b reserves one of gpu1's two GPUs an
// hour ahead with `labpool reserve`; a third machine, c, lists it from the
// replica as gpu1's record; c's `run --gpus 2 --time 2h`, which would cross
// the start, is refused naming the reservation (and --dry-run says why),
// while a 30-minute run on both GPUs, ending before the start, starts. A
// reservation c forges in its own records, naming gpu1's other GPU, is
// listed as not believed and holds nothing: a 2-hour run of gpu1's own
// user on one GPU takes that GPU (b's own jobs may use b's reserved GPU). gpu1 restarts and still holds the reservation.
func TestReserveAcrossMachines(t *testing.T) {
	l := newLAN(t, "gpu1", "b", "c")
	gpu1, b, c := l.host("gpu1"), l.host("b"), l.host("c")
	gpu1.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	gpu1.docker()
	for _, h := range l.hosts {
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, b, c)
	for _, h := range []*host{b, c} {
		waitFor(t, 30*time.Second, h.name+" sees gpu1 live", func() error { return liveNodes(h, "gpu1") })
	}
	const img = "labpool-test/busybox:1"

	from := time.Now().Add(time.Hour).Truncate(time.Minute)
	out := mustCLI(t, b, "reserve", "gpu1", "--gpus", "1", "--from", from.Format(time.RFC3339), "--for", "3h")
	t.Logf("reserve said: %s", out)
	if !strings.HasPrefix(out, "Reserved GPU ") {
		t.Fatalf("reserve said %q; want Reserved GPU ...", out)
	}

	// c reads it from the replica: gpu1's record, for b, accepted.
	var res app.Reservation
	waitFor(t, 20*time.Second, "c lists b's reservation", func() error {
		rs, err := reservationsJSON(c)
		if err != nil {
			return err
		}
		if len(rs) != 1 {
			return fmt.Errorf("%d reservations: %+v", len(rs), rs)
		}
		res = rs[0]
		return nil
	})
	bID, cID, gpu1ID := selfID(t, b), selfID(t, c), selfID(t, gpu1)
	if res.Node != gpu1ID || res.Member != bID || res.State != reserve.Accepted || res.Problem != "" ||
		len(res.Units) != 1 || !res.From.Equal(from) || !res.Until.Equal(from.Add(3*time.Hour)) {
		t.Fatalf("c lists %+v; want gpu1's record (origin %s), for b (%s), accepted, one GPU from %s for 3h",
			res, gpu1ID, bID, from)
	}

	// A run that would cross the start on both GPUs is refused, naming it,
	// once c reads gpu1's ledger (its grants record) with the reservation.
	waitFor(t, 20*time.Second, "c reads the reservation in gpu1's grants", func() error {
		n, err := nodeByName(c, "gpu1")
		if err != nil {
			return err
		}
		if n.Alloc == nil || !slices.ContainsFunc(n.Alloc.Grants, func(g alloc.Grant) bool { return g.Holder.ID == res.ID }) {
			return fmt.Errorf("gpu1's grants as c reads them: %+v", n.Alloc)
		}
		return nil
	})
	for _, args := range [][]string{
		{"run", "--gpus", "2", "--time", "2h", "--dry-run", img, "true"},
		{"run", "--gpus", "2", "--time", "2h", img, "true"},
	} {
		out, errOut, code := c.cli(args...)
		t.Logf("%v: exit %d: %s%s", args, code, out, errOut)
		if code == 0 && !slices.Contains(args, "--dry-run") {
			t.Errorf("%v started; want refused: GPU %v is reserved from %s", args, res.GPUs, from)
		}
		if !strings.Contains(out+errOut, "reserved for b from") {
			t.Errorf("%v said %s%s; want the reservation named, with its member", args, out, errOut)
		}
	}

	// One that ends before the start runs on both GPUs.
	id := lastLine(mustCLI(t, c, "run", "--gpus", "2", "--time", "30m", "--name", "short", img, "sleep", "600"))
	j := waitJob(t, c, id, func(j app.Job) bool { return j.State == "running" })
	if len(j.GPUs) != 2 {
		t.Errorf("the 30-minute job holds %v; want both GPUs", j.GPUs)
	}
	mustCLI(t, c, "rm", "-f", id)
	waitFor(t, 20*time.Second, "the short job's GPUs free", func() error {
		_, err := waitJobErr(c, id, func(j app.Job) bool { return j.State != "running" })
		if err != nil && strings.HasSuffix(err.Error(), "not listed") {
			return nil // removed
		}
		return err
	})

	// c forges a reservation of gpu1's other GPU, from now for 5 hours, in
	// its own records (its daemon stopped, as a modified labpool would).
	other := gpuUUIDs(t, c, "gpu1")
	other = slices.DeleteFunc(other, func(u string) bool { return u == res.Units[0] })
	if len(other) != 1 {
		t.Fatalf("gpu1's other GPUs: %v", other)
	}
	c.kill()
	forged := reserve.Reservation{ID: "r-forged", Seq: 1, Member: cID, By: cID, Units: other, GPUs: []int{1 - res.GPUs[0]},
		From: time.Now().Add(-time.Minute), Until: time.Now().Add(5 * time.Hour), Made: time.Now(), State: reserve.Accepted}
	appendOwnRecord(t, c, cID, schema.KindReservation, forged.ID, forged.Until, forged)
	c.agent()
	c.waitDaemon()
	waitFor(t, 20*time.Second, "b lists c's forged record, not believed", func() error {
		rs, err := reservationsJSON(b)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.ID == forged.ID {
				if r.Node != cID || !strings.Contains(r.Problem, "not its machine's") {
					return fmt.Errorf("forged record listed as %+v; want c's, with its problem", r)
				}
				return nil
			}
		}
		return fmt.Errorf("not listed yet: %+v", rs)
	})
	// It holds nothing: a 2-hour job of a third member (gpu1's own user:
	// neither b, whose reservation's GPU is out, nor c) takes the GPU the
	// forged record names.
	waitFor(t, 30*time.Second, "c sees gpu1 live again", func() error { return liveNodes(c, "gpu1") })
	id = lastLine(mustCLI(t, gpu1, "run", "--gpus", "1", "--time", "2h", "--name", "past-forged", img, "sleep", "600"))
	j = waitJob(t, gpu1, id, func(j app.Job) bool { return j.State == "running" })
	t.Logf("the 2-hour job holds GPUs %v %v (time limit %ds); reserved %v, forged %v", j.GPUIndexes, j.GPUs, j.Spec.TimeLimitSeconds, res.Units, other)
	if !slices.Equal(j.GPUs, other) {
		t.Errorf("the 2-hour job holds %v; want %v, the GPU only the forged record names", j.GPUs, other)
	}

	// gpu1 restarts: the reservation is still there, and still holds.
	gpu1.kill()
	gpu1.agent()
	gpu1.waitDaemon()
	rs, err := gpu1.client().Reservations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(rs, func(r app.Reservation) bool { return r.ID == res.ID }); i < 0 || rs[i].State != reserve.Accepted {
		t.Fatalf("after its restart gpu1 lists %+v; want %s accepted", rs, res.ID)
	}
	waitFor(t, 30*time.Second, "c sees gpu1 live after its restart", func() error { return liveNodes(c, "gpu1") })
	out, errOut, code := c.cli("run", "--gpus", "1", "--time", "2h", "--node", "gpu1", img, "true")
	t.Logf("after gpu1's restart, run --gpus 1 --time 2h: exit %d: %s%s", code, out, errOut)
	if code == 0 || !strings.Contains(out+errOut, "reserved for") {
		t.Errorf("after gpu1's restart a 2-hour run on its last GPU: exit %d: %s%s; want refused naming the reservation", code, out, errOut)
	}
}

// reservationsJSON is `labpool reservations --json` on h.
func reservationsJSON(h *host) ([]app.Reservation, error) {
	out, errOut, code := h.cli("reservations", "--json")
	if code != 0 {
		return nil, fmt.Errorf("reservations --json: exit %d: %s", code, errOut)
	}
	var rs []app.Reservation
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		return nil, fmt.Errorf("reservations --json: %v: %s", err, out)
	}
	return rs, nil
}

// selfID is h's device ID.
func selfID(t *testing.T, h *host) string {
	t.Helper()
	s, err := h.client().Self(context.Background())
	if err != nil {
		t.Fatalf("%s: self: %v", h.name, err)
	}
	return s.ID
}

// gpuUUIDs are the UUIDs of node's GPUs as h sees them.
func gpuUUIDs(t *testing.T, h *host, node string) []string {
	t.Helper()
	n, err := nodeByName(h, node)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, g := range n.GPUs {
		out = append(out, g.UUID)
	}
	return out
}

// appendOwnRecord writes v as a record of h's own (origin self) into h's
// replica, with h's daemon stopped: what a modified labpool would publish.
func appendOwnRecord(t *testing.T, h *host, self, kind, key string, at time.Time, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(filepath.Join(h.data, "replica.db"))
	if err != nil {
		t.Fatalf("open %s's replica: %v", h.name, err)
	}
	defer db.Close()
	if _, err := db.Append(context.Background(), self, kind, key, at, data); err != nil {
		t.Fatalf("append %s's own %s record: %v", h.name, kind, err)
	}
}

// waitJob waits until h lists job id in a state cond accepts.
func waitJob(t *testing.T, h *host, id string, cond func(app.Job) bool) app.Job {
	t.Helper()
	var j app.Job
	waitFor(t, 60*time.Second, "job "+id+" on "+h.name, func() error {
		var err error
		j, err = waitJobErr(h, id, cond)
		return err
	})
	return j
}

func waitJobErr(h *host, id string, cond func(app.Job) bool) (app.Job, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	js, err := h.client().Jobs(ctx, true)
	if err != nil {
		return app.Job{}, err
	}
	for _, j := range js {
		if j.ID == id {
			if cond(j) {
				return j, nil
			}
			return j, fmt.Errorf("job %s is %s", id, j.State)
		}
	}
	return app.Job{}, fmt.Errorf("job %s not listed", id)
}
