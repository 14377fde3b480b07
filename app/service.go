package app

import (
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/slurm"
	"github.com/labpool/labpool/sync/schema"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/internal/beat"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/sync/store"
)

// ErrNotFound means the thing asked for does not exist.
var ErrNotFound = errors.New("not found")

// ErrInvalid means a request is malformed; its message says how.
var ErrInvalid = errors.New("invalid request")

// Liveness says whether a member has a live, pinned session right now.
type Liveness interface {
	Online(id string) bool
}

// PoolManager creates, joins and edits the pool (implemented by the daemon,
// which owns the transport and discovery).
type PoolManager interface {
	Status(ctx context.Context) (PoolStatus, error)
	Create(ctx context.Context, req CreateRequest) (JoinCode, error)
	Join(ctx context.Context, req JoinRequest) (PoolStatus, error)
	AddDevice(ctx context.Context, req AddDeviceRequest) (DeviceCode, error)
	Merge(ctx context.Context, req MergeRequest) error
	Remove(ctx context.Context, id string) error
	Readmit(ctx context.Context, id string) error
	Probe(ctx context.Context, addr string) (ProbeResult, error)
	CreateInvite(ctx context.Context, req InviteRequest) (NewInvite, error)
	RevokeInvite(ctx context.Context, id string) error
	SetRole(ctx context.Context, id, role string) error
}

// Service answers the UI and the CLI: reads from the local replica (its
// Reader), everything else through the daemon's parts it is built from.
type Service struct {
	*Reader
	hub *Hub

	pool    PoolManager
	caller  NodeCaller
	tunnels *Tunnels
	folders FolderManager
	copier  Copier
	policy  PolicyManager
	signer  LaunchSigner // nil: launches carry no owner proof
	lend    lending      // this machine's lender, once the daemon sets it
}

// Deps are the parts a Service is built from; all are required but Signer
// and Log.
type Deps struct {
	DB      *store.DB
	Self    Self
	Live    Liveness      // which members have a live session
	Pool    PoolManager   // creates, joins and edits the pool
	Nodes   NodeCaller    // reaches the agent API of every node
	Folders FolderManager // shares this machine's folders
	Copier  Copier        // runs copies
	Policy  PolicyManager // this machine's policy
	// Signer signs this member's launches (the daemon's device key); nil:
	// launches carry no proof, and every reader shows their owner as
	// unverified.
	Signer LaunchSigner
	// Reservations gives the reservation grants the report counts as held
	// but unused; nil: the pool's replica (the accepted reservations every
	// machine published of its own GPUs).
	Reservations ReservationSource
	Log          *slog.Logger // nil: discard
}

// New returns the service built from d; it names the first required part
// that is missing.
func New(d Deps) (*Service, error) {
	for _, dep := range []struct {
		name    string
		missing bool
	}{
		{"DB", d.DB == nil}, {"Self", d.Self.ID == ""}, {"Live", d.Live == nil}, {"Pool", d.Pool == nil},
		{"Nodes", d.Nodes == nil}, {"Folders", d.Folders == nil}, {"Copier", d.Copier == nil}, {"Policy", d.Policy == nil},
	} {
		if dep.missing {
			return nil, fmt.Errorf("build the service: Deps.%s is required", dep.name)
		}
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := NewReader(d.DB, d.Self)
	r.live = d.Live
	r.reservations = d.Reservations
	if r.reservations == nil {
		r.reservations = replicaReservations{r}
	}
	s := &Service{Reader: r, hub: NewHub(), pool: d.Pool, caller: d.Nodes, folders: d.Folders, copier: d.Copier, policy: d.Policy, signer: d.Signer}
	s.tunnels = newTunnels(s, log)
	return s, nil
}

// Self returns this machine's identity.
func (r *Reader) Self(ctx context.Context) (Self, error) { return r.self, nil }

// Hub returns the event hub the service publishes to.
func (s *Service) Hub() *Hub { return s.hub }

// Nodes returns every member of the pool, this machine first, then by name.
func (r *Reader) Nodes(ctx context.Context) ([]Node, error) {
	ids, names, err := r.nodeIDs(ctx)
	if err != nil {
		return nil, err
	}
	latest, err := r.history.Latest(ctx)
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, 0, len(ids))
	for _, id := range ids {
		sm, ok := latest[id]
		n, err := r.node(ctx, id, names[id], sm, ok)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Self != nodes[j].Self {
			return nodes[i].Self
		}
		return nodes[i].Name < nodes[j].Name
	})
	return nodes, r.nameJobs(ctx, nodes)
}

// nodeIDs lists this machine and the pool's current members; a machine
// removed from its pool lists itself alone (it is in no pool).
func (r *Reader) nodeIDs(ctx context.Context) ([]string, map[string]string, error) {
	ids := []string{r.self.ID}
	names := map[string]string{r.self.ID: r.self.Name}
	members, err := r.db.Members(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("read members: %w", err)
	}
	if slices.ContainsFunc(members, func(m store.MemberRow) bool { return m.ID == r.self.ID && m.Removed }) {
		return ids, names, nil
	}
	for _, m := range members {
		if m.Removed || m.ID == r.self.ID {
			continue
		}
		ids = append(ids, m.ID)
		names[m.ID] = m.Name
	}
	return ids, names, nil
}

// node builds the view of id: name is the member's name, used unless the
// node record names the node; sm is its latest sample, if ok.
func (r *Reader) node(ctx context.Context, id, name string, sm agent.Sample, ok bool) (Node, error) {
	n := Node{ID: id, ShortID: shortID(id), Name: name, Self: id == r.self.ID, GPUs: []GPU{}, Addresses: []string{}}
	n.Online = n.Self || r.live.Online(id)
	n.Stale = !n.Online
	rec, found, err := r.db.Latest(ctx, id, KindNode, "")
	if err != nil {
		return n, fmt.Errorf("read node %s: %w", shortID(id), err)
	}
	var devices []gpu.Info // as the node read them at start: topology and MIG
	if found {
		var nr NodeRecord
		if err := json.Unmarshal(rec.Data, &nr); err == nil {
			if nr.Info.Name != "" {
				n.Name = nr.Info.Name
			}
			n.Info = nodeInfo(nr.Info)
			devices = nr.Info.GPUs
			n.GPUError = nr.Info.GPUError
			n.Containers, n.ContainersError = nr.Containers, nr.ContainersError
			n.Cluster = nr.Cluster
			if nr.Cluster != nil {
				u := slurm.UsableGPUs(*nr.Cluster)
				n.ClusterUsable = &u
			}
			if nr.Addresses != nil {
				n.Addresses = nr.Addresses
			}
		}
	}
	if err := r.readAllocation(ctx, &n); err != nil {
		return n, err
	}
	n.Lend = r.nodeLend(ctx, id)
	if !ok {
		return n, nil // no sample, or a bad one from a peer: no data, not an error
	}
	n.LastSeen = sm.Time
	n.Host = hostStats(sm)
	if sm.GPUError != "" {
		n.GPUError = sm.GPUError
	}
	for _, g := range sm.GPUs {
		n.GPUs = append(n.GPUs, withTopology(gpuView(n, g, sm.Holding), devices))
	}
	return n, nil
}

// GPUs returns every GPU of the pool.
func (r *Reader) GPUs(ctx context.Context) ([]GPU, error) {
	nodes, err := r.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	gpus := []GPU{}
	for _, n := range nodes {
		gpus = append(gpus, n.GPUs...)
	}
	return gpus, nil
}

// History returns a node's samples over the last seconds, oldest first,
// from the finest tier that covers the window.
func (r *Reader) History(ctx context.Context, node string, seconds int) (History, error) {
	if node == "" {
		return History{}, fmt.Errorf("%w: node is required", ErrInvalid)
	}
	if seconds <= 0 || seconds > int(history.MaxWindow/time.Second) {
		return History{}, fmt.Errorf("%w: seconds must be between 1 and %d", ErrInvalid, int(history.MaxWindow/time.Second))
	}
	samples, err := r.history.Window(ctx, node, time.Duration(seconds)*time.Second, r.now())
	if err != nil {
		return History{}, fmt.Errorf("read history of %s: %w", shortID(node), err)
	}
	h := History{Node: node, Samples: make([]Sample, 0, len(samples))}
	for _, sm := range samples {
		h.Samples = append(h.Samples, point(node, sm))
	}
	return h, nil
}

// Pool returns the pool this machine belongs to, as the daemon knows it.
func (s *Service) Pool(ctx context.Context) (PoolStatus, error) {
	return s.pool.Status(ctx)
}

// Pool returns the pool this machine belongs to, as the replica last
// recorded it (no invites: those are the daemon's).
func (r *Reader) Pool(ctx context.Context) (PoolStatus, error) {
	ps := PoolStatus{Members: []Member{}}
	id, _, err := r.db.Setting(ctx, SettingPoolID)
	if err != nil {
		return ps, err
	}
	ps.PoolID = id
	rows, err := r.db.Members(ctx)
	if err != nil {
		return ps, err
	}
	ps.SelfID = r.self.ID
	for _, m := range rows {
		ps.Members = append(ps.Members, Member{ID: m.ID, Name: m.Name, Role: m.Role, AddedAt: m.AddedAt, AddedBy: m.AddedBy,
			Removed: m.Removed, Self: m.ID == r.self.ID})
		if m.ID == r.self.ID && !m.Removed {
			ps.SelfRole = m.Role
		}
	}
	ps.People = PeopleOf(ps.Members)
	ps.Invites = []Invite{}
	ps.Can = CanFor(ps.SelfRole)
	return ps, nil
}

// CanFor says what role allows ("" is no pool, where this machine can do
// everything to itself).
func CanFor(role string) Can {
	switch role {
	case "owner":
		return Can{Launch: true, ManageMembers: true, ManageAdmins: true}
	case "admin":
		return Can{Launch: true, ManageMembers: true}
	case "member", "":
		return Can{Launch: true}
	}
	return Can{Why: "Viewers watch the pool: ask an admin to make this machine a member to launch jobs, copy or share."}
}

// CreateInvite makes an invite code (admins and owners).
func (s *Service) CreateInvite(ctx context.Context, req InviteRequest) (NewInvite, error) {
	return s.pool.CreateInvite(ctx, req)
}

// Invites lists the pool's invites (admins and owners see them).
func (s *Service) Invites(ctx context.Context) ([]Invite, error) {
	ps, err := s.Pool(ctx)
	return ps.Invites, err
}

// RevokeInvite ends an invite.
func (s *Service) RevokeInvite(ctx context.Context, id string) error {
	return s.pool.RevokeInvite(ctx, id)
}

// SetRole changes a member's role.
func (s *Service) SetRole(ctx context.Context, id, role string) error {
	return s.pool.SetRole(ctx, id, role)
}

// ErrReadOnly means the call needs a running daemon.
var ErrReadOnly = errors.New("this needs the labpool daemon: start `labpool agent` or open the app")

// CreatePool creates a pool with this machine as the first device of its
// owner, the person req.As.
func (s *Service) CreatePool(ctx context.Context, req CreateRequest) (JoinCode, error) {
	return s.pool.Create(ctx, req)
}

// AddDevice makes a code that adds one device to a person (this machine's
// person by default): a person adds their own devices, an admin or owner
// those of people they may manage. The reply carries this machine's
// addresses for the join command.
func (s *Service) AddDevice(ctx context.Context, req AddDeviceRequest) (DeviceCode, error) {
	dc, err := s.pool.AddDevice(ctx, req)
	if err != nil {
		return DeviceCode{}, err
	}
	dc.Addresses = []string{}
	if rec, ok, err := s.db.Latest(ctx, s.self.ID, KindNode, ""); err == nil && ok {
		if addrs := PublishedAddrs(rec.Data); addrs != nil {
			dc.Addresses = addrs
		}
	}
	return dc, nil
}

// MergePeople makes person req.Who one with person req.Into (owners).
func (s *Service) MergePeople(ctx context.Context, req MergeRequest) error {
	if req.Who == "" || req.Into == "" {
		return fmt.Errorf("%w: merge needs two people: who and into", ErrInvalid)
	}
	return s.pool.Merge(ctx, req)
}

// JoinPool joins the pool of req.Code.
func (s *Service) JoinPool(ctx context.Context, req JoinRequest) (PoolStatus, error) {
	if req.Code == "" {
		return PoolStatus{}, fmt.Errorf("%w: a join code is required", ErrInvalid)
	}
	return s.pool.Join(ctx, req)
}

// RemoveMember removes a device from the pool.
func (s *Service) RemoveMember(ctx context.Context, id string) error {
	return s.pool.Remove(ctx, id)
}

// ReadmitMember takes back a device removed from the pool (owners and
// admins): a member again under its name, its jobs and hours its own.
func (s *Service) ReadmitMember(ctx context.Context, id string) error {
	return s.pool.Readmit(ctx, id)
}

// Probe reports what the machine at addr answers to this one.
func (s *Service) Probe(ctx context.Context, addr string) (ProbeResult, error) {
	if addr == "" {
		return ProbeResult{}, fmt.Errorf("%w: an address HOST:PORT is required", ErrInvalid)
	}
	return s.pool.Probe(ctx, addr)
}

// Settings in the local (unreplicated) table.
const (
	SettingPoolID     = schema.SettingPoolID
	SettingPoolSecret = schema.SettingPoolSecret
)

// Run publishes the pool view every interval (and each new sample) to the
// hub while a UI watches, until ctx is cancelled. While none does, it
// sleeps.
func (s *Service) Run(ctx context.Context, interval time.Duration) error {
	seen := map[string]time.Time{}
	var lastJobs []byte
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.hub.Watched():
		}
		t := beat.NewTicker(interval)
		for s.hub.Subscribers() > 0 && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-t.C:
				s.publishView(ctx, seen, &lastJobs)
			}
		}
		t.Stop()
	}
}

// publishView emits the pool's nodes, the samples newer than seen, and the
// jobs when they differ from *lastJobs.
func (s *Service) publishView(ctx context.Context, seen map[string]time.Time, lastJobs *[]byte) {
	nodes, err := s.Nodes(ctx)
	if err != nil {
		return
	}
	s.hub.Emit(EventNodes, nodes)
	for _, n := range nodes {
		if n.Host == nil || !n.LastSeen.After(seen[n.ID]) {
			continue
		}
		seen[n.ID] = n.LastSeen
		s.hub.Emit(EventSample, pointFromNode(n))
	}
	if js, err := s.Jobs(ctx, true); err == nil {
		if b, _ := json.Marshal(js); !bytes.Equal(b, *lastJobs) {
			*lastJobs = b
			s.hub.Emit(EventJobs, js)
		}
	}
}

func shortID(id string) string {
	if len(id) >= 9 && id[4] == '-' {
		return id[:9]
	}
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func nodeInfo(i agent.Info) NodeInfo {
	return NodeInfo{
		Hostname: i.Host.Hostname, OS: i.Host.OS, Kernel: i.Host.Kernel,
		CPUModel: i.Host.CPUModel, Cores: i.Host.Cores, MemTotalBytes: i.Host.MemTotalBytes,
		Version: i.Version, StartedAt: i.StartedAt,
		GOOS: goName(i.Host.GOOS), Arch: goName(i.Host.Arch), BootTime: bootTime(i.Host.BootTime),
	}
}

// goName is name where it is one of Go's names of an OS or architecture
// (lowercase letters and digits, at most 16), "" otherwise: the node record
// is its machine's word, and a member can write anything there (rule "a
// machine's OS and architecture are short Go names").
func goName(name string) string {
	if len(name) == 0 || len(name) > 16 {
		return ""
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return ""
		}
	}
	return name
}

// bootTime is a machine's boot time claim, Unix seconds; zero for none or
// one past year 9999.
func bootTime(sec uint64) time.Time {
	if sec == 0 || sec > 253402300799 {
		return time.Time{}
	}
	return time.Unix(int64(sec), 0).UTC()
}

// ErrForbidden means the pool refused this machine (for example a wrong join code).
var ErrForbidden = errors.New("forbidden")
