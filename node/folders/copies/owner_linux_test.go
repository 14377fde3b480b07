package copies_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
)

// TestCopyIntoRWShareWritableByJob: a file a member copies into a
// read-write share can be overwritten by that member's job, which runs as
// the share's folder user (folders.FolderUser, the rule node/jobs' runAs
// follows): a real process of that user rewrites it. Before, the copy
// wrote files of root (the daemon), 0644, that a job running as nobody
// could not change ("Permission denied").
func TestCopyIntoRWShareWritableByJob(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a copy gives files to another user, and the job runs as that user")
	}
	for _, tc := range []struct {
		name     string
		uid, gid int // the share's directory's owner
		want     folders.Owner
	}{
		{"a member's directory", 1234, 1234, folders.Owner{UID: 1234, GID: 1234}},
		{"root's directory", 0, 0, folders.Owner{UID: 65534, GID: 65534}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			laptop, gpu1 := l.add("laptop"), l.add("gpu1")
			dir := filepath.Join(t.TempDir(), "results")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for p := filepath.Dir(dir); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
				os.Chmod(p, 0o755) // t.TempDir's directories are 0700: the job's user passes through
			}
			if err := os.Chown(dir, tc.uid, tc.gid); err != nil {
				t.Fatal(err)
			}
			if _, err := gpu1.reg.Add(folders.Share{Name: "results", Path: dir, ReadWrite: true}); err != nil {
				t.Fatal(err)
			}
			if got, err := folders.FolderUser(dir, ""); err != nil || got != tc.want {
				t.Fatalf("FolderUser = %+v, %v; want %+v", got, err, tc.want)
			}
			src := filepath.Join(t.TempDir(), "mydata")
			os.WriteFile(src, []byte("from the laptop"), 0o644)
			tr, err := laptop.rcv.Load().Copy(context.Background(), copies.Request{Src: src, Dst: "gpu1:results/"})
			if err != nil {
				t.Fatal(err)
			}
			if end := waitEnd(t, laptop, tr); end.State != "done" {
				t.Fatalf("copy ended %+v", end)
			}
			copied := filepath.Join(dir, "mydata")
			fi, err := os.Stat(copied)
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != tc.want.UID || int(st.Gid) != tc.want.GID {
				t.Errorf("the copied file belongs to %d:%d; want the folder user %+v", st.Uid, st.Gid, tc.want)
			}
			// The member's job: a process of the folder user overwrites the
			// copied file and writes a new one beside it.
			job := exec.Command("/bin/sh", "-c", `echo rewritten > mydata && echo new > out`)
			job.Dir = dir
			job.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(tc.want.UID), Gid: uint32(tc.want.GID)}}
			if out, err := job.CombinedOutput(); err != nil {
				t.Fatalf("the job as %+v: %v: %s", tc.want, err, out)
			}
			if got := readFile(t, copied); got != "rewritten\n" {
				t.Errorf("the job's write left %q", got)
			}
		})
	}
}
