package alerting

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
	"github.com/labpool/labpool/sync/transport"
)

// Config is this machine's alerting.
type Config struct {
	Self peer.ID // this machine's device ID: the origin of its alerts
	Name string  // this machine's name, in webhook posts
	// Nodes reaches the other machines' alerting API, to fetch the pool's
	// webhook when this machine missed a change (nil: never fetched).
	Nodes NodeCaller
	// WebhookPolicy is this machine's own say over posting to the
	// webhook, read at each alert (nil: post, public addresses only).
	WebhookPolicy func() alerts.WebhookPolicy
	// Live says which machines this one has a live session with, to pick
	// the relay of the alerts of machines without the URL (nil: none).
	Live Liveness
}

// NodeCaller calls a machine's peer API (app.Service, as the daemon's copy
// engine also uses it), for alerts.Client.
type NodeCaller = peerapi.Doer

// Pool is what alerting asks of the pool's membership (*pool.Manager).
type Pool interface {
	Role(peer.ID) (pool.Role, bool)
	Snapshot() (pool.State, bool)
}

// Alerting is this machine's alerting over its replica.
type Alerting struct {
	cfg  Config
	db   *store.DB
	pool Pool
	in   *Inputs
	m    *alerts.Machine
	log  *slog.Logger
	// sendAs posts another machine's alert (the webhook's SendAs; tests
	// record instead).
	sendAs func(name string, a alerts.Alert)
	relay  relay     // used by the adopting loop alone
	opened time.Time // when Open ran: the relay posts nothing older
}

// Open builds this machine's alerting from its local settings (unreadable
// settings are logged and the defaults kept).
func Open(ctx context.Context, cfg Config, db *store.DB, p Pool, in *Inputs, log *slog.Logger) *Alerting {
	st := NewStore(db, cfg.Self.String())
	wh := alerts.NewWebhook(cfg.Name, cfg.WebhookPolicy, log)
	ev := alerts.NewEvaluator(cfg.Self.String(), st, log, wh.Send)
	a := &Alerting{cfg: cfg, db: db, pool: p, in: in, log: log,
		m: &alerts.Machine{Eval: ev, Webhook: wh, Settings: st, Member: func(id string) bool {
			d, err := peer.ParseID(id)
			if err != nil || p == nil || d == cfg.Self {
				return false
			}
			_, ok := p.Role(d)
			return ok
		}}}
	a.m.MayHold = a.mayHold
	a.opened = time.Now()
	a.sendAs = wh.SendAs
	if err := st.Load(ctx, a.m); err != nil {
		log.Error("read this machine's alert settings: keeping the defaults", "err", err)
	}
	return a
}

// Machine is the rules, evaluator and webhook, for alerts.Handler.
func (a *Alerting) Machine() *alerts.Machine { return a.m }

// Run evaluates the rules on every sample, posts to the webhook, adopts
// the pool's newer rules and prunes old alerts, until ctx is cancelled.
func (a *Alerting) Run(ctx context.Context, samples <-chan agent.Sample) error {
	a.dropWebhook() // before anything is posted
	if err := a.m.Settings.Publish(a.m.State()); err != nil {
		a.log.Warn("publish alert rules", "err", err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.m.Webhook.Run(ctx) })
	wg.Go(func() { a.adoptRules(ctx) })
	wg.Go(func() { a.prune(ctx) })
	return a.m.Eval.Run(ctx, samples, a.in)
}

// prune removes alerts older than Retention, every hour.
func (a *Alerting) prune(ctx context.Context) {
	t := beat.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if _, err := a.db.Prune(ctx, app.KindAlert, time.Now().Add(-Retention)); err != nil && ctx.Err() == nil {
			a.log.Warn("prune alerts", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// adoptRules catches up with rule changes this machine missed (it was
// offline when an owner or admin set them): every 30 s, and when the
// replica changes (at most every 5 s), it adopts the newest rules
// published by a machine of an owner or admin, when newer than its own,
// and relays the alerts of machines without the webhook (see look).
func (a *Alerting) adoptRules(ctx context.Context) {
	changed, cancel := a.db.Subscribe()
	defer cancel()
	t := beat.NewTicker(30 * time.Second)
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
		a.look(ctx)
	}
}

// look is one pass of the adopting loop: this machine drops the webhook
// URL if its device may no longer hold it, adopts what is newer, and
// relays the alerts of the machines that do not hold the URL.
func (a *Alerting) look(ctx context.Context) {
	a.dropWebhook()
	recs, err := a.db.LatestByKind(ctx, app.KindAlertRules)
	if err != nil {
		a.log.Debug("read the pool's alert states", "err", err)
		return
	}
	a.adopt(ctx, recs)
	a.relayAlerts(ctx, recs)
}

// adoptNewest adopts the newest rules an owner's or admin's machine
// published, and fetches the webhook from the one holding the newest,
// when newer than this machine's.
func (a *Alerting) adoptNewest(ctx context.Context) {
	recs, err := a.db.LatestByKind(ctx, app.KindAlertRules)
	if err != nil {
		return
	}
	a.adopt(ctx, recs)
}

// adopt is adoptNewest over the published states recs; only an owner's or
// admin's machine fetches the webhook.
func (a *Alerting) adopt(ctx context.Context, recs []store.Record) {
	rules, webhook := a.newest(recs)
	if !rules.RulesAt.IsZero() {
		if ok, err := a.m.Adopt(rules.Rules, rules.RulesAt); err != nil {
			a.log.Warn("adopt the pool's alert rules", "err", err)
		} else if ok {
			a.log.Info("adopted the pool's alert rules, changed while this machine was away", "changed_at", rules.RulesAt)
		}
	}
	if webhook.at.After(a.m.WebhookSetting().At) && a.mayHold() {
		a.fetchWebhook(ctx, webhook.from, webhook.at)
	}
}

// newestWebhook is which machines published the newest webhook change.
type newestWebhook struct {
	from []peer.ID // owners' and admins' machines that hold it
	at   time.Time
}

// newest is, of the published states recs, the newest rules published by
// another machine of an owner or admin (zero RulesAt: none changed), and which of them holds the newest
// webhook (zero at: none set).
func (a *Alerting) newest(recs []store.Record) (rules alerts.State, webhook newestWebhook) {
	for _, r := range recs {
		id, err := peer.ParseID(r.Origin)
		if err != nil || id == a.cfg.Self {
			continue
		}
		if role, ok := a.pool.Role(id); !ok || (role != pool.RoleOwner && role != pool.RoleAdmin) {
			continue
		}
		var st alerts.State
		if json.Unmarshal(r.Data, &st) != nil {
			continue
		}
		if st.RulesAt.After(rules.RulesAt) {
			rules = st
		}
		switch {
		case st.WebhookAt.After(webhook.at):
			webhook = newestWebhook{from: []peer.ID{id}, at: st.WebhookAt}
		case !st.WebhookAt.IsZero() && st.WebhookAt.Equal(webhook.at):
			webhook.from = append(webhook.from, id) // set on every machine at once: any of them will do
		}
	}
	return rules, webhook
}

// fetchWebhook asks the machines of from, in turn, for the webhook they
// published as set at at, and adopts the first answer (it fails quietly
// while they are all away: the next look tries again).
func (a *Alerting) fetchWebhook(ctx context.Context, from []peer.ID, at time.Time) {
	if a.cfg.Nodes == nil {
		return
	}
	for _, id := range from {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		w, err := alerts.Client{Conn: peerapi.Conn{Doer: a.cfg.Nodes, Node: id.String()}}.Webhook(cctx)
		cancel()
		if err != nil {
			a.log.Debug("fetch the pool's alert webhook", "from", id.Short(), "err", err)
			continue
		}
		if w.At.Before(at) {
			continue // what it published is not what it holds: its record was older
		}
		a.adoptWebhook(w, id)
		return
	}
}

// adoptWebhook adopts w, fetched from the machine from.
func (a *Alerting) adoptWebhook(w alerts.WebhookSetting, from peer.ID) {
	if ok, err := a.m.AdoptWebhook(w); err != nil {
		a.log.Warn("adopt the pool's alert webhook", "from", from.Short(), "err", err)
	} else if ok {
		a.log.Info("adopted the pool's alert webhook, set while this machine was away", "set_at", w.At)
	}
}

// Caller is who asks the alerts API: the device the transport proved, its
// role, and whether it is this machine.
func (a *Alerting) Caller(r *http.Request) alerts.Caller {
	id, _ := transport.PeerID(r)
	role, _ := a.pool.Role(id)
	return alerts.Caller{ID: id.String(), Role: string(role), Local: id == a.cfg.Self}
}
