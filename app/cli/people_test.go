package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/internal/httperr"
	"github.com/labpool/labpool/node/jobs"
)

// fakeAPI is a daemon's local API as far as the people verbs use it: one
// running job, a refusal to remove it without force, and shares that
// resolve "alice" only. It records what it was asked.
type fakeAPI struct {
	mu  sync.Mutex
	got []string // "METHOD path?query" or the share's members
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	job := app.Job{Job: jobs.Job{ID: "7e82623a8db42109", Name: "train", Node: "GPU1-AAAA", State: jobs.Running}, NodeName: "gpu1"}
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /api/v1/self", func(w http.ResponseWriter, r *http.Request) { reply(w, app.Self{ID: selfID, Name: "self"}) })
	mux.HandleFunc("GET /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) { reply(w, job) })
	mux.HandleFunc("DELETE /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.got = append(f.got, "DELETE "+r.URL.Path+"?"+r.URL.RawQuery)
		f.mu.Unlock()
		if r.URL.Query().Get("force") != "1" {
			httperr.Write(w, http.StatusConflict, "running", "remove train: a running job is removed only with force: it is running; stop it first, or remove it with --force (its work is lost)")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /api/v1/folders", func(w http.ResponseWriter, r *http.Request) {
		var req app.ShareRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.got = append(f.got, "share "+strings.Join(req.Members, ","))
		f.mu.Unlock()
		if len(req.Members) == 1 && req.Members[0] != "alice" {
			httperr.Write(w, http.StatusNotFound, "not_found", `share data: no member "`+req.Members[0]+`" in the pool (members: alice (ALIC-AAAA), self (SELF-AAAA))`)
			return
		}
		reply(w, app.Folder{Node: selfID, NodeName: "self", Name: req.Name, Mode: "rw", Members: []string{"ALIC-AAAA-FULL"}, MemberNames: []string{"alice"}})
	})
	mux.HandleFunc("PUT /api/v1/folders/{name}/members", func(w http.ResponseWriter, r *http.Request) {
		var req app.FolderMembersRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		ask := "members " + r.PathValue("name") + " " + strings.Join(req.Members, ",")
		if req.Node != "" || len(req.Add)+len(req.Remove) > 0 {
			ask += " node=" + req.Node + " +" + strings.Join(req.Add, ",") + " -" + strings.Join(req.Remove, ",")
		}
		f.got = append(f.got, ask)
		f.mu.Unlock()
		folder := app.Folder{Node: selfID, NodeName: "self", Name: r.PathValue("name"), Mode: "ro"}
		if len(req.Members) > 0 {
			folder.Members, folder.MemberNames = []string{"ALIC-AAAA-FULL"}, []string{"alice"}
		}
		reply(w, folder)
	})
	return mux
}

func startFakeAPI(t *testing.T, dir string) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	ln, err := net.Listen("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, f.handler())
	return f
}

// TestRmRunningJob: rm without --force shows the machine's refusal (the
// rule and how) and fails; --force asks with force and says what it removed,
// by name, or as JSON with the full ID.
func TestRmRunningJob(t *testing.T) {
	dir := t.TempDir()
	f := startFakeAPI(t, dir)
	code, out, errOut := run(t, Hooks{}, "--data", dir, "rm", "train")
	if code != ExitFailure || !strings.Contains(errOut, "--force") || !strings.Contains(errOut, "removed only with force") || out != "" {
		t.Errorf("rm of a running job: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = run(t, Hooks{}, "--data", dir, "rm", "--force", "train")
	if code != ExitOK || out != "Removed train on gpu1.\n" {
		t.Errorf("rm --force: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = run(t, Hooks{}, "--data", dir, "rm", "-f", "--json", "train")
	var rm struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Forced bool   `json:"forced"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &rm) != nil || rm.ID != "7e82623a8db42109" || rm.Name != "train" || !rm.Forced {
		t.Errorf("rm -f --json: exit %d %q", code, out)
	}
	want := []string{"DELETE /api/v1/jobs/GPU1-AAAA/7e82623a8db42109?", "DELETE /api/v1/jobs/GPU1-AAAA/7e82623a8db42109?force=1", "DELETE /api/v1/jobs/GPU1-AAAA/7e82623a8db42109?force=1"}
	if strings.Join(f.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("asked %q, want %q", f.got, want)
	}
}

// TestShareMembersByName: share --members passes the names as given (the
// daemon resolves them), says who the folder is for by name, and shows the
// daemon's refusal of an unknown name; --rw says which user jobs write as.
func TestShareMembersByName(t *testing.T) {
	dir := t.TempDir()
	f := startFakeAPI(t, dir)
	data := t.TempDir()
	code, out, errOut := run(t, Hooks{}, "--data", dir, "share", "--rw", "--members", "alice", "data", data)
	if code != ExitOK || !strings.Contains(out, "for alice") || strings.Contains(out, "ALIC-AAAA-FULL") {
		t.Errorf("share --members alice: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "writes as") {
		t.Errorf("share --rw said nothing of the user jobs write as: %q", errOut)
	}
	code, out, _ = run(t, Hooks{}, "--data", dir, "share", "--json", "--members", "alice", "data", data)
	if code != ExitOK || !strings.Contains(out, `"members": [`) || !strings.Contains(out, "ALIC-AAAA-FULL") {
		t.Errorf("share --json: exit %d %q", code, out)
	}
	code, _, errOut = run(t, Hooks{}, "--data", dir, "share", "--members", "laptop", "data", data)
	if code != ExitFailure || !strings.Contains(errOut, `no member "laptop"`) || !strings.Contains(errOut, "alice (ALIC-AAAA)") {
		t.Errorf("share to an unknown member: exit %d %q", code, errOut)
	}
	if got := strings.Join(f.got, "|"); got != "share alice|share alice|share laptop" {
		t.Errorf("asked %q", got)
	}
}

// TestShareChangesMembers: share NAME without PATH changes who may use it
// (--members, or --every-member), and refuses to guess otherwise.
func TestShareChangesMembers(t *testing.T) {
	dir := t.TempDir()
	f := startFakeAPI(t, dir)
	code, out, errOut := run(t, Hooks{}, "--data", dir, "share", "data", "--members", "alice")
	if code != ExitOK || out != "self:data is for alice\n" {
		t.Errorf("share data --members alice: exit %d %q %q", code, out, errOut)
	}
	code, out, errOut = run(t, Hooks{}, "--data", dir, "share", "data", "--every-member")
	if code != ExitOK || out != "self:data is for every member\n" {
		t.Errorf("share data --every-member: exit %d %q %q", code, out, errOut)
	}
	// From any machine, on the one that holds it, adding and removing.
	code, out, errOut = run(t, Hooks{}, "--data", dir, "share", "ws-a100:datasets", "--add-members", "alice,carol", "--remove-members", "bob")
	if code != ExitOK || out != "self:datasets is for every member\n" {
		t.Errorf("share ws-a100:datasets --add-members …: exit %d %q %q", code, out, errOut)
	}
	for _, args := range [][]string{{"share", "data"}, {"share", "data", "--rw", "--members", "alice"}, {"share", "data", "--every-member", "--members", "alice"},
		{"share", "data", "--members", "alice", "--add-members", "bob"}, {"share", "data", "--every-member", "--remove-members", "bob"},
		{"share", "ws-a100:data", "/tmp", "--rw"}, {"share", "data", "/tmp", "--add-members", "bob"}} {
		if code, _, errOut := run(t, Hooks{}, append([]string{"--data", dir}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d %q, want a usage error", args, code, errOut)
		}
	}
	if got := strings.Join(f.got, "|"); got != "members data alice|members data |members datasets  node=ws-a100 +alice,carol -bob" {
		t.Errorf("asked %q", got)
	}
}
