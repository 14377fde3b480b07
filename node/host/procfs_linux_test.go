//go:build linux

package host

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/shirou/gopsutil/v4/common"
	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
)

// TestProcfsMatchesGopsutil reads this machine with the procfs readers and
// with gopsutil, back to back.
func TestProcfsMatchesGopsutil(t *testing.T) {
	ctx := t.Context()
	r := newProcfs("/proc")
	for _, pass := range []string{"open", "reread"} { // the second time through the open files
		t.Run(pass+"/cpu", func(t *testing.T) {
			before, err := cpu.TimesWithContext(ctx, false)
			if err != nil || len(before) != 1 {
				t.Fatalf("gopsutil: %v, %v", before, err)
			}
			got, err := r.cpuTimes(ctx)
			if err != nil || len(got) != 1 {
				t.Fatalf("cpuTimes() = %v, %v", got, err)
			}
			after, _ := cpu.TimesWithContext(ctx, false)
			t.Logf("gopsutil %v, procfs %v", before[0], got[0])
			if got[0].CPU != "cpu-total" {
				t.Errorf("CPU = %q", got[0].CPU)
			}
			const slack = 0.05 // 5 ticks; Iowait may go back a little
			within := func(name string, b, g, a float64) {
				if g < min(b, a)-slack || g > max(b, a)+slack {
					t.Errorf("%s = %v; gopsutil read %v before and %v after", name, g, b, a)
				}
			}
			b, g, a := countCPU(before[0]), countCPU(got[0]), countCPU(after[0])
			within("busy", b.busy, g.busy, a.busy)
			within("total", b.total, g.total, a.total)
			within("user", before[0].User, got[0].User, after[0].User)
			within("idle", before[0].Idle, got[0].Idle, after[0].Idle)
			within("guest", before[0].Guest, got[0].Guest, after[0].Guest)
		})
		t.Run(pass+"/memory", func(t *testing.T) {
			want, err := mem.VirtualMemoryWithContext(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.memory(ctx)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("gopsutil total %d used %d, procfs total %d used %d", want.Total, want.Used, got.Total, got.Used)
			if got.Total != want.Total || got.Total == 0 {
				t.Errorf("Total = %d; gopsutil %d", got.Total, want.Total)
			}
			if got.Used > got.Total || got.Total-got.Available != got.Used || absDiff(got.Used, want.Used) > want.Total/10 {
				t.Errorf("Used = %d, Available %d; gopsutil Used %d", got.Used, got.Available, want.Used)
			}
		})
		t.Run(pass+"/load", func(t *testing.T) {
			before, err := load.AvgWithContext(ctx) // /proc/loadavg: rounded to 0.01
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := load.AvgWithContext(ctx) // the kernel updates them every 5s
			t.Logf("gopsutil %+v, procfs %+v", *before, *got)
			const slack = 0.01 + 0.005
			for _, l := range []struct {
				name    string
				b, g, a float64
			}{{"Load1", before.Load1, got.Load1, after.Load1}, {"Load5", before.Load5, got.Load5, after.Load5}, {"Load15", before.Load15, got.Load15, after.Load15}} {
				if l.g < min(l.b, l.a)-slack || l.g > max(l.b, l.a)+slack {
					t.Errorf("%s = %v; gopsutil read %v before and %v after", l.name, l.g, l.b, l.a)
				}
			}
		})
		t.Run(pass+"/net", func(t *testing.T) {
			before, err := net.IOCountersWithContext(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.netIO(ctx)
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]net.IOCountersStat{}
			for _, c := range got {
				have[c.Name] = c
			}
			var after map[string]net.IOCountersStat // read only when an interface changed
			readAfter := func() map[string]net.IOCountersStat {
				if after == nil {
					after = map[string]net.IOCountersStat{}
					cs, _ := net.IOCountersWithContext(ctx, true)
					for _, c := range cs {
						after[c.Name] = c
					}
				}
				return after
			}
			for _, w := range before {
				g, ok := have[w.Name]
				if !ok {
					if _, still := readAfter()[w.Name]; still {
						t.Errorf("interface %q missing: got %v", w.Name, got)
					}
					continue // removed meanwhile
				}
				if g.BytesRecv < w.BytesRecv || g.BytesSent < w.BytesSent {
					if a, ok := readAfter()[w.Name]; ok && a.BytesRecv >= w.BytesRecv && a.BytesSent >= w.BytesSent {
						t.Errorf("%s: got %+v, gopsutil read %+v before", w.Name, g, w)
					}
				}
			}
			t.Logf("%d interfaces", len(got))
		})
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// Fixtures, as the kernel writes them.
const (
	statFixture = "cpu  1886524 23208 1089699 1391250 20995 0 34040 7 11 3\n" +
		"cpu0 940769 11001 537853 712714 5925 0 14615 0 0 0\n" +
		"intr 1 2 3\nctxt 123\nbtime 1700000000\n"
	meminfoFixture = "MemTotal:       24683620 kB\nMemFree:        21772340 kB\n" +
		"MemAvailable:   24057952 kB\nBuffers:           19900 kB\nCached:          1523460 kB\n" +
		"SwapCached:            0 kB\nActive:           815528 kB\nInactive:        1316628 kB\n" +
		"Active(file):     412345 kB\nInactive(file):   987654 kB\nSReclaimable:      45678 kB\n" +
		"HugePages_Total:       0\nHugepagesize:       2048 kB\n"
	netDevHeader = "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
	netDevFixture = netDevHeader +
		"    lo: 416479401  154293    0    0    0     0          0         0 416479401  154293    0    0    0     0       0          0\n" +
		"  eth0: 910976667   41592    1    2    3     4          5         6  2906923   29896    7    8    9    10      11         12\n" +
		"eth1:18446744073709551615 5 0 0 0 0 0 0 98765432109876 6 0 0 0 0 0 0\n" +
		"lpdk28444:       0       0    0    0    0     0          0         0     1294      13    0  480    0     0       0          0\n"
)

// withHostProc points gopsutil at dir instead of /proc.
func withHostProc(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, common.EnvKey, common.EnvMap{common.HostProcEnvKey: dir})
}

// fakeProc writes a /proc with these files into a new directory.
func fakeProc(t testing.TB, stat, meminfo, netDev string) string {
	dir := t.TempDir()
	writeFakeProc(t, dir, stat, meminfo, netDev)
	return dir
}

func writeFakeProc(t testing.TB, dir, stat, meminfo, netDev string) {
	if err := os.MkdirAll(filepath.Join(dir, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"stat": stat, "meminfo": meminfo, "net/dev": netDev} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkLikeGopsutil reads the files of dir with a procfs and with gopsutil
// and fails t when they disagree.
func checkLikeGopsutil(t *testing.T, dir string) {
	t.Helper()
	ctx := withHostProc(t.Context(), dir)
	r := newProcfs(dir)

	wantCPU, _ := cpu.TimesWithContext(ctx, false) // empty, never an error, when the line is bad
	gotCPU, err := r.cpuTimes(ctx)
	if err != nil {
		gotCPU = []cpu.TimesStat{}
	}
	if diff := cmp.Diff(wantCPU, gotCPU); diff != "" {
		t.Errorf("cpuTimes (-gopsutil +procfs), error %v:\n%s", err, diff)
	}

	wantVM, wantErr := mem.VirtualMemoryWithContext(ctx)
	gotVM, err := r.memory(ctx)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Errorf("memory() error = %v; gopsutil %v", err, wantErr)
	case err == nil && (gotVM.Total != wantVM.Total || gotVM.Used != wantVM.Used || gotVM.Available != wantVM.Available):
		t.Errorf("memory() = total %d used %d available %d; gopsutil %d %d %d",
			gotVM.Total, gotVM.Used, gotVM.Available, wantVM.Total, wantVM.Used, wantVM.Available)
	}

	wantNet, wantErr := net.IOCountersByFileWithContext(ctx, true, filepath.Join(dir, "net/dev"))
	gotNet, err := r.netIO(ctx)
	if (err != nil) != (wantErr != nil) {
		t.Errorf("netIO() error = %v; gopsutil %v", err, wantErr)
	} else if err == nil {
		if diff := cmp.Diff(wantNet, gotNet, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("netIO (-gopsutil +procfs):\n%s", diff)
		}
	}
}

func TestProcfsFixtures(t *testing.T) {
	noAvailable := strings.Replace(meminfoFixture, "MemAvailable:   24057952 kB\n", "", 1)
	for _, tc := range []struct {
		name                  string
		stat, meminfo, netDev string
	}{
		{"kernel", statFixture, meminfoFixture, netDevFixture},
		{"no MemAvailable", statFixture, noAvailable, netDevFixture},
		{"no MemAvailable nor file lines", statFixture,
			"MemTotal: 1000 kB\nMemFree: 100 kB\nCached: 200 kB\n", netDevFixture},
		{"no MemTotal", statFixture, "MemAvailable: 1000 kB\n", netDevFixture},
		{"7 cpu counters", "cpu 1 2 3 4 5 6 7\n", "MemTotal: 10 kB\nMemAvailable: 4\n", netDevHeader},
		{"6 cpu counters", "cpu 1 2 3 4 5 6\ncpu0 1 2 3 4 5 6 7\n", "", ""},
		{"cpu0 first, no newline", "cpu0 1 2 3 4 5 6 7 8 9 10 11 12", "MemTotal: 1 kB kB\nMemAvailable: 1 kB", netDevHeader + "x:" + strings.Repeat(" 1", 12)},
		{"bad counters", "cpu 1 2 3 4 5 6 x\n", "MemTotal: 12x kB\nMemAvailable: 1 kB\n", netDevHeader + "eth0: 1 2 3 4 5 6 7 8 9 10 11 12 -13 14 15 16\n"},
		{"overflow", "cpu 18446744073709551616 2 3 4 5 6 7\n", "MemTotal: 18446744073709551616 kB\n", netDevHeader + "eth0: 18446744073709551616 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"},
		{"not cpu", "intr 1 2 3 4 5 6 7 8\n", "MemTotal:\nMemAvailable:: 1\n", netDevHeader + "eth0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n : 1 2 3 4 5 6 7 8 9 10 11 12 13\n"},
		{"one header line", "\ncpu 1 2 3 4 5 6 7\n", "\n", "Inter-|   Receive\n"},
		{"empty", "", "", ""},
		{"two colons, short line", "cpu 1 2 3 4 5 6 7 8 9 10 11\n", meminfoFixture + "MemTotal: 7 kB\n",
			netDevHeader + "bond0:1:1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\neth2: 1 2 3 4 5 6 7 8 9 10 11 12\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLikeGopsutil(t, fakeProc(t, tc.stat, tc.meminfo, tc.netDev))
		})
	}
}

// TestParseNetDevNoSpace reads "eth0:123 ...", which the kernel writes when
// the counter is too wide for its column.
func TestParseNetDevNoSpace(t *testing.T) {
	got, err := parseNetDev([]byte(netDevFixture), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []net.IOCountersStat{
		{Name: "lo", BytesRecv: 416479401, PacketsRecv: 154293, BytesSent: 416479401, PacketsSent: 154293},
		{Name: "eth0", BytesRecv: 910976667, PacketsRecv: 41592, Errin: 1, Dropin: 2, Fifoin: 3,
			BytesSent: 2906923, PacketsSent: 29896, Errout: 7, Dropout: 8, Fifoout: 9},
		{Name: "eth1", BytesRecv: math.MaxUint64, PacketsRecv: 5, BytesSent: 98765432109876, PacketsSent: 6},
		{Name: "lpdk28444", BytesSent: 1294, PacketsSent: 13, Dropout: 480},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseNetDev (-want +got):\n%s", diff)
	}
}

func TestParseMeminfo(t *testing.T) {
	got, err := parseMeminfo([]byte(meminfoFixture))
	if want := (meminfo{total: 24683620 << 10, available: 24057952 << 10, hasTotal: true, hasAvailable: true}); err != nil || got != want {
		t.Errorf("parseMeminfo() = %+v, %v; want %+v", got, err, want)
	}
	got, err = parseMeminfo([]byte(strings.Replace(meminfoFixture, "MemAvailable:", "MemAvail:", 1)))
	if err != nil || got.hasAvailable || !got.hasTotal {
		t.Errorf("parseMeminfo() without MemAvailable = %+v, %v", got, err)
	}
}

// TestProcFileGrows reads files larger than the buffer, and files that
// change: each read sees the file as it is then.
func TestProcFileGrows(t *testing.T) {
	var many strings.Builder
	many.WriteString(netDevHeader)
	for i := range 2000 {
		fmt.Fprintf(&many, "%14s: %d 2 3 4 5 6 7 8 %d 10 11 12 13 14 15 16\n", fmt.Sprintf("veth%d", i), 1000+i, 2000+i)
	}
	dir := fakeProc(t, statFixture, meminfoFixture, netDevHeader+"lo: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n")
	checkLikeGopsutil(t, dir)

	r := newProcfs(dir)
	r.netDev.size = 16
	r.stat.size = 8
	nics, err := r.netIO(t.Context())
	if err != nil || len(nics) != 1 || nics[0].BytesRecv != 1 {
		t.Fatalf("netIO() = %v, %v", nics, err)
	}
	times, err := r.cpuTimes(t.Context())
	if err != nil || times[0].User != 18865.24 {
		t.Fatalf("cpuTimes() = %v, %v", times, err)
	}
	if n := len(r.stat.buf); n > 128 {
		t.Errorf("/proc/stat buffer grew to %d bytes for a first line of %d", n, strings.Index(statFixture, "\n")+1)
	}

	writeFakeProc(t, dir, strings.Replace(statFixture, "1886524", "1886624", 1), meminfoFixture, many.String())
	checkLikeGopsutil(t, dir)
	nics, err = r.netIO(t.Context())
	if err != nil || len(nics) != 2000 || nics[1999].Name != "veth1999" || nics[1999].BytesRecv != 2999 || nics[1999].BytesSent != 3999 {
		t.Fatalf("netIO() = %d interfaces, %v", len(nics), err)
	}
	if len(r.netDev.buf) < many.Len() {
		t.Errorf("buffer of %d bytes for a file of %d", len(r.netDev.buf), many.Len())
	}
	if times, err := r.cpuTimes(t.Context()); err != nil || times[0].User != 18866.24 {
		t.Errorf("cpuTimes() after a change = %v, %v", times, err)
	}
}

// TestProcFileReopens checks that a read error closes the file, and that
// the next read opens it again.
func TestProcFileReopens(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "meminfo")
	if err := os.Symlink(dir, link); err != nil { // a directory: open works, read fails
		t.Fatal(err)
	}
	r := newProcfs(dir)
	if _, err := r.memory(t.Context()); err == nil {
		t.Fatal("memory() of a directory: no error")
	}
	if r.meminfo.f != nil {
		t.Error("file still open after a read error")
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(link, []byte(meminfoFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	vm, err := r.memory(t.Context())
	if err != nil || vm.Total != 24683620<<10 || vm.Used != (24683620-24057952)<<10 {
		t.Errorf("memory() after the error = %+v, %v", vm, err)
	}
	if _, err := newProcfs(filepath.Join(dir, "missing")).cpuTimes(t.Context()); err == nil {
		t.Error("cpuTimes() of a missing file: no error")
	}
}

// TestProcfsAllocs checks that reading the same machine again allocates
// nothing.
func TestProcfsAllocs(t *testing.T) {
	r := newProcfs(fakeProc(t, statFixture, meminfoFixture, netDevFixture))
	ctx := t.Context()
	read := func() {
		_, err1 := r.cpuTimes(ctx)
		_, err2 := r.memory(ctx)
		_, err3 := r.load(ctx)
		_, err4 := r.netIO(ctx)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatal(err1, err2, err3, err4)
		}
	}
	read()
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Errorf("%v allocations per reading", n)
	}
}

// TestSamplerUsesProcfs checks the wiring: a Sampler reads through procfs.
func TestSamplerUsesProcfs(t *testing.T) {
	if p := os.Getenv("HOST_PROC"); p != "" && p != "/proc" {
		t.Skip("HOST_PROC is set")
	}
	s := NewSampler(DefaultConfig())
	for name, f := range map[string]any{"cpuTimes": s.src.cpuTimes, "load": s.src.load, "memory": s.src.memory, "netIO": s.src.netIO} {
		if fn := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name(); !strings.Contains(fn, "(*procfs)."+name) {
			t.Errorf("Sampler reads %s with %s", name, fn)
		}
	}
	if _, err := s.Sample(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// FuzzProcfsParsers feeds anything to the parsers: they must not panic,
// and on ASCII text they must read what gopsutil reads.
func FuzzProcfsParsers(f *testing.F) {
	for _, s := range []string{statFixture, meminfoFixture, netDevFixture, "", "\n", "cpu 1 2 3 4 5 6 7", "MemTotal: 1 kB kB", "a\nb\nc:1 2 3 4 5 6 7 8 9 10 11 12 13"} {
		f.Add([]byte(s))
	}
	for _, name := range []string{"/proc/stat", "/proc/meminfo", "/proc/net/dev"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	prev, _ := parseNetDev([]byte(netDevFixture), nil)
	dir := f.TempDir() // one for every input this process reads
	f.Fuzz(func(t *testing.T, b []byte) {
		st, stErr := parseStat(b)
		mi, miErr := parseMeminfo(b)
		nics, netErr := parseNetDev(b, nil)
		again, againErr := parseNetDev(b, append([]net.IOCountersStat(nil), prev...))
		if (netErr == nil) != (againErr == nil) || (netErr == nil && !cmp.Equal(nics, again, cmpopts.EquateEmpty())) {
			t.Fatalf("parseNetDev with a previous result = %v, %v; without %v, %v", again, againErr, nics, netErr)
		}
		for _, c := range b {
			if c >= 0x80 { // gopsutil splits fields on Unicode white space too
				return
			}
		}
		writeFakeProc(t, dir, string(b), string(b), string(b))
		ctx := withHostProc(t.Context(), dir)

		wantCPU, _ := cpu.TimesWithContext(ctx, false)
		if (stErr == nil) != (len(wantCPU) == 1) || (stErr == nil && st != wantCPU[0]) {
			t.Errorf("parseStat() = %+v, %v; gopsutil %+v", st, stErr, wantCPU)
		}

		vm, vmErr := mem.VirtualMemoryWithContext(ctx)
		switch {
		case miErr != nil && vmErr == nil:
			t.Errorf("parseMeminfo() error %v; gopsutil none", miErr)
		case miErr == nil && vmErr == nil && mi.hasTotal && mi.hasAvailable && (mi.total != vm.Total || mi.total-mi.available != vm.Used):
			t.Errorf("parseMeminfo() = %+v; gopsutil total %d used %d", mi, vm.Total, vm.Used)
		}

		wantNet, wantErr := net.IOCountersByFileWithContext(ctx, true, filepath.Join(dir, "net/dev"))
		if (netErr == nil) != (wantErr == nil) || (netErr == nil && !cmp.Equal(nics, wantNet, cmpopts.EquateEmpty())) {
			t.Errorf("parseNetDev() = %+v, %v; gopsutil %+v, %v", nics, netErr, wantNet, wantErr)
		}
	})
}

// BenchmarkSample compares one Sample through gopsutil and through procfs.
func BenchmarkSample(b *testing.B) {
	for _, bc := range []struct {
		name string
		src  func() source
	}{{"gopsutil", gopsutilSource}, {"procfs", osSource}} {
		b.Run(bc.name, func(b *testing.B) {
			s := NewSampler(DefaultConfig())
			s.src = bc.src()
			ctx := b.Context()
			if _, err := s.Sample(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Sample(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
