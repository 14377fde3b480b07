package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/apptest"
	"github.com/labpool/labpool/app/web"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/sync/store"
)

const selfID, peerID = apptest.SelfID, apptest.PeerID

// run runs the CLI with args and returns its exit status and output.
func run(t *testing.T, hooks Hooks, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(args, hooks, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// writeReplica creates the replica of a data directory as a daemon leaves
// it: this machine's identity, and this machine ("self", 2 GPUs) and a peer
// ("peer", no GPU) with a node record and a sample each. It returns the
// replica, still open.
func writeReplica(t *testing.T, dataDir string) *store.DB {
	t.Helper()
	return writeReplicaAt(t, dataDir, time.Now().UTC().Truncate(time.Second))
}

// writeReplicaAt is writeReplica with the newest sample at now.
func writeReplicaAt(t *testing.T, dataDir string, now time.Time) *store.DB {
	t.Helper()
	ctx := context.Background()
	db := apptest.OpenReplica(t, filepath.Join(dataDir, "replica.db"))
	for _, kv := range [][2]string{{app.SettingSelfID, selfID}, {app.SettingSelfName, "self"}} {
		if err := db.SetSetting(ctx, kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	nodes := []struct {
		id, name string
		gpus     int
		age      time.Duration
		gpuError string
	}{
		{selfID, "self", 2, 0, ""},
		{peerID, "peer", 0, 3 * time.Hour, "no NVIDIA GPU found"},
	}
	for _, n := range nodes {
		s := agent.Sample{Time: now.Add(-n.age), GPUError: n.gpuError,
			Host: host.Stats{CPUPercent: 42, MemUsedBytes: 3 << 30, MemTotalBytes: 16 << 30}}
		for i := range n.gpus {
			s.GPUs = append(s.GPUs, gpu.Stats{Index: i, UUID: "GPU-" + n.name, Name: "NVIDIA Test", UtilPercent: 75,
				MemUsedBytes: 1 << 30, MemTotalBytes: 8 << 30, TempC: 60, PowerW: 200, PowerLimitW: 300})
		}
		apptest.WriteMachines(t, db, now, apptest.Machine{ID: n.id, Name: n.name, Addr: "192.0.2.1:7420", Sample: s})
	}
	return db
}

// mustJSON returns v as JSON (the report tests write records with it).
func mustJSON(t *testing.T, v any) []byte { return apptest.MustJSON(t, v) }

// fakePool is an app.PoolManager with fixed answers.
type fakePool struct {
	joinErr error
	removed []string
	asked   []any // the create, join, add-device and merge requests, in order
}

func (f *fakePool) Status(context.Context) (app.PoolStatus, error) {
	return app.PoolStatus{PoolID: "pool-1", Members: []app.Member{
		{ID: selfID, Name: "self", AddedAt: time.Unix(1700000000, 0), Self: true},
		{ID: peerID, Name: "peer", AddedAt: time.Unix(1700000000, 0), Removed: true},
	}}, nil
}

// fakeExpiry is when the fake daemon's invites expire, whatever was asked:
// the CLI says what the daemon made, not what it asked for.
var fakeExpiry = time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)

func (f *fakePool) AddDevice(_ context.Context, r app.AddDeviceRequest) (app.DeviceCode, error) {
	f.asked = append(f.asked, r)
	if r.For == "carol" {
		return app.DeviceCode{}, &app.APIError{Status: 403, Code: "forbidden",
			Message: "out of role (rule: only a person's own devices, or an admin or owner who may manage them, add a device to them)"}
	}
	return app.DeviceCode{Code: "TIGER-LAMP-4823", Person: "alice",
		Invite: app.Invite{ID: "4567cdef", Role: "owner", Uses: 1, UsesLeft: 1, Expires: fakeExpiry}}, nil
}

func (f *fakePool) Merge(_ context.Context, r app.MergeRequest) error {
	f.asked = append(f.asked, r)
	return nil
}

func (f *fakePool) Create(_ context.Context, r app.CreateRequest) (app.JoinCode, error) {
	f.asked = append(f.asked, r)
	return app.JoinCode{PoolID: "pool-1", Code: "TIGER-LAMP-4821", Person: r.As,
		Invite: app.Invite{ID: "89abcdef", Role: "viewer", Uses: 3, UsesLeft: 3, Expires: fakeExpiry}}, nil
}

func (f *fakePool) Join(_ context.Context, r app.JoinRequest) (app.PoolStatus, error) {
	f.asked = append(f.asked, r)
	if f.joinErr != nil {
		return app.PoolStatus{}, f.joinErr
	}
	return f.Status(context.Background())
}

func (f *fakePool) Remove(_ context.Context, id string) error {
	f.removed = append(f.removed, id)
	return nil
}

func (f *fakePool) CreateInvite(_ context.Context, r app.InviteRequest) (app.NewInvite, error) {
	return app.NewInvite{Invite: app.Invite{ID: "0123abcd", Role: r.Role, Uses: r.Uses, UsesLeft: r.Uses, Expires: fakeExpiry}, Code: "TIGER-LAMP-4822"}, nil
}

func (f *fakePool) RevokeInvite(context.Context, string) error { return nil }
func (f *fakePool) Readmit(context.Context, string) error      { return nil }

func (f *fakePool) SetRole(context.Context, string, string) error { return nil }

func (f *fakePool) Probe(_ context.Context, addr string) (app.ProbeResult, error) {
	return app.ProbeResult{Addr: addr, ID: peerID, Member: true, Status: 200, Message: "serves this machine"}, nil
}

// startDaemon serves the local API of a service over the replica of
// dataDir on the data directory's socket, as the daemon does.
func startDaemon(t *testing.T, dataDir string, pool app.PoolManager) {
	t.Helper()
	startDaemonAt(t, dataDir, pool, time.Now().UTC().Truncate(time.Second))
}

// startDaemonAt is startDaemon with the replica's newest samples at now.
func startDaemonAt(t *testing.T, dataDir string, pool app.PoolManager, now time.Time) {
	t.Helper()
	db := writeReplicaAt(t, dataDir, now)
	svc := apptest.NewService(db, app.Self{ID: selfID, Name: "self"}, nil, pool)
	ln, err := net.Listen("unix", SocketPath(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	apptest.Serve(t, ln, web.Handler(svc, nil, slog.New(slog.DiscardHandler)))
}

func TestMainUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"unknown verb", []string{"frob"}, ExitUsage},
		{"unknown verb after a flag", []string{"--data", dir, "frob"}, ExitUsage},
		{"bad flag", []string{"nodes", "--bogus"}, ExitUsage},
		{"bad global flag", []string{"--bogus", "nodes"}, ExitUsage},
		{"bad flag value", []string{"watch", "--interval", "soon"}, ExitUsage},
		{"pool join with no code", []string{"pool", "join"}, ExitUsage},
		{"pool join with too many", []string{"pool", "join", "a", "b", "c"}, ExitUsage},
		{"pool remove with no id", []string{"pool", "remove"}, ExitUsage},
		{"nodes with an argument", []string{"nodes", "x"}, ExitUsage},
		{"pool with no subcommand", []string{"pool"}, ExitUsage},
		{"pool with an unknown subcommand", []string{"pool", "frob"}, ExitUsage},
		{"debug probe with no address", []string{"debug", "probe"}, ExitUsage},
		{"help", []string{"--help"}, ExitOK},
		{"version", []string{"--version"}, ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, Hooks{Version: "1.2.3"}, tt.args...)
			if code != tt.want {
				t.Errorf("labpool %s: exit %d, want %d; stderr %q", strings.Join(tt.args, " "), code, tt.want, stderr)
			}
			if tt.want == ExitUsage && !strings.HasPrefix(stderr, "labpool: ") {
				t.Errorf("stderr %q, want a message", stderr)
			}
		})
	}
}

func TestMainUnknownVerbSuggests(t *testing.T) {
	code, _, stderr := run(t, Hooks{}, "nodez")
	if code != ExitUsage || !strings.Contains(stderr, `unknown command "nodez"`) || !strings.Contains(stderr, `did you mean "nodes"?`) {
		t.Errorf("labpool nodez: exit %d, stderr %q; want 2 and a suggestion", code, stderr)
	}
}

func TestMainNoArgsPrintsHelp(t *testing.T) {
	code, stdout, _ := run(t, Hooks{})
	if code != ExitOK || !strings.Contains(stdout, "Usage:") || !strings.Contains(stdout, "nodes") {
		t.Errorf("labpool with no args: exit %d, stdout %q; want the help", code, stdout)
	}
}

func TestMainNoDaemon(t *testing.T) {
	dir := t.TempDir()
	tests := [][]string{
		{"pool", "create"},
		{"pool", "join", "CODE"},
		{"pool", "remove", peerID},
		{"debug", "probe", "192.0.2.1:7420"},
		{"nodes"}, // and no replica
		{"gpus"},
		{"pool", "members"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, stdout, stderr := run(t, Hooks{}, append([]string{"--data", dir}, args...)...)
			if code != ExitFailure || stdout != "" || !strings.Contains(stderr, "labpool agent") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1 and a message naming `labpool agent`", code, stdout, stderr)
			}
		})
	}
}

func TestMainHooks(t *testing.T) {
	dir := t.TempDir()
	var got DaemonOptions
	var addr string
	hooks := Hooks{
		Agent: func(_ context.Context, o DaemonOptions) error { got = o; return nil },
		Web:   func(_ context.Context, o DaemonOptions, a string) error { got, addr = o, a; return nil },
	}
	if code, _, stderr := run(t, hooks, "--data", dir, "agent", "--listen", ":9000", "--name", "box", "--iface", "eth0", "--iface", "eth1"); code != ExitOK {
		t.Fatalf("agent: exit %d: %s", code, stderr)
	}
	want := DaemonOptions{DataDir: dir, Listen: ":9000", Name: "box", Ifaces: []string{"eth0", "eth1"}}
	if got.DataDir != want.DataDir || got.Listen != want.Listen || got.Name != want.Name || !slices.Equal(got.Ifaces, want.Ifaces) {
		t.Errorf("agent options %+v, want %+v", got, want)
	}
	if code, _, stderr := run(t, hooks, "--data", dir, "web", "--listen", "127.0.0.1:1", "--peer-listen", ":9001"); code != ExitOK {
		t.Fatalf("web: exit %d: %s", code, stderr)
	}
	if addr != "127.0.0.1:1" || got.Listen != ":9001" {
		t.Errorf("web on %q with peer listen %q", addr, got.Listen)
	}
}

// TestAgentSlurmFlag: without --slurm the daemon detects the cluster;
// --slurm and --slurm=false decide.
func TestAgentSlurmFlag(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		args []string
		want *bool
	}{
		{nil, nil},
		{[]string{"--slurm"}, &yes},
		{[]string{"--slurm=true"}, &yes},
		{[]string{"--slurm=false"}, &no},
	}
	for _, tt := range tests {
		var got DaemonOptions
		hooks := Hooks{Agent: func(_ context.Context, o DaemonOptions) error { got = o; return nil }}
		if code, _, stderr := run(t, hooks, append([]string{"--data", t.TempDir(), "agent"}, tt.args...)...); code != ExitOK {
			t.Fatalf("agent %v: exit %d: %s", tt.args, code, stderr)
		}
		if (got.Slurm == nil) != (tt.want == nil) || (got.Slurm != nil && *got.Slurm != *tt.want) {
			t.Errorf("agent %v: Slurm = %v, want %v", tt.args, fmtBool(got.Slurm), fmtBool(tt.want))
		}
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "nil (detect)"
	}
	return strconv.FormatBool(*b)
}

func TestMainReplicaWithoutDaemon(t *testing.T) {
	dir := t.TempDir()
	writeReplica(t, dir)
	code, stdout, stderr := run(t, Hooks{}, "--data", dir, "nodes")
	if code != ExitOK {
		t.Fatalf("nodes: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "may be stale") {
		t.Errorf("stderr %q, want the note that the state may be stale", stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("nodes table:\n%s\nwant a header and 2 rows", stdout)
	}
	for i, want := range [][]string{
		{"self", "SELF-AAAA", "this machine", "42%", "3.0 GiB/16.0 GiB", "2", "now"},
		{"peer", "PEER-BBBB", "offline", "0 (no NVIDIA GPU found)", "3h ago"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("row %q lacks %q", lines[i+1], w)
			}
		}
	}

	code, stdout, stderr = run(t, Hooks{}, "--data", dir, "gpus")
	if code != ExitOK || !strings.Contains(stdout, "NVIDIA Test") || !strings.Contains(stdout, "75%") || strings.Count(stdout, "\n") != 3 {
		t.Errorf("gpus: exit %d, stdout:\n%s\nstderr %s", code, stdout, stderr)
	}
}

// decodeObjects decodes a JSON array of objects.
func decodeObjects(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return out
}

// hasKeys reports the keys of want that obj lacks.
func missingKeys(obj map[string]any, want ...string) []string {
	var missing []string
	for _, k := range want {
		if _, ok := obj[k]; !ok {
			missing = append(missing, k)
		}
	}
	return missing
}

func TestMainJSON(t *testing.T) {
	dir := t.TempDir()
	writeReplica(t, dir)
	code, stdout, stderr := run(t, Hooks{}, "--data", dir, "nodes", "--json")
	if code != ExitOK {
		t.Fatalf("nodes --json: exit %d: %s", code, stderr)
	}
	nodes := decodeObjects(t, stdout)
	if len(nodes) != 2 {
		t.Fatalf("%d nodes, want 2", len(nodes))
	}
	for _, n := range nodes {
		if m := missingKeys(n, "id", "name", "online", "addresses", "last_seen", "gpus"); m != nil {
			t.Errorf("node %v lacks %v", n["name"], m)
		}
		if _, err := time.Parse(time.RFC3339, n["last_seen"].(string)); err != nil {
			t.Errorf("last_seen %v: %v", n["last_seen"], err)
		}
	}
	if nodes[0]["id"] != selfID || nodes[0]["online"] != true || nodes[1]["online"] != false {
		t.Errorf("nodes %v, %v: want self online first, the peer offline", nodes[0]["id"], nodes[1]["id"])
	}

	code, stdout, stderr = run(t, Hooks{}, "--data", dir, "gpus", "--json")
	if code != ExitOK {
		t.Fatalf("gpus --json: exit %d: %s", code, stderr)
	}
	gpus := decodeObjects(t, stdout)
	if len(gpus) != 2 {
		t.Fatalf("%d gpus, want 2", len(gpus))
	}
	for _, g := range gpus {
		if m := missingKeys(g, "node", "index", "uuid", "name", "util_percent", "mem_used_bytes", "mem_total_bytes", "temp_c", "power_w"); m != nil {
			t.Errorf("gpu %v lacks %v", g["uuid"], m)
		}
		if g["node"] != selfID || g["util_percent"] != 75.0 {
			t.Errorf("gpu %v", g)
		}
	}
}

func TestMainAgainstDaemon(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		pool     *fakePool
		code     int
		last     string // the last line of stdout
		contains string // in stdout
		stderr   string // in stderr
	}{
		{name: "pool create", args: []string{"pool", "create"}, code: ExitOK, last: "TIGER-LAMP-4821", contains: "labpool pool join TIGER-LAMP-4821"},
		{name: "pool create says what the daemon's invite allows", args: []string{"pool", "create"}, code: ExitOK,
			contains: "invite 89abcdef admits 3 machines, as viewer, until " + fakeExpiry.Local().Format(time.DateTime)},
		{name: "pool join", args: []string{"pool", "join", "CODE", "192.0.2.1:7420"}, code: ExitOK, last: "Joined pool pool-1 as a device of self: 1 person, 1 device."},
		{name: "pool join refused", args: []string{"pool", "join", "WRONG"}, pool: &fakePool{joinErr: app.ErrForbidden},
			code: ExitFailure, stderr: "labpool: forbidden"},
		{name: "pool members", args: []string{"pool", "members"}, code: ExitOK, contains: "removed"},
		{name: "pool members --json", args: []string{"pool", "members", "--json"}, code: ExitOK, contains: `"pool_id": "pool-1"`},
		{name: "pool remove", args: []string{"pool", "remove", peerID}, code: ExitOK, last: "Removed " + peerID + " from the pool."},
		{name: "pool invite", args: []string{"pool", "invite", "--role", "viewer", "--uses", "2", "--expires", "1h"}, code: ExitOK,
			last: "TIGER-LAMP-4822", contains: "admits 2 machines, as viewer, until " + fakeExpiry.Local().Format(time.DateTime)},
		{name: "pool invite admits one by default", args: []string{"pool", "invite"}, code: ExitOK, contains: "admits 1 machine, as member, until"},
		{name: "pool invite bad uses", args: []string{"pool", "invite", "--uses", "-1"}, code: ExitUsage},
		{name: "pool invite no unlimited", args: []string{"pool", "invite", "--uses", "0"}, code: ExitUsage},
		{name: "pool invite too many uses", args: []string{"pool", "invite", "--uses", "1001"}, code: ExitUsage},
		{name: "pool invites", args: []string{"pool", "invites"}, code: ExitOK, contains: "USES LEFT"},
		{name: "pool revoke", args: []string{"pool", "revoke", "0123"}, code: ExitOK, last: "Revoked invite 0123."},
		{name: "pool role", args: []string{"pool", "role", peerID, "admin"}, code: ExitOK, last: peerID + " is now admin."},
		{name: "pool members shows roles", args: []string{"pool", "members"}, code: ExitOK, contains: "ROLE"},
		{name: "debug probe", args: []string{"debug", "probe", "192.0.2.1:7420"}, code: ExitOK, last: "192.0.2.1:7420 is device " + peerID + ": serves this machine"},
		{name: "nodes", args: []string{"nodes"}, code: ExitOK, contains: "this machine"},
		{name: "pool create --json", args: []string{"pool", "create", "--json"}, code: ExitOK, contains: `"code": "TIGER-LAMP-4821"`},
		{name: "pool create --json has the invite", args: []string{"pool", "create", "--json"}, code: ExitOK, contains: `"uses": 3`},
		{name: "pool join --json", args: []string{"pool", "join", "CODE", "--json"}, code: ExitOK, contains: `"pool_id": "pool-1"`},
		{name: "pool invite --json", args: []string{"pool", "invite", "--json"}, code: ExitOK, contains: `"code": "TIGER-LAMP-4822"`},
		{name: "pool remove --json", args: []string{"pool", "remove", peerID, "--json"}, code: ExitOK, contains: `"done": "Removed ` + peerID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pool := tt.pool
			if pool == nil {
				pool = &fakePool{}
			}
			startDaemon(t, dir, pool)
			code, stdout, stderr := run(t, Hooks{}, append([]string{"--data", dir}, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, stderr)
			}
			lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
			if last := lines[len(lines)-1]; tt.last != "" && last != tt.last {
				t.Errorf("last line %q, want %q; stdout:\n%s", last, tt.last, stdout)
			}
			if !strings.Contains(stdout, tt.contains) || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stdout %q, stderr %q; want %q and %q in them", stdout, stderr, tt.contains, tt.stderr)
			}
			if tt.code == ExitOK && strings.Contains(stderr, "stale") {
				t.Errorf("stderr %q: the daemon's view is live", stderr)
			}
		})
	}
}

func TestMainPoolRemoveReachesDaemon(t *testing.T) {
	dir := t.TempDir()
	pool := &fakePool{}
	startDaemon(t, dir, pool)
	if code, _, stderr := run(t, Hooks{}, "--data", dir, "pool", "remove", "a/b"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !slices.Equal(pool.removed, []string{"a/b"}) {
		t.Errorf("the daemon removed %q, want [a/b]", pool.removed)
	}
}
