//go:build unix

package host

import (
	"context"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shirou/gopsutil/v4/disk"
)

func TestLocalDisks(t *testing.T) {
	parts := []disk.PartitionStat{
		{Device: "proc", Mountpoint: "/proc", Fstype: "proc"},
		{Device: "/dev/nvme0n1p2", Mountpoint: "/", Fstype: "ext4"},
		{Device: "tmpfs", Mountpoint: "/run", Fstype: "tmpfs"},
		{Device: "overlay", Mountpoint: "/var/lib/docker/overlay2/x/merged", Fstype: "overlay"},
		{Device: "/dev/loop3", Mountpoint: "/snap/core/1", Fstype: "squashfs"},
		{Device: "/dev/nvme0n1p1", Mountpoint: "/boot/efi", Fstype: "vfat"},
		{Device: "/dev/nvme0n1p2", Mountpoint: "/run/netns", Fstype: "ext4", Opts: []string{"rw", "bind"}},
		{Device: "/dev/nvme0n1p2", Mountpoint: "/var/snap/x/common", Fstype: "ext4"},
		{Device: "tank/data", Mountpoint: "/data", Fstype: "zfs"},
		{Device: "server:/export", Mountpoint: "/mnt/nfs", Fstype: "nfs4"},
		{Device: "sshfs#me@host:", Mountpoint: "/mnt/ssh", Fstype: "fuse.sshfs"},
		{Device: "/dev/sdb1", Mountpoint: "/scratch", Fstype: "xfs"},
	}
	var got []string
	for _, p := range localDisks("linux", parts) {
		got = append(got, p.Mountpoint)
	}
	want := []string{"/", "/data", "/scratch", "/boot/efi"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("localDisks (-want +got):\n%s", diff)
	}
}

// fakeFile is what stat returns for a path of the fake filesystem.
type fakeFile struct {
	dir bool
	dev uint64
}

func (f fakeFile) Name() string       { return "" }
func (f fakeFile) Size() int64        { return 0 }
func (f fakeFile) Mode() fs.FileMode  { return map[bool]fs.FileMode{true: fs.ModeDir}[f.dir] }
func (f fakeFile) ModTime() time.Time { return time.Time{} }
func (f fakeFile) IsDir() bool        { return f.dir }
func (f fakeFile) Sys() any {
	st := &syscall.Stat_t{}
	setDev(&st.Dev, f.dev)
	return st
}

// setDev sets a Stat_t's Dev, whose type differs by OS (int32 on macOS).
func setDev[T ~int32 | ~uint32 | ~uint64](dev *T, v uint64) { *dev = T(v) }

func TestSampleDisks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		files := map[string]fakeFile{
			"/": {true, 1}, "/scratch": {true, 2}, "/etc/hosts": {false, 1},
			"/srv/share": {true, 1}, "/mnt/nfs/share": {true, 9},
		}
		lists := 0
		m := &fakeMachine{}
		s := newFakeSampler(m)
		s.cfg.ExtraPaths = []string{"/srv/share", "/mnt/nfs/share", "/not/yet"}
		s.src.partitions = func(context.Context) ([]disk.PartitionStat, error) {
			lists++
			return []disk.PartitionStat{
				{Device: "/dev/sda1", Mountpoint: "/", Fstype: "ext4"},
				{Device: "/dev/sda2", Mountpoint: "/etc/hosts", Fstype: "ext4"},
				{Device: "/dev/sdb1", Mountpoint: "/scratch", Fstype: "xfs"},
				{Device: "/dev/sdc1", Mountpoint: "/gone", Fstype: "xfs"},
			}, nil
		}
		s.src.stat = func(path string) (os.FileInfo, error) {
			if f, ok := files[path]; ok {
				return f, nil
			}
			return nil, os.ErrNotExist
		}
		s.src.usage = func(_ context.Context, path string) (*disk.UsageStat, error) {
			return &disk.UsageStat{Used: uint64(len(path)), Total: 100}, nil
		}
		st, err := s.Sample(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := []Disk{{"/", 1, 100}, {"/mnt/nfs/share", 14, 100}, {"/scratch", 8, 100}}
		if diff := cmp.Diff(want, st.Disks); diff != "" {
			t.Errorf("Disks (-want +got):\n%s", diff)
		}

		for range 59 { // the list is cached for DiskRefresh (1 min)
			time.Sleep(time.Second)
			s.Sample(t.Context())
		}
		files["/not/yet"] = fakeFile{true, 7}
		time.Sleep(time.Second)
		st, _ = s.Sample(t.Context())
		if lists != 2 || len(st.Disks) != 4 {
			t.Errorf("after 60 s: %d mount listings, disks %v; want 2 listings and /not/yet added", lists, st.Disks)
		}
	})
}
