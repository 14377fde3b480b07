package jobs

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestCommandLineWithheld: a job's command line (tokens often live there)
// reaches its owner, admins, owners and the machine's own user only; the
// replicated record never holds it, and the machine keeps it to restart
// the job after an agent restart.
func TestCommandLineWithheld(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m := newTestManager(t, rt, 0, st)
	srv := trustServer(t, m)
	cmd := []string{"python", "train.py", "--token", "s3cret"}
	code, body := call(t, srv, peer("alice"), "POST", "/v1/jobs", `{"image":"img","cmd":["python","train.py","--token","s3cret"]}`)
	var j Job
	if code != 200 || json.Unmarshal([]byte(body), &j) != nil || !slices.Equal(j.Spec.Cmd, cmd) {
		t.Fatalf("launch: %d %s", code, body)
	}
	for _, tt := range []struct {
		who  Caller
		sees bool
	}{
		{peer("alice"), true}, {admin("ada"), true}, {Caller{ID: "olga", Role: RoleOwner}, true}, {Caller{ID: "NODE"}, true},
		{member("bob"), false}, {viewer("vera"), false},
	} {
		_, one := call(t, srv, tt.who, "GET", "/v1/jobs/"+j.ID, "")
		_, list := call(t, srv, tt.who, "GET", "/v1/jobs", "")
		for _, got := range []string{one, list} {
			if has := strings.Contains(got, "s3cret"); has != tt.sees || !tt.sees && !strings.Contains(got, `"cmd_withheld":true`) {
				t.Errorf("%s (%s) read %s; want the command line shown: %v, else marked withheld", tt.who.ID, tt.who.Role, got, tt.sees)
			}
		}
	}
	if saved := st.job(j.ID); len(saved.Spec.Cmd) != 0 || !saved.CmdWithheld {
		t.Errorf("the replicated record holds %v (withheld %v)", saved.Spec.Cmd, saved.CmdWithheld)
	}
	if p, _ := st.LoadPrivate(j.ID); !slices.Equal(p.Cmd, cmd) {
		t.Errorf("the machine kept %v, want %v", p.Cmd, cmd)
	}
	// A restarted agent reads it back from its own state.
	m2 := newTestManager(t, rt, 0, st)
	if got, err := m2.Get(j.ID); err != nil || !slices.Equal(got.Spec.Cmd, cmd) {
		t.Errorf("after a restart: %v, %v; want the command line back", got.Spec.Cmd, err)
	}
}
