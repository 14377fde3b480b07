package app

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// TestLendNotifier: the user is told once when their job on a lent
// machine is warned and once when it is paused; others' jobs, and what
// was there when the window opened, are not told.
func TestLendNotifier(t *testing.T) {
	fn := &fakeNotifier{}
	ln := NewLendNotifier(fn, selfID, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	job := func(id, owner string, note *jobs.LendNote) Job {
		return Job{Job: jobs.Job{ID: id, Name: "train-" + id, Owner: owner, State: jobs.Running, Lend: note}, NodeName: "ws-a100"}
	}
	at := time.Date(2026, 3, 4, 14, 32, 0, 0, time.Local)
	why := "owner present: I'm using it"
	warned := &jobs.LendNote{At: at, Yield: "pause", Why: why}
	paused := &jobs.LendNote{At: at, Paused: true, Yield: "pause", Why: why}
	ln.Update(ctx, []Job{job("old", selfID, warned)}) // there when the window opened
	ln.Update(ctx, []Job{job("old", selfID, warned), job("a", selfID, nil), job("b", alphaID, warned)})
	ln.Update(ctx, []Job{job("old", selfID, warned), job("a", selfID, warned), job("b", alphaID, warned)})
	ln.Update(ctx, []Job{job("old", selfID, warned), job("a", selfID, warned)})
	ln.Update(ctx, []Job{job("old", selfID, warned), job("a", selfID, paused)})
	got := fn.all()
	if len(got) != 2 {
		t.Fatalf("notifications %+v; want 2 (a warned, a paused)", got)
	}
	if got[0].Summary != "train-a on ws-a100: the machine's owner takes it back" || !strings.HasPrefix(got[0].Body, "pauses at 14:32") {
		t.Errorf("the warning: %+v", got[0])
	}
	if !strings.HasPrefix(got[1].Body, "paused since 14:32") {
		t.Errorf("the pause: %+v", got[1])
	}
}
