package nodestore

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/internal/replicatest"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/jobs"
)

func TestJobsRoundTrip(t *testing.T) {
	db := replicatest.Open(t)
	s := NewJobs(db, "self")
	created := time.Now().UTC().Round(time.Millisecond)
	want := []jobs.Job{{ID: "j1", Name: "train", Node: "self", Owner: "alice", Created: created},
		{ID: "j2", Name: "eval", Node: "self", Owner: "bob", Created: created.Add(time.Second)}}
	for _, j := range want {
		if err := s.SaveJob(j); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Append(context.Background(), "self", app.KindJob, "bad", created, []byte(`{"name":"no id"}`)); err != nil {
		t.Fatal(err)
	}
	got, err := NewJobs(db, "self").LoadJobs()
	if err != nil || len(got) != 2 || got[0].ID != "j1" || got[1].ID != "j2" || got[1].Owner != "bob" || !got[0].Created.Equal(created) {
		t.Errorf("LoadJobs() = %+v, %v; want j1, j2 (a record without ID skipped)", got, err)
	}
	if other, err := NewJobs(db, "other").LoadJobs(); err != nil || len(other) != 0 {
		t.Errorf("another origin's jobs = %+v, %v; want none", other, err)
	}
}

// TestPrivateStaysLocal: a job's environment and command line are kept in
// the local settings, never in a replicated record; an environment kept
// by an older labpool (a JSON list) still reads.
func TestPrivateStaysLocal(t *testing.T) {
	db := replicatest.Open(t)
	s := NewJobs(db, "self")
	p := jobs.Private{Env: []string{"TOKEN=secret", "A=b"}, Cmd: []string{"train", "--key", "secret2"}}
	if err := s.SavePrivate("j1", p); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadPrivate("j1"); err != nil || !reflect.DeepEqual(got, p) {
		t.Errorf("LoadPrivate = %v, %v; want %v", got, err, p)
	}
	recs, err := db.Range(context.Background(), "self", app.KindJob, time.Time{}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if strings.Contains(string(r.Data), "secret") {
			t.Errorf("a replicated record holds the environment: %s", r.Data)
		}
	}
	if err := s.SavePrivate("j1", jobs.Private{}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadPrivate("j1"); err != nil || got.Env != nil || got.Cmd != nil {
		t.Errorf("LoadPrivate after dropping = %v, %v; want nothing", got, err)
	}
	if got, err := s.LoadPrivate("never"); err != nil || got.Env != nil {
		t.Errorf("LoadPrivate of an unknown job = %v, %v; want nothing", got, err)
	}
	if err := db.SetSetting(context.Background(), settingJobEnv+"old", `["A=1"]`); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadPrivate("old"); err != nil || !reflect.DeepEqual(got.Env, []string{"A=1"}) {
		t.Errorf("an older environment = %v, %v", got, err)
	}
}

func TestHealthRoundTrip(t *testing.T) {
	db := replicatest.Open(t)
	s := NewHealth(db)
	if st, err := s.LoadHealth(); err != nil || len(st.Quarantined) != 0 {
		t.Errorf("LoadHealth of a new machine = %+v, %v; want nothing", st, err)
	}
	want := jobs.HealthState{Quarantined: map[string]jobs.Quarantine{
		"GPU-1": {UUID: "GPU-1", Index: 1, Reason: "XID 79 (GPU has fallen off the bus)", Since: time.Now().UTC().Round(time.Millisecond)}}}
	if err := s.SaveHealth(want); err != nil {
		t.Fatal(err)
	}
	if got, err := NewHealth(db).LoadHealth(); err != nil || !reflect.DeepEqual(got.Quarantined, want.Quarantined) {
		t.Errorf("LoadHealth = %+v, %v; want %+v", got, err, want)
	}
	if err := db.SetSetting(context.Background(), settingGPUHealth, "{"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadHealth(); err == nil {
		t.Error("LoadHealth of an unreadable setting: no error")
	}
}

func TestSharesRoundTrip(t *testing.T) {
	db := replicatest.Open(t)
	s := NewShares(db)
	if got, err := s.LoadShares(); err != nil || got != nil {
		t.Errorf("LoadShares of a new machine = %+v, %v; want nothing", got, err)
	}
	want := []folders.Share{{Name: "data", Path: "/srv/data", ReadWrite: true, Members: []string{"alice"}}}
	if err := s.SaveShares(want); err != nil {
		t.Fatal(err)
	}
	if got, err := NewShares(db).LoadShares(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("LoadShares = %+v, %v; want %+v", got, err, want)
	}
}

// applier is the job manager's policy: it applies what Check accepts.
type applier struct{ p jobs.Policy }

func (a *applier) Policy() jobs.Policy { return a.p }
func (a *applier) SetPolicy(p jobs.Policy) error {
	if err := p.Check(); err != nil {
		return err
	}
	a.p = p
	return nil
}

func TestPolicy(t *testing.T) {
	db := replicatest.Open(t)
	ctx := context.Background()
	j := &applier{jobs.DefaultPolicy()}
	p := NewPolicy(db, j)
	if got, err := p.Load(ctx); err != nil || !reflect.DeepEqual(got, jobs.DefaultPolicy()) {
		t.Errorf("Load of a new machine = %+v, %v; want the defaults", got, err)
	}
	n := 2
	got, err := p.SetPolicy(ctx, app.PolicyUpdate{MaxGPUsPerMember: &n})
	if err != nil || got.MaxGPUsPerMember != 2 || j.p.MaxGPUsPerMember != 2 {
		t.Fatalf("SetPolicy = %+v, %v; applied %+v", got, err, j.p)
	}
	if cur, _ := p.Policy(ctx); cur.MaxGPUsPerMember != 2 {
		t.Errorf("Policy() = %+v", cur)
	}
	if stored, err := NewPolicy(db, &applier{}).Load(ctx); err != nil || !reflect.DeepEqual(stored, got) {
		t.Errorf("Load after a restart = %+v, %v; want %+v", stored, err, got)
	}
	bad := "everyone"
	if _, err := p.SetPolicy(ctx, app.PolicyUpdate{Launch: &bad}); !errors.Is(err, app.ErrInvalid) {
		t.Errorf("SetPolicy of an unknown launch rule = %v; want ErrInvalid", err)
	}
	if stored, _ := NewPolicy(db, &applier{}).Load(ctx); !reflect.DeepEqual(stored, got) || !reflect.DeepEqual(j.p, got) {
		t.Errorf("a refused policy changed it: stored %+v, applied %+v; want %+v", stored, j.p, got)
	}
	if err := db.SetSetting(ctx, settingPolicy, "{"); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Load(ctx); err == nil || !reflect.DeepEqual(got, jobs.DefaultPolicy()) {
		t.Errorf("Load of an unreadable policy = %+v, %v; want the defaults and an error", got, err)
	}
}
