package alerts

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// callAs sends one request to m's handler as caller c.
func callAs(m *Machine, c Caller, method, path, body string) *httptest.ResponseRecorder {
	h := Handler(m, func(*http.Request) Caller { return c })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

// TestMuteRecordsAuthor: a mute carries who asked for it, as the transport
// proved the caller, whatever the body claims.
func TestMuteRecordsAuthor(t *testing.T) {
	m, st := mutingMachine()
	body := `{"node":"` + selfID + `","rule":"gpu-temp","until":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `","by":"PEER-someone-else"}`
	rec := callAs(m, Caller{ID: "PEER-alice", Role: RoleMember}, "POST", "/v1/alerts/mute", body)
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if len(st.mutes) != 1 || st.mutes[0].By != "PEER-alice" {
		t.Fatalf("saved %+v; want one mute by PEER-alice", st.mutes)
	}
	if pub := st.published[len(st.published)-1]; len(pub.Mutes) != 1 || pub.Mutes[0].By != "PEER-alice" {
		t.Errorf("published %+v; want the author", pub.Mutes)
	}
	local := Caller{ID: selfID, Local: true}
	callAs(m, local, "POST", "/v1/alerts/mute", muteBody("", RuleThrottle, nil, time.Now().Add(time.Hour)))
	if got := m.Eval.Mutes(time.Now()); len(got) != 2 || got[1].By != selfID {
		t.Errorf("mutes %+v; want the machine's own user as the second's author", got)
	}
}

// TestMuteRenewedByWhom: only its author, an admin or owner of the pool,
// or the machine's owner renews or lifts a mute; another member's try is
// refused naming the rule and leaves the mute as it was.
func TestMuteRenewedByWhom(t *testing.T) {
	alice := Caller{ID: "PEER-alice", Role: RoleMember}
	tests := []struct {
		name  string
		by    Caller
		until time.Duration // 0: lift
		ok    bool
	}{
		{"author renews", alice, 2 * time.Hour, true},
		{"author lifts", alice, 0, true},
		{"another member renews", Caller{ID: "PEER-bob", Role: RoleMember}, 29 * 24 * time.Hour, false},
		{"another member lifts", Caller{ID: "PEER-bob", Role: RoleMember}, 0, false},
		{"admin lifts", Caller{ID: "PEER-carol", Role: RoleAdmin}, 0, true},
		{"pool owner renews", Caller{ID: "PEER-dave", Role: RoleOwner}, 2 * time.Hour, true},
		{"machine's owner lifts", Caller{ID: selfID, Local: true}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := mutingMachine()
			first := time.Now().Add(time.Hour).UTC()
			if rec := callAs(m, alice, "POST", "/v1/alerts/mute", muteBody(selfID, RuleGPUTemp, nil, first)); rec.Code != http.StatusOK {
				t.Fatalf("first mute: %d %s", rec.Code, rec.Body)
			}
			until := time.Time{}
			if tt.until > 0 {
				until = time.Now().Add(tt.until).UTC()
			}
			rec := callAs(m, tt.by, "POST", "/v1/alerts/mute", muteBody(selfID, RuleGPUTemp, nil, until))
			got := m.Eval.Mutes(time.Now())
			if tt.ok {
				if rec.Code != http.StatusOK {
					t.Fatalf("%d %s; want taken", rec.Code, rec.Body)
				}
				return
			}
			_, msg := errorOf(t, rec)
			if rec.Code != http.StatusForbidden || !strings.Contains(msg, ruleMuteAuthor) {
				t.Errorf("%d %q; want 403 naming %q", rec.Code, msg, ruleMuteAuthor)
			}
			if len(got) != 1 || !got[0].Until.Equal(first) || got[0].By != alice.ID {
				t.Errorf("mutes after the refusal %+v; want alice's, until %v", got, first)
			}
		})
	}
}

// TestPinnedRule: the machine's owner pins a rule; then no one else mutes
// it (admins and pool owners neither), the machine's owner still does;
// only the machine's owner pins, and a pin is published and kept.
func TestPinnedRule(t *testing.T) {
	m, st := mutingMachine()
	local := Caller{ID: selfID, Local: true}
	admin := Caller{ID: "PEER-carol", Role: RoleAdmin}
	soon := time.Now().Add(time.Hour)
	bob := Caller{ID: "PEER-bob", Role: RoleMember}
	if rec := callAs(m, bob, "POST", "/v1/alerts/mute", muteBody(selfID, RuleGPUTemp, nil, soon)); rec.Code != http.StatusOK {
		t.Fatalf("mute before the pin: %d %s", rec.Code, rec.Body)
	}
	if rec := callAs(m, admin, "PUT", "/v1/alerts/pins/"+RuleGPUTemp, `{"pinned":true}`); rec.Code != http.StatusForbidden {
		t.Errorf("an admin pins: %d %s; want 403", rec.Code, rec.Body)
	}
	if rec := callAs(m, local, "PUT", "/v1/alerts/pins/"+RuleGPUTemp, `{"pinned":true}`); rec.Code != http.StatusOK {
		t.Fatalf("the machine's owner pins: %d %s", rec.Code, rec.Body)
	}
	if len(st.pins) != 1 || st.pins[0] != RuleGPUTemp {
		t.Errorf("saved pins %v", st.pins)
	}
	if pub := st.published[len(st.published)-1]; len(pub.Pinned) != 1 {
		t.Errorf("published pins %v", pub.Pinned)
	}
	if got := m.Eval.Mutes(time.Now()); len(got) != 0 {
		t.Errorf("a pin left others' mutes of its rule: %+v", got)
	}
	for _, c := range []Caller{admin, {ID: "PEER-dave", Role: RoleOwner}, bob} {
		rec := callAs(m, c, "POST", "/v1/alerts/mute", muteBody(selfID, RuleGPUTemp, nil, soon))
		if _, msg := errorOf(t, rec); rec.Code != http.StatusForbidden || !strings.Contains(msg, ruleMutePinned) {
			t.Errorf("%s mutes a pinned rule: %d %q; want 403 naming %q", c.Role, rec.Code, msg, ruleMutePinned)
		}
	}
	if len(m.Eval.Mutes(time.Now())) != 0 {
		t.Fatalf("a pinned rule got muted: %+v", m.Eval.Mutes(time.Now()))
	}
	if rec := callAs(m, local, "POST", "/v1/alerts/mute", muteBody(selfID, RuleGPUTemp, nil, soon)); rec.Code != http.StatusOK {
		t.Errorf("the machine's owner mutes its pinned rule: %d %s", rec.Code, rec.Body)
	}
	// Kept: a machine restarted from its settings still refuses.
	m2, _ := mutingMachine()
	m2.RestoredPins(st.pins)
	if rec := callAs(m2, admin, "POST", "/v1/alerts/mute", muteBody(selfID, RuleGPUTemp, nil, soon)); rec.Code != http.StatusForbidden {
		t.Errorf("after a restart an admin mutes the pinned rule: %d", rec.Code)
	}
}
