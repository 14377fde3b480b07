package alerting

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/internal/replicatest"
	"github.com/labpool/labpool/internal/leaktest"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func id(name string) peer.ID { return peer.NewID([]byte(name)) }

// fakePool is a pool whose members have the roles of roles.
type fakePool struct {
	roles   map[peer.ID]pool.Role
	members []pool.MemberState
}

func (p fakePool) Role(id peer.ID) (pool.Role, bool) { r, ok := p.roles[id]; return r, ok }
func (p fakePool) Snapshot() (pool.State, bool) {
	return pool.State{Members: p.members}, p.members != nil
}

func open(t *testing.T, db *store.DB, self peer.ID, p Pool) *Alerting {
	t.Helper()
	in := NewInputs(self.String(), db, func() map[string]string { return nil }, nil, p, nil)
	return Open(context.Background(), Config{Self: self, Name: "test"}, db, p, in, discard)
}

// rulesWithTemp returns the default rules with the GPU temperature
// threshold at c.
func rulesWithTemp(c float64) []alerts.Rule {
	rules := alerts.DefaultRules()
	for i := range rules {
		if rules[i].ID == alerts.RuleGPUTemp {
			rules[i].Threshold = c
		}
	}
	return rules
}

func TestStoreRoundTrip(t *testing.T) {
	db := replicatest.Open(t)
	self := id("self")
	st := NewStore(db, self.String())
	rules := rulesWithTemp(77)
	at := time.Date(2026, 11, 1, 12, 0, 0, 123456789, time.UTC)
	if err := st.SaveRules(rules, at); err != nil {
		t.Fatal(err)
	}
	gpu0 := 0
	mute := alerts.Mute{Node: self.String(), Rule: alerts.RuleGPUTemp, GPU: &gpu0, Until: time.Now().Add(time.Hour).UTC().Round(time.Millisecond),
		By: id("alice").String()}
	if err := st.SaveMutes([]alerts.Mute{mute}); err != nil {
		t.Fatal(err)
	}
	if err := st.SavePins([]string{alerts.RuleGPUHealth}); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveWebhook(alerts.WebhookSetting{URL: "https://chat.example.org/hook", At: at}); err != nil {
		t.Fatal(err)
	}

	a := open(t, db, self, fakePool{})
	m := a.Machine()
	if got := m.Eval.Rules(); !slices.Equal(got, rules) {
		t.Errorf("rules = %+v, want %+v", got, rules)
	}
	if got := m.RulesAt(); !got.Equal(at) {
		t.Errorf("rules changed at %v, want %v", got, at)
	}
	if got := m.Eval.Mutes(time.Now()); len(got) != 1 || got[0].Rule != mute.Rule || !got[0].Until.Equal(mute.Until) || got[0].By != mute.By {
		t.Errorf("mutes = %+v, want [%+v]", got, mute)
	}
	if got := m.State().Pinned; !slices.Equal(got, []string{alerts.RuleGPUHealth}) {
		t.Errorf("pins = %v, want [%s]", got, alerts.RuleGPUHealth)
	}
	if got := m.WebhookSetting(); got.URL != "https://chat.example.org/hook" || !got.At.Equal(at) {
		t.Errorf("webhook = %+v", got)
	}
}

func TestStoreDefaultsWhenEmpty(t *testing.T) {
	db := replicatest.Open(t)
	m := open(t, db, id("self"), fakePool{}).Machine()
	if got := m.Eval.Rules(); !slices.Equal(got, alerts.DefaultRules()) {
		t.Errorf("rules = %+v, want the defaults", got)
	}
	if !m.RulesAt().IsZero() || m.Webhook.URL() != "" || len(m.Eval.Active()) != 0 {
		t.Errorf("a new machine: rules at %v, webhook %q, %d alerts", m.RulesAt(), m.Webhook.URL(), len(m.Eval.Active()))
	}
}

// TestRestoreFiringAfterRestart: the alerts a machine left firing are
// firing again after a restart; those that cleared are not.
func TestRestoreFiringAfterRestart(t *testing.T) {
	db := replicatest.Open(t)
	self := id("self")
	st := NewStore(db, self.String())
	gpu0, gpu1 := 0, 1
	fired := time.Now().Add(-10 * time.Minute).UTC().Round(time.Millisecond)
	firing := alerts.Alert{ID: "a1", Node: self.String(), Rule: alerts.RuleGPUTemp, Severity: alerts.Warning, GPU: &gpu0, Message: "hot", Value: 91, FiredAt: fired}
	cleared := alerts.Alert{ID: "a2", Node: self.String(), Rule: alerts.RuleGPUTemp, Severity: alerts.Warning, GPU: &gpu1, Message: "hot", Value: 90, FiredAt: fired}
	for _, al := range []alerts.Alert{firing, cleared} {
		if err := st.SaveAlert(al); err != nil {
			t.Fatal(err)
		}
	}
	end := fired.Add(time.Minute)
	cleared.ClearedAt = &end
	if err := st.SaveAlert(cleared); err != nil { // replaces its firing record
		t.Fatal(err)
	}

	m := open(t, db, self, fakePool{}).Machine()
	active := m.Eval.Active()
	if len(active) != 1 || active[0].ID != "a1" || !active[0].FiredAt.Equal(fired) || active[0].Value != 91 {
		t.Fatalf("active after restart = %+v, want a1 alone", active)
	}
	recs, err := db.Range(context.Background(), self.String(), app.KindAlert, time.Time{}, time.Now().Add(time.Hour))
	if err != nil || len(recs) != 2 {
		t.Fatalf("alert records = %d, %v; want 2", len(recs), err)
	}
}

func TestPublishIsTheState(t *testing.T) {
	db := replicatest.Open(t)
	self := id("self")
	m := open(t, db, self, fakePool{}).Machine()
	if err := m.Settings.Publish(m.State()); err != nil {
		t.Fatal(err)
	}
	rec, ok, err := db.Latest(context.Background(), self.String(), app.KindAlertRules, "")
	if err != nil || !ok {
		t.Fatalf("published record: %v, %v", ok, err)
	}
	var st alerts.State
	if err := json.Unmarshal(rec.Data, &st); err != nil || !slices.Equal(st.Rules, alerts.DefaultRules()) {
		t.Errorf("published %s (%v), want the default rules", rec.Data, err)
	}
}

// publish writes the state of the machine origin into db, as its replica
// would arrive here.
func publish(t *testing.T, db *store.DB, origin peer.ID, rules []alerts.Rule, at time.Time) {
	t.Helper()
	if err := NewStore(db, origin.String()).Publish(alerts.State{Rules: rules, RulesAt: at}); err != nil {
		t.Fatal(err)
	}
}

func TestAdoptNewestOfOwnerOrAdmin(t *testing.T) {
	self, owner, admin, member, stranger := id("self"), id("owner"), id("admin"), id("member"), id("stranger")
	p := fakePool{roles: map[peer.ID]pool.Role{
		self: pool.RoleMember, owner: pool.RoleOwner, admin: pool.RoleAdmin, member: pool.RoleMember,
	}}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		published map[peer.ID]time.Time // origin -> when its rules changed (its temperature: see temp)
		own       time.Time             // when this machine's rules changed
		want      float64               // the temperature threshold afterwards
		wantAt    time.Time
	}{
		{"owner's newer rules", map[peer.ID]time.Time{owner: t0.Add(time.Hour)}, t0, temp[owner], t0.Add(time.Hour)},
		{"the admin's, newest of owner and admin", map[peer.ID]time.Time{owner: t0.Add(time.Hour), admin: t0.Add(2 * time.Hour)}, t0, temp[admin], t0.Add(2 * time.Hour)},
		{"never a member's, even the newest", map[peer.ID]time.Time{owner: t0.Add(time.Hour), member: t0.Add(3 * time.Hour)}, t0, temp[owner], t0.Add(time.Hour)},
		{"never a stranger's", map[peer.ID]time.Time{stranger: t0.Add(3 * time.Hour)}, t0, temp[self], t0},
		{"never its own", map[peer.ID]time.Time{self: t0.Add(3 * time.Hour)}, t0, temp[self], t0},
		{"not older than its own", map[peer.ID]time.Time{owner: t0.Add(time.Hour)}, t0.Add(2 * time.Hour), temp[self], t0.Add(2 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := replicatest.Open(t)
			if err := NewStore(db, self.String()).SaveRules(rulesWithTemp(temp[self]), tt.own); err != nil {
				t.Fatal(err)
			}
			for origin, at := range tt.published {
				if origin != self {
					publish(t, db, origin, rulesWithTemp(temp[origin]), at)
				}
			}
			a := open(t, db, self, p)
			if at, ok := tt.published[self]; ok {
				publish(t, db, self, rulesWithTemp(99), at)
			}
			a.adoptNewest(context.Background())
			m := a.Machine()
			if got := threshold(m.Eval.Rules()); got != tt.want || !m.RulesAt().Equal(tt.wantAt) {
				t.Errorf("threshold %v changed at %v, want %v at %v", got, m.RulesAt(), tt.want, tt.wantAt)
			}
			// What it adopted, it keeps across a restart.
			m2 := open(t, db, self, p).Machine()
			if got := threshold(m2.Eval.Rules()); got != tt.want || !m2.RulesAt().Equal(tt.wantAt) {
				t.Errorf("after a restart: threshold %v changed at %v, want %v at %v", got, m2.RulesAt(), tt.want, tt.wantAt)
			}
		})
	}
}

// temp is the GPU temperature threshold each machine publishes.
var temp = map[peer.ID]float64{id("self"): 80, id("owner"): 81, id("admin"): 82, id("member"): 83, id("stranger"): 84}

func threshold(rules []alerts.Rule) float64 {
	for _, r := range rules {
		if r.ID == alerts.RuleGPUTemp {
			return r.Threshold
		}
	}
	return -1
}

type online map[string]bool

func (o online) Online(id string) bool { return o[id] }

type shares []folders.Share

func (s shares) List() []folders.Share { return s }

func writeNode(t *testing.T, db *store.DB, node peer.ID, gpus int) {
	t.Helper()
	rec := app.NodeRecord{Info: agent.Info{ID: node.String(), GPUs: make([]gpu.Info, gpus)}}
	b, _ := json.Marshal(rec)
	if _, err := db.Append(context.Background(), node.String(), app.KindNode, "", time.Now(), b); err != nil {
		t.Fatal(err)
	}
}

func TestInputs(t *testing.T) {
	db := replicatest.Open(t)
	self, server, asleep, laptop, gone := id("self"), id("server"), id("asleep"), id("laptop"), id("gone")
	writeNode(t, db, self, 2)
	writeNode(t, db, server, 8)
	writeNode(t, db, asleep, 4)
	writeNode(t, db, laptop, 0)
	writeNode(t, db, gone, 8)
	p := fakePool{members: []pool.MemberState{
		{ID: self.String(), Name: "self"}, {ID: server.String(), Name: "server"}, {ID: asleep.String(), Name: "asleep"},
		{ID: laptop.String(), Name: "laptop"}, {ID: gone.String(), Name: "gone", Removed: true},
	}}
	grants := map[string]string{"GPU-1": "job-1"}
	in := NewInputs(self.String(), db, func() map[string]string { return grants }, shares{{Name: "data", Path: "/srv/data"}}, p, online{server.String(): true})

	want := []alerts.PeerReading{{Node: server.String(), Name: "server"}, {Node: asleep.String(), Name: "asleep", Offline: true}}
	if got := in.Peers(); !slices.Equal(got, want) {
		t.Errorf("Peers() = %+v, want %+v (GPU machines but this one, removed ones and laptops)", got, want)
	}
	if got := in.Folders(); !slices.Equal(got, []alerts.Folder{{Name: "data", Path: "/srv/data"}}) {
		t.Errorf("Folders() = %+v", got)
	}
	if got := in.Grants(); got["GPU-1"] != "job-1" || len(got) != 1 {
		t.Errorf("Grants() = %v", got)
	}

	// Whether a machine has GPUs is read again after 30 s, not at every sample.
	writeNode(t, db, laptop, 1)
	if got := in.Peers(); len(got) != 2 {
		t.Errorf("Peers() right after the laptop published a GPU = %+v, want the cached answer", got)
	}
	in.mu.Lock()
	in.gpus[laptop.String()] = gpuNode{has: false, at: time.Now().Add(-31 * time.Second)}
	in.mu.Unlock()
	if got := in.Peers(); len(got) != 3 || got[2].Node != laptop.String() {
		t.Errorf("Peers() 30 s later = %+v, want the laptop too", got)
	}
	if in2 := NewInputs(self.String(), db, nil, nil, fakePool{}, nil); in2.Peers() != nil {
		t.Errorf("outside a pool: Peers() = %+v, want none", in2.Peers())
	}
}

func TestRunPublishesAndStops(t *testing.T) {
	db := replicatest.Open(t)
	self := id("self")
	a := open(t, db, self, fakePool{})
	before := leaktest.Count()
	ctx, cancel := context.WithCancel(context.Background())
	samples := make(chan agent.Sample)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, samples) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok, _ := db.Latest(context.Background(), self.String(), app.KindAlertRules, ""); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run published no state")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && err != context.Canceled {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx was cancelled")
	}
	leaktest.Check(t, before, 2*time.Second)
}
