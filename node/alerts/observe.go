package alerts

import (
	"fmt"
	"strings"
	"time"
)

// obs is one subject's value of a rule's metric in one reading.
type obs struct {
	subject   string // "gpu0", "folder:data", "host", "peer:ID": one alert at a time per rule and subject
	node      string // the machine it is about; "" = this one
	name      string // that machine's name, for offline
	gpu       *int
	folder    string
	job       string
	jobName   string // the job's name and its owner's, for people
	ownerName string
	holder    string // a scheduler's job holding the GPU ("slurm job 123")
	value     float64
	identity  string   // a change while firing ends the alert and starts over (another job, another health)
	reasons   []string // throttle reasons, health reason
}

// peerSubject starts the subject of an observation of another machine
// (Reading.Peers): "peer:" and its device ID.
const peerSubject = "peer:"

// observe returns the subjects rule r sees in reading rd.
func observe(r Rule, rd Reading) []obs {
	var out []obs
	switch r.Metric {
	case MetricTemp, MetricUtil, MetricMemUsed, MetricPower, MetricGrantedUtil, MetricHealth, MetricThrottle:
		for _, g := range rd.GPUs {
			if o, ok := gpuObs(r.Metric, g); ok {
				out = append(out, o)
			}
		}
	case MetricFolderDisk:
		for _, f := range rd.Folders {
			out = append(out, obs{subject: "folder:" + f.Name, folder: f.Name, value: f.UsedPercent})
		}
	case MetricHostCPU:
		out = append(out, obs{subject: "host", value: rd.CPUPercent})
	case MetricHostMem:
		out = append(out, obs{subject: "host", value: rd.MemPercent})
	case MetricOffline:
		for _, p := range rd.Peers {
			v := 0.0
			if p.Offline {
				v = 1
			}
			out = append(out, obs{subject: peerSubject + p.Node, node: p.Node, name: p.Name, value: v})
		}
	}
	return out
}

func gpuObs(metric string, g GPUReading) (obs, bool) {
	idx := g.Index
	o := obs{subject: fmt.Sprintf("gpu%d", g.Index), gpu: &idx}
	switch metric {
	case MetricTemp:
		o.value = g.TempC
	case MetricUtil:
		o.value = g.UtilPercent
	case MetricMemUsed:
		o.value = g.MemUsedPercent
	case MetricPower:
		o.value = g.PowerW
	case MetricGrantedUtil:
		if g.Job == "" && g.Holder == "" {
			return o, false
		}
		o.value, o.job, o.identity, o.holder = g.UtilPercent, g.Job, cmpOr(g.Job, g.Holder), g.Holder
		o.jobName, o.ownerName = g.JobName, g.OwnerName
	case MetricHealth:
		o.value = healthLevel(g.Health)
		o.identity = g.Health
		if g.HealthReason != "" {
			o.reasons = []string{g.HealthReason}
		}
	case MetricThrottle:
		o.value, o.reasons = throttling(g)
	}
	return o, true
}

// severity is the severity of r's alert on o: a GPU whose health is only
// "warning" raises a warning even under a critical rule.
func severity(r Rule, o obs) string {
	if r.Metric == MetricHealth && o.value < 2 {
		return Warning
	}
	return r.Severity
}

// describe is the message of r's alert on o.
func describe(r Rule, o obs, held time.Duration) string {
	dur := heldFor(r, held)
	gpu := ""
	if o.gpu != nil {
		gpu = fmt.Sprintf("GPU %d", *o.gpu)
	}
	unit := metrics[r.Metric]
	switch r.Metric {
	case MetricTemp:
		return fmt.Sprintf("%s at %.0f °C, %s %g °C%s", gpu, o.value, opWord(r.Op), r.Threshold, dur)
	case MetricGrantedUtil:
		if o.holder != "" {
			return fmt.Sprintf("idle allocation: %s held by %s at %.0f%% utilization, %s %g%%%s", gpu, holderLabel(o.holder, o.jobName, o.ownerName), o.value, opWord(r.Op), r.Threshold, dur)
		}
		return fmt.Sprintf("idle allocation: %s granted to job %s at %.0f%% utilization, %s %g%%%s", gpu, cmpOr(o.jobName, shortJob(o.job)), o.value, opWord(r.Op), r.Threshold, dur)
	case MetricFolderDisk:
		return fmt.Sprintf("shared folder %s: its disk is %.0f%% full, %s %g%%%s", o.folder, o.value, opWord(r.Op), r.Threshold, dur)
	case MetricHealth:
		msg := fmt.Sprintf("%s health is %s", gpu, healthName(o.value))
		if len(o.reasons) > 0 {
			msg += ": " + o.reasons[0]
		}
		return msg
	case MetricThrottle:
		return fmt.Sprintf("%s throttled (%s)%s", gpu, strings.Join(o.reasons, ", "), dur)
	case MetricOffline:
		return fmt.Sprintf("machine %s offline%s", o.name, dur)
	case MetricHostCPU, MetricHostMem:
		return fmt.Sprintf("host %s at %.0f%s, %s %g%s%s", r.Metric, o.value, unit, opWord(r.Op), r.Threshold, unit, dur)
	}
	return fmt.Sprintf("%s %s at %.1f%s, %s %g%s%s", gpu, r.Metric, o.value, unit, opWord(r.Op), r.Threshold, unit, dur)
}

// heldFor is " for DURATION" of a rule with a duration, else "".
func heldFor(r Rule, held time.Duration) string {
	if r.ForSeconds > 0 {
		return " for " + held.Round(time.Second).String()
	}
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func opWord(op string) string {
	switch op {
	case ">":
		return "over"
	case ">=":
		return "at or over"
	case "<":
		return "under"
	}
	return "at or under"
}

func healthName(level float64) string {
	switch level {
	case 1:
		return "warning"
	case 2:
		return "quarantined"
	case 3:
		return "lost"
	}
	return "ok"
}
