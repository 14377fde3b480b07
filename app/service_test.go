package app

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/host"
	"github.com/labpool/labpool/node/jobs"
)

const (
	echoID     = "ECHO-FFFF-FFFF-FFFF"
	strangerID = "STRA-0000-0000-0000"
	noGPU      = "no NVIDIA GPU found"
	lostGPU    = "read gpu 1: GPU is lost"
)

// poolFixture fills db with a pool of six members seen from self:
//
//	self  "zeta"   2 GPUs, samples appended out of time order
//	alpha "alpha"  online, named by its node record (member name differs)
//	mike  "mike"   no node record, 1 GPU, a gpu_error in its sample
//	echo  "echo"   no GPU: the gpu_error of its unnamed node record
//	bad   "bad"    a malformed sample
//	gone           removed from the pool
//
// and records of a stranger that is no member.
func poolFixture(t *testing.T) *Service {
	t.Helper()
	ctx := context.Background()
	db := openDB(t)
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, alphaID, "alpha-member", false)
	putMember(t, db, mikeID, "mike", false)
	putMember(t, db, echoID, "echo", false)
	putMember(t, db, badID, "bad", false)
	putMember(t, db, goneID, "gone", true)

	self := NodeRecord{Info: agent.Info{ID: selfID, Name: "zeta", Version: "1.2.3", StartedAt: t0,
		Host: host.Info{Hostname: "zeta-host", OS: "ubuntu 24.04", Kernel: "6.8", CPUModel: "EPYC", Cores: 64, MemTotalBytes: 1 << 30}},
		Addresses: []string{"10.0.0.1:7420"}}
	if _, err := db.Append(ctx, selfID, KindNode, "", t0, mustJSON(t, self)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{-2 * time.Second, 0, -time.Second} { // newest is not last
		s := testSample(t0.Add(d), 10, 2)
		if _, err := db.Append(ctx, selfID, history.KindSample1s, history.Key(s.Time), s.Time, mustJSON(t, s)); err != nil {
			t.Fatal(err)
		}
	}

	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{ID: alphaID, Name: "alpha"}, Addresses: []string{"10.0.0.2:7420", "[fe80::2]:7420"}})
	putSample(t, db, alphaID, history.KindSample1s, testSample(t0.Add(-5*time.Second), 20, 1))

	mike := testSample(t0.Add(-time.Hour), 30, 1)
	mike.GPUError = lostGPU
	putSample(t, db, mikeID, history.KindSample1s, mike)

	putNode(t, db, echoID, NodeRecord{Info: agent.Info{ID: echoID, GPUError: noGPU}}) // unnamed
	putSample(t, db, echoID, history.KindSample1s, testSample(t0.Add(-3*time.Second), 40, 0))

	putNode(t, db, badID, NodeRecord{Info: agent.Info{ID: badID, Name: "bad"}})
	putRecord(t, db, badID, history.KindSample1s, history.Key(t0), t0, []byte(`{"time":"yesterday","gpus":7}`))

	putNode(t, db, goneID, NodeRecord{Info: agent.Info{ID: goneID, Name: "gone"}})
	putSample(t, db, goneID, history.KindSample1s, testSample(t0, 50, 1))
	putNode(t, db, strangerID, NodeRecord{Info: agent.Info{ID: strangerID, Name: "stranger"}})
	putSample(t, db, strangerID, history.KindSample1s, testSample(t0, 60, 1))

	return newService(t, db, Self{ID: selfID, ShortID: shortID(selfID), Name: "zeta"}, fakeLive{alphaID: true, goneID: true}, nil)
}

func TestServiceNodes(t *testing.T) {
	svc := poolFixture(t)
	nodes, err := svc.Nodes(context.Background())
	if err != nil {
		t.Fatalf("Nodes: %v", err)
	}
	type view struct {
		ID, ShortID, Name      string
		Self, Online, Stale    bool
		LastSeen               time.Time
		Host                   bool
		GPUs                   int
		GPUError               string
		Addresses              []string
		Hostname, InfoVersion  string
		CPUPercent, MemUsedRaw float64
	}
	want := []view{
		{selfID, "SELF-AAAA", "zeta", true, true, false, t0, true, 2, "", []string{"10.0.0.1:7420"}, "zeta-host", "1.2.3", 10, 10_000},
		{alphaID, "ALFA-BBBB", "alpha", false, true, false, t0.Add(-5 * time.Second), true, 1, "", []string{"10.0.0.2:7420", "[fe80::2]:7420"}, "", "", 20, 20_000},
		{badID, "BADS-EEEE", "bad", false, false, true, time.Time{}, false, 0, "", []string{}, "", "", 0, 0},
		{echoID, "ECHO-FFFF", "echo", false, false, true, t0.Add(-3 * time.Second), true, 0, noGPU, []string{}, "", "", 40, 40_000},
		{mikeID, "MIKE-CCCC", "mike", false, false, true, t0.Add(-time.Hour), true, 1, lostGPU, []string{}, "", "", 30, 30_000},
	}
	got := make([]view, len(nodes))
	for i, n := range nodes {
		v := view{ID: n.ID, ShortID: n.ShortID, Name: n.Name, Self: n.Self, Online: n.Online, Stale: n.Stale,
			LastSeen: n.LastSeen, Host: n.Host != nil, GPUs: len(n.GPUs), GPUError: n.GPUError, Addresses: n.Addresses,
			Hostname: n.Info.Hostname, InfoVersion: n.Info.Version}
		if n.Host != nil {
			v.CPUPercent, v.MemUsedRaw = n.Host.CPUPercent, float64(n.Host.MemUsedBytes)
		}
		got[i] = v
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Nodes() mismatch (-want +got):\n%s", diff)
	}
	if nodes[0].GPUs == nil || nodes[2].GPUs == nil {
		t.Errorf("GPUs of a node must be [] rather than null")
	}
	if h := nodes[0].Host; h == nil || len(h.Disks) != 1 || h.Disks[0].Mount != "/" || h.NetRxBps != 20 || h.Load1 != 1 {
		t.Errorf("self host stats = %+v, want the disk, rates and load of the sample", h)
	}
}

func TestServiceNodesReadOnly(t *testing.T) {
	svc := poolFixture(t)
	r := NewReader(svc.db, svc.self) // the replica read with no daemon: only this machine is online
	nodes, err := r.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Online != n.Self || n.Stale == n.Self {
			t.Errorf("%s: online %v stale %v, want only this machine online", n.Name, n.Online, n.Stale)
		}
	}
}

func TestServiceNodesOnlySelf(t *testing.T) {
	db := openDB(t)
	svc := NewReader(db, Self{ID: selfID, Name: "lonely"})
	nodes, err := svc.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].Name != "lonely" || !nodes[0].Self || nodes[0].Host != nil || !nodes[0].LastSeen.IsZero() {
		t.Errorf("Nodes() of an empty replica = %+v, want this machine alone with no data", nodes)
	}
}

func TestServiceGPUs(t *testing.T) {
	svc := poolFixture(t)
	gpus, err := svc.GPUs(context.Background())
	if err != nil {
		t.Fatalf("GPUs: %v", err)
	}
	type key struct {
		Node, NodeName string
		Index          int
		UUID           string
		Util           float64
	}
	want := []key{
		{selfID, "zeta", 0, "GPU-a", 10},
		{selfID, "zeta", 1, "GPU-b", 11},
		{alphaID, "alpha", 0, "GPU-a", 20},
		{mikeID, "mike", 0, "GPU-a", 30},
	}
	got := make([]key, len(gpus))
	for i, g := range gpus {
		got[i] = key{g.Node, g.NodeName, g.Index, g.UUID, g.UtilPercent}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPUs() mismatch (-want +got):\n%s", diff)
	}
	g := gpus[0]
	if g.Name != "NVIDIA Test" || g.MemUsedBytes != 1000 || g.MemTotalBytes != 10_000 || g.TempC != 50 ||
		g.PowerW != 110 || g.PowerLimitW != 300 || g.SMClockMHz != 1500 || g.MemClockMHz != 5000 ||
		g.FanPercent != -1 || g.Processes != 1 || g.MemUtilPercent != 5 {
		t.Errorf("GPU view = %+v, want every figure of the sample", g)
	}
}

func TestServiceGPUsEmpty(t *testing.T) {
	svc := NewReader(openDB(t), Self{ID: selfID})
	gpus, err := svc.GPUs(context.Background())
	if err != nil || gpus == nil || len(gpus) != 0 {
		t.Errorf("GPUs() = %v, %v; want [] and no error", gpus, err)
	}
}

// historyFixture holds, for mikeID, samples in each tier whose CPU percent
// says the tier: 1 (1 s), 2 (1 min), 3 (15 min), at ages in seconds.
func historyFixture(t *testing.T) *Reader {
	t.Helper()
	db := openDB(t)
	tiers := []struct {
		kind string
		cpu  float64
		ages []time.Duration
	}{
		{history.KindSample1s, 1, []time.Duration{2 * time.Hour, 400 * time.Second, 299 * time.Second, 10 * time.Second, 0}},
		{history.KindSample1m, 2, []time.Duration{8 * 24 * time.Hour, 3 * time.Hour, 119 * time.Minute, 5 * time.Minute}},
		{history.KindSample15m, 3, []time.Duration{40 * 24 * time.Hour, 29 * 24 * time.Hour, 24 * time.Hour}},
	}
	for _, tier := range tiers {
		for _, age := range tier.ages {
			putSample(t, db, mikeID, tier.kind, testSample(t0.Add(-age), tier.cpu, 2))
		}
	}
	putSample(t, db, mikeID, history.KindSample1s, testSample(t0.Add(2*time.Minute), 1, 2))          // beyond now + 1 min
	putRecord(t, db, mikeID, history.KindSample1s, "bad", t0.Add(-time.Second), []byte(`"garbage"`)) // skipped
	svc := NewReader(db, Self{ID: selfID})
	svc.now = func() time.Time { return t0 }
	return svc
}

func TestServiceHistory(t *testing.T) {
	svc := historyFixture(t)
	tests := []struct {
		name    string
		node    string
		seconds int
		cpu     float64         // which tier
		ages    []time.Duration // of the samples, oldest first
		wantErr error
	}{
		{"300 s from 1 s", mikeID, 300, 1, []time.Duration{299 * time.Second, 10 * time.Second, 0}, nil},
		{"1 h from 1 s", mikeID, 3600, 1, []time.Duration{400 * time.Second, 299 * time.Second, 10 * time.Second, 0}, nil},
		{"2 h from 1 min", mikeID, 7200, 2, []time.Duration{119 * time.Minute, 5 * time.Minute}, nil},
		{"7 d from 1 min", mikeID, 7 * 24 * 3600, 2, []time.Duration{3 * time.Hour, 119 * time.Minute, 5 * time.Minute}, nil},
		{"30 d from 15 min", mikeID, 30 * 24 * 3600, 3, []time.Duration{29 * 24 * time.Hour, 24 * time.Hour}, nil},
		{"a year", mikeID, 366 * 24 * 3600, 3, []time.Duration{40 * 24 * time.Hour, 29 * 24 * time.Hour, 24 * time.Hour}, nil},
		{"unknown node", alphaID, 300, 0, nil, nil},
		{"no node", "", 300, 0, nil, ErrInvalid},
		{"zero seconds", mikeID, 0, 0, nil, ErrInvalid},
		{"negative seconds", mikeID, -5, 0, nil, ErrInvalid},
		{"over a year", mikeID, 366*24*3600 + 1, 0, nil, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := svc.History(context.Background(), tt.node, tt.seconds)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("History(%q, %d) error = %v, want %v", tt.node, tt.seconds, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if h.Node != tt.node || h.Samples == nil {
				t.Fatalf("History = %+v, want node %s and non-nil samples", h, tt.node)
			}
			var ages []time.Duration
			for _, s := range h.Samples {
				if s.CPUPercent != tt.cpu || s.Node != tt.node {
					t.Errorf("sample at %v: cpu %v node %s, want tier %v of %s", s.Time, s.CPUPercent, s.Node, tt.cpu, tt.node)
				}
				ages = append(ages, t0.Sub(s.Time))
			}
			if diff := cmp.Diff(tt.ages, ages); diff != "" {
				t.Errorf("sample ages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryPoint(t *testing.T) {
	svc := historyFixture(t)
	h, err := svc.History(context.Background(), mikeID, 5)
	if err != nil || len(h.Samples) != 1 {
		t.Fatalf("History = %+v, %v; want one sample", h, err)
	}
	want := Sample{Node: mikeID, Time: t0, CPUPercent: 1, MemPercent: 1, GPUUtil: []float64{1, 2}, GPUMemPct: []float64{1, 1}}
	if diff := cmp.Diff(want, h.Samples[0]); diff != "" {
		t.Errorf("point mismatch (-want +got):\n%s", diff)
	}
}

func TestServicePoolFromReplica(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	svc := NewReader(db, Self{ID: selfID})
	ps, err := svc.Pool(ctx)
	if err != nil || ps.PoolID != "" || ps.Members == nil || len(ps.Members) != 0 {
		t.Fatalf("Pool() outside a pool = %+v, %v; want no pool and [] members", ps, err)
	}
	if err := db.SetSetting(ctx, SettingPoolID, "pool-1"); err != nil {
		t.Fatal(err)
	}
	putMember(t, db, selfID, "zeta", false)
	putMember(t, db, goneID, "gone", true)
	ps, err = svc.Pool(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := PoolStatus{PoolID: "pool-1", Members: []Member{
		{ID: goneID, Name: "gone", AddedAt: t0, AddedBy: selfID, Removed: true},
		{ID: selfID, Name: "zeta", AddedAt: t0, AddedBy: selfID, Self: true},
	}, People: []Person{ // a replica of before people: a person per device
		{ID: goneID, Name: "gone", Devices: []PersonDevice{}, Removed: []PersonDevice{{ID: goneID, Name: "gone"}}},
		{ID: selfID, Name: "zeta", Devices: []PersonDevice{{ID: selfID, Name: "zeta", Self: true}}, Removed: []PersonDevice{}, Active: true, Self: true},
	}, Invites: []Invite{}, SelfID: selfID, Can: Can{Launch: true}}
	if diff := cmp.Diff(want, ps); diff != "" {
		t.Errorf("Pool() mismatch (-want +got):\n%s", diff)
	}
}

// fakePool is a PoolManager whose methods answer from its fields.
type fakePool struct {
	status PoolStatus
	err    error
	joined []JoinRequest
}

func (f *fakePool) Status(context.Context) (PoolStatus, error) { return f.status, f.err }
func (f *fakePool) Create(context.Context, CreateRequest) (JoinCode, error) {
	return JoinCode{PoolID: "p", Code: "c"}, f.err
}
func (f *fakePool) AddDevice(context.Context, AddDeviceRequest) (DeviceCode, error) {
	return DeviceCode{Code: "c"}, f.err
}
func (f *fakePool) Merge(context.Context, MergeRequest) error { return f.err }
func (f *fakePool) Join(_ context.Context, r JoinRequest) (PoolStatus, error) {
	f.joined = append(f.joined, r)
	return f.status, f.err
}
func (f *fakePool) Remove(context.Context, string) error { return f.err }
func (f *fakePool) CreateInvite(_ context.Context, r InviteRequest) (NewInvite, error) {
	return NewInvite{Invite: Invite{ID: "i1", Role: r.Role}, Code: "c"}, f.err
}
func (f *fakePool) RevokeInvite(context.Context, string) error    { return f.err }
func (f *fakePool) Readmit(context.Context, string) error         { return f.err }
func (f *fakePool) SetRole(context.Context, string, string) error { return f.err }
func (f *fakePool) Probe(_ context.Context, addr string) (ProbeResult, error) {
	return ProbeResult{Addr: addr}, f.err
}

// poolReader is what both a Reader and a Service answer about the pool.
type poolReader interface {
	Pool(ctx context.Context) (PoolStatus, error)
}

func TestServicePoolCalls(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	ro := NewReader(db, Self{ID: selfID})
	pool := &fakePool{status: PoolStatus{PoolID: "p1"}}
	rw := newService(t, db, Self{ID: selfID}, nil, pool)
	call := func(r poolReader, op string) error {
		if op == "pool" {
			_, err := r.Pool(ctx)
			return err
		}
		s, ok := r.(*Service)
		if !ok {
			return ErrReadOnly // a Reader has no method that writes: it cannot be asked
		}
		var err error
		switch op {
		case "create":
			_, err = s.CreatePool(ctx, CreateRequest{})
		case "join":
			_, err = s.JoinPool(ctx, JoinRequest{Code: "abc"})
		case "join no code":
			_, err = s.JoinPool(ctx, JoinRequest{})
		case "remove":
			err = s.RemoveMember(ctx, mikeID)
		case "probe":
			_, err = s.Probe(ctx, "10.0.0.9:7420")
		case "invite":
			_, err = s.CreateInvite(ctx, InviteRequest{Role: "viewer"})
		case "revoke":
			err = s.RevokeInvite(ctx, "i1")
		case "role":
			err = s.SetRole(ctx, mikeID, "admin")
		case "probe no addr":
			_, err = s.Probe(ctx, "")
		}
		return err
	}
	tests := []struct {
		op         string
		ro, rw     error
		wantJoined int
	}{
		{"create", ErrReadOnly, nil, 0},
		{"join", ErrReadOnly, nil, 1},
		{"join no code", ErrReadOnly, ErrInvalid, 1},
		{"remove", ErrReadOnly, nil, 1},
		{"probe", ErrReadOnly, nil, 1},
		{"probe no addr", ErrReadOnly, ErrInvalid, 1},
		{"invite", ErrReadOnly, nil, 1},
		{"revoke", ErrReadOnly, nil, 1},
		{"role", ErrReadOnly, nil, 1},
		{"pool", nil, nil, 1},
	}
	for _, tt := range tests {
		if err := call(ro, tt.op); !errors.Is(err, tt.ro) {
			t.Errorf("read-only %s: %v, want %v", tt.op, err, tt.ro)
		}
		if err := call(rw, tt.op); !errors.Is(err, tt.rw) {
			t.Errorf("%s: %v, want %v", tt.op, err, tt.rw)
		}
		if len(pool.joined) != tt.wantJoined {
			t.Errorf("after %s the pool manager saw %d joins, want %d", tt.op, len(pool.joined), tt.wantJoined)
		}
	}
	if ps, _ := rw.Pool(ctx); ps.PoolID != "p1" {
		t.Errorf("Pool() with a pool manager = %+v, want its status", ps)
	}
	if pool.joined[0].Code != "abc" {
		t.Errorf("join request = %+v, want the code passed through", pool.joined[0])
	}
}

func TestLoadSelf(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	if _, err := LoadSelf(ctx, db); err == nil {
		t.Fatal("LoadSelf of a replica with no identity: no error")
	}
	if err := db.SetSetting(ctx, SettingSelfID, selfID); err != nil {
		t.Fatal(err)
	}
	if err := db.SetSetting(ctx, SettingSelfName, "zeta"); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSelf(ctx, db)
	want := Self{ID: selfID, ShortID: "SELF-AAAA", Name: "zeta", APIVersion: APIVersion}
	if err != nil || got != want {
		t.Errorf("LoadSelf = %+v, %v; want %+v", got, err, want)
	}
}

func TestShortID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ABCD-EFGH-IJKL-MNOP", "ABCD-EFGH"},
		{"ABCDEFGHIJ", "ABCDEFGH"},
		{"ABCD", "ABCD"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := shortID(tt.in); got != tt.want {
			t.Errorf("shortID(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestServiceRun(t *testing.T) {
	svc := poolFixture(t)
	events, cancel := svc.Hub().Subscribe()
	defer cancel()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, 10*time.Millisecond) }()

	var nodes []Node
	samples := map[string]Sample{}
	timeout := time.After(5 * time.Second)
	for nodes == nil || len(samples) < 4 {
		select {
		case ev := <-events:
			switch ev.Name {
			case EventNodes:
				nodes = ev.Data.([]Node)
			case EventSample:
				s := ev.Data.(Sample)
				if _, dup := samples[s.Node]; dup {
					t.Errorf("sample of %s sent twice though it did not change", s.Node)
				}
				samples[s.Node] = s
			}
		case <-timeout:
			t.Fatalf("after 5 s: nodes %v, samples of %d nodes; want nodes and 4 samples", nodes != nil, len(samples))
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if len(nodes) != 5 {
		t.Errorf("%s carried %d nodes, want 5", EventNodes, len(nodes))
	}
	want := Sample{Node: selfID, Time: t0, CPUPercent: 10, MemPercent: 10, GPUUtil: []float64{10, 11}, GPUMemPct: []float64{10, 10}}
	if diff := cmp.Diff(want, samples[selfID]); diff != "" {
		t.Errorf("%s of self mismatch (-want +got):\n%s", EventSample, diff)
	}
	if _, ok := samples[badID]; ok {
		t.Errorf("a node with no valid sample got a %s event", EventSample)
	}
}

// TestRemovedMachineShowsItselfOnly: a machine removed from its pool shows
// none of the pool's machines (it used to list them all as offline, with
// their jobs), only itself and its own jobs, until it joins another pool.
func TestRemovedMachineShowsItselfOnly(t *testing.T) {
	db := openDB(t)
	putMember(t, db, selfID, "zeta", true)
	putMember(t, db, alphaID, "alpha", false)
	putNode(t, db, alphaID, NodeRecord{Info: agent.Info{Name: "alpha"}})
	own := jobs.Job{ID: "job-own", Name: "own", State: jobs.Running, Owner: selfID, Created: t0}
	theirs := jobs.Job{ID: "job-theirs", Name: "theirs", State: jobs.Running, Owner: alphaID, Created: t0}
	if _, err := db.Append(context.Background(), selfID, KindJob, own.ID, t0, mustJSON(t, own)); err != nil {
		t.Fatal(err)
	}
	putRecord(t, db, alphaID, KindJob, theirs.ID, t0, mustJSON(t, theirs))
	r := NewReader(db, Self{ID: selfID, Name: "zeta"})
	nodes, err := r.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || !nodes[0].Self {
		t.Errorf("nodes %+v; want this machine alone", nodes)
	}
	js, err := r.Jobs(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 1 || js[0].ID != own.ID {
		t.Errorf("jobs %+v; want its own alone", js)
	}
}
