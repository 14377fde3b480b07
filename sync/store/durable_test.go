//go:build linux

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWriteClasses checks which writes commit with synchronous=FULL: control
// records and settings do, samples and replicated records do not, and the
// connection is back to NORMAL after each.
func TestWriteClasses(t *testing.T) {
	ctx := context.Background()
	db, err := OpenWith(filepath.Join(t.TempDir(), "r.db"), Options{ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		kinds []string
		want  class
	}{
		{[]string{"sample.1s"}, classHistory},
		{[]string{"sample.1s", "sample.live"}, classHistory},
		{[]string{"job"}, classControl},
		{[]string{"sample.1s", "alert"}, classControl},
		{[]string{"samples"}, classControl},
	} {
		var recs []Record
		for _, k := range tc.kinds {
			recs = append(recs, Record{Kind: k})
		}
		if got := classOf(recs); got != tc.want {
			t.Errorf("classOf(%v) = %d; want %d", tc.kinds, got, tc.want)
		}
	}
	var pages int
	if err := db.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&pages); err != nil || pages != walPages {
		t.Errorf("wal_autocheckpoint = %d, %v; want %d", pages, err, walPages)
	}
	// The FULL of a control write is seen from inside its transaction.
	var inside string
	err = db.write(ctx, classControl, func(tx *sql.Tx) (bool, error) {
		return false, tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&inside)
	})
	if err != nil || inside != "2" {
		t.Errorf("synchronous inside a control write = %q, %v; want 2 (FULL)", inside, err)
	}
	err = db.write(ctx, classHistory, func(tx *sql.Tx) (bool, error) {
		return false, tx.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&inside)
	})
	if err != nil || inside != "1" {
		t.Errorf("synchronous inside a history write = %q, %v; want 1 (NORMAL)", inside, err)
	}
}

// TestDiskFull fills a small tmpfs with samples and checks that history
// pauses while control records (own and replicated), settings and members
// still land, that Put skips history and keeps the cursor below it, and that
// history resumes by itself once space returns. It needs root: it runs
// itself again in a private mount namespace (unshare -m) and mounts a 16 MiB
// tmpfs there, which vanishes with the process.
func TestDiskFull(t *testing.T) {
	if dir := os.Getenv("LABPOOL_STORE_TMPFS"); dir != "" {
		diskFull(t, dir)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("disk-full test: needs root to mount a small tmpfs in a private mount namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("disk-full test: needs unshare (util-linux)")
	}
	dir := t.TempDir()
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--",
		os.Args[0], "-test.run", "^TestDiskFull$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "LABPOOL_STORE_TMPFS="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestDiskFull") {
		t.Fatalf("in a private mount namespace: %v\n%s", err, out)
	}
	t.Logf("in a private mount namespace:\n%s", out)
}

func diskFull(t *testing.T, dir string) {
	ctx := context.Background()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatalf("mount a 16 MiB tmpfs on %s: %v", dir, err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	// Ballast that the test deletes later, to give space back.
	ballast := filepath.Join(dir, "other-files")
	if err := os.WriteFile(ballast, make([]byte, 5<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "replica.db")
	opts := Options{ReserveBytes: 2 << 20, ResumeEvery: 20 * time.Millisecond}
	db, err := OpenWith(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	if info, err := os.Stat(path + ".reserve"); err != nil || info.Size() != opts.ReserveBytes {
		t.Fatalf("reserve file: %v, %v; want %d bytes", info, err, opts.ReserveBytes)
	}

	// Fill the disk with samples until history pauses.
	const self = "A"
	pad := strings.Repeat("x", 4000)
	i, lastSample := 0, -1
	for ; ; i += 8 {
		batch := make([]Record, 8)
		for k := range batch {
			batch[k] = Record{Kind: "sample.1s", Key: fmt.Sprint(i + k), Time: t0().Add(time.Duration(i+k) * time.Second),
				Data: []byte(`{"pad":"` + pad + `"}`)}
		}
		_, err := db.AppendBatch(ctx, self, batch)
		if errors.Is(err, ErrHistoryPaused) {
			break
		}
		if err != nil {
			t.Fatalf("samples %d: %v", i, err)
		}
		if lastSample = i + 7; i > 10000 {
			t.Fatal("a 16 MiB disk took 10000 samples of 4 kB")
		}
	}
	t.Logf("history paused after %d samples", i)
	if !db.HistoryPaused() {
		t.Fatal("HistoryPaused() = false after ErrHistoryPaused")
	}

	// Control records still land: jobs, members, settings, replicated ones.
	var acked []string
	for j := range 200 {
		key := fmt.Sprintf("job-%02d", j)
		if _, err := db.Append(ctx, self, "job", key, t0(), []byte(`{"state":"running","pad":"`+pad[:500]+`"}`)); err != nil {
			t.Fatalf("control record %d on a full disk: %v", j, err)
		}
		acked = append(acked, key)
	}
	if err := db.SetSetting(ctx, "policy", `{"x":1}`); err != nil {
		t.Fatalf("setting on a full disk: %v", err)
	}
	if _, err := db.PutMember(ctx, MemberRow{ID: "B", Name: "b", Version: 1, AddedAt: t0(), AddedBy: self, Role: "member"}); err != nil {
		t.Fatalf("member on a full disk: %v", err)
	}
	if _, err := os.Stat(path + ".reserve"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reserve still there after control writes on a full disk: %v", err)
	}
	// Samples are refused at once, not written.
	if _, err := db.Append(ctx, self, "sample.1s", "late", t0(), []byte(`{}`)); !errors.Is(err, ErrHistoryPaused) {
		t.Errorf("sample while paused: %v; want ErrHistoryPaused", err)
	}
	// A peer's frame: its job lands, its samples wait, its cursor stays below them.
	peerRecs := []Record{
		{Origin: "B", Seq: 1, Kind: "node", Time: t0(), Data: []byte(`{}`)},
		{Origin: "B", Seq: 2, Kind: "sample.1s", Key: "1", Time: t0(), Data: []byte(`{"u":1}`)},
		{Origin: "B", Seq: 3, Kind: "job", Key: "jb", Time: t0(), Data: []byte(`{"state":"queued"}`)},
		{Origin: "B", Seq: 4, Kind: "sample.1s", Key: "2", Time: t0(), Data: []byte(`{"u":2}`)},
	}
	if err := db.Put(ctx, peerRecs); err != nil {
		t.Fatalf("Put on a full disk: %v", err)
	}
	if c, _ := db.Cursor(ctx, "B"); c != 1 {
		t.Errorf("cursor of B after a paused Put = %d; want 1 (below the first sample skipped)", c)
	}
	// A later frame of control records only does not carry the cursor past
	// the samples skipped before.
	later := Record{Origin: "B", Seq: 5, Kind: "alert", Key: "a1", Time: t0(), Data: []byte(`{"rule":"temp"}`)}
	if err := db.Put(ctx, []Record{later}); err != nil {
		t.Fatalf("Put on a full disk: %v", err)
	}
	if c, _ := db.Cursor(ctx, "B"); c != 1 {
		t.Errorf("cursor of B after a later frame of control records = %d; want still 1", c)
	}
	if _, ok, _ := db.Latest(ctx, "B", "alert", "a1"); !ok {
		t.Error("the peer's alert was not stored on a full disk")
	}
	peerRecs = append(peerRecs, later)
	if _, ok, _ := db.Latest(ctx, "B", "job", "jb"); !ok {
		t.Error("the peer's job was not stored on a full disk")
	}
	if _, ok, _ := db.Latest(ctx, "B", "sample.1s", "1"); ok {
		t.Error("the peer's sample was stored while history is paused")
	}

	// Space returns: history resumes by itself and the reserve is back.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * opts.ResumeEvery)
	if _, err := db.Append(ctx, self, "sample.1s", "after", t0().Add(time.Hour), []byte(`{}`)); err != nil {
		t.Fatalf("sample after space returned: %v", err)
	}
	if db.HistoryPaused() {
		t.Error("HistoryPaused() = true after a sample was written")
	}
	if info, err := os.Stat(path + ".reserve"); err != nil || info.Size() != opts.ReserveBytes {
		t.Errorf("reserve after resuming: %v, %v; want %d bytes", info, err, opts.ReserveBytes)
	}
	if err := db.Put(ctx, peerRecs); err != nil {
		t.Fatal(err)
	}
	if c, _ := db.Cursor(ctx, "B"); c != 5 {
		t.Errorf("cursor of B after the frames came again = %d; want 5", c)
	}

	// Everything acknowledged is there after a reopen, and the file is sound.
	db.Close()
	if db, err = OpenWith(path, opts); err != nil {
		t.Fatal(err)
	}
	if got := integrity(t, db); got != "ok" {
		t.Fatalf("integrity_check = %q", got)
	}
	for _, key := range acked {
		if _, ok, err := db.Latest(ctx, self, "job", key); err != nil || !ok {
			t.Errorf("acknowledged %s lost: %v", key, err)
		}
	}
	if _, ok, err := db.Latest(ctx, self, "sample.1s", fmt.Sprint(lastSample)); err != nil || !ok {
		t.Errorf("sample %d, written before the disk filled, lost: %v", lastSample, err)
	}
	if v, ok, _ := db.Setting(ctx, "policy"); !ok || v != `{"x":1}` {
		t.Errorf("setting written on a full disk = %q, %v", v, ok)
	}
	if ms, _ := db.Members(ctx); len(ms) != 1 {
		t.Errorf("members = %v; want B", ms)
	}
	for _, r := range peerRecs {
		if _, ok, _ := db.Latest(ctx, r.Origin, r.Kind, r.Key); !ok {
			t.Errorf("peer record %s/%s missing after history resumed", r.Kind, r.Key)
		}
	}
}

// TestCheckFindsDamage breaks a page of an index on purpose and wants Check
// to say so; a sound file passes.
func TestCheckFindsDamage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	db, err := OpenWith(path, Options{ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := db.Append(ctx, "A", "job", fmt.Sprint(i), t0(), []byte(`{"pad":"`+strings.Repeat("y", 200)+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Check(ctx); err != nil {
		t.Fatalf("Check(sound file) = %v", err)
	}
	var root int
	if err := db.r.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'records_origin_seq'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Scribble over the index's root page (pages are 4 KiB).
	if _, err := f.WriteAt([]byte(strings.Repeat("\xff", 4096)), int64(root-1)*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db, err = OpenWith(path, Options{ReserveBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Check(ctx); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Check(damaged index) = %v; want ErrCorrupt", err)
	}
}
