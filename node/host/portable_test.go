package host

import (
	"slices"
	"testing"

	"github.com/shirou/gopsutil/v4/disk"
)

// TestLocalDisksPerOS: what gopsutil lists on macOS and Windows: the APFS
// system volumes of the one container are left out (the data volume
// stands for it), and Windows' drives, whose filesystem names are
// upper case and whose devices are letters, are kept.
func TestLocalDisksPerOS(t *testing.T) {
	for _, tc := range []struct {
		goos  string
		parts []disk.PartitionStat
		want  []string
	}{
		{"darwin", []disk.PartitionStat{
			{Device: "/dev/disk3s1s1", Mountpoint: "/", Fstype: "apfs"},
			{Device: "devfs", Mountpoint: "/dev", Fstype: "devfs"},
			{Device: "/dev/disk3s6", Mountpoint: "/System/Volumes/VM", Fstype: "apfs"},
			{Device: "/dev/disk3s2", Mountpoint: "/System/Volumes/Preboot", Fstype: "apfs"},
			{Device: "/dev/disk3s4", Mountpoint: "/System/Volumes/Update", Fstype: "apfs"},
			{Device: "/dev/disk1s2", Mountpoint: "/System/Volumes/xarts", Fstype: "apfs"},
			{Device: "/dev/disk3s5", Mountpoint: "/System/Volumes/Data", Fstype: "apfs"},
			{Device: "map auto_home", Mountpoint: "/System/Volumes/Data/home", Fstype: "autofs"},
			{Device: "/dev/disk5s1", Mountpoint: "/Volumes/Backup", Fstype: "apfs"},
		}, []string{"/System/Volumes/Data", "/Volumes/Backup"}},
		// macOS before 10.15: one volume at /.
		{"darwin", []disk.PartitionStat{{Device: "/dev/disk1s1", Mountpoint: "/", Fstype: "apfs"}}, []string{"/"}},
		{"windows", []disk.PartitionStat{
			{Device: "C:", Mountpoint: "C:", Fstype: "NTFS"},
			{Device: "D:", Mountpoint: "D:", Fstype: "ReFS"},
			{Device: "E:", Mountpoint: "E:", Fstype: "CDFS"},
		}, []string{"C:", "D:"}},
		{"linux", []disk.PartitionStat{
			{Device: "/dev/nvme0n1p2", Mountpoint: "/", Fstype: "ext4"},
			{Device: "/dev/nvme0n1p1", Mountpoint: "/boot/efi", Fstype: "vfat"},
			// A Linux path under /System/Volumes is nothing special.
			{Device: "/dev/sdb1", Mountpoint: "/System/Volumes/VM", Fstype: "xfs"},
		}, []string{"/", "/boot/efi", "/System/Volumes/VM"}},
	} {
		var got []string
		for _, p := range localDisks(tc.goos, tc.parts) {
			got = append(got, p.Mountpoint)
		}
		slices.Sort(got)
		slices.Sort(tc.want)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: disks %v, want %v", tc.goos, got, tc.want)
		}
	}
}

// TestSkipInterfacesPerOS: the rates leave out loopback and the virtual
// interfaces of each OS, and count the LAN's.
func TestSkipInterfacesPerOS(t *testing.T) {
	for _, tc := range []struct {
		goos       string
		skip, keep []string
	}{
		{"linux", []string{"lo", "docker0", "veth1a2b", "br-0123"}, []string{"eth0", "enp3s0", "wlan0"}},
		{"darwin", []string{"lo0", "awdl0", "llw0", "utun3", "bridge0", "anpi0", "gif0", "stf0", "ap1"}, []string{"en0", "en7"}},
		{"windows", []string{"Loopback Pseudo-Interface 1", "vEthernet (WSL)", "vEthernet (Default Switch)", "isatap.{X}", "Teredo Tunneling Pseudo-Interface"},
			[]string{"Ethernet", "Wi-Fi", "Ethernet 2"}},
	} {
		s := &Sampler{cfg: Config{SkipInterfaces: skipInterfaces(tc.goos)}}
		for _, n := range tc.skip {
			if !s.skipInterface(n) {
				t.Errorf("%s: %q is counted", tc.goos, n)
			}
		}
		for _, n := range tc.keep {
			if s.skipInterface(n) {
				t.Errorf("%s: %q is left out", tc.goos, n)
			}
		}
	}
}
