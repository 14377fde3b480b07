package jobs

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders"
)

// trustServer serves a manager's API; the caller is named by the X-Owner
// and X-Role headers.
func trustServer(t *testing.T, m *Manager) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(Handler(m, func(r *http.Request) Caller {
		return Caller{ID: r.Header.Get("X-Owner"), Role: r.Header.Get("X-Role")}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// peers holds the launch signers of the members peer made, by device ID.
var peers sync.Map

// peer is a member's device named name (its key derives from the name): a
// launch call makes as that caller carries its signature, as a peer's does.
func peer(name string) Caller {
	seed := sha256.Sum256([]byte(name))
	priv := ed25519.NewKeyFromSeed(seed[:])
	pub := priv.Public().(ed25519.PublicKey)
	id := folders.DeviceID(pub)
	peers.Store(id, LaunchSigner{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(priv, m) }})
	return member(id)
}

// call sends a request as c; a launch (POST /v1/jobs) of a caller made by
// peer carries its proof for the spec of body on NODE.
func call(t *testing.T, srv *httptest.Server, c Caller, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-Owner", c.ID)
	req.Header.Set("X-Role", c.Role)
	if s, ok := peers.Load(c.ID); ok && method == "POST" && path == "/v1/jobs" {
		spec, err := DecodeSpec(strings.NewReader(body))
		if err != nil {
			t.Fatalf("sign a launch: %v", err)
		}
		proof, err := s.(LaunchSigner).Prove("NODE", spec)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(ProofHeader, proof)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSecondMemberRefusedOnAnothersJob: bob, a member, can neither stop,
// remove, read the logs or stats of, nor tunnel into alice's job; an admin,
// an owner and the machine's own user can.
func TestSecondMemberRefusedOnAnothersJob(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 0, &memStore{})
	srv := trustServer(t, m)
	alice, bob := peer("alice"), member("bob")
	launch := func() Job {
		code, body := call(t, srv, alice, "POST", "/v1/jobs", `{"image":"img","ports":[8080]}`)
		var j Job
		if code != 200 || json.Unmarshal([]byte(body), &j) != nil {
			t.Fatalf("launch: %d %s", code, body)
		}
		return j
	}
	j := launch()
	actions := []struct{ method, path string }{
		{"POST", "/v1/jobs/" + j.ID + "/stop"},
		{"DELETE", "/v1/jobs/" + j.ID},
		{"GET", "/v1/jobs/" + j.ID + "/logs"},
		{"GET", "/v1/jobs/" + j.ID + "/stats"},
		{"POST", "/v1/jobs/" + j.ID + "/tunnel?port=8080"},
		{"GET", "/v1/jobs/" + j.ID + "/access"},
	}
	for _, who := range []Caller{bob, viewer("vera"), {ID: "stranger"}} {
		for _, a := range actions {
			code, body := call(t, srv, who, a.method, a.path, "")
			var e struct{ Code, Message string }
			json.Unmarshal([]byte(body), &e)
			if code != 403 || e.Code != "forbidden" || !strings.HasPrefix(e.Message, "only a job's owner, admins and owners act on it: ") {
				t.Errorf("%s (%s) %s %s = %d %s, want 403 forbidden naming the rule", who.ID, who.Role, a.method, a.path, code, body)
			}
		}
	}
	if j, _ := m.Get(j.ID); j.State != Running || strings.Contains(strings.Join(rt.callList(), ","), "Stop") {
		t.Fatalf("a refused caller reached the job: %s, calls %v", j.State, rt.callList())
	}
	// Those who may.
	for _, who := range []Caller{alice, admin("ada"), {ID: "olga", Role: RoleOwner}, {ID: "NODE"}} {
		j := launch()
		for _, p := range []string{"/logs", "/stats", "/access"} {
			if code, body := call(t, srv, who, "GET", "/v1/jobs/"+j.ID+p, ""); code != 200 && code != 204 {
				t.Errorf("%s (%s) %s = %d %s", who.ID, who.Role, p, code, body)
			}
		}
		if code, body := call(t, srv, who, "POST", "/v1/jobs/"+j.ID+"/stop", ""); code != 200 {
			t.Errorf("%s (%s) stop = %d %s", who.ID, who.Role, code, body)
		}
		if code, body := call(t, srv, who, "DELETE", "/v1/jobs/"+j.ID, ""); code != 204 {
			t.Errorf("%s (%s) remove = %d %s", who.ID, who.Role, code, body)
		}
	}
}

// TestEnvOnlyToItsOwner: everyone sees that a job exists; its Env values
// reach its owner (and the machine's own user) only, and never the
// replicated record.
func TestEnvOnlyToItsOwner(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m := newTestManager(t, rt, 0, st)
	srv := trustServer(t, m)
	alice := peer("alice")
	code, body := call(t, srv, alice, "POST", "/v1/jobs", `{"image":"img","env":["TOKEN=secret"]}`)
	var j Job
	if code != 200 || json.Unmarshal([]byte(body), &j) != nil {
		t.Fatalf("launch: %d %s", code, body)
	}
	if l := rt.lastLaunch(); !strings.Contains(strings.Join(l.Env, " "), "TOKEN=secret") {
		t.Errorf("the container lacks its env: %v", l.Env)
	}
	for _, who := range []Caller{member("bob"), admin("ada"), viewer("vera")} {
		for _, p := range []string{"/v1/jobs", "/v1/jobs/" + j.ID} {
			code, body := call(t, srv, who, "GET", p, "")
			if code != 200 || strings.Contains(body, "secret") || !strings.Contains(body, j.ID) || !strings.Contains(body, `"owner":"`+alice.ID+`"`) {
				t.Errorf("%s (%s) GET %s = %d %s", who.ID, who.Role, p, code, body)
			}
		}
	}
	for _, who := range []Caller{alice, {ID: "NODE"}} {
		if _, body := call(t, srv, who, "GET", "/v1/jobs/"+j.ID, ""); !strings.Contains(body, "TOKEN=secret") {
			t.Errorf("%s does not see its job's env: %s", who.ID, body)
		}
	}
	rec, _ := json.Marshal(st.job(j.ID))
	if strings.Contains(string(rec), "secret") || !strings.Contains(string(rec), j.ID) {
		t.Errorf("replicated record %s", rec)
	}
	// A restarted agent gets the env back from local state (a queued job
	// needs it to start).
	m2 := NewManager(DefaultConfig(), rt, fixedGPUs(nil), nil, st, testLog())
	if err := m2.load(); err != nil {
		t.Fatal(err)
	}
	if j2, _ := m2.Get(j.ID); strings.Join(j2.Spec.Env, ",") != "TOKEN=secret" {
		t.Errorf("reloaded env %v", j2.Spec.Env)
	}
	if code, body := call(t, srv, alice, "DELETE", "/v1/jobs/"+j.ID, ""); code != 409 || !strings.Contains(body, `"running"`) || !strings.Contains(body, "--force") {
		t.Fatalf("remove of a running job without force: %d %s", code, body)
	}
	if code, _ := call(t, srv, alice, "DELETE", "/v1/jobs/"+j.ID+"?force=1", ""); code != 204 {
		t.Fatal("remove")
	}
	if p, _ := st.LoadPrivate(j.ID); p.Env != nil {
		t.Errorf("a removed job's env stayed: %v", p.Env)
	}
}

// TestViewersLaunchNothing: a viewer (or a device of no role) cannot
// launch, and the refusal names the rule (loads and pulls:
// containers.TestViewersLoadNothing).
func TestViewersLaunchNothing(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 0, &memStore{})
	srv := trustServer(t, m)
	for _, tt := range []struct {
		who  Caller
		rule string
	}{{viewer("vera"), "viewers cannot launch jobs"}, {Caller{ID: "stranger"}, "members only"}} {
		for _, r := range [][2]string{{"POST", "/v1/jobs"}} {
			code, body := call(t, srv, tt.who, r[0], r[1], `{"image":"img"}`)
			if code != 403 || !strings.Contains(body, `"code":"forbidden"`) || !strings.Contains(body, tt.rule+": ") {
				t.Errorf("%s %s %s = %d %s, want 403 %q", tt.who.ID, r[0], r[1], code, body, tt.rule)
			}
		}
	}
	if calls := strings.Join(rt.callList(), ","); strings.Contains(calls, "Start") {
		t.Errorf("refused callers reached the executor: %s", calls)
	}
}

// TestPolicy: the machine's policy refuses with the rule's name.
func TestPolicy(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 4, &memStore{})
	ctx := context.Background()
	set := func(fn func(*Policy)) {
		t.Helper()
		p := m.Policy()
		fn(&p)
		if err := m.SetPolicy(p); err != nil {
			t.Fatal(err)
		}
	}
	forbidden := func(err error, rule string) {
		t.Helper()
		var re *RefusedError
		if !errors.As(err, &re) || !re.Forbidden || re.Rule != rule || !strings.HasPrefix(err.Error(), rule+": ") {
			t.Errorf("got %v, want a refusal by %q", err, rule)
		}
	}
	set(func(p *Policy) { p.Launch = LaunchAdmins })
	_, err := m.Submit(ctx, member("bob"), Spec{Image: "img"})
	forbidden(err, "policy launch=admins")
	if err.Error() != "policy launch=admins: only admins and owners launch on this machine" {
		t.Errorf("message %q", err)
	}
	if _, err := m.Submit(ctx, admin("ada"), Spec{Image: "img"}); err != nil {
		t.Errorf("an admin under launch=admins: %v", err)
	}
	set(func(p *Policy) { p.Launch = LaunchNobody })
	for _, c := range []Caller{member("bob"), admin("ada"), {ID: "olga", Role: RoleOwner}} {
		_, err := m.Submit(ctx, c, Spec{Image: "img"})
		forbidden(err, "policy launch=nobody")
	}
	if _, err := m.Submit(ctx, Caller{ID: "NODE"}, Spec{Image: "img"}); err != nil {
		t.Errorf("the machine's own user under launch=nobody: %v", err)
	}

	set(func(p *Policy) { p.Launch, p.MaxGPUsPerMember = LaunchMembers, 2 })
	if _, err := m.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1, Queue: true}); err != nil {
		t.Fatal(err)
	}
	_, err = m.Submit(ctx, member("bob"), Spec{Image: "img", GPUs: 1, Queue: true})
	forbidden(err, "policy max-gpus-per-member=2")
	if err != nil && !strings.Contains(err.Error(), "bob holds 2 GPUs here (queued and running) and asks for 1 more") {
		t.Errorf("message %q", err)
	}
	if _, err := m.Submit(ctx, member("carol"), Spec{Image: "img", GPUIDs: []int{2, 3}}); err != nil {
		t.Errorf("another member's own share: %v", err)
	}

	set(func(p *Policy) { p.DefaultMemoryBytes, p.MaxMemoryBytes = 1<<30, 4<<30 })
	j, err := m.Submit(ctx, member("dan"), Spec{Image: "img"})
	if err != nil || j.Spec.MemoryBytes != 1<<30 || rt.lastLaunch().Resources.MemoryBytes != 1<<30 || rt.lastLaunch().Container.LogMaxBytes != 64<<20 {
		t.Errorf("default memory: %v, %d, launch %+v", err, j.Spec.MemoryBytes, rt.lastLaunch())
	}
	if _, err := m.Submit(ctx, member("dan"), Spec{Image: "img", MemoryBytes: 4 << 30}); err != nil || rt.lastLaunch().Resources.MemoryBytes != 4<<30 {
		t.Errorf("memory up to the max: %v", err)
	}
	_, err = m.Submit(ctx, member("dan"), Spec{Image: "img", MemoryBytes: 5 << 30})
	forbidden(err, "policy max-memory")

	for _, bad := range []Policy{{Launch: "everyone"}, {Launch: LaunchMembers, MaxGPUsPerMember: -1}} {
		p := m.Policy()
		p.Launch, p.MaxGPUsPerMember = bad.Launch, bad.MaxGPUsPerMember
		if err := m.SetPolicy(p); err == nil {
			t.Errorf("SetPolicy(%+v) accepted", bad)
		}
	}
	p := m.Policy()
	p.JobUser = "0:0"
	if err := m.SetPolicy(p); err == nil {
		t.Error("a root job user accepted")
	}
}

// TestJobUser: without userns-remap a job runs as the policy's user, or
// as the owner of its read-write folder; root needs the policy.
func TestJobUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown a folder")
	}
	dir := t.TempDir()
	if err := os.Chown(dir, 1000, 1001); err != nil {
		t.Fatal(err)
	}
	rt := newFakeRuntime()
	m := startManager(t, rt, fixedGPUs(nil), &memStore{}, dirFolders{"data": dir})
	ctx := context.Background()
	if _, err := m.Submit(ctx, member("bob"), Spec{Image: "img"}); err != nil || rt.lastLaunch().Container.User != "65534:65534" || rt.lastLaunch().Container.AllowRoot {
		t.Errorf("default user: %v %+v", err, rt.lastLaunch())
	}
	if _, err := m.Submit(ctx, member("bob"), Spec{Image: "img", Mounts: []Mount{{Folder: "data", Target: "/d", ReadWrite: true}}}); err != nil || rt.lastLaunch().Container.User != "1000:1001" {
		t.Errorf("share owner: %v %q", err, rt.lastLaunch().Container.User)
	}
	// The one rule: the job's user is the folder user copies write as.
	if o, err := folders.FolderUser(dir, m.Policy().JobUser); err != nil || rt.lastLaunch().Container.User != fmt.Sprintf("%d:%d", o.UID, o.GID) {
		t.Errorf("the job runs as %q; the folder user is %+v, %v", rt.lastLaunch().Container.User, o, err)
	}
	if _, err := m.Submit(ctx, member("bob"), Spec{Image: "img", Mounts: []Mount{{Folder: "data", Target: "/d"}}}); err != nil || rt.lastLaunch().Container.User != "65534:65534" {
		t.Errorf("read-only share: %v %q", err, rt.lastLaunch().Container.User)
	}
	_, err := m.Submit(ctx, member("bob"), Spec{Image: "img", ContainerSpec: ContainerSpec{User: "root"}})
	var re *RefusedError
	if !errors.As(err, &re) || re.Rule != "policy allow-root=false" {
		t.Errorf("root: %v", err)
	}
	if _, err := m.Submit(ctx, member("bob"), Spec{Image: "img", ContainerSpec: ContainerSpec{User: "1234"}}); !errors.As(err, &re) || re.Rule != "job-user" {
		t.Errorf("a chosen uid: %v", err)
	}
	p := m.Policy()
	p.AllowRoot = true
	m.SetPolicy(p)
	if _, err := m.Submit(ctx, member("bob"), Spec{Image: "img", ContainerSpec: ContainerSpec{User: "root"}}); err != nil || rt.lastLaunch().Container.User != "root" || !rt.lastLaunch().Container.AllowRoot {
		t.Errorf("root allowed: %v %+v", err, rt.lastLaunch())
	}
	p.AllowRoot = false
	m.SetPolicy(p)
	rt.remap = true
	if _, err := m.Submit(ctx, member("bob"), Spec{Image: "img", ContainerSpec: ContainerSpec{User: "root"}}); err != nil || rt.lastLaunch().Container.User != "root" || rt.lastLaunch().Container.AllowRoot {
		t.Errorf("root where the engine remaps users: %v %+v", err, rt.lastLaunch())
	}
}

type dirFolders map[string]string

func (f dirFolders) ResolveFor(name, member string, rw bool) (string, error) {
	d, ok := f[name]
	if !ok {
		return "", errors.New("no such folder")
	}
	return d, nil
}

// TestEvict: a removed member's queued jobs are cancelled and running ones
// stopped at once, records kept; others' jobs run on.
func TestEvict(t *testing.T) {
	rt := newFakeRuntime()
	st := &memStore{}
	m := newTestManager(t, rt, 1, st)
	ctx := context.Background()
	run, err := m.Submit(ctx, member("mallory"), Spec{Image: "img", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := m.Submit(ctx, member("mallory"), Spec{Image: "img", GPUs: 1, Queue: true})
	other, _ := m.Submit(ctx, member("alice"), Spec{Image: "img"})
	waiting, _ := m.Submit(ctx, member("alice"), Spec{Image: "img", GPUs: 1, Queue: true})
	start := time.Now()
	cancelled, stopped, err := m.Evict(ctx, "mallory")
	if err != nil || cancelled != 1 || stopped != 1 {
		t.Fatalf("Evict = %d, %d, %v", cancelled, stopped, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Evict took %v", d)
	}
	for _, id := range []string{run.ID, q.ID} {
		j, err := m.Get(id)
		if err != nil || j.State != Exited || j.Error != "owner removed from the pool" || j.Finished == nil {
			t.Errorf("mallory's job %s: %+v %v", id, j, err)
		}
		if st.job(id).Error != "owner removed from the pool" {
			t.Errorf("record of %s: %+v", id, st.job(id))
		}
	}
	if j, _ := m.Get(other.ID); j.State != Running {
		t.Errorf("alice's job: %s", j.State)
	}
	waitState(t, m, waiting.ID, Running) // the freed GPU goes to the next in line
	if c, s, err := m.Evict(ctx, "mallory"); c != 0 || s != 0 || err != nil {
		t.Errorf("Evict again = %d, %d, %v", c, s, err)
	}
}
