package alerts

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// mutingMachine is a machine with GPU 0 seen, whose pool has the members
// named PEER-...
func mutingMachine() (*Machine, *fakeSettings) {
	m, st := newMachine()
	m.Member = func(id string) bool { return strings.HasPrefix(id, "PEER-") }
	m.Eval.Evaluate(Reading{Time: time.Now(), GPUs: []GPUReading{{Index: 0, UUID: "GPU-a", TempC: 40}}})
	return m, st
}

func muteBody(node, rule string, gpu *int, until time.Time) string {
	b, _ := json.Marshal(Mute{Node: node, Rule: rule, GPU: gpu, Until: until})
	return string(b)
}

// TestMuteChecks: a node checks every mute it is asked for, whoever asks;
// a refusal names its rule and changes nothing.
func TestMuteChecks(t *testing.T) {
	soon := time.Now().Add(time.Hour)
	zero, seven := 0, 7
	tests := []struct {
		name string
		body string
		rule string // "" = taken
	}{
		{"this machine, an hour", muteBody(selfID, RuleGPUTemp, &zero, soon), ""},
		{"no node: this machine", muteBody("", RuleGPUTemp, nil, soon), ""},
		{"30 days", muteBody(selfID, RuleGPUTemp, nil, time.Now().Add(30*24*time.Hour)), ""},
		{"expiry 9999", muteBody(selfID, RuleGPUTemp, nil, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)), ruleMuteExpiry},
		{"expiry 31 days", muteBody(selfID, RuleGPUTemp, nil, time.Now().Add(31*24*time.Hour)), ruleMuteExpiry},
		{"another machine", muteBody("OTHER-BBBB", RuleGPUTemp, nil, soon), ruleMuteMachine},
		{"a 60 KB node", muteBody(strings.Repeat("N", 60<<10), RuleGPUTemp, nil, soon), ruleMuteMachine},
		{"a GPU this machine lacks", muteBody(selfID, RuleGPUTemp, &seven, soon), ruleMuteGPU},
		{"offline of a member", muteBody("PEER-1", RuleOffline, nil, soon), ""},
		{"offline of a stranger", muteBody("STRANGER", RuleOffline, nil, soon), ruleMuteMachine},
		{"offline with a GPU", muteBody("PEER-1", RuleOffline, &zero, soon), ruleMuteGPU},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, st := mutingMachine()
			rec := call(t, m, RoleMember, "POST", "/v1/alerts/mute", tt.body)
			if tt.rule == "" {
				if rec.Code != http.StatusOK || len(st.mutes) != 1 {
					t.Fatalf("%d %s; saved %+v; want taken", rec.Code, rec.Body, st.mutes)
				}
				return
			}
			_, msg := errorOf(t, rec)
			if rec.Code != http.StatusBadRequest || !strings.HasPrefix(msg, "refused: ") || !strings.HasSuffix(msg, "(rule: "+tt.rule+")") {
				t.Errorf("%d %q; want 400 naming rule %q", rec.Code, msg, tt.rule)
			}
			if len(st.mutes) != 0 || len(st.published) != 0 || len(m.Eval.Mutes(time.Now())) != 0 {
				t.Errorf("a refused mute changed the mutes: saved %+v", st.mutes)
			}
		})
	}
}

// TestMuteFloodStaysUnderCap: a machine keeps at most maxMutes mutes, a
// new one past them is refused (the same one again still changes its
// expiry), and the published state stays under alert.rules's cap
// (sync/schema: 64 KiB) whatever members ask.
func TestMuteFloodStaysUnderCap(t *testing.T) {
	m, st := mutingMachine()
	until := time.Now().Add(29 * 24 * time.Hour)
	long := "PEER-" + strings.Repeat("x", maxMuteNode-len("PEER-")-4)
	for i := range maxMutes {
		rec := call(t, m, RoleMember, "POST", "/v1/alerts/mute", muteBody(fmt.Sprintf("%s%04d", long, i), RuleOffline, nil, until))
		if rec.Code != http.StatusOK {
			t.Fatalf("mute %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec := call(t, m, RoleMember, "POST", "/v1/alerts/mute", muteBody("PEER-one-more", RuleOffline, nil, until))
	if _, msg := errorOf(t, rec); rec.Code != http.StatusBadRequest || !strings.HasSuffix(msg, "(rule: "+ruleMuteCount+")") {
		t.Fatalf("mute %d: %d %q; want refused naming rule %q", maxMutes+1, rec.Code, msg, ruleMuteCount)
	}
	rec = call(t, m, RoleMember, "POST", "/v1/alerts/mute", muteBody(fmt.Sprintf("%s%04d", long, 0), RuleOffline, nil, until.Add(time.Hour)))
	if rec.Code != http.StatusOK {
		t.Fatalf("the same mute again: %d %s", rec.Code, rec.Body)
	}
	if n := len(m.Eval.Mutes(time.Now())); n != maxMutes {
		t.Errorf("%d mutes; want %d", n, maxMutes)
	}
	b, _ := json.Marshal(st.published[len(st.published)-1])
	if len(b) > 64<<10 {
		t.Errorf("published state of %d bytes; want under alert.rules's cap of 64 KiB", len(b))
	}
}

// TestRestoredMutesChecked: mutes kept from before the checks (until 9999,
// other machines, past the count) are checked again when read back.
func TestRestoredMutesChecked(t *testing.T) {
	m, _ := mutingMachine()
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	var kept []Mute
	for i := range 150 {
		kept = append(kept, Mute{Node: fmt.Sprintf("PEER-%d", i), Rule: RuleOffline, Until: far})
	}
	kept = append(kept, Mute{Node: strings.Repeat("N", 60<<10), Rule: RuleGPUTemp, Until: far})
	m.RestoredMutes(kept)
	got := m.Eval.Mutes(time.Now())
	if len(got) != maxMutes {
		t.Errorf("%d mutes restored; want %d", len(got), maxMutes)
	}
	for _, mu := range got {
		if mu.Until.After(time.Now().Add(maxMuteFor)) || len(mu.Node) > maxMuteNode {
			t.Fatalf("restored %+v: want within 30 days, a member's ID", mu)
		}
	}
}
