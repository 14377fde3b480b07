package metrics

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/labpool/labpool/node/alloc"
	"github.com/labpool/labpool/node/gpu"
)

// family is one metric: its name, type and help as dcgm-exporter writes
// them (etc/default-counters.csv), and how to read it from a GPU's stats
// (ok false: the GPU does not report it).
type family struct {
	name, typ, help string
	value           func(g *gpu.Stats) (v float64, ok bool)
}

const mib = 1 << 20

func always(f func(g *gpu.Stats) float64) func(*gpu.Stats) (float64, bool) {
	return func(g *gpu.Stats) (float64, bool) { return f(g), true }
}

// families are the dcgm-exporter metrics labpool reads through NVML.
var families = []family{
	{"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", always(func(g *gpu.Stats) float64 { return float64(g.SMClockMHz) })},
	{"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", always(func(g *gpu.Stats) float64 { return float64(g.MemClockMHz) })},
	{"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", always(func(g *gpu.Stats) float64 { return g.TempC })},
	{"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", always(func(g *gpu.Stats) float64 { return g.PowerW })},
	{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).",
		func(g *gpu.Stats) (float64, bool) { return float64(g.EnergyMJ), g.EnergyMJ > 0 }},
	{"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", always(func(g *gpu.Stats) float64 { return g.UtilPercent })},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", always(func(g *gpu.Stats) float64 { return g.MemUtilPercent })},
	{"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", always(lastXID)},
	{"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", always(func(g *gpu.Stats) float64 {
		if g.MemTotalBytes < g.MemUsedBytes+g.MemReservedBytes {
			return 0
		}
		return float64((g.MemTotalBytes - g.MemUsedBytes - g.MemReservedBytes) / mib)
	})},
	{"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", always(func(g *gpu.Stats) float64 { return float64(g.MemUsedBytes / mib) })},
	{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.",
		always(func(g *gpu.Stats) float64 { return float64(g.ECCUncorrected) })},
	{"DCGM_FI_DEV_RETIRED_PENDING", "counter", "Total number of pages pending retirement.", always(func(g *gpu.Stats) float64 {
		if g.RetiredPending {
			return 1
		}
		return 0
	})},
}

// lastXID is the code of the last critical XID, as the GPU's health reason
// names it ("XID 79 (...)"); 0 when none is named. labpool counts every XID
// in labpool_gpu_xid_errors_total.
func lastXID(g *gpu.Stats) float64 {
	i := strings.LastIndex(g.HealthReason, "XID ")
	if i < 0 {
		return 0
	}
	digits := g.HealthReason[i+len("XID "):]
	n := 0
	for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
		n++
	}
	code, err := strconv.ParseUint(digits[:n], 10, 64)
	if err != nil {
		return 0
	}
	return float64(code)
}

// Snapshot is what one scrape shows: this machine's GPUs, and the owner of
// each job holding one.
type Snapshot struct {
	Hostname string
	GPUs     []gpu.Stats
	// Holding is who holds the GPUs and their processes (labels job and
	// owner); the zero Holding: none is held.
	Holding alloc.Holding
	// Owner returns the owner (member ID) of a job of this machine, ""
	// when unknown; nil: owners only from the GPUs' processes.
	Owner func(job string) string
	// Name returns the name of a member's device in the pool (label
	// owner_name), "" when unknown; nil: no names.
	Name func(member string) string
	// Person returns the name of the person whose device a member is
	// (label person: a person's jobs from all their devices), "" when
	// unknown; nil: no names.
	Person func(member string) string
}

// Write writes s as Prometheus text exposition: each family's HELP and
// TYPE, then one line per GPU. A lost GPU shows only its health: its
// readings are not readings.
func Write(w io.Writer, s Snapshot) error {
	bw := bufio.NewWriter(w)
	labels := make([]string, len(s.GPUs))
	for i := range s.GPUs {
		labels[i] = s.labels(&s.GPUs[i])
	}
	for _, f := range families {
		first := true
		for i := range s.GPUs {
			g := &s.GPUs[i]
			v, ok := f.value(g)
			if !ok || g.Health == gpu.HealthLost {
				continue
			}
			if first {
				header(bw, f.name, f.typ, f.help)
				first = false
			}
			line(bw, f.name, labels[i], "", v)
		}
	}
	writeLabpool(bw, s, labels)
	return bw.Flush()
}

// writeLabpool writes the metrics dcgm-exporter has no name for.
func writeLabpool(bw *bufio.Writer, s Snapshot, labels []string) {
	if len(s.GPUs) == 0 {
		return
	}
	header(bw, "labpool_gpu_health", "gauge", "GPU health as labpool judges it from NVML: 1 for the GPU's state (ok, warning, quarantined, lost).")
	for i, g := range s.GPUs {
		h := g.Health
		if h == "" {
			h = gpu.HealthOK
		}
		line(bw, "labpool_gpu_health", labels[i], `health="`+escape(h)+`"`, 1)
	}
	header(bw, "labpool_gpu_xid_errors_total", "counter", "XID errors seen on the GPU since the agent started.")
	for i, g := range s.GPUs {
		line(bw, "labpool_gpu_xid_errors_total", labels[i], "", float64(g.XIDErrors))
	}
	first := true
	for i, g := range s.GPUs {
		seen := map[string]bool{}
		for _, r := range g.Throttle {
			if seen[r] {
				continue // one series per reason
			}
			seen[r] = true
			if first {
				header(bw, "labpool_gpu_throttle", "gauge", "1 for each clock throttle reason active now (NVML's names).")
				first = false
			}
			line(bw, "labpool_gpu_throttle", labels[i], `reason="`+escape(r)+`"`, 1)
		}
	}
}

// labels are a GPU's labels, in dcgm-exporter's order, then the job, its
// owner's device ID, the device's name and the name of its person.
func (s Snapshot) labels(g *gpu.Stats) string {
	job, owner := s.Holding.GPU(g.UUID).JobID(), ""
	for _, p := range g.Processes {
		h := s.Holding.Proc(p.PID)
		if job == "" && h.JobID() != "" {
			job = h.JobID() // a labpool job's process on a GPU the ledger did not grant it
		}
		if h.JobID() == job && h.Member != "" {
			owner = h.Member
		}
	}
	if owner == "" && job != "" && s.Owner != nil {
		owner = s.Owner(job)
	}
	ownerName, person := "", ""
	if owner != "" && s.Name != nil {
		ownerName = s.Name(owner)
	}
	if owner != "" && s.Person != nil {
		person = s.Person(owner)
	}
	var b strings.Builder
	idx := strconv.Itoa(g.Index)
	for _, kv := range [][2]string{{"gpu", idx}, {"UUID", g.UUID}, {"device", "nvidia" + idx}, {"modelName", g.Name},
		{"Hostname", s.Hostname}, {"job", job}, {"owner", owner}, {"owner_name", ownerName}, {"person", person}} {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[0])
		b.WriteString(`="`)
		b.WriteString(escape(kv[1]))
		b.WriteByte('"')
	}
	return b.String()
}

func header(bw *bufio.Writer, name, typ, help string) {
	bw.WriteString("# HELP " + name + " " + escapeHelp(help) + "\n")
	bw.WriteString("# TYPE " + name + " " + typ + "\n")
}

func line(bw *bufio.Writer, name, labels, extra string, v float64) {
	bw.WriteString(name)
	bw.WriteByte('{')
	bw.WriteString(labels)
	if extra != "" {
		bw.WriteByte(',')
		bw.WriteString(extra)
	}
	bw.WriteString("} ")
	bw.WriteString(formatValue(v))
	bw.WriteByte('\n')
}

// formatValue writes v as the text format wants it: integers without an
// exponent, NaN and infinities by name.
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// escape escapes a label value: backslash, double quote and line feed.
func escape(s string) string { return labelEscaper.Replace(s) }

// escapeHelp escapes a HELP text: backslash and line feed.
func escapeHelp(s string) string { return helpEscaper.Replace(s) }
