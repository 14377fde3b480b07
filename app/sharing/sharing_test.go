package sharing

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/labpool/labpool/sync/schema"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/nodestore"
	"github.com/labpool/labpool/internal/leaktest"
	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/store"
)

type roles map[peer.ID]pool.Role

func (r roles) Role(id peer.ID) (pool.Role, bool) { role, ok := r[id]; return role, ok }

var self = peer.NewID([]byte("self"))

// setup returns a publisher of this machine, in a pool where it has role
// (none: outside a pool), and its replica.
func setup(t *testing.T, role pool.Role) (*Publisher, *store.DB) {
	t.Helper()
	return setupWith(t, role, store.Options{})
}

// setupWith is setup over a replica opened with opts.
func setupWith(t *testing.T, role pool.Role, opts store.Options) (*Publisher, *store.DB) {
	t.Helper()
	dir := t.TempDir()
	db, err := store.OpenWith(filepath.Join(dir, "replica.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := folders.DefaultConfig()
	cfg.Self, cfg.DataDir = self.String(), dir
	reg, err := folders.OpenWith(cfg, nodestore.NewShares(db))
	if err != nil {
		t.Fatal(err)
	}
	r := roles{}
	if role != "" {
		r[self] = role
	}
	return New(Config{Self: self, Name: "gpu1"}, db, reg, r, slog.New(slog.NewTextHandler(io.Discard, nil))), db
}

// record is the latest folder record of name, and its seq.
func record(t *testing.T, db *store.DB, name string) (folders.Info, uint64) {
	t.Helper()
	rec, ok, err := db.Latest(context.Background(), self.String(), app.KindFolder, name)
	if err != nil || !ok {
		t.Fatalf("folder record %q: %v, %v", name, ok, err)
	}
	var info folders.Info
	if err := json.Unmarshal(rec.Data, &info); err != nil {
		t.Fatal(err)
	}
	return info, uint64(rec.Seq)
}

func dataDir(t *testing.T, files int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, string(rune('a'+i))), []byte("12345"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestShareWritesItsRecordOnceUnchanged(t *testing.T) {
	p, db := setup(t, pool.RoleMember)
	ctx := context.Background()
	dir := dataDir(t, 2)
	f, err := p.Share(ctx, app.ShareRequest{Name: "data", Path: dir, ReadWrite: true})
	if err != nil {
		t.Fatal(err)
	}
	want := app.Folder{Node: self.String(), NodeName: "gpu1", Name: "data", Mode: "rw", SizeBytes: 10, Files: 2}
	if f.Node != want.Node || f.NodeName != want.NodeName || f.Name != want.Name || f.Mode != want.Mode || f.SizeBytes != want.SizeBytes || f.Files != want.Files {
		t.Errorf("Share = %+v, want %+v", f, want)
	}
	info, seq := record(t, db, "data")
	if info.SizeBytes != 10 || info.Files != 2 || info.Mode != "rw" || info.Removed {
		t.Errorf("record = %+v", info)
	}

	p.Republish(ctx, "data") // unchanged: nothing written
	if _, again := record(t, db, "data"); again != seq {
		t.Errorf("an unchanged share was written again (seq %d, then %d)", seq, again)
	}
	if err := os.WriteFile(filepath.Join(dir, "z"), []byte("67890"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Republish(ctx, "data") // after a copy into it
	if info, again := record(t, db, "data"); again == seq || info.Files != 3 || info.SizeBytes != 15 {
		t.Errorf("after a copy into it: record %+v (seq %d, was %d); want 3 files, 15 bytes", info, again, seq)
	}

	if err := p.Unshare(ctx, "data"); err != nil {
		t.Fatal(err)
	}
	if info, _ := record(t, db, "data"); !info.Removed {
		t.Errorf("after Unshare: record %+v, want removed", info)
	}
	if err := p.Unshare(ctx, "data"); !errors.Is(err, app.ErrNotFound) {
		t.Errorf("Unshare of an unknown share = %v, want ErrNotFound", err)
	}
}

func TestShareRefusals(t *testing.T) {
	ctx := context.Background()
	viewer, _ := setup(t, pool.RoleViewer)
	if _, err := viewer.Share(ctx, app.ShareRequest{Name: "data", Path: dataDir(t, 1)}); !errors.Is(err, app.ErrForbidden) {
		t.Errorf("a viewer's Share = %v, want ErrForbidden", err)
	}
	p, _ := setup(t, "")
	if _, err := p.Share(ctx, app.ShareRequest{Name: "etc", Path: "/etc"}); !errors.Is(err, app.ErrForbidden) {
		t.Errorf("Share of /etc = %v, want ErrForbidden", err)
	}
	if _, err := p.Share(ctx, app.ShareRequest{Name: "", Path: dataDir(t, 1)}); !errors.Is(err, app.ErrInvalid) {
		t.Errorf("Share without a name = %v, want ErrInvalid", err)
	}
}

func TestRunPublishesAndStops(t *testing.T) {
	p, db := setup(t, pool.RoleMember)
	if _, err := p.reg.Add(folders.Share{Name: "data", Path: dataDir(t, 1)}); err != nil {
		t.Fatal(err)
	}
	before := leaktest.Count()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok, _ := db.Latest(context.Background(), self.String(), app.KindFolder, "data"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run published no record")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	leaktest.Check(t, before, 2*time.Second)
}

// TestShareTakenBackWhenRefused: a share whose record the replica refuses
// (here past the origin's control quota) is no share: Share says so,
// naming the rule, and the name is not shared, or keeps what it shared
// before; an acknowledged share is always one the pool can see.
func TestShareTakenBackWhenRefused(t *testing.T) {
	ctx := context.Background()
	// A folder's record here is 50 bytes: one fits, two do not.
	p, db := setupWith(t, pool.RoleMember, store.Options{ControlQuota: 90})
	first := dataDir(t, 1)
	if _, err := p.Share(ctx, app.ShareRequest{Name: "a", Path: first}); err != nil {
		t.Fatalf("the first share: %v", err)
	}
	_, err := p.Share(ctx, app.ShareRequest{Name: "b", Path: dataDir(t, 1)})
	if !errors.Is(err, app.ErrForbidden) || !strings.Contains(err.Error(), schema.RuleControlQuota) {
		t.Fatalf("a share past the quota = %v; want forbidden naming rule %q", err, schema.RuleControlQuota)
	}
	if _, err := p.reg.Get("b"); err == nil {
		t.Error("b is shared although the pool cannot see it")
	}
	many := make([]string, 20)
	for i := range many {
		many[i] = strings.Repeat(string(rune('A'+i)), 52)
	}
	if _, err := p.SetMembers(ctx, "a", folders.MembersChange{Set: many}); !errors.Is(err, app.ErrForbidden) {
		t.Fatalf("members past the quota = %v; want forbidden", err)
	}
	s, err := p.reg.Get("a")
	if err != nil || len(s.Members) != 0 || s.Path != first {
		t.Errorf("a after the refused change: %+v, %v; want it shared as before, with all members", s, err)
	}
	if info, _ := record(t, db, "a"); len(info.Members) != 0 {
		t.Errorf("a's record names members %v", info.Members)
	}
}

// TestRemoteMembersChangePublished: a change of a share's members asked
// from another machine (the peer handler's folders.ChangeMembers over
// Publisher.Changed) is in the share's record at once, and the share keeps
// its sharer, this machine.
func TestRemoteMembersChangePublished(t *testing.T) {
	ctx := context.Background()
	p, db := setup(t, pool.RoleMember)
	admin, bob := peer.NewID([]byte("admin")), peer.NewID([]byte("bob"))
	if _, err := p.Share(ctx, app.ShareRequest{Name: "datasets", Path: dataDir(t, 1), Members: []string{self.String()}}); err != nil {
		t.Fatal(err)
	}
	a := folders.Access{Role: func(string) string { return folders.RoleMember }, Changed: p.Changed}
	info, err := folders.ChangeMembers(ctx, p.reg, a, folders.Caller{ID: admin.String(), Role: folders.RoleAdmin}, "datasets",
		folders.MembersChange{Add: []string{bob.String()}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{self.String(), bob.String()}
	slices.Sort(want)
	if rec, _ := record(t, db, "datasets"); !slices.Equal(rec.Members, want) || !slices.Equal(info.Members, want) {
		t.Errorf("the record lists %v, the reply %v; want %v", rec.Members, info.Members, want)
	}
	if s, _ := p.reg.Get("datasets"); s.Sharer != self.String() {
		t.Errorf("the share's sharer is %q; want this machine", s.Sharer)
	}
}
