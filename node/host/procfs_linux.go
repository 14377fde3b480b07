//go:build linux

package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/load"
	"github.com/shirou/gopsutil/v4/mem"
	"github.com/shirou/gopsutil/v4/net"
)

// withProcfs replaces the gopsutil readers of src that a Sampler calls every
// second (CPU times, load, memory, network counters) with procfs ones that
// return the same values at a fraction of the cost; only the load averages
// differ, by less than 0.005: gopsutil reads them rounded to 2 decimals from
// /proc/loadavg. When HOST_PROC points gopsutil at another /proc, src is
// kept as it is.
func withProcfs(src source) source {
	if p := os.Getenv("HOST_PROC"); p != "" && p != "/proc" {
		return src
	}
	r := newProcfs("/proc")
	src.cpuTimes, src.load, src.memory, src.netIO = r.cpuTimes, r.load, r.memory, r.netIO
	return src
}

// procfs reads /proc/stat, /proc/meminfo and /proc/net/dev the way gopsutil
// does, but opens each file once and re-reads it with pread from offset 0
// (which makes the kernel regenerate it) into a buffer kept between calls,
// and parses the bytes in place.
//
// A procfs is not safe for concurrent use, and what a method returns is
// valid only until the next call of that method: a Sampler calls them under
// its mutex and copies what it keeps.
type procfs struct {
	stat, meminfo, netDev procFile

	cpu  [1]cpu.TimesStat
	avg  load.AvgStat
	vm   mem.VirtualMemoryStat
	nics []net.IOCountersStat
}

func newProcfs(root string) *procfs {
	return &procfs{
		stat:    procFile{path: root + "/stat", size: 256, firstLine: true},
		meminfo: procFile{path: root + "/meminfo", size: 4 << 10},
		netDev:  procFile{path: root + "/net/dev", size: 4 << 10},
	}
}

// cpuTimes is cpu.TimesWithContext(ctx, false): the first line of /proc/stat.
func (p *procfs) cpuTimes(context.Context) ([]cpu.TimesStat, error) {
	b, err := p.stat.read()
	if err != nil {
		return nil, err
	}
	t, err := parseStat(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.stat.path, err)
	}
	p.cpu[0] = t
	return p.cpu[:], nil
}

// load is what load.AvgWithContext computes when it cannot read
// /proc/loadavg, from one sysinfo(2): the kernel's fixed-point averages,
// which /proc/loadavg prints rounded to 2 decimals.
func (p *procfs) load(context.Context) (*load.AvgStat, error) {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil {
		return nil, fmt.Errorf("sysinfo: %w", err)
	}
	const scale = 1 << 16 // SI_LOAD_SHIFT
	p.avg = load.AvgStat{
		Load1:  float64(info.Loads[0]) / scale,
		Load5:  float64(info.Loads[1]) / scale,
		Load15: float64(info.Loads[2]) / scale,
	}
	return &p.avg, nil
}

// memory fills Total, Available, Used and UsedPercent as
// mem.VirtualMemoryWithContext does; it calls that function instead when
// /proc/meminfo lacks MemTotal or MemAvailable (kernels before 3.14), where
// gopsutil estimates what is available from other lines.
func (p *procfs) memory(ctx context.Context) (*mem.VirtualMemoryStat, error) {
	b, err := p.meminfo.read()
	if err != nil {
		return nil, err
	}
	mi, err := parseMeminfo(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.meminfo.path, err)
	}
	if !mi.hasTotal || !mi.hasAvailable {
		return mem.VirtualMemoryWithContext(ctx)
	}
	p.vm = mem.VirtualMemoryStat{Total: mi.total, Available: mi.available, Used: mi.total - mi.available}
	p.vm.UsedPercent = float64(p.vm.Used) / float64(p.vm.Total) * 100.0
	return &p.vm, nil
}

// netIO is net.IOCountersWithContext(ctx, true): the counters of every
// interface in /proc/net/dev.
func (p *procfs) netIO(context.Context) ([]net.IOCountersStat, error) {
	b, err := p.netDev.read()
	if err != nil {
		return nil, err
	}
	nics, err := parseNetDev(b, p.nics)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.netDev.path, err)
	}
	p.nics = nics
	return nics, nil
}

// maxProcFile bounds the buffer of a procFile.
const maxProcFile = 64 << 20

// procFile is one file under /proc, opened on first use and kept open.
type procFile struct {
	path      string
	size      int  // of the first buffer
	firstLine bool // only the first line is needed
	f         *os.File
	buf       []byte
}

// read re-reads the file from offset 0 and returns its content, or its
// start up to and including the first newline when firstLine is set. A
// buffer too small is doubled and the file read again from 0, so what read
// returns is one generation of the file. After an error the file is closed,
// and reopened by the next read.
func (p *procFile) read() ([]byte, error) {
	if p.f == nil {
		f, err := os.Open(p.path)
		if err != nil {
			return nil, err
		}
		p.f = f
	}
	if p.buf == nil {
		p.buf = make([]byte, p.size)
	}
	for {
		n, err := p.f.ReadAt(p.buf, 0)
		if err != nil && err != io.EOF {
			p.close()
			return nil, err
		}
		b := p.buf[:n]
		if n < len(p.buf) { // the whole file: ReadAt stops short only at its end
			return b, nil
		}
		if p.firstLine {
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				return b[:i+1], nil
			}
		}
		if len(p.buf) >= maxProcFile {
			p.close()
			return nil, fmt.Errorf("%s: longer than %d bytes", p.path, maxProcFile)
		}
		p.buf = make([]byte, 2*len(p.buf))
	}
}

func (p *procFile) close() {
	p.f.Close()
	p.f = nil
}

// Parsers. They take the bytes of a file, allocate nothing in the usual
// case, and accept exactly what gopsutil accepts for the values they return:
// lines end at '\n', fields are separated by ASCII white space (the kernel
// writes nothing else), and numbers are what strconv.ParseUint(s, 10, 64)
// accepts.

var (
	errNoCPULine   = errors.New(`first line is not "cpu" and at least 7 counters`)
	errBadNumber   = errors.New("bad number")
	errShortNetDev = errors.New("malformed: expected at least 2 header lines")
)

// isSpace is the ASCII white space of strings.Fields and strings.TrimSpace.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// nextField returns the bounds of the first field of b at or after i;
// start == len(b) when there is none.
func nextField(b []byte, i int) (start, end int) {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	start = i
	for i < len(b) && !isSpace(b[i]) {
		i++
	}
	return start, i
}

// parseUint is strconv.ParseUint(string(b), 10, 64) without the string.
func parseUint(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, errBadNumber
	}
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 || v > (1<<64-1-d)/10 {
			return 0, errBadNumber
		}
		v = v*10 + d
	}
	return v, nil
}

// nextLine returns the line of b that starts at i, without its '\n', and
// where the next one starts.
func nextLine(b []byte, i int) (line []byte, next int) {
	if j := bytes.IndexByte(b[i:], '\n'); j >= 0 {
		return b[i : i+j], i + j + 1
	}
	return b[i:], len(b)
}

// parseStat parses the first line of /proc/stat, "cpu  user nice system
// idle iowait irq softirq [steal [guest [guest_nice]]] ..." in USER_HZ
// ticks, into seconds, as gopsutil's parseStatLine and ToTimesStat do: at
// least 8 fields, the first starting with "cpu", up to 10 counters read.
func parseStat(b []byte) (cpu.TimesStat, error) {
	line, _ := nextLine(b, 0)
	s, e := nextField(line, 0)
	name := line[s:e]
	var fields [10][]byte
	n := 0
	for i := e; n < len(fields); n++ {
		s, e := nextField(line, i)
		if s == len(line) {
			break
		}
		fields[n], i = line[s:e], e
	}
	if n < 7 {
		return cpu.TimesStat{}, errNoCPULine
	}
	if !bytes.HasPrefix(name, []byte("cpu")) {
		return cpu.TimesStat{}, errNoCPULine
	}
	var ticks [10]uint64
	for k, f := range fields[:n] {
		v, err := parseUint(f)
		if err != nil {
			return cpu.TimesStat{}, fmt.Errorf("cpu time field %d: %w", k+1, err)
		}
		ticks[k] = v
	}
	t := cpu.TimesStat{CPU: "cpu-total"}
	if string(name) != "cpu" {
		t.CPU = string(name)
	}
	hz := cpu.ClocksPerSec
	t.User, t.Nice, t.System, t.Idle, t.Iowait = float64(ticks[0])/hz, float64(ticks[1])/hz, float64(ticks[2])/hz, float64(ticks[3])/hz, float64(ticks[4])/hz
	t.Irq, t.Softirq, t.Steal, t.Guest, t.GuestNice = float64(ticks[5])/hz, float64(ticks[6])/hz, float64(ticks[7])/hz, float64(ticks[8])/hz, float64(ticks[9])/hz
	return t, nil
}

// meminfo is what memory needs of /proc/meminfo, in bytes.
type meminfo struct {
	total, available       uint64
	hasTotal, hasAvailable bool
}

// parseMeminfo reads the MemTotal and MemAvailable lines of /proc/meminfo
// ("MemTotal:       24683620 kB") as gopsutil's fillFromMeminfo does: a
// line with exactly one colon, the key and value trimmed, " kB" removed from
// the value, which must then be a number of kB; the last line of a key wins.
func parseMeminfo(b []byte) (meminfo, error) {
	var mi meminfo
	for i := 0; i < len(b); {
		var line []byte
		line, i = nextLine(b, i)
		c := bytes.IndexByte(line, ':')
		if c < 0 || bytes.IndexByte(line[c+1:], ':') >= 0 {
			continue
		}
		var dst *uint64
		switch key := bytes.TrimSpace(line[:c]); string(key) {
		case "MemTotal":
			dst, mi.hasTotal = &mi.total, true
		case "MemAvailable":
			dst, mi.hasAvailable = &mi.available, true
		default:
			continue
		}
		kb, err := parseKB(bytes.TrimSpace(line[c+1:]))
		if err != nil {
			return meminfo{}, fmt.Errorf("%s: %w", bytes.TrimSpace(line[:c]), err)
		}
		*dst = kb * 1024
	}
	return mi, nil
}

// parseKB is strconv.ParseUint(strings.ReplaceAll(string(v), " kB", ""), 10, 64).
func parseKB(v []byte) (uint64, error) {
	var x uint64
	digits := 0
	for i := 0; i < len(v); {
		if bytes.HasPrefix(v[i:], []byte(" kB")) {
			i += 3
			continue
		}
		d := uint64(v[i] - '0')
		if d > 9 || x > (1<<64-1-d)/10 {
			return 0, errBadNumber
		}
		x = x*10 + d
		digits++
		i++
	}
	if digits == 0 {
		return 0, errBadNumber
	}
	return x, nil
}

// parseNetDev parses /proc/net/dev as gopsutil's IOCountersByFile does:
// after 2 header lines, one line per interface, "name: rx_bytes rx_packets
// rx_errs rx_drop rx_fifo rx_frame rx_compressed rx_multicast tx_bytes
// tx_packets tx_errs tx_drop tx_fifo ...", the name ending at the last colon
// (there may be no space after it: "eth0:123"); a line without a name or
// with fewer than 13 counters is skipped. The result is appended to
// prev[:0], whose names are reused when they have not changed, so that
// reading the same interfaces again allocates nothing.
func parseNetDev(b []byte, prev []net.IOCountersStat) ([]net.IOCountersStat, error) {
	i, lines := 0, 0
	for ; i < len(b) && lines < 2; lines++ {
		_, i = nextLine(b, i)
	}
	if lines < 2 {
		return nil, errShortNetDev
	}
	out := prev[:0]
	for i < len(b) {
		var line []byte
		line, i = nextLine(b, i)
		c := bytes.LastIndexByte(line, ':')
		if c < 0 {
			continue
		}
		name := bytes.TrimSpace(line[:c])
		if len(name) == 0 {
			continue
		}
		var f [13][]byte
		n := 0
		for j := c + 1; n < len(f); n++ {
			s, e := nextField(line, j)
			if s == len(line) {
				break
			}
			f[n], j = line[s:e], e
		}
		if n < len(f) {
			continue
		}
		var v [13]uint64
		for k, field := range f {
			if k >= 5 && k <= 7 { // frame, compressed, multicast: not read
				continue
			}
			x, err := parseUint(field)
			if err != nil {
				return out, fmt.Errorf("%s field %d: %w", name, k+1, err)
			}
			v[k] = x
		}
		out = append(out, net.IOCountersStat{
			Name:      reuseName(prev[:cap(prev)], len(out), name),
			BytesRecv: v[0], PacketsRecv: v[1], Errin: v[2], Dropin: v[3], Fifoin: v[4],
			BytesSent: v[8], PacketsSent: v[9], Errout: v[10], Dropout: v[11], Fifoout: v[12],
		})
	}
	return out, nil
}

// reuseName returns name as a string, taken from old[i:] (the entries of
// the previous result not yet overwritten) when one has it.
func reuseName(old []net.IOCountersStat, i int, name []byte) string {
	for ; i < len(old); i++ {
		if old[i].Name == string(name) {
			return old[i].Name
		}
	}
	return string(name)
}
