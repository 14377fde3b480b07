package alerts

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// One incident, one alert. The evaluator keeps each rule's condition per
// subject (a GPU, a folder, a peer); the alerts it records are incidents,
// each folding the conditions that firing together tell one story:
//   - every GPU rule firing on one GPU (temperature, throttle, health, ...)
//     is one alert: the worst condition is its Rule, the others are listed
//     in Folded and in its message;
//   - an idle job is one alert listing the GPUs it holds idle (GPUs);
//   - anything else (a folder's disk, a machine offline) is its own.
//
// An incident keeps its ID from its first condition firing to its last one
// clearing, so a notifier keyed by ID tells a person once.

// incident is the alert of one incident as last recorded, and every
// condition that fired in it (as last seen, those ended included): while
// open it is named after the worst condition firing, and says which ended;
// once closed, its record keeps what happened, worst first.
type incident struct {
	alert Alert
	seen  map[condKey]*cond
}

// see remembers c, firing now, as part of the incident.
func (in *incident) see(k condKey, c *cond) {
	cc, a := *c, *c.alert
	cc.alert = &a
	in.seen[k] = &cc
}

// incidentKey groups a firing condition.
func incidentKey(k condKey, c *cond) string {
	switch {
	case c.metric == MetricGrantedUtil && c.alert.Job != "":
		return "job-" + c.alert.Job
	case c.metric == MetricGrantedUtil && c.alert.Holder != "":
		return "job-" + c.alert.Holder
	case c.alert.GPU != nil:
		return fmt.Sprintf("gpu%d", *c.alert.GPU)
	}
	return k.rule + "." + k.subject
}

// metricRank orders GPU conditions of one severity: the first is the one an
// incident is named after.
func metricRank(metric string) int {
	switch metric {
	case MetricHealth:
		return 0
	case MetricTemp:
		return 1
	case MetricThrottle:
		return 2
	}
	return 3
}

func severityRank(s string) int {
	if s == Critical {
		return 0
	}
	return 1
}

// worse orders the firing conditions of an incident, worst first: unmuted
// before muted, critical before warning, then health, temperature,
// throttle, other metrics, then by rule ID and GPU.
func worse(x, y *cond) int {
	a, b := x.alert, y.alert
	return cmp.Or(
		cmp.Compare(boolRank(a.Muted), boolRank(b.Muted)),
		cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)),
		cmp.Compare(metricRank(x.metric), metricRank(y.metric)),
		cmp.Compare(a.Rule, b.Rule),
		cmp.Compare(gpuIndex(a.GPU), gpuIndex(b.GPU)),
	)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func gpuIndex(g *int) int {
	if g == nil {
		return -1
	}
	return *g
}

// alsoSep opens the folded conditions' messages in an incident's message.
const alsoSep = "; also "

// fold is the alert of one incident from its firing conditions (at least
// one), worst first.
func fold(key string, cs []*cond, muted bool) Alert {
	slices.SortFunc(cs, worse)
	a := *cs[0].alert
	a.Folded, a.GPUs, a.Was = nil, nil, "" // Was: set by incidentsLocked on a change of severity only
	a.Muted = muted
	if strings.HasPrefix(key, "job-") {
		for _, c := range cs {
			a.GPUs = append(a.GPUs, *c.alert.GPU)
			a.Value = extremeOf(c.op, a.Value, c.alert.Value)
		}
		slices.Sort(a.GPUs)
		a.GPU = &a.GPUs[0]
		a.Message = describeIdle(a, cs[0])
		return a
	}
	var also []string
	for _, c := range cs[1:] {
		if !slices.Contains(a.Folded, c.alert.Rule) {
			a.Folded = append(a.Folded, c.alert.Rule)
			also = append(also, c.alert.Message)
		}
	}
	if len(also) > 0 {
		a.Message += alsoSep + strings.Join(also, "; ")
	}
	return a
}

func extremeOf(op string, a, b float64) float64 { return extreme(Rule{Op: op}, a, b) }

// describeIdle is the message of an idle job's incident: the job and its
// owner by name, and its GPUs.
func describeIdle(a Alert, c *cond) string {
	gpus := make([]string, len(a.GPUs))
	for i, g := range a.GPUs {
		gpus[i] = fmt.Sprint(g)
	}
	word := "GPU"
	if len(gpus) > 1 {
		word = "GPUs"
	}
	if c.holder != "" {
		return fmt.Sprintf("idle allocation: %s holds %s %s, %s utilization%s", holderLabel(c.holder, c.jobName, c.ownerName), word,
			strings.Join(gpus, ", "), c.condition, c.held)
	}
	job := c.jobName
	if job == "" {
		job = shortJob(a.Job)
	}
	owner := ""
	if c.ownerName != "" {
		owner = " of " + c.ownerName
	}
	return fmt.Sprintf("idle allocation: job %s%s holds %s %s, %s utilization%s", job, owner, word,
		strings.Join(gpus, ", "), c.condition, c.held)
}

// shortJob is a job ID cut for people, when its name is unknown.
func shortJob(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// incidentsLocked folds the firing conditions into incidents and returns
// the alerts to record, in a stable order: each incident that fired, changed
// (a condition folded in or out, its severity or mute) or cleared, with
// whether the hooks hear of it (a firing, a clearing, a change of its
// severity, a mute lifted: each once). e.mu is held.
func (e *Evaluator) incidentsLocked(now time.Time) []change {
	groups := map[string]map[condKey]*cond{}
	for k, c := range e.conds {
		if c.alert != nil {
			key := incidentKey(k, c)
			if groups[key] == nil {
				groups[key] = map[condKey]*cond{}
			}
			groups[key][k] = c
		}
	}
	keys := make([]string, 0, len(groups)+len(e.incidents))
	for key := range groups {
		keys = append(keys, key)
	}
	for key := range e.incidents {
		if groups[key] == nil {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	var out []change
	for _, a := range e.superseded {
		t := now.UTC()
		a.ClearedAt = &t
		out = append(out, change{a, false})
	}
	e.superseded = nil
	for _, key := range keys {
		old, cs := e.incidents[key], groups[key]
		if len(cs) == 0 {
			// Closed: the record keeps what happened, the worst first.
			a := fold(key, slices.Collect(maps.Values(old.seen)), old.alert.Muted)
			a.ID, a.FiredAt = old.alert.ID, old.alert.FiredAt
			t := now.UTC()
			a.ClearedAt = &t
			delete(e.incidents, key)
			out = append(out, change{a, true})
			continue
		}
		fresh := old == nil
		if fresh {
			old = &incident{seen: map[condKey]*cond{}}
			e.incidents[key] = old
		}
		muted := true
		for k, c := range cs {
			old.see(k, c)
			muted = muted && c.alert.Muted
		}
		a := old.open(key, cs, muted)
		if fresh {
			a.ID, a.FiredAt = alertID(a.Rule, key, now), now.UTC()
			old.alert = a
			out = append(out, change{a, true})
			continue
		}
		a.ID, a.FiredAt = old.alert.ID, old.alert.FiredAt
		if same(old.alert, a) {
			old.alert.Value = a.Value
			continue
		}
		if a.Severity != old.alert.Severity {
			a.Was = old.alert.Severity
		}
		hear := a.Was != "" || (old.alert.Muted && !a.Muted)
		old.alert = a
		out = append(out, change{a, hear})
	}
	return out
}

// open is the alert of an open incident whose conditions firing now are
// firing: named after the worst of them, so that an incident goes down
// when its worst condition ends and a lesser one remains; the conditions
// that ended since it fired are listed last in Folded and in its message.
// An idle job's incident lists every GPU it held idle.
func (in *incident) open(key string, firing map[condKey]*cond, muted bool) Alert {
	if strings.HasPrefix(key, "job-") {
		return fold(key, slices.Collect(maps.Values(in.seen)), muted)
	}
	var now, ended []*cond
	for k, c := range in.seen {
		if firing[k] != nil {
			now = append(now, c)
		} else {
			ended = append(ended, c)
		}
	}
	a := fold(key, now, muted)
	slices.SortFunc(ended, worse)
	var gone []string
	for _, c := range ended {
		if c.alert.Rule != a.Rule && !slices.Contains(a.Folded, c.alert.Rule) {
			a.Folded = append(a.Folded, c.alert.Rule)
		}
		gone = append(gone, c.alert.Message)
	}
	if len(gone) > 0 {
		a.Message += "; ended: " + strings.Join(gone, "; ")
	}
	return a
}

// same says whether b records nothing new over a (its value aside).
func same(a, b Alert) bool {
	return a.Rule == b.Rule && a.Severity == b.Severity && a.Muted == b.Muted && a.Message == b.Message &&
		slices.Equal(a.Folded, b.Folded) && slices.Equal(a.GPUs, b.GPUs)
}

// change is one incident alert to record, and whether hooks hear of it.
type change struct {
	alert Alert
	hear  bool
}
