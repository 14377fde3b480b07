package containers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/labpool/labpool/node/jobs"
)

// fakeImages is an ImageStore that records its calls; loadFn and pullFn
// answer loads and pulls.
type fakeImages struct {
	loadFn func(io.Reader, Rights, Progress) ([]string, error)
	pullFn func(string, bool, Progress) error

	mu    sync.Mutex // guards calls
	calls []string
}

func (f *fakeImages) call(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeImages) callList() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ",")
}

func (f *fakeImages) Images(context.Context) ([]Image, error) {
	f.call("Images")
	return []Image{{ID: "sha256:1", Tags: []string{"img:1"}, Size: 10}}, nil
}

func (f *fakeImages) LoadImage(_ context.Context, r io.Reader, rights Rights, p Progress) ([]string, error) {
	f.call("LoadImage force=" + map[bool]string{true: "true", false: "false"}[rights.Force])
	return f.loadFn(r, rights, p)
}

func (f *fakeImages) PullImage(_ context.Context, ref string, force bool, p Progress) error {
	f.call("PullImage " + ref)
	return f.pullFn(ref, force, p)
}

// imageServer serves the images API over imgs, who may load being the
// policy of a job manager of node "NODE"; the caller is in the request's
// X-Caller and X-Role headers.
func imageServer(t *testing.T, imgs ImageStore) *httptest.Server {
	t.Helper()
	m := jobs.NewManager(jobs.Config{Node: "NODE"}, nil, nil, nil, nil, discardLog())
	srv := httptest.NewServer(ImageHandler(imgs, m, func(r *http.Request) jobs.Caller {
		return jobs.Caller{ID: r.Header.Get("X-Caller"), Role: r.Header.Get("X-Role")}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func callImages(t *testing.T, srv *httptest.Server, who jobs.Caller, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-Caller", who.ID)
	req.Header.Set("X-Role", who.Role)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var alice = jobs.Caller{ID: "alice", Role: jobs.RoleMember}

func progressLines(t *testing.T, body string) []progressLine {
	t.Helper()
	var out []progressLine
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var p progressLine
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("progress line %q: %v", sc.Text(), err)
		}
		out = append(out, p)
	}
	return out
}

func TestHandlerImages(t *testing.T) {
	f := &fakeImages{}
	srv := imageServer(t, f)
	var imgs []Image
	if code, body := callImages(t, srv, alice, "GET", "/v1/images", ""); code != 200 || json.Unmarshal([]byte(body), &imgs) != nil || imgs[0].Tags[0] != "img:1" {
		t.Errorf("images: %d %s", code, body)
	}
	f.loadFn = func(r io.Reader, _ Rights, p Progress) ([]string, error) {
		b, _ := io.ReadAll(r)
		p(int64(len(b)), int64(len(b)), "loading")
		if string(b) != "TAR" {
			return nil, ErrBadArchive
		}
		return []string{"img:2"}, nil
	}
	_, body := callImages(t, srv, alice, "POST", "/v1/images/load", "TAR")
	ps := progressLines(t, body)
	if len(ps) != 2 || ps[0].Done != 3 || ps[1].Status != "loaded" || ps[1].Tags[0] != "img:2" {
		t.Errorf("load: %s", body)
	}
	_, body = callImages(t, srv, alice, "POST", "/v1/images/load", "garbage")
	if ps := progressLines(t, body); ps[len(ps)-1].Error == "" {
		t.Errorf("load of a corrupt archive: %s", body)
	}
	f.pullFn = func(ref string, _ bool, p Progress) error {
		p(1, 2, "pulling")
		if ref != "lab/img:1" {
			return errors.New("manifest unknown")
		}
		return nil
	}
	if _, body = callImages(t, srv, alice, "POST", "/v1/images/pull?ref=lab/img:1", ""); !strings.Contains(body, `"pulled lab/img:1"`) {
		t.Errorf("pull: %s", body)
	}
	if _, body = callImages(t, srv, alice, "POST", "/v1/images/pull?ref=lab/none:1", ""); !strings.Contains(body, `"error":"manifest unknown"`) {
		t.Errorf("pull of a missing image: %s", body)
	}
	if code, body := callImages(t, srv, alice, "POST", "/v1/images/pull?ref=UPPER/../x", ""); code != 400 || !strings.Contains(body, `image-ref`) {
		t.Errorf("pull of a bad reference: %d %s", code, body)
	}
}

// TestImagesWithoutEngine: a machine without Docker says so, with the
// jobs API's code.
func TestImagesWithoutEngine(t *testing.T) {
	var rt *Runtime
	srv := imageServer(t, rt)
	for _, r := range [][2]string{{"GET", "/v1/images"}, {"POST", "/v1/images/load"}, {"POST", "/v1/images/pull?ref=img:1"}} {
		if code, body := callImages(t, srv, alice, r[0], r[1], "TAR"); code != 503 || !strings.Contains(body, `"no_docker"`) {
			t.Errorf("%s %s without an engine = %d %s", r[0], r[1], code, body)
		}
	}
}

// TestViewersLoadNothing: a viewer (or a device of no role) cannot load or
// pull, and the refusal names the rule; force replaces tags for the
// machine's own user and owners only.
func TestViewersLoadNothing(t *testing.T) {
	f := &fakeImages{
		loadFn: func(io.Reader, Rights, Progress) ([]string, error) { return []string{"x:1"}, nil },
		pullFn: func(string, bool, Progress) error { return nil },
	}
	srv := imageServer(t, f)
	for _, tt := range []struct {
		who  jobs.Caller
		rule string
	}{{jobs.Caller{ID: "vera", Role: jobs.RoleViewer}, "viewers cannot launch jobs"}, {jobs.Caller{ID: "stranger"}, "members only"}} {
		for _, r := range [][2]string{{"POST", "/v1/images/load"}, {"POST", "/v1/images/pull?ref=img:1"}} {
			code, body := callImages(t, srv, tt.who, r[0], r[1], `TAR`)
			if code != 403 || !strings.Contains(body, `"code":"forbidden"`) || !strings.Contains(body, tt.rule+": ") {
				t.Errorf("%s %s %s = %d %s, want 403 %q", tt.who.ID, r[0], r[1], code, body, tt.rule)
			}
		}
	}
	if calls := f.callList(); strings.Contains(calls, "Load") || strings.Contains(calls, "Pull") {
		t.Errorf("refused callers reached the engine: %s", calls)
	}
	if code, body := callImages(t, srv, jobs.Caller{ID: "vera", Role: jobs.RoleViewer}, "GET", "/v1/images", ""); code != 200 {
		t.Errorf("a viewer lists images: %d %s", code, body)
	}
	for _, tt := range []struct {
		who  jobs.Caller
		want int
	}{{alice, 403}, {jobs.Caller{ID: "ada", Role: jobs.RoleAdmin}, 403}, {jobs.Caller{ID: "olga", Role: jobs.RoleOwner}, 200}, {jobs.Caller{ID: "NODE"}, 200}} {
		code, body := callImages(t, srv, tt.who, "POST", "/v1/images/load?force=1", "TAR")
		if code != tt.want {
			t.Errorf("%s (%s) forced load = %d %s, want %d", tt.who.ID, tt.who.Role, code, body, tt.want)
		}
	}
	if calls := f.callList(); !strings.Contains(calls, "LoadImage force=true") {
		t.Errorf("force did not reach the engine: %v", calls)
	}
}

// TestTagTakenSaysSo: the engine's refusal to move a tag reaches the
// client as the load's error line.
func TestTagTakenSaysSo(t *testing.T) {
	f := &fakeImages{loadFn: func(io.Reader, Rights, Progress) ([]string, error) {
		return nil, &TagTakenError{Tags: []string{"nvidia/cuda:12"}}
	}}
	srv := imageServer(t, f)
	_, body := callImages(t, srv, alice, "POST", "/v1/images/load", "TAR")
	if !strings.Contains(body, "image tag nvidia/cuda:12 already names another image on this machine; the machine's owner can replace it with --force") {
		t.Errorf("load: %s", body)
	}
}

// TestAnyNameOwnersOnly: a load may give names outside the loader's own
// prefix (a Docker Hub name, a registry host's) only for the machine's own
// user and the pool's owners; every load names its loader.
func TestAnyNameOwnersOnly(t *testing.T) {
	var got []Rights
	f := &fakeImages{loadFn: func(_ io.Reader, r Rights, _ Progress) ([]string, error) {
		got = append(got, r)
		return []string{"x:1"}, nil
	}}
	srv := imageServer(t, f)
	whos := []jobs.Caller{alice, {ID: "ada", Role: jobs.RoleAdmin}, {ID: "olga", Role: jobs.RoleOwner}, {ID: "NODE"}}
	for _, who := range whos {
		if code, body := callImages(t, srv, who, "POST", "/v1/images/load", "TAR"); code != 200 {
			t.Fatalf("%s load: %d %s", who.ID, code, body)
		}
	}
	want := []Rights{{Loader: alice.ID}, {Loader: "ada"}, {AnyName: true, Loader: "olga"}, {AnyName: true, Loader: "NODE"}}
	if !slices.Equal(got, want) {
		t.Errorf("rights %+v, want %+v", got, want)
	}
}
