package app

import (
	"context"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

const (
	holderID = "HOLD-AAAA-AAAA-AAAA"
	bobID    = "BOBB-AAAA-AAAA-AAAA"
)

// holder is the machine ws-a100 serving its shares' peer calls in process
// (the real handler over a real registry), and the laptop's service
// (selfID) that reaches it through its own peer call path.
type holder struct {
	svc *Service
	reg *folders.Registry

	mu    sync.Mutex
	roles map[string]string // by device ID, on the holder
}

func (h *holder) role(id string) string { h.mu.Lock(); defer h.mu.Unlock(); return h.roles[id] }

// NodeClient implements NodeCaller: every node is the holder, and the
// caller it proves is this laptop.
func (h *holder) NodeClient(ctx context.Context, id string) (*http.Client, error) {
	handler := folders.Handler(h.reg, folders.Access{
		Caller: func(*http.Request) folders.Caller { return folders.Caller{ID: selfID, Role: h.role(selfID)} },
		Role:   h.role,
	})
	return &http.Client{Transport: &peerapitest.Loopback{Handler: handler}}, nil
}

type memStore struct{ s []folders.Share }

func (m *memStore) LoadShares() ([]folders.Share, error) { return m.s, nil }
func (m *memStore) SaveShares(s []folders.Share) error   { m.s = s; return nil }

// newHolder is a pool of this laptop, bob and ws-a100, which shares
// "datasets" with this laptop alone; the laptop is selfRole on it.
func newHolder(t testing.TB, selfRole string) *holder {
	db := openDB(t)
	putMember(t, db, selfID, "laptop", false)
	putMember(t, db, holderID, "ws-a100", false)
	putMember(t, db, bobID, "bob", false)
	putRecord(t, db, holderID, KindFolder, "datasets", t0, mustJSON(t, folders.Info{Name: "datasets", Mode: "rw", Members: []string{selfID}}))
	cfg := folders.DefaultConfig()
	cfg.Self, cfg.DataDir = holderID, t.TempDir()
	reg, err := folders.OpenWith(cfg, &memStore{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(dir+"/a.txt", []byte("a"), 0o644)
	if _, err := reg.Add(folders.Share{Name: "datasets", Path: dir, ReadWrite: true, Members: []string{selfID}, Sharer: holderID}); err != nil {
		t.Fatal(err)
	}
	h := &holder{reg: reg, roles: map[string]string{selfID: selfRole, bobID: "member", holderID: "member"}}
	stub := stubDaemon{NewReader(db, Self{ID: selfID, Name: "laptop"})}
	if h.svc, err = New(Deps{DB: db, Self: Self{ID: selfID, Name: "laptop"}, Live: fakeLive{}, Pool: stub, Nodes: h,
		Folders: stub, Copier: stub, Policy: stub}); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestFolderMembersFromAnotherMachine: from the laptop, an admin changes
// the members of ws-a100:datasets on ws-a100 (by name, adding and
// removing); a plain member who did not share it is refused there, naming
// the rule; a folder named in the wrong place is refused naming where it
// is (it was "no such shared folder").
func TestFolderMembersFromAnotherMachine(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name, role string
		req        FolderMembersRequest
		want       string   // a part of the refusal; "" allowed
		after      []string // the holder's list after it
	}{
		{"no node", "admin", FolderMembersRequest{Name: "datasets", Add: []string{"bob"}},
			"datasets is on ws-a100: labpool share ws-a100:datasets", []string{selfID}},
		{"wrong node", "admin", FolderMembersRequest{Node: "laptop", Name: "datasets", Add: []string{"bob"}},
			"datasets is on ws-a100: labpool share ws-a100:datasets", []string{selfID}},
		{"plain member", "member", FolderMembersRequest{Node: "ws-a100", Name: "datasets", Add: []string{"bob"}},
			folders.RuleMembers, []string{selfID}},
		{"admin adds", "admin", FolderMembersRequest{Node: "ws-a100", Name: "datasets", Add: []string{"bob"}},
			"", sortedIDs(selfID, bobID)},
		{"owner sets", "owner", FolderMembersRequest{Node: "ws-a100", Name: "datasets", Members: []string{"bob"}},
			"", []string{bobID}},
		{"admin opens", "admin", FolderMembersRequest{Node: "ws-a100", Name: "datasets"}, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHolder(t, tc.role)
			f, err := h.svc.SetFolderMembers(ctx, tc.req)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want == "" && (f.NodeName != "ws-a100" || !slices.Equal(f.Members, tc.after)):
				t.Errorf("reply %+v; want ws-a100 with %v", f, tc.after)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v; want a refusal naming %q", err, tc.want)
			}
			if s, _ := h.reg.Get("datasets"); !slices.Equal(s.Members, tc.after) {
				t.Errorf("the holder's list is %v; want %v", s.Members, tc.after)
			}
		})
	}
}

func sortedIDs(ids ...string) []string { slices.Sort(ids); return ids }

// BenchmarkFolderMembersRemote is a change of a folder's members made
// from another machine, through the service's peer call path (the typed
// client, the handler, the holder's registry and its check), until it is
// in force on the holder: the median and p90 of one change.
func BenchmarkFolderMembersRemote(b *testing.B) {
	h := newHolder(b, "admin")
	ctx := b.Context()
	var took []time.Duration
	for i := 0; b.Loop(); i++ {
		req := FolderMembersRequest{Node: "ws-a100", Name: "datasets", Add: []string{"bob"}}
		if i%2 == 1 {
			req = FolderMembersRequest{Node: "ws-a100", Name: "datasets", Remove: []string{"bob"}}
		}
		start := time.Now()
		if _, err := h.svc.SetFolderMembers(ctx, req); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		if s, _ := h.reg.Get("datasets"); slices.Contains(s.Members, bobID) != (i%2 == 0) {
			b.Fatalf("change %d is not in force on the holder: %v", i, s.Members)
		}
	}
	sort.Slice(took, func(i, k int) bool { return took[i] < took[k] })
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds()), "p90-µs")
}
