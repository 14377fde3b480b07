package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// Local settings of this machine's alerting (never replicated; the state
// is published as an app.KindAlertRules record).
const (
	settingAlertRules   = "alerts.rules"    // []alerts.Rule
	settingAlertRulesAt = "alerts.rules_at" // RFC 3339: when an owner or admin changed them
	settingAlertMutes   = "alerts.mutes"
)

// alertRetention is how long alert records are kept.
const alertRetention = 90 * 24 * time.Hour

// alertStore keeps alerts and alerting settings: alerts and the published
// state in the replicated log, rules, mutes and the webhook locally.
type alertStore struct {
	db     *store.DB
	origin string
}

// SaveAlert implements alerts.Sink.
func (s alertStore) SaveAlert(a alerts.Alert) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = s.db.Append(context.Background(), s.origin, app.KindAlert, a.ID, a.FiredAt, b)
	return err
}

func (s alertStore) saveJSON(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.db.SetSetting(context.Background(), key, string(b))
}

// SaveRules implements alerts.Settings: the rules, then when they changed
// (a crash between the two leaves the time older: at worst the newest
// rules of the pool are adopted again).
func (s alertStore) SaveRules(r []alerts.Rule, at time.Time) error {
	if err := s.saveJSON(settingAlertRules, r); err != nil {
		return err
	}
	return s.db.SetSetting(context.Background(), settingAlertRulesAt, at.UTC().Format(time.RFC3339Nano))
}

// SaveMutes implements alerts.Settings.
func (s alertStore) SaveMutes(m []alerts.Mute) error { return s.saveJSON(settingAlertMutes, m) }

// SaveWebhook implements alerts.Settings.
func (s alertStore) SaveWebhook(url string) error {
	return s.db.SetSetting(context.Background(), app.SettingAlertWebhook, url)
}

// Publish implements alerts.Settings.
func (s alertStore) Publish(st alerts.State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = s.db.Append(context.Background(), s.origin, app.KindAlertRules, "", time.Now(), b)
	return err
}

// load reads this machine's alerting settings and the alerts it left
// firing into m.
func (s alertStore) load(ctx context.Context, m *alerts.Machine) error {
	if v, ok, err := s.db.Setting(ctx, settingAlertRules); err != nil {
		return err
	} else if ok {
		var rules []alerts.Rule
		if err := json.Unmarshal([]byte(v), &rules); err != nil {
			return fmt.Errorf("decode alert rules: %w", err)
		}
		var at time.Time
		if v, ok, err := s.db.Setting(ctx, settingAlertRulesAt); err == nil && ok {
			at, _ = time.Parse(time.RFC3339Nano, v) // unreadable: zero, the pool's newest rules are adopted
		}
		if err := m.Restored(rules, at); err != nil {
			return fmt.Errorf("stored alert rules: %w", err)
		}
	}
	if v, ok, err := s.db.Setting(ctx, settingAlertMutes); err == nil && ok {
		var mutes []alerts.Mute
		if json.Unmarshal([]byte(v), &mutes) == nil {
			for _, mu := range mutes {
				m.Eval.Mute(mu)
			}
		}
	}
	if v, ok, err := s.db.Setting(ctx, app.SettingAlertWebhook); err == nil && ok {
		if err := m.Webhook.SetURL(v); err != nil {
			return err
		}
	}
	recs, err := s.db.Range(ctx, s.origin, app.KindAlert, time.Time{}, time.Now().Add(24*time.Hour))
	if err != nil {
		return err
	}
	var active []alerts.Alert
	for _, r := range recs {
		var a alerts.Alert
		if json.Unmarshal(r.Data, &a) == nil && a.Active() {
			active = append(active, a)
		}
	}
	m.Eval.Restore(active)
	return nil
}

// openAlerts builds this machine's alerting from its local settings.
func (d *Daemon) openAlerts(ctx context.Context) {
	st := alertStore{d.db, d.id.ID.String()}
	wh := alerts.NewWebhook(d.name, &http.Client{Timeout: 15 * time.Second}, d.log)
	ev := alerts.NewEvaluator(d.id.ID.String(), st, d.log, wh.Send)
	d.alerts = &alerts.Machine{Eval: ev, Webhook: wh, Settings: st}
	if err := st.load(ctx, d.alerts); err != nil {
		d.log.Error("read this machine's alert settings: keeping the defaults", "err", err)
	}
}

// runAlerts evaluates the rules on every sample, posts to the webhook and
// prunes old alerts, until ctx is cancelled.
func (d *Daemon) runAlerts(ctx context.Context, samples <-chan agent.Sample) error {
	if err := d.alerts.Settings.Publish(d.alerts.State()); err != nil {
		d.log.Warn("publish alert rules", "err", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { d.alerts.Webhook.Run(ctx) })
	wg.Go(func() { d.adoptAlertRules(ctx) })
	wg.Go(func() {
		t := time.NewTicker(time.Hour)
		defer t.Stop()
		for {
			if _, err := d.db.Prune(ctx, app.KindAlert, time.Now().Add(-alertRetention)); err != nil && ctx.Err() == nil {
				d.log.Warn("prune alerts", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return d.alerts.Eval.Run(ctx, samples, &alertInputs{d: d, gpus: map[string]gpuNode{}})
}

// adoptAlertRules catches up with rule changes this machine missed (it
// was offline when an owner or admin set them): every 30 s, and when the
// replica changes, it adopts the newest rules published by a machine of
// an owner or admin, when newer than its own.
func (d *Daemon) adoptAlertRules(ctx context.Context) {
	changed, cancel := d.db.Subscribe()
	defer cancel()
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	last := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-changed:
			if time.Since(last) < 5*time.Second {
				continue // records arrive every second: look at most every 5 s
			}
		}
		last = time.Now()
		recs, err := d.db.LatestByKind(ctx, app.KindAlertRules)
		if err != nil {
			continue
		}
		var newest alerts.State
		for _, r := range recs {
			id, err := peer.ParseID(r.Origin)
			if err != nil || id == d.id.ID {
				continue
			}
			if role, ok := d.pool.Role(id); !ok || (role != pool.RoleOwner && role != pool.RoleAdmin) {
				continue
			}
			var st alerts.State
			if json.Unmarshal(r.Data, &st) == nil && st.RulesAt.After(newest.RulesAt) {
				newest = st
			}
		}
		if newest.RulesAt.IsZero() {
			continue
		}
		if ok, err := d.alerts.Adopt(newest.Rules, newest.RulesAt); err != nil {
			d.log.Warn("adopt the pool's alert rules", "err", err)
		} else if ok {
			d.log.Info("adopted the pool's alert rules, changed while this machine was away", "changed_at", newest.RulesAt)
		}
	}
}

// alertCaller is who asks the alerts API: the device the transport proved,
// its role, and whether it is this machine.
func (d *Daemon) alertCaller(r *http.Request) alerts.Caller {
	id, _ := transport.PeerID(r)
	role, _ := d.pool.Role(id)
	return alerts.Caller{ID: id.String(), Role: string(role), Local: id == d.id.ID}
}

// alertInputs gives the evaluator the ledger's grants, the shared folders
// and the liveness of the pool's GPU machines.
type alertInputs struct {
	d *Daemon

	mu   sync.Mutex         // guards gpus
	gpus map[string]gpuNode // whether each node has GPUs, as last read
}

// Grants implements alerts.Inputs.
func (in *alertInputs) Grants() map[string]string { return in.d.jobs.Ledger().Granted() }

// Folders implements alerts.Inputs.
func (in *alertInputs) Folders() []alerts.Folder {
	var out []alerts.Folder
	for _, s := range in.d.folders.List() {
		out = append(out, alerts.Folder{Name: s.Name, Path: s.Path})
	}
	return out
}

// Peers implements alerts.Inputs: the other members that have GPUs (a
// laptop asleep is no alert).
func (in *alertInputs) Peers() []alerts.PeerReading {
	d := in.d
	st, ok := d.pool.Snapshot()
	if !ok {
		return nil
	}
	self := d.id.ID.String()
	var out []alerts.PeerReading
	for _, m := range st.Members {
		if m.Removed || m.ID == self || !in.gpuMachine(m.ID) {
			continue
		}
		out = append(out, alerts.PeerReading{Node: m.ID, Name: m.Name, Offline: !d.peers.Online(m.ID)})
	}
	return out
}

// gpuMachine says whether node last published GPUs, re-read at most every
// 30 s per node.
func (in *alertInputs) gpuMachine(node string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if g, ok := in.gpus[node]; ok && time.Since(g.at) < 30*time.Second {
		return g.has
	}
	has := false
	rec, ok, err := in.d.db.Latest(context.Background(), node, app.KindNode, "")
	if err == nil && ok {
		var nr app.NodeRecord
		has = json.Unmarshal(rec.Data, &nr) == nil && len(nr.Info.GPUs) > 0
	}
	in.gpus[node] = gpuNode{has: has, at: time.Now()}
	return has
}

type gpuNode struct {
	has bool
	at  time.Time
}
