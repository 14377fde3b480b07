//go:build linux

package e2e

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/gpu/gputest"
)

// An arm64 host (a DGX Spark, a GB300 station, a Grace server) runs the
// linux/arm64 build of labpool under qemu-user: LABPOOL_ARM64_BIN names it
// (`make arm64-test` builds it), binfmt_misc execs it through
// qemu-aarch64, and QEMU_LD_PREFIX gives it the arm64 C library (the
// binary uses cgo, for NVML). It loads the arm64 build of NVIDIA's mock
// NVML library ($LABPOOL_TEST_NVML_ARM64, or arm64/ of the mock's
// directory) with the mock's profiles.

// arm64Prefix is where Debian's libc6-arm64-cross puts the arm64 C library.
const arm64Prefix = "/usr/aarch64-linux-gnu"

// requireArm64 returns the arm64 labpool binary, or skips t (fails it
// under CI, which always has one) saying what is missing.
func requireArm64(t *testing.T) string {
	t.Helper()
	armBin := os.Getenv("LABPOOL_ARM64_BIN")
	why := ""
	switch _, err := os.Stat("/proc/sys/fs/binfmt_misc/qemu-aarch64"); {
	case armBin == "":
		why = "LABPOOL_ARM64_BIN is not set: build labpool for linux/arm64 (make arm64-test does)"
	case err != nil:
		why = "qemu-aarch64 is not registered with binfmt_misc: install qemu-user-binfmt and register it (make arm64-test does)"
	}
	if _, err := os.Stat(filepath.Join(arm64Prefix, "lib", "ld-linux-aarch64.so.1")); why == "" && err != nil {
		why = "no arm64 C library at " + arm64Prefix + ": install libc6-arm64-cross"
	}
	if why != "" {
		skipOrFail(t, why)
	}
	t.Setenv("QEMU_LD_PREFIX", arm64Prefix)
	return armBin
}

// useArm64 makes h an arm64 host: it runs armBin, on the arm64 mock NVML
// library with a copy of the named profile.
func (h *host) useArm64(armBin, profile string) *mockNVML {
	t := h.lan.t.(*testing.T)
	t.Helper()
	text := readMockProfile(t, profile)
	dir := os.Getenv("LABPOOL_TEST_NVML_ARM64")
	if dir == "" {
		dir = filepath.Join(findMockNVML(t).Dir, "arm64")
	}
	lib, err := findMockIn(dir)
	if err != nil {
		skipOrFail(t, "arm64 mock NVML library: "+err.Error())
	}
	m := h.useMockNVMLLib(lib, text)
	h.bin = armBin
	return m
}

// findMockIn is gputest.FindMock of the library in dir (FindMock reads
// the directory from $LABPOOL_TEST_NVML, set here for that call only).
func findMockIn(dir string) (gputest.Mock, error) {
	old, had := os.LookupEnv("LABPOOL_TEST_NVML")
	os.Setenv("LABPOOL_TEST_NVML", dir)
	defer func() {
		if had {
			os.Setenv("LABPOOL_TEST_NVML", old)
		} else {
			os.Unsetenv("LABPOOL_TEST_NVML")
		}
	}()
	return gputest.FindMock()
}

// TestArm64Pool runs an arm64 agent under emulation (GB300 profile) and an
// amd64 agent (H100 profile) in one pool: each sees the other's GPUs, as
// NVML reported them on its machine.
func TestArm64Pool(t *testing.T) {
	armBin := requireArm64(t)
	l := newLAN(t, "grace", "x86")
	grace, x86 := l.host("grace"), l.host("x86")
	grace.useArm64(armBin, "gb300.yaml")
	x86.useMockNVML("h100.yaml")
	if f, err := elf.Open(armBin); err != nil || f.Machine != elf.EM_AARCH64 {
		t.Fatalf("LABPOOL_ARM64_BIN=%s is not an arm64 program: %v", armBin, err)
	}
	if out, errOut, code := grace.cli("version"); code != 0 || !strings.HasPrefix(out, "labpool ") {
		t.Fatalf("the arm64 binary under qemu-user: version says %q %q (exit %d)", out, errOut, code)
	}
	grace.agent()
	x86.agent()
	grace.waitDaemon()
	x86.waitDaemon()
	// The daemon is the arm64 program, run by qemu-aarch64 (binfmt_misc).
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", daemonPID(t, grace))); err != nil || !strings.Contains(exe, "qemu") {
		t.Errorf("grace's daemon runs %q (%v), want qemu-aarch64", exe, err)
	}
	// qemu-user (Debian 12's 7.2) cannot join a multicast group for the
	// program it runs ("udp4: failed to join any of these interfaces"), so
	// the emulated agent has no mDNS: it joins by address, as a machine
	// across a router does. On a real arm64 machine mDNS works as on amd64
	// (the same code: TestNoArchCode).
	out, errOut, code := x86.cli("pool", "create")
	if code != 0 {
		t.Fatalf("pool create: %s", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if _, errOut, code := grace.cli("pool", "join", lines[len(lines)-1], x86.ip+":7420"); code != 0 {
		t.Fatalf("grace: pool join by address: %s", errOut)
	}
	for _, c := range []struct {
		viewer *host
		node   string
		name   string
		uuid   string
	}{
		{x86, "grace", "NVIDIA GB300 NVL", "GPU-b300b300-0000-0000-0000-00000000000"},
		{grace, "x86", h100.name, "GPU-01000100-0000-0000-0000-00000000000"},
		{grace, "grace", "NVIDIA GB300 NVL", "GPU-b300b300-0000-0000-0000-00000000000"},
	} {
		waitFor(t, 90*time.Second, fmt.Sprintf("%s sees the 8 GPUs of %s", c.viewer.name, c.node), func() error {
			gs, err := gpuList(c.viewer, c.node)
			if err != nil {
				return err
			}
			if len(gs) != 8 {
				return fmt.Errorf("%d GPUs", len(gs))
			}
			for i, g := range gs {
				if g.Name != c.name || g.UUID != c.uuid+fmt.Sprint(i) || g.MemTotalBytes == 0 {
					return fmt.Errorf("gpu %d: %s %s, %d bytes", i, g.Name, g.UUID, g.MemTotalBytes)
				}
			}
			return nil
		})
	}
	nodes, err := x86.client().Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := find(nodes, "grace"); err != nil || !n.Online {
		t.Errorf("x86 sees grace as %+v, %v; want online", n, err)
	}
}
