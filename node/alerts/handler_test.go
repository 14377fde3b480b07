package alerts

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSettings records what the machine saved and published.
type fakeSettings struct {
	mu        sync.Mutex
	rules     []Rule
	mutes     []Mute
	webhook   WebhookSetting
	pins      []string
	published []State
}

func (f *fakeSettings) SavePins(p []string) error { f.mu.Lock(); f.pins = p; f.mu.Unlock(); return nil }

func (f *fakeSettings) SaveRules(r []Rule, _ time.Time) error {
	f.mu.Lock()
	f.rules = r
	f.mu.Unlock()
	return nil
}
func (f *fakeSettings) SaveMutes(m []Mute) error { f.mu.Lock(); f.mutes = m; f.mu.Unlock(); return nil }
func (f *fakeSettings) SaveWebhook(w WebhookSetting) error {
	f.mu.Lock()
	f.webhook = w
	f.mu.Unlock()
	return nil
}
func (f *fakeSettings) Publish(s State) error {
	f.mu.Lock()
	f.published = append(f.published, s)
	f.mu.Unlock()
	return nil
}

func newMachine() (*Machine, *fakeSettings) {
	st := &fakeSettings{}
	wh := NewWebhook("gpu1", nil, discard())
	return &Machine{Eval: NewEvaluator(selfID, &fakeSink{}, discard(), wh.Send), Webhook: wh, Settings: st}, st
}

// call sends one request to h as a caller of role.
func call(t *testing.T, m *Machine, role, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	h := Handler(m, func(*http.Request) Caller { return Caller{ID: "PEER-" + role, Role: role} })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

func errorOf(t *testing.T, rec *httptest.ResponseRecorder) (code, msg string) {
	var e struct{ Code, Message string }
	json.Unmarshal(rec.Body.Bytes(), &e)
	return e.Code, e.Message
}

func TestRulesByRole(t *testing.T) {
	for _, role := range []string{RoleMember, RoleViewer, ""} {
		m, st := newMachine()
		rec := call(t, m, role, "PUT", "/v1/alerts/rules/gpu-temp", `{"threshold": 95}`)
		code, msg := errorOf(t, rec)
		if rec.Code != http.StatusForbidden || code != "forbidden" || !strings.Contains(msg, "alerts: owners and admins only") {
			t.Errorf("%q sets a rule: %d %s %q; want 403 naming the rule", role, rec.Code, code, msg)
		}
		if st.rules != nil || m.Eval.Rules()[0].Threshold != 85 {
			t.Errorf("%q changed the rules", role)
		}
	}
	for _, role := range []string{RoleOwner, RoleAdmin} {
		m, st := newMachine()
		rec := call(t, m, role, "PUT", "/v1/alerts/rules/gpu-temp", `{"threshold": 95, "for_seconds": 30}`)
		var r Rule
		json.Unmarshal(rec.Body.Bytes(), &r)
		if rec.Code != http.StatusOK || r.Threshold != 95 || r.ForSeconds != 30 {
			t.Fatalf("%s sets a rule: %d %s", role, rec.Code, rec.Body)
		}
		if len(st.rules) != len(DefaultRules()) || st.rules[0].Threshold != 95 || len(st.published) != 1 || st.published[0].Rules[0].Threshold != 95 {
			t.Errorf("%s's rule was not saved and published: %+v", role, st)
		}
	}
	m, _ := newMachine()
	if rec := call(t, m, RoleAdmin, "PUT", "/v1/alerts/rules/gpu-temp", `{"op": "~"}`); rec.Code != http.StatusBadRequest {
		t.Errorf("a bad op: %d %s; want 400", rec.Code, rec.Body)
	}
	if rec := call(t, m, RoleAdmin, "PUT", "/v1/alerts/rules/gpu-temp", `{"threshold": 1, "privileged": true}`); rec.Code != http.StatusBadRequest {
		t.Errorf("an unknown field: %d %s; want 400", rec.Code, rec.Body)
	}
	if rec := call(t, m, RoleViewer, "GET", "/v1/alerts/rules", ""); rec.Code != http.StatusOK {
		t.Errorf("a viewer reads the rules: %d", rec.Code)
	}
}

func TestWebhookByRoleAndScheme(t *testing.T) {
	m, st := newMachine()
	rec := call(t, m, RoleMember, "PUT", "/v1/alerts/webhook", `{"url": "https://chat.example.org/h"}`)
	if code, msg := errorOf(t, rec); rec.Code != http.StatusForbidden || !strings.Contains(msg, "alerts: owners and admins only") {
		t.Errorf("a member sets the webhook: %d %s %q", rec.Code, code, msg)
	}
	for _, u := range []string{"file:/etc/shadow", "file:///etc/shadow", "gopher://x", "unix:/run/x.sock"} {
		rec := call(t, m, RoleOwner, "PUT", "/v1/alerts/webhook", `{"url": "`+u+`"}`)
		if _, msg := errorOf(t, rec); rec.Code != http.StatusBadRequest || !strings.Contains(msg, "only http and https") {
			t.Errorf("owner sets webhook %s: %d %q; want 400 saying http and https only", u, rec.Code, msg)
		}
	}
	if st.webhook.URL != "" || m.Webhook.URL() != "" {
		t.Fatalf("a refused webhook was kept: %q", m.Webhook.URL())
	}
	rec = call(t, m, RoleAdmin, "PUT", "/v1/alerts/webhook", `{"url": "https://chat.example.org/h"}`)
	if rec.Code != http.StatusNoContent || st.webhook.URL != "https://chat.example.org/h" || m.Webhook.URL() != st.webhook.URL {
		t.Fatalf("admin sets the webhook: %d %s; kept %q", rec.Code, rec.Body, st.webhook)
	}
	if p := st.published[len(st.published)-1]; !p.Webhook {
		t.Errorf("published state does not say a webhook is set")
	}
	if b, _ := json.Marshal(st.published); strings.Contains(string(b), "chat.example.org") {
		t.Errorf("the published state holds the webhook's URL: %s", b)
	}
}

// TestWebhookReachesMachinesThatMissedIt: an owner's or admin's machine fetches the
// webhook (GET) from one that holds a newer one; a stranger or a removed
// member gets nothing; an older webhook never replaces a newer one; a time
// far in the future (a wrong clock) is taken as now.
func TestWebhookReachesMachinesThatMissedIt(t *testing.T) {
	m, st := newMachine()
	set := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	rec := call(t, m, RoleOwner, "PUT", "/v1/alerts/webhook", `{"url": "https://chat.example.org/h", "at": "`+set.Format(time.RFC3339)+`"}`)
	if rec.Code != http.StatusNoContent || !st.webhook.At.Equal(set) || !st.published[len(st.published)-1].WebhookAt.Equal(set) {
		t.Fatalf("owner sets the webhook at %v: %d %s; saved %+v", set, rec.Code, rec.Body, st.webhook)
	}

	rec = call(t, m, "", "GET", "/v1/alerts/webhook", "")
	if code, msg := errorOf(t, rec); rec.Code != http.StatusForbidden || !strings.Contains(msg, RuleWebhookHolders) || strings.Contains(rec.Body.String(), "chat.example.org") {
		t.Errorf("a stranger reads the webhook: %d %s %q", rec.Code, code, rec.Body)
	}
	rec = call(t, m, RoleAdmin, "GET", "/v1/alerts/webhook", "")
	var got WebhookSetting
	if json.Unmarshal(rec.Body.Bytes(), &got); rec.Code != http.StatusOK || got.URL != "https://chat.example.org/h" || !got.At.Equal(set) {
		t.Errorf("an admin's machine reads the webhook: %d %s", rec.Code, rec.Body)
	}

	other, _ := newMachine()
	if ok, err := other.AdoptWebhook(got); !ok || err != nil || other.Webhook.URL() != got.URL {
		t.Fatalf("a machine that missed the webhook adopts it: %v %v, holds %q", ok, err, other.Webhook.URL())
	}
	older := WebhookSetting{URL: "https://old.example.org/h", At: set.Add(-time.Hour)}
	if ok, err := other.AdoptWebhook(older); ok || err != nil || other.Webhook.URL() != got.URL {
		t.Errorf("an older webhook replaced a newer one: %v %v, holds %q", ok, err, other.Webhook.URL())
	}
	if ok, err := other.AdoptWebhook(WebhookSetting{URL: "file:///etc/shadow", At: set.Add(time.Hour)}); ok || err == nil || other.Webhook.URL() != got.URL {
		t.Errorf("a bad webhook was adopted: %v %v, holds %q", ok, err, other.Webhook.URL())
	}

	rec = call(t, m, RoleAdmin, "PUT", "/v1/alerts/webhook", `{"url": "", "at": "2999-01-01T00:00:00Z"}`)
	if rec.Code != http.StatusNoContent || m.Webhook.URL() != "" || st.webhook.At.After(time.Now().Add(time.Minute)) {
		t.Errorf("admin removes the webhook with a clock far ahead: %d %s; saved %+v", rec.Code, rec.Body, st.webhook)
	}
}

func TestMuteByRole(t *testing.T) {
	m, st := newMachine()
	rec := call(t, m, RoleViewer, "POST", "/v1/alerts/mute", `{"rule": "gpu-temp", "until": "2999-01-01T00:00:00Z"}`)
	if _, msg := errorOf(t, rec); rec.Code != http.StatusForbidden || !strings.Contains(msg, "viewers cannot mute alerts") {
		t.Errorf("a viewer mutes: %d %q", rec.Code, msg)
	}
	rec = call(t, m, RoleMember, "POST", "/v1/alerts/mute", muteBody("", "gpu-temp", nil, time.Now().Add(24*time.Hour)))
	var mu Mute
	json.Unmarshal(rec.Body.Bytes(), &mu)
	if rec.Code != http.StatusOK || mu.Node != selfID || len(st.mutes) != 1 {
		t.Fatalf("a member mutes: %d %s; saved %+v", rec.Code, rec.Body, st.mutes)
	}
	rec = call(t, m, RoleMember, "POST", "/v1/alerts/mute", `{"rule": "gpu-temp"}`)
	if rec.Code != http.StatusOK || len(st.mutes) != 0 {
		t.Fatalf("unmute: %d %s; saved %+v", rec.Code, rec.Body, st.mutes)
	}
}

func TestAdoptNewerRulesOnly(t *testing.T) {
	m, st := newMachine()
	custom := DefaultRules()
	custom[0].Threshold = 70
	t1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if ok, err := m.Adopt(custom, t1); !ok || err != nil || m.Eval.Rules()[0].Threshold != 70 || !m.RulesAt().Equal(t1) {
		t.Fatalf("Adopt newer: %v, %v; rules %+v", ok, err, m.Eval.Rules()[0])
	}
	if p := st.published[len(st.published)-1]; !p.RulesAt.Equal(t1) || p.Rules[0].Threshold != 70 {
		t.Errorf("published %+v", p)
	}
	older := DefaultRules()
	if ok, _ := m.Adopt(older, t1.Add(-time.Hour)); ok || m.Eval.Rules()[0].Threshold != 70 {
		t.Errorf("older rules adopted")
	}
	bad := DefaultRules()
	bad[0].Op = "!="
	if ok, err := m.Adopt(bad, t1.Add(time.Hour)); ok || err == nil || m.Eval.Rules()[0].Op != ">" {
		t.Errorf("invalid rules adopted: %v, %v", ok, err)
	}
	// A change by an admin here is newer than what was adopted.
	rec := call(t, m, RoleAdmin, "PUT", "/v1/alerts/rules/gpu-temp", `{"threshold": 95}`)
	if rec.Code != 200 || !m.RulesAt().After(t1) {
		t.Errorf("admin's change: %d, rules at %v", rec.Code, m.RulesAt())
	}
}

// TestWebhookURLOwnersAndAdminsOnly: the peer route answers the URL to an
// owner's or admin's device and to this machine's own user; a member's or
// viewer's device (it would print it, or post where it likes) is refused,
// naming the rule.
func TestWebhookURLOwnersAndAdminsOnly(t *testing.T) {
	m, _ := newMachine()
	if rec := call(t, m, RoleOwner, "PUT", "/v1/alerts/webhook", `{"url": "https://chat.example.org/secret"}`); rec.Code != http.StatusNoContent {
		t.Fatalf("owner sets the webhook: %d %s", rec.Code, rec.Body)
	}
	for _, role := range []string{RoleMember, RoleViewer, ""} {
		rec := call(t, m, role, "GET", "/v1/alerts/webhook", "")
		code, msg := errorOf(t, rec)
		if rec.Code != http.StatusForbidden || code != "forbidden" || !strings.Contains(msg, RuleWebhookHolders) {
			t.Errorf("%q reads the webhook: %d %s %q; want 403 naming the rule", role, rec.Code, code, msg)
		}
		if strings.Contains(rec.Body.String(), "secret") {
			t.Errorf("%q was answered the URL: %s", role, rec.Body)
		}
	}
	for _, role := range []string{RoleOwner, RoleAdmin} {
		rec := call(t, m, role, "GET", "/v1/alerts/webhook", "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "chat.example.org/secret") {
			t.Errorf("%q reads the webhook: %d %s", role, rec.Code, rec.Body)
		}
	}
	if got, err := m.WebhookFor(Caller{Local: true}); err != nil || got.URL != "https://chat.example.org/secret" {
		t.Errorf("this machine's user reads the webhook: %+v, %v", got, err)
	}
}

// TestMachineThatMayNotHoldTheURL: a machine whose own device is not an
// owner or admin takes no URL (set or adopted), though a removal is fine,
// and drops one it held (from before, or before it was demoted), so that
// it neither posts nor answers it.
func TestMachineThatMayNotHoldTheURL(t *testing.T) {
	m, st := newMachine()
	may := true
	m.MayHold = func() bool { return may }
	set := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	if err := m.SetWebhook(Caller{Local: true}, WebhookSetting{URL: "https://chat.example.org/h", At: set}); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.DropWebhook(); ok || err != nil || m.Webhook.URL() == "" {
		t.Fatalf("an owner's machine dropped its URL: %v, %v", ok, err)
	}

	may = false // demoted
	ok, err := m.DropWebhook()
	if !ok || err != nil || m.Webhook.URL() != "" || st.webhook.URL != "" {
		t.Fatalf("a member's machine keeps the URL: %v, %v; holds %q, saved %+v", ok, err, m.Webhook.URL(), st.webhook)
	}
	if p := st.published[len(st.published)-1]; p.Webhook || !p.WebhookAt.IsZero() {
		t.Errorf("published after the drop: %+v; want no webhook, and none set (so that a promotion fetches it again)", p)
	}
	if ok, err := m.DropWebhook(); ok || err != nil {
		t.Errorf("dropped again: %v, %v", ok, err)
	}

	w := WebhookSetting{URL: "https://chat.example.org/h", At: set.Add(time.Second)}
	if err := m.SetWebhook(Caller{Role: RoleOwner}, w); err == nil || !strings.Contains(err.Error(), RuleWebhookHolders) {
		t.Errorf("an owner sets the URL on a member's machine: %v; want a refusal naming the rule", err)
	}
	if ok, err := m.AdoptWebhook(w); ok || err == nil || !strings.Contains(err.Error(), RuleWebhookHolders) {
		t.Errorf("a member's machine adopts the URL: %v, %v; want a refusal naming the rule", ok, err)
	}
	if m.Webhook.URL() != "" || st.webhook.URL != "" {
		t.Fatalf("a member's machine holds %q, saved %+v", m.Webhook.URL(), st.webhook)
	}
	if err := m.SetWebhook(Caller{Role: RoleOwner}, WebhookSetting{}); err != nil {
		t.Errorf("an owner removes the webhook on a member's machine: %v", err)
	}
}
