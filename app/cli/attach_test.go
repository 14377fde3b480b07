//go:build linux

package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
)

// systemAgent serves a fake system agent on sock: the local API, behind
// wrap.
func systemAgent(t *testing.T, sock string, wrap func(http.Handler) http.Handler) {
	t.Helper()
	db := writeReplica(t, t.TempDir())
	svc := apptest.NewService(db, app.Self{ID: selfID, Name: "system"}, nil, &fakePool{})
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, wrap(web.Handler(svc, nil, slog.New(slog.DiscardHandler))))
}

func TestAttach(t *testing.T) {
	own := func(h http.Handler) http.Handler { return h }
	for _, tc := range []struct {
		name       string
		setup      func(t *testing.T, sock string)
		wantSystem bool
		wantOwn    bool
		wantErr    string
	}{
		{"no system agent", func(*testing.T, string) {}, false, true, ""},
		{"a stale socket", func(t *testing.T, sock string) {
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close()
		}, false, true, ""},
		{"a system agent that admits", func(t *testing.T, sock string) { systemAgent(t, sock, own) }, true, false, ""},
		{"a system agent that refuses by credentials", func(t *testing.T, sock string) {
			systemAgent(t, sock, func(h http.Handler) http.Handler {
				return web.RequireAdmin(h, web.Admins{UID: 1 << 30, GID: 1 << 30, GroupName: "labpool"}) // no PeerContext: no credentials
			})
		}, true, false, "adduser YOUR_USER labpool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "system.sock")
			tc.setup(t, sock)
			got, system, err := Attach(context.Background(), sock, filepath.Join(dir, "data"))
			if tc.wantErr != "" {
				if !errors.Is(err, ErrNotAdmin) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrNotAdmin naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := SocketPath(filepath.Join(dir, "data"))
			if tc.wantSystem {
				want = sock
			}
			if got != want || system != tc.wantSystem {
				t.Fatalf("Attach = %q, system %v; want %q, system %v", got, system, want, tc.wantSystem)
			}
		})
	}
}

// serveSystemAgent serves a system agent on a socket in a new directory
// and sets the environment so that a verb with no data directory named
// finds it: no LABPOOL_DATA, XDG_DATA_HOME under that directory.
func serveSystemAgent(t *testing.T) (dir, sock string) {
	t.Helper()
	dir = t.TempDir()
	sock = filepath.Join(dir, "system.sock")
	systemAgent(t, sock, func(h http.Handler) http.Handler { return h })
	t.Setenv("LABPOOL_SYSTEM_SOCKET", sock)
	t.Setenv("LABPOOL_DATA", "")
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	return dir, sock
}

// TestVerbsAttachToSystemAgent: with no data directory named, the verbs
// read the system agent's view; with one named, never.
func TestVerbsAttachToSystemAgent(t *testing.T) {
	dir, _ := serveSystemAgent(t)

	code, stdout, stderr := run(t, Hooks{}, "nodes")
	if code != ExitOK || !strings.Contains(stdout, "SELF-AAAA") { // the own data directory holds nothing
		t.Fatalf("pool through the system agent: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = run(t, Hooks{}, "--data", filepath.Join(dir, "mine"), "nodes")
	if code == ExitOK || !strings.Contains(stderr, "no labpool daemon") {
		t.Fatalf("with --data, the verb reached the system agent: exit %d %s", code, stderr)
	}
}

// TestAgentBesideSystemAgent: a user's own agent, with no data directory
// named, is refused where the system agent serves the machine; --system
// and --data start one.
func TestAgentBesideSystemAgent(t *testing.T) {
	dir, sock := serveSystemAgent(t)
	for _, tc := range []struct {
		args       []string
		wantStart  bool
		wantSocket string
	}{
		{[]string{"agent"}, false, ""},
		{[]string{"agent", "--system"}, true, sock},
		{[]string{"--data", filepath.Join(dir, "mine"), "agent"}, true, ""},
	} {
		var started *DaemonOptions
		hooks := Hooks{Agent: func(_ context.Context, o DaemonOptions) error { started = &o; return nil }}
		code, _, stderr := run(t, hooks, tc.args...)
		if (started != nil) != tc.wantStart {
			t.Fatalf("%v: started %v, want %v (exit %d: %s)", tc.args, started != nil, tc.wantStart, code, stderr)
		}
		if !tc.wantStart && !strings.Contains(stderr, "system agent already serves this machine") {
			t.Fatalf("%v: refusal does not say why: %s", tc.args, stderr)
		}
		if started != nil && started.SystemSocket != tc.wantSocket {
			t.Fatalf("%v: SystemSocket %q, want %q", tc.args, started.SystemSocket, tc.wantSocket)
		}
	}
}

const attachHelperEnv = "LABPOOL_TEST_ATTACH_SOCKET"

func TestHelperAttach(t *testing.T) {
	sock := os.Getenv(attachHelperEnv)
	if sock == "" {
		t.Skip("run by TestAttachRefusedByMode as another user")
	}
	_, system, err := Attach(context.Background(), sock, filepath.Join(os.TempDir(), "none"))
	fmt.Printf("system=%v notadmin=%v err=%v\n", system, errors.Is(err, ErrNotAdmin), err)
}

// TestAttachRefusedByMode: a user outside the group cannot connect to the
// 0660 socket at all (EACCES), and learns which group to join rather than
// reading a dial error, or starting a second agent for the machine.
func TestAttachRefusedByMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "system.sock")
	ln, err := web.ListenSystem(sock, 4242)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	exe := filepath.Join(dir, "cli.test")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestHelperAttach$")
	cmd.Env = []string{attachHelperEnv + "=" + sock, "HOME=/"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	got := strings.SplitN(string(out), "\n", 2)[0]
	if !strings.HasPrefix(got, "system=true notadmin=true") || !strings.Contains(got, `group "labpool"`) || !strings.Contains(got, "adduser nobody labpool") {
		t.Fatalf("got %q, want an ErrNotAdmin naming the group and the user", got)
	}
}

// TestWebAttachesToSystemAgent: `labpool web` serves the UI for the system
// agent rather than starting a daemon of its own, unless --data names one.
func TestWebAttachesToSystemAgent(t *testing.T) {
	dir, sock := serveSystemAgent(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"web"}, sock},
		{[]string{"--data", filepath.Join(dir, "mine"), "web"}, ""},
	} {
		var got *DaemonOptions
		hooks := Hooks{Web: func(_ context.Context, o DaemonOptions, _ string) error { got = &o; return nil }}
		if code, _, stderr := run(t, hooks, tc.args...); code != ExitOK || got == nil {
			t.Fatalf("%v: exit %d %s", tc.args, code, stderr)
		}
		if got.AttachSocket != tc.want {
			t.Fatalf("%v: AttachSocket %q, want %q", tc.args, got.AttachSocket, tc.want)
		}
	}
}
