package host

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v4/disk"
)

// diskFS are filesystems that live on a local disk whatever their device.
var diskFS = map[string]bool{
	"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true, "zfs": true,
	"f2fs": true, "jfs": true, "reiserfs": true, "bcachefs": true, "vfat": true, "exfat": true,
	"ntfs": true, "ntfs3": true, "fuseblk": true, "apfs": true, "hfs": true, "refs": true,
}

// notDiskFS are filesystems on a block device that are not worth showing:
// read-only images (snaps, CDs).
var notDiskFS = map[string]bool{"squashfs": true, "iso9660": true, "udf": true, "erofs": true}

// localDisks picks the real local filesystems out of every mount of an OS
// (goos, as runtime.GOOS names it): one mount per device, the shortest
// path, no bind mounts, no pseudo filesystems. Filesystem names are
// compared in lower case (Windows says "NTFS"). On macOS the system
// volumes of the APFS container (/System/Volumes/VM, Preboot, ...) are left
// out: they share the container's space with the data volume, which
// stands for it.
func localDisks(goos string, parts []disk.PartitionStat) []disk.PartitionStat {
	var out []disk.PartitionStat
	for _, p := range parts {
		fs := strings.ToLower(p.Fstype)
		local := diskFS[fs] || (strings.HasPrefix(p.Device, "/dev/") && !notDiskFS[fs])
		if local && !slices.Contains(p.Opts, "bind") && !macSystemVolume(goos, p.Mountpoint, parts) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b disk.PartitionStat) int {
		return cmp.Or(cmp.Compare(len(a.Mountpoint), len(b.Mountpoint)), strings.Compare(a.Mountpoint, b.Mountpoint))
	})
	seen := map[string]bool{}
	return slices.DeleteFunc(out, func(p disk.PartitionStat) bool {
		dup := seen[p.Device]
		seen[p.Device] = true
		return dup
	})
}

// macSystemVolume reports whether mount is one of macOS's system volumes
// other than the data volume (since macOS 10.15 the system at / is a sealed
// snapshot of the same container as /System/Volumes/Data).
func macSystemVolume(goos, mount string, parts []disk.PartitionStat) bool {
	if goos != "darwin" {
		return false
	}
	if mount == "/" {
		return slices.ContainsFunc(parts, func(p disk.PartitionStat) bool { return p.Mountpoint == "/System/Volumes/Data" })
	}
	return strings.HasPrefix(mount, "/System/Volumes/") && mount != "/System/Volumes/Data"
}

// refreshDisks re-reads the mount list when it is older than DiskRefresh.
// A failed refresh keeps the previous list and is retried next time.
func (s *Sampler) refreshDisks(ctx context.Context, now time.Time) error {
	if s.disks != nil && now.Sub(s.disksAt) < s.cfg.DiskRefresh {
		return nil
	}
	parts, err := s.src.partitions(ctx)
	if err != nil {
		return fmt.Errorf("list mounts: %w", err)
	}
	disks := []string{}
	devs := map[uint64]bool{}
	for _, p := range localDisks(runtime.GOOS, parts) {
		fi, err := s.src.stat(p.Mountpoint)
		if err != nil || !fi.IsDir() { // not visible here, or a file bind-mounted into a container
			continue
		}
		if dev, ok := deviceOf(fi); ok {
			devs[dev] = true
		}
		disks = append(disks, p.Mountpoint)
	}
	for _, path := range s.cfg.ExtraPaths {
		fi, err := s.src.stat(path)
		if err != nil {
			continue // not created yet: looked for again at the next refresh
		}
		if dev, ok := deviceOf(fi); !ok || !devs[dev] {
			disks = append(disks, path)
		}
	}
	slices.Sort(disks)
	s.disks, s.disksAt = disks, now
	return nil
}

// readDisks statfs's every disk of the current list.
func (s *Sampler) readDisks(ctx context.Context) ([]Disk, error) {
	out := make([]Disk, 0, len(s.disks))
	var firstErr error
	for _, path := range s.disks {
		u, err := s.src.usage(ctx, path)
		if err != nil {
			firstErr = cmp.Or(firstErr, fmt.Errorf("read usage of %s: %w", path, err))
			continue
		}
		out = append(out, Disk{Mount: path, UsedBytes: u.Used, TotalBytes: u.Total})
	}
	return out, firstErr
}
