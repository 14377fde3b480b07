package alerts

import (
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

// TestRoundTripEveryRoute calls every route of Routes through Client and
// the real handler, as this machine's own user (an owner of the pool), and
// wants what the machine itself answers.
func TestRoundTripEveryRoute(t *testing.T) {
	m, st := newMachine()
	l := &peerapitest.Loopback{Handler: Handler(m, func(*http.Request) Caller {
		return Caller{ID: "PEER-owner", Role: RoleOwner, Local: true}
	})}
	ctx := t.Context()
	threshold := 95.0
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	hook := WebhookSetting{URL: "https://chat.example.org/hook", At: time.Unix(1_700_000_000, 0).UTC()}
	peerapitest.RoundTrip(t, Routes, l, map[string]func(*testing.T, peerapi.Conn){
		"GET /v1/alerts/rules": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.Rules(ctx)
			if err != nil || !reflect.DeepEqual(got, m.Eval.Rules()) {
				t.Errorf("Rules = %+v, %v", got, err)
			}
		},
		"PUT /v1/alerts/rules/{id}": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.SetRule(ctx, "gpu-temp", RuleUpdate{Threshold: &threshold})
			if err != nil || got.ID != "gpu-temp" || got.Threshold != 95 || m.Eval.Rules()[0].Threshold != 95 {
				t.Errorf("SetRule = %+v, %v", got, err)
			}
		},
		"POST /v1/alerts/mute": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.Mute(ctx, Mute{Rule: "gpu-temp", Until: until})
			if err != nil || got.Rule != "gpu-temp" || !got.Until.Equal(until) || got.By == "" {
				t.Errorf("Mute = %+v, %v", got, err)
			}
		},
		"GET /v1/alerts/state": func(t *testing.T, c peerapi.Conn) {
			if _, err := m.Mute(Caller{ID: "PEER-owner", Role: RoleOwner}, Mute{Rule: "gpu-throttle", Until: until}); err != nil {
				t.Fatal(err)
			}
			got, err := Client{c}.State(ctx)
			if err != nil || !reflect.DeepEqual(got, m.State()) || len(got.Mutes) == 0 {
				t.Errorf("State = %+v, %v; want the mute", got, err)
			}
		},
		"PUT /v1/alerts/pins/{rule}": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.Pin(ctx, "gpu-temp", true)
			if err != nil || !slices.Equal(got, []string{"gpu-temp"}) {
				t.Errorf("Pin = %v, %v", got, err)
			}
			if _, err := (Client{c}).Pin(ctx, "../x", true); err == nil {
				t.Error("Pin of no rule ID: no refusal")
			}
		},
		"PUT /v1/alerts/webhook": func(t *testing.T, c peerapi.Conn) {
			if err := (Client{c}).SetWebhook(ctx, hook); err != nil || st.webhook.URL != hook.URL {
				t.Errorf("SetWebhook = %v, saved %+v", err, st.webhook)
			}
		},
		"GET /v1/alerts/webhook": func(t *testing.T, c peerapi.Conn) {
			if err := m.SetWebhook(Caller{ID: "PEER-owner", Role: RoleOwner, Local: true}, hook); err != nil {
				t.Fatal(err)
			}
			got, err := Client{c}.Webhook(ctx)
			if err != nil || got.URL != hook.URL {
				t.Errorf("Webhook = %+v, %v", got, err)
			}
		},
	})
}
