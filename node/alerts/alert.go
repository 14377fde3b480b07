package alerts

import (
	"fmt"
	"time"
)

// Alert is one firing of a rule on one machine, and its clearing: the
// record the evaluating machine writes when it fires and again when it
// clears (same ID).
type Alert struct {
	ID       string `json:"id"`
	Node     string `json:"node"` // device ID of the machine it is about
	Rule     string `json:"rule"`
	Severity string `json:"severity"` // Warning or Critical
	GPU      *int   `json:"gpu"`      // the GPU's index, nil when about the machine
	Folder   string `json:"folder,omitempty"`
	Job      string `json:"job,omitempty"` // the job holding the GPU, for idle allocation
	// Holder is a scheduler's job holding the GPU, for idle allocation:
	// "slurm job 123", with Job when labpool launched it, alone when not.
	Holder string `json:"holder,omitempty"`
	// GPUs are all the GPUs of an idle job's alert (GPU is the first).
	GPUs []int `json:"gpus,omitempty"`
	// Folded are the other rules firing on the same GPU, folded into this
	// one (the worst, Rule): one incident, one alert. Their messages end
	// Message.
	Folded    []string   `json:"folded,omitempty"`
	Message   string     `json:"message"`
	Value     float64    `json:"value"` // the metric when it fired; its extreme by the time it cleared
	FiredAt   time.Time  `json:"fired_at"`
	ClearedAt *time.Time `json:"cleared_at"`
	Muted     bool       `json:"muted"`
	// Was is the severity the incident had before its severity last
	// changed, on the record of that change only ("" on the others): a
	// rise to critical says "warning", a fall to warning "critical".
	Was string `json:"was,omitempty"`
	// Observer is the machine that recorded an alert about another one
	// (a machine offline, as it sees it); "" when Node recorded it.
	Observer string `json:"observer,omitempty"`
}

// Active says whether a has not cleared.
func (a Alert) Active() bool { return a.ClearedAt == nil }

// Mute silences a rule on one machine (one GPU of it, or all when GPU is
// nil) until Until: its alerts still fire and are recorded, marked muted,
// and reach no webhook or notification. A zero Until ends the mute.
type Mute struct {
	Node  string    `json:"node"`
	Rule  string    `json:"rule"`
	GPU   *int      `json:"gpu"`
	Until time.Time `json:"until"`
	// By is the device that asked for the mute, as the transport proved it
	// (the machine sets it; a body's is ignored). "": a mute kept by an
	// older labpool, renewed or lifted by admins and owners only.
	By string `json:"by,omitempty"`
}

// covers says whether m silences rule on gpu at t.
func (m Mute) covers(rule string, gpu *int, t time.Time) bool {
	if m.Rule != rule || !t.Before(m.Until) {
		return false
	}
	return m.GPU == nil || (gpu != nil && *gpu == *m.GPU)
}

// alertID names a firing: the rule, its subject and when it fired.
func alertID(rule, subject string, fired time.Time) string {
	return fmt.Sprintf("%s.%s.%d", rule, subject, fired.UnixMilli())
}
