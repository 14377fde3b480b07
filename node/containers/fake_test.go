package containers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/network"
	"github.com/moby/profiles/seccomp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeDocker records the calls it gets; a method it does not implement
// panics through the nil embedded interface, failing the test.
type fakeDocker struct {
	dockerAPI
	calls   []string
	created *container.HostConfig
	config  *container.Config
	labels  map[string]string
	start   func(id string) error
	nets    map[string]network.CreateOptions // created networks by name
	imageID string                           // the image ID a container runs
	state   *container.State                 // what Inspect says of a container's state (nil: never started)
	listed  []container.Summary              // what ContainerList finds

	containerEvents, netEvents chan events.Message // the Events streams (hostguard_linux_test.go)
}

func (f *fakeDocker) NetworkCreate(_ context.Context, name string, o network.CreateOptions) (network.CreateResponse, error) {
	f.calls = append(f.calls, "network create")
	if f.nets == nil {
		f.nets = map[string]network.CreateOptions{}
	}
	f.nets[name] = o
	return network.CreateResponse{ID: "n-" + name}, nil
}

func (f *fakeDocker) NetworkInspect(_ context.Context, name string, _ network.InspectOptions) (network.Inspect, error) {
	f.calls = append(f.calls, "network inspect")
	o, ok := f.nets[name]
	if !ok {
		return network.Inspect{}, errors.New("no such network")
	}
	return network.Inspect{ID: "n-" + name, Name: name, Labels: o.Labels}, nil
}

func (f *fakeDocker) ContainerList(context.Context, container.ListOptions) ([]container.Summary, error) {
	f.calls = append(f.calls, "list")
	return f.listed, nil
}

func (f *fakeDocker) NetworkRemove(_ context.Context, id string) error {
	f.calls = append(f.calls, "network remove")
	delete(f.nets, strings.TrimPrefix(id, "n-"))
	return nil
}

// fakeRuntime is a runtime over f whose host guard counts as installed
// (the fakes touch no firewall).
func fakeRuntime(cfg Config, f *fakeDocker) *Runtime {
	r := newRuntime(cfg, f)
	r.firewalls = nil
	r.guardOnce.Do(func() {})
	return r
}

func (f *fakeDocker) ContainerCreate(_ context.Context, cfg *container.Config, host *container.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, _ string) (container.CreateResponse, error) {
	f.calls = append(f.calls, "create")
	f.created, f.config, f.labels = host, cfg, cfg.Labels
	return container.CreateResponse{ID: "c1"}, nil
}

func (f *fakeDocker) ContainerInspect(_ context.Context, id string) (container.InspectResponse, error) {
	f.calls = append(f.calls, "inspect")
	st := f.state
	if st == nil {
		st = &container.State{}
	}
	return container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{ID: id, Image: f.imageID, State: st, HostConfig: f.created},
		Config: &container.Config{Image: "img", Labels: f.labels}}, nil
}

func (f *fakeDocker) ContainerStart(_ context.Context, id string, _ container.StartOptions) error {
	f.calls = append(f.calls, "start")
	return f.start(id)
}

func (f *fakeDocker) ContainerRemove(_ context.Context, id string, o container.RemoveOptions) error {
	f.calls = append(f.calls, "remove")
	return nil
}

func TestRunRemovesWhatFailedToStart(t *testing.T) {
	f := &fakeDocker{start: func(string) error {
		return errors.New(`Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]`)
	}}
	r := fakeRuntime(DefaultConfig(), f)
	_, err := r.Run(context.Background(), Launch{Image: "img", GPUs: []string{"GPU-1"}})
	if err == nil || !strings.Contains(err.Error(), "no NVIDIA runtime") {
		t.Errorf("Run = %v, want the NVIDIA runtime error", err)
	}
	if want := []string{"network inspect", "network create", "create", "inspect", "inspect", "start", "inspect", "remove", "network inspect", "list", "network remove"}; !slices.Equal(f.calls, want) {
		t.Errorf("calls %v, want %v", f.calls, want)
	}
}

func TestCreateHardensEveryRequest(t *testing.T) {
	f := &fakeDocker{}
	cfg := DefaultConfig()
	cfg.Node = "N1"
	r := fakeRuntime(cfg, f)
	_, err := r.Create(context.Background(), Launch{Image: "img", Ports: []int{80},
		Labels: map[string]string{LabelManaged: "false", LabelNode: "N2", LabelJob: "j"}})
	if err != nil {
		t.Fatal(err)
	}
	h := f.created
	if h.Privileged || !*h.Init || *h.PidsLimit != 4096 || !slices.Equal(h.CapDrop, []string{"ALL"}) ||
		len(h.CapAdd) != 0 || !slices.Equal(h.SecurityOpt, []string{"no-new-privileges:true", "seccomp=" + Seccomp()}) ||
		h.IpcMode != "private" || h.DeviceRequests != nil || h.RestartPolicy.Name != "no" {
		t.Errorf("host config %+v", h)
	}
	if len(h.PortBindings) != 0 || h.PublishAllPorts {
		t.Errorf("port bindings %+v: a job's ports are published nowhere", h.PortBindings)
	}
	if _, ok := f.config.ExposedPorts["80/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 80/tcp", f.config.ExposedPorts)
	}
	if f.config.User != DefaultJobUser {
		t.Errorf("user %q, want %s on an engine that does not remap users", f.config.User, DefaultJobUser)
	}
	if f.labels[LabelManaged] != "true" || f.labels[LabelNode] != "N1" || f.labels[LabelJob] != "j" {
		t.Errorf("labels %v: labpool's own labels must win", f.labels)
	}
	for _, c := range Capabilities {
		if c == "SYS_ADMIN" || c == "NET_ADMIN" || c == "NET_RAW" || c == "MKNOD" || c == "SYS_PTRACE" {
			t.Errorf("allowlist holds %s", c)
		}
	}
}

func TestCreateRefusesBadRequestsBeforeDocker(t *testing.T) {
	tests := []struct {
		name string
		l    Launch
		want string
	}{
		{"port zero", Launch{Ports: []int{0}}, "out of range"},
		{"port too high", Launch{Ports: []int{70000}}, "out of range"},
		{"relative host path", Launch{Binds: []Bind{{HostPath: "data", Target: "/data"}}}, "absolute"},
		{"relative target", Launch{Binds: []Bind{{HostPath: "/data", Target: "data"}}}, "absolute"},
		{"unknown restart", Launch{Restart: "always"}, "restart policy"},
		{"root", Launch{User: "root"}, "root in the container would be root on the host"},
		{"uid 0", Launch{User: "0:1000"}, "would be root on the host"},
		{"gid 0", Launch{User: "1000:0"}, "would be root on the host"},
		{"a name", Launch{User: "postgres"}, "numeric uid:gid"},
		{"uid alone", Launch{User: "1000"}, "numeric uid:gid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDocker{}
			tt.l.Image = "img"
			_, err := fakeRuntime(DefaultConfig(), f).Create(context.Background(), tt.l)
			if err == nil || !strings.Contains(err.Error(), tt.want) || len(f.calls) != 0 {
				t.Errorf("Create = %v after calls %v; want an error with %q and no call", err, f.calls, tt.want)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	tests := []struct{ docker, img, want string }{
		{"Error response from daemon: No such image: x:1", "x:1", "image x:1 is not on this machine: load it with `labpool image load`"},
		{`Error response from daemon: could not select device driver "nvidia" with capabilities: [[gpu]]`, "x", "this machine's Docker has no NVIDIA runtime"},
		{"Bind for 127.0.0.1:8080 failed: port is already allocated", "x", "a port is already in use on this machine: Bind for"},
		{"something else", "x", "something else"},
	}
	for _, tt := range tests {
		if got := explain(errors.New(tt.docker), tt.img).Error(); !strings.HasPrefix(got, tt.want) {
			t.Errorf("explain(%q) = %q, want prefix %q", tt.docker, got, tt.want)
		}
	}
}

// TestUserAndCapabilities: who a container runs as and what it keeps, by
// engine (remapping users or not) and policy (root allowed or not).
func TestUserAndCapabilities(t *testing.T) {
	tests := []struct {
		name     string
		remap    bool
		l        Launch
		wantUser string
		wantCaps []string
	}{
		{"default", false, Launch{}, DefaultJobUser, nil},
		{"share owner", false, Launch{User: "1000:1000"}, "1000:1000", nil},
		{"root allowed by policy", false, Launch{User: "root", AllowRoot: true}, "root", HostRootCapabilities},
		{"image user allowed by policy", false, Launch{AllowRoot: true}, "", HostRootCapabilities},
		{"remapped image user", true, Launch{}, "", Capabilities},
		{"remapped root", true, Launch{User: "0"}, "0", Capabilities},
		{"remapped user", true, Launch{User: "1000:1000"}, "1000:1000", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeDocker{}
			r := fakeRuntime(DefaultConfig(), f)
			r.remap = tt.remap
			tt.l.Image = "img"
			if _, err := r.Create(context.Background(), tt.l); err != nil {
				t.Fatal(err)
			}
			if f.config.User != tt.wantUser || !slices.Equal(f.created.CapAdd, tt.wantCaps) {
				t.Errorf("user %q caps %v, want %q %v", f.config.User, f.created.CapAdd, tt.wantUser, tt.wantCaps)
			}
			for _, c := range f.created.CapAdd {
				if !tt.remap && slices.Contains([]string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "MKNOD"}, c) {
					t.Errorf("capability %s acts on files as host root", c)
				}
			}
		})
	}
}

// TestSeccompProfile: the set-ID syscalls are allowed only under the mode
// condition, and nowhere unconditionally.
func TestSeccompProfile(t *testing.T) {
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(Seccomp()), &p); err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Syscalls {
		for _, n := range s.Names {
			_, guarded := modeArg[n]
			switch {
			case guarded && (s.Action != "SCMP_ACT_ALLOW" || len(s.Args) != 1 || s.Args[0].Index != modeArg[n] ||
				s.Args[0].Value != 0o6000 || s.Args[0].ValueTwo != 0 || s.Args[0].Op != "SCMP_CMP_MASKED_EQ"):
				t.Errorf("rule for %s: %+v", n, s)
			case n == "openat2" && (s.Action != "SCMP_ACT_ERRNO" || s.ErrnoRet == nil || *s.ErrnoRet != 38):
				t.Errorf("rule for openat2: %+v", s)
			case n == "io_uring_setup" || n == "io_uring_enter":
				t.Errorf("%s is allowed: its opens escape seccomp", n)
			}
		}
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" {
		t.Errorf("default action %s", p.DefaultAction)
	}
}

// TestCreateJoinsItsOwnNetwork: each owner's jobs get a bridge of their
// own per mode, with no traffic between its containers, no route out when
// isolated, and a host interface the guard knows by its prefix; a mode the
// runtime does not know is refused before any call.
func TestCreateJoinsItsOwnNetwork(t *testing.T) {
	f := &fakeDocker{}
	cfg := DefaultConfig()
	cfg.Node = "N1"
	r := fakeRuntime(cfg, f)
	create := func(owner, mode string) string {
		t.Helper()
		_, err := r.Create(context.Background(), Launch{Name: "c-" + owner + mode, Image: "img", Network: mode,
			Labels: map[string]string{LabelJob: "j1", LabelOwner: owner}})
		if err != nil {
			t.Fatal(err)
		}
		return string(f.created.NetworkMode)
	}
	for _, tt := range []struct {
		mode, prefix string
		internal     bool
	}{{"", "lpo", false}, {NetOutside, "lpo", false}, {NetIsolated, "lpi", true}, {NetHost, "lph", false}} {
		name := create("alice", tt.mode)
		o, ok := f.nets[name]
		if !ok {
			t.Fatalf("mode %q: networks %v, container on %q", tt.mode, f.nets, name)
		}
		br := o.Options["com.docker.network.bridge.name"]
		if o.Internal != tt.internal || o.Options["com.docker.network.bridge.enable_icc"] != "false" ||
			!strings.HasPrefix(br, tt.prefix) || len(br) != 15 || o.Labels[LabelManaged] != "true" || o.Labels[LabelNode] != "N1" || o.Labels[LabelOwner] != "alice" {
			t.Errorf("mode %q: network %+v", tt.mode, o)
		}
	}
	if a, a2, b := create("alice", NetOutside), create("alice", ""), create("bob", NetOutside); a != a2 || a == b {
		t.Errorf("networks alice %q and %q, bob %q: want one per owner", a, a2, b)
	}
	f = &fakeDocker{}
	if _, err := fakeRuntime(DefaultConfig(), f).Create(context.Background(), Launch{Image: "img", Network: "bridge"}); err == nil || len(f.calls) != 0 {
		t.Errorf("unknown mode: %v after %v, want a refusal before any call", err, f.calls)
	}
}

// TestGuardRules: replies to the agent's own connections pass; a job on a
// "host" network reaches any port of this host but labpool's (TCP and
// UDP); any other job reaches nothing of it; no job bridge forwards to
// another; every job bridge jumps to the guard.
func TestGuardRules(t *testing.T) {
	var got []string
	for _, r := range guardRules([]int{9100, 7420, 7420}) {
		got = append(got, strings.Join(r, " "))
	}
	want := []string{
		"-A LABPOOL-JOBS -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN",
		"-A LABPOOL-JOBS -i lph+ -p tcp -m multiport --dports 7420,9100 -j DROP",
		"-A LABPOOL-JOBS -i lph+ -p udp -m multiport --dports 7420,9100 -j DROP",
		"-A LABPOOL-JOBS -i lph+ -j RETURN",
		"-A LABPOOL-JOBS -j DROP",
		"-A LABPOOL-JOBS-FWD -o lpi+ -j DROP",
		"-A LABPOOL-JOBS-FWD -o lpo+ -j DROP",
		"-A LABPOOL-JOBS-FWD -o lph+ -j DROP",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	seen := map[string]bool{}
	for _, j := range jumps() {
		seen[j[0][0]+" "+strings.Join(j[1], " ")] = true
	}
	for _, p := range []string{"lpi+", "lpo+", "lph+"} {
		if !seen["INPUT -i "+p+" -j LABPOOL-JOBS"] || !seen["FORWARD -i "+p+" -j LABPOOL-JOBS-FWD"] {
			t.Errorf("jumps %v miss %s", seen, p)
		}
	}
}
