package alerting

import (
	"github.com/labpool/labpool/sync/schema"

	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/alerts"
	"github.com/labpool/labpool/sync/store"
)

// Local settings of this machine's alerting (never replicated; the state
// is published as an app.KindAlertRules record).
const (
	settingAlertRules   = schema.SettingAlertRules
	settingAlertRulesAt = schema.SettingAlertRulesAt
	settingAlertMutes   = schema.SettingAlertMutes
	settingAlertPins    = schema.SettingAlertPins
	settingWebhookAt    = schema.SettingWebhookAt
)

// Retention is how long alert records are kept.
const Retention = 90 * 24 * time.Hour

// Store keeps alerts and alerting settings: alerts and the published
// state in the replicated log, rules, mutes and the webhook locally.
type Store struct {
	db     *store.DB
	origin string
}

// NewStore returns the store of the machine origin (its device ID) in db.
func NewStore(db *store.DB, origin string) Store { return Store{db, origin} }

// SaveAlert implements alerts.Sink.
func (s Store) SaveAlert(a alerts.Alert) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = s.db.Append(context.Background(), s.origin, app.KindAlert, a.ID, a.FiredAt, b)
	return err
}

func (s Store) saveJSON(key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.db.SetSetting(context.Background(), key, string(b))
}

// SaveRules implements alerts.Settings: the rules, then when they changed
// (a crash between the two leaves the time older: at worst the newest
// rules of the pool are adopted again).
func (s Store) SaveRules(r []alerts.Rule, at time.Time) error {
	if err := s.saveJSON(settingAlertRules, r); err != nil {
		return err
	}
	return s.saveTime(settingAlertRulesAt, at)
}

// saveTime keeps a time setting (RFC 3339, to the nanosecond).
func (s Store) saveTime(key string, t time.Time) error {
	return s.db.SetSetting(context.Background(), key, t.UTC().Format(time.RFC3339Nano))
}

// loadTime reads a time setting saveTime kept: zero when it is missing or
// unreadable (the pool's newest is then adopted again).
func (s Store) loadTime(ctx context.Context, key string) time.Time {
	v, ok, err := s.db.Setting(ctx, key)
	if err != nil || !ok {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}

// SaveMutes implements alerts.Settings.
func (s Store) SaveMutes(m []alerts.Mute) error { return s.saveJSON(settingAlertMutes, m) }

// SavePins implements alerts.Settings.
func (s Store) SavePins(p []string) error { return s.saveJSON(settingAlertPins, p) }

// SaveWebhook implements alerts.Settings: the URL, then when it was set
// (a crash between the two leaves the time older: at worst the pool's
// newest webhook is fetched again).
func (s Store) SaveWebhook(w alerts.WebhookSetting) error {
	if err := s.db.SetSetting(context.Background(), app.SettingAlertWebhook, w.URL); err != nil {
		return err
	}
	return s.saveTime(settingWebhookAt, w.At)
}

// Publish implements alerts.Settings.
func (s Store) Publish(st alerts.State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = s.db.Append(context.Background(), s.origin, app.KindAlertRules, "", time.Now(), b)
	return err
}

// Load reads this machine's alerting settings and the alerts it left
// firing into m.
func (s Store) Load(ctx context.Context, m *alerts.Machine) error {
	if v, ok, err := s.db.Setting(ctx, settingAlertRules); err != nil {
		return err
	} else if ok {
		var rules []alerts.Rule
		if err := json.Unmarshal([]byte(v), &rules); err != nil {
			return fmt.Errorf("decode alert rules: %w", err)
		}
		if err := m.Restored(rules, s.loadTime(ctx, settingAlertRulesAt)); err != nil {
			return fmt.Errorf("stored alert rules: %w", err)
		}
	}
	if v, ok, err := s.db.Setting(ctx, settingAlertMutes); err == nil && ok {
		var mutes []alerts.Mute
		if json.Unmarshal([]byte(v), &mutes) == nil {
			m.RestoredMutes(mutes)
		}
	}
	if v, ok, err := s.db.Setting(ctx, settingAlertPins); err == nil && ok {
		var pins []string
		if json.Unmarshal([]byte(v), &pins) == nil {
			m.RestoredPins(pins)
		}
	}
	if v, ok, err := s.db.Setting(ctx, app.SettingAlertWebhook); err == nil && ok {
		if err := m.RestoredWebhook(alerts.WebhookSetting{URL: v, At: s.loadTime(ctx, settingWebhookAt)}); err != nil {
			return err
		}
	}
	return s.restoreActive(ctx, m.Eval)
}

// restoreActive gives ev the alerts this machine left firing.
func (s Store) restoreActive(ctx context.Context, ev *alerts.Evaluator) error {
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
	ev.Restore(active)
	return nil
}
