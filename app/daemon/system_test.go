package daemon

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/labpool/labpool/app/web"
)

// TestSystemServer serves a daemon's local API on a system socket: made
// 0660 in the admin group, and answering its admins (this test's user).
func TestSystemServer(t *testing.T) {
	g, err := user.LookupGroupId(strconv.Itoa(os.Getegid()))
	if err != nil {
		t.Skipf("this test's group has no name: %v", err)
	}
	d := openDaemon(t, "sys")
	dir, err := os.MkdirTemp("", "lpsys") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d.cfg.SystemSocket, d.cfg.AdminGroup = filepath.Join(dir, "run", "labpool.sock"), g.Name
	sys, err := d.systemServer(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { serveUntil(ctx, sys.srv, sys.l) })
	defer wg.Wait()
	defer cancel()

	st, err := os.Stat(d.cfg.SystemSocket)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o660 {
		t.Fatalf("system socket mode %v, want 0660", st.Mode().Perm())
	}
	self, err := web.NewClient(d.cfg.SystemSocket).Self(t.Context())
	if err != nil {
		t.Fatalf("an admin calls the system socket: %v", err)
	}
	if self.ID != d.id.ID.String() {
		t.Fatalf("self %q, want the daemon's %q", self.ID, d.id.ID)
	}
}
