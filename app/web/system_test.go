//go:build linux

package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestAdminsAdmits(t *testing.T) {
	a := Admins{UID: 990, GID: 990, GroupName: "labpool"}
	for _, tc := range []struct {
		name string
		peer Peer
		want bool
	}{
		{"root", Peer{UID: 0, GID: 0}, true},
		{"the agent's own user", Peer{UID: 990, GID: 100}, true},
		{"primary group labpool", Peer{UID: 1000, GID: 990}, true},
		{"supplementary group labpool", Peer{UID: 1000, GID: 1000, Groups: []uint32{27, 990}}, true},
		{"other groups only", Peer{UID: 1000, GID: 1000, Groups: []uint32{27, 100}}, false},
		{"no groups", Peer{UID: 1000, GID: 1000}, false},
		{"root's group is not root", Peer{UID: 1000, GID: 0}, false},
	} {
		if got := a.Admits(tc.peer); got != tc.want {
			t.Errorf("%s: Admits(%+v) = %v, want %v", tc.name, tc.peer, got, tc.want)
		}
	}
}

func TestRequireAdminWithoutCredentials(t *testing.T) {
	a := Admins{GID: 990, GroupName: "labpool"}
	h := RequireAdmin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("served a call without credentials") }), a)
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, mustRequest(t))
	if rec.status != http.StatusForbidden || !strings.Contains(rec.body.String(), `"not_admin"`) {
		t.Fatalf("got %d %s, want 403 not_admin", rec.status, rec.body.String())
	}
}

type recorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(s int)           { r.status = s }

func mustRequest(t *testing.T) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, "http://labpool/api/v1/self", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dialHelperEnv makes this test binary, re-run as another user, call the
// socket it names and print the status and body (or "dial: ERR").
const dialHelperEnv = "LABPOOL_TEST_DIAL_SOCKET"

func TestHelperDial(t *testing.T) {
	sock := os.Getenv(dialHelperEnv)
	if sock == "" {
		t.Skip("run by TestSystemSocketPeers as another user")
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Printf("dial: %v\n", errors.Unwrap(errors.Unwrap(err)))
		return
	}
	hc := http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return c, nil }}}
	resp, err := hc.Get("http://labpool/api/v1/self")
	if err != nil {
		fmt.Printf("get: %v\n", err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s\n", resp.StatusCode, b)
}

// TestSystemSocketPeers connects to a system socket as other users, made
// by the kernel (a copy of this test binary run with their credentials):
// the socket's mode keeps strangers out, and when its mode is widened
// (by hand, or in the instant between listen and chmod) the credential
// check still refuses them, naming the group.
func TestSystemSocketPeers(t *testing.T) {
	if os.Geteuid() != 0 || runtime.GOOS != "linux" {
		t.Skip("needs root on Linux to connect as other users")
	}
	const group, nobody = 4242, 65534
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // t.TempDir's are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "web.test")
	copyFile(t, exe)

	for _, tc := range []struct {
		name   string
		widen  bool // chmod 0666 after ListenSystem
		uid    uint32
		gid    uint32
		groups []uint32
		want   string // prefix of the helper's answer
	}{
		{"root", false, 0, 0, nil, "200 "},
		{"a member by supplementary group", false, nobody, nobody, []uint32{100, group}, "200 "},
		{"a member by primary group", false, nobody, group, nil, "200 "},
		{"a stranger, kept out by the mode", false, nobody, nobody, []uint32{100}, "dial: permission denied"},
		{"a stranger on a widened socket, refused by credentials", true, nobody, nobody, []uint32{100}, `403 {"code":"not_admin"`},
		{"a member on a widened socket", true, nobody, nobody, []uint32{group}, "200 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(dir, "run", "labpool.sock")
			l, err := ListenSystem(sock, group)
			if err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(sock)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o660 || st.Sys().(*syscall.Stat_t).Gid != group {
				t.Fatalf("socket mode %v gid %d, want 0660 and %d", st.Mode().Perm(), st.Sys().(*syscall.Stat_t).Gid, group)
			}
			if tc.widen {
				os.Chmod(sock, 0o666)
			}
			a := Admins{UID: 990, GID: group, GroupName: "labpool"}
			srv := &http.Server{ConnContext: PeerContext, Handler: RequireAdmin(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "{}")
			}), a)}
			go srv.Serve(l)
			defer srv.Close()

			cmd := exec.Command(exe, "-test.run=^TestHelperDial$")
			cmd.Env = []string{dialHelperEnv + "=" + sock}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tc.uid, Gid: tc.gid, Groups: tc.groups}}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper as uid %d: %v\n%s", tc.uid, err, out)
			}
			got := strings.SplitN(string(out), "\n", 2)[0]
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("as uid %d gid %d groups %v: got %q, want %q...", tc.uid, tc.gid, tc.groups, got, tc.want)
			}
			if strings.HasPrefix(tc.want, "403") && !strings.Contains(got, "adduser YOUR_USER labpool") {
				t.Fatalf("the refusal does not say how to join the group: %q", got)
			}
		})
	}
}

// TestListenSystemRefusesALiveSocket: a second agent never takes over the
// socket of one that answers.
func TestListenSystemRefusesALiveSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "labpool.sock")
	l, err := ListenSystem(sock, os.Getegid())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if l2, err := ListenSystem(sock, os.Getegid()); err == nil {
		l2.Close()
		t.Fatal("a second ListenSystem took over a live socket")
	}
	l.Close() // leaves no one answering
	l3, err := ListenSystem(sock, os.Getegid())
	if err != nil {
		t.Fatalf("after the first agent left: %v", err)
	}
	l3.Close()
}

func copyFile(t *testing.T, dst string) {
	t.Helper()
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
