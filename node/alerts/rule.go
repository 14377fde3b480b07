// Package alerts evaluates alert rules on the machine they watch, from its
// own samples (1 Hz), its GPU ledger's grants and its GPUs' health, so that
// an alert fires while every laptop of the pool sleeps.
//
// An Evaluator keeps, per rule and subject (a GPU, a shared folder), how
// long the rule's condition has held: it fires once the condition held for
// the rule's duration, and clears once the condition has been false for a
// while (Hold), so a single sample neither fires nor clears an alert. Each
// firing and each clearing is handed to a Sink (the daemon appends it to
// the replicated log as kind "alert") and, without waiting, to a Webhook.
//
// Handler serves the rules, mutes and webhook of this machine to the pool:
// owners and admins (and this machine's own user) change rules and the
// webhook; members mute.
//
// Evaluator.Run and Webhook.Run block until ctx is cancelled and return
// only after every goroutine they started has exited.
package alerts

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Severities of an alert.
const (
	Warning  = "warning"
	Critical = "critical"
)

// Metrics a rule can watch. Per-GPU metrics are read from each GPU of a
// sample; MetricFolderDisk from the disk of each shared folder;
// MetricOffline is evaluated by the other members of the pool (a machine
// cannot see itself offline).
const (
	MetricTemp         = "temp_c"               // GPU temperature, °C
	MetricGrantedUtil  = "granted_util_percent" // utilization of a GPU granted to a job, %; GPUs not granted never match
	MetricUtil         = "util_percent"         // GPU utilization, %
	MetricMemUsed      = "mem_used_percent"     // GPU memory used, %
	MetricPower        = "power_w"              // GPU power, W
	MetricHealth       = "health"               // GPU health: 0 ok, 1 warning, 2 quarantined, 3 lost
	MetricThrottle     = "throttle"             // thermal or power throttle reasons active on a GPU (count)
	MetricFolderDisk   = "folder_disk_percent"  // used % of a shared folder's disk
	MetricHostCPU      = "cpu_percent"          // host CPU, %
	MetricHostMem      = "host_mem_percent"     // host memory used, %
	MetricOffline      = "offline"              // 1 while another machine has no live session with this one (evaluated by observers)
	maxRules           = 64
	maxRuleForSeconds  = 7 * 24 * 3600
	defaultMuteSeconds = 3600
)

// metrics lists the metrics a rule may name, with their unit for messages.
var metrics = map[string]string{
	MetricTemp: "°C", MetricGrantedUtil: "%", MetricUtil: "%", MetricMemUsed: "%", MetricPower: "W",
	MetricHealth: "", MetricThrottle: "", MetricFolderDisk: "%", MetricHostCPU: "%", MetricHostMem: "%",
	MetricOffline: "",
}

// Rule is one alert rule: the alert fires when Metric Op Threshold has held
// for ForSeconds.
type Rule struct {
	ID         string  `json:"id"`
	Metric     string  `json:"metric"`      // one of the Metric constants
	Op         string  `json:"op"`          // ">", ">=", "<" or "<="
	Threshold  float64 `json:"threshold"`   // in the metric's unit
	ForSeconds int     `json:"for_seconds"` // how long the condition holds before the alert fires
	Severity   string  `json:"severity"`    // Warning or Critical
	Enabled    bool    `json:"enabled"`
}

// IDs of the default rules.
const (
	RuleGPUTemp     = "gpu-temp"
	RuleIdleGranted = "gpu-idle-allocation"
	RuleFolderDisk  = "folder-disk-full"
	RuleGPUHealth   = "gpu-health"
	RuleThrottle    = "gpu-throttle"
	RuleOffline     = "machine-offline"
)

// DefaultRules are the rules of a machine whose owners set none.
func DefaultRules() []Rule {
	return []Rule{
		{ID: RuleGPUTemp, Metric: MetricTemp, Op: ">", Threshold: 85, ForSeconds: 120, Severity: Critical, Enabled: true},
		{ID: RuleIdleGranted, Metric: MetricGrantedUtil, Op: "<", Threshold: 5, ForSeconds: 1800, Severity: Warning, Enabled: true},
		{ID: RuleFolderDisk, Metric: MetricFolderDisk, Op: ">", Threshold: 90, ForSeconds: 60, Severity: Warning, Enabled: true},
		{ID: RuleGPUHealth, Metric: MetricHealth, Op: ">=", Threshold: 1, ForSeconds: 0, Severity: Critical, Enabled: true},
		{ID: RuleThrottle, Metric: MetricThrottle, Op: ">", Threshold: 0, ForSeconds: 300, Severity: Warning, Enabled: true},
		{ID: RuleOffline, Metric: MetricOffline, Op: ">", Threshold: 0, ForSeconds: 60, Severity: Warning, Enabled: true},
	}
}

// RuleUpdate changes the fields it sets of one rule and leaves the others;
// a rule that does not exist yet needs Metric and Op.
type RuleUpdate struct {
	Metric     *string  `json:"metric,omitempty"`
	Op         *string  `json:"op,omitempty"`
	Threshold  *float64 `json:"threshold,omitempty"`
	ForSeconds *int     `json:"for_seconds,omitempty"`
	Severity   *string  `json:"severity,omitempty"`
	Enabled    *bool    `json:"enabled,omitempty"`
}

// Apply returns r with u's fields set.
func (u RuleUpdate) Apply(r Rule) Rule {
	set(&r.Metric, u.Metric)
	set(&r.Op, u.Op)
	set(&r.Threshold, u.Threshold)
	set(&r.ForSeconds, u.ForSeconds)
	set(&r.Severity, u.Severity)
	set(&r.Enabled, u.Enabled)
	return r
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

var ruleID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Check refuses a rule that makes no sense, naming the field.
func (r Rule) Check() error {
	_, known := metrics[r.Metric]
	switch {
	case !ruleID.MatchString(r.ID):
		return fmt.Errorf("rule id %q: lowercase letters, digits and dashes, at most 40", r.ID)
	case !known:
		return fmt.Errorf("rule %s: metric %q is not one labpool measures (%s)", r.ID, r.Metric, metricNames())
	case !slices.Contains([]string{">", ">=", "<", "<="}, r.Op):
		return fmt.Errorf("rule %s: op %q: use >, >=, < or <=", r.ID, r.Op)
	case r.ForSeconds < 0 || r.ForSeconds > maxRuleForSeconds:
		return fmt.Errorf("rule %s: for %ds: between 0 and a week", r.ID, r.ForSeconds)
	case r.Severity != Warning && r.Severity != Critical:
		return fmt.Errorf("rule %s: severity %q: warning or critical", r.ID, r.Severity)
	case r.Threshold != r.Threshold: // NaN
		return fmt.Errorf("rule %s: threshold is not a number", r.ID)
	}
	return nil
}

func metricNames() string {
	names := make([]string, 0, len(metrics))
	for m := range metrics {
		names = append(names, m)
	}
	slices.Sort(names)
	return fmt.Sprint(names)
}

// holds says whether v satisfies r's condition.
func (r Rule) holds(v float64) bool {
	switch r.Op {
	case ">":
		return v > r.Threshold
	case ">=":
		return v >= r.Threshold
	case "<":
		return v < r.Threshold
	case "<=":
		return v <= r.Threshold
	}
	return false
}

// For is how long r's condition must hold.
func (r Rule) For() time.Duration { return time.Duration(r.ForSeconds) * time.Second }

// Hold is how long r's condition must be false before a firing alert
// clears: a quarter of its duration, between 3 s and 1 min, so one sample
// never clears an alert. (Firing needs the condition to hold throughout
// the rule's duration, so one sample never fires one either.)
func (r Rule) Hold() time.Duration {
	return min(max(r.For()/4, 3*time.Second), time.Minute)
}

// Merge applies u to the rule id of rules (a new rule when there is none),
// checks the result and returns the new list.
func Merge(rules []Rule, id string, u RuleUpdate) ([]Rule, Rule, error) {
	out := slices.Clone(rules)
	i := slices.IndexFunc(out, func(r Rule) bool { return r.ID == id })
	if i < 0 {
		if len(out) >= maxRules {
			return nil, Rule{}, fmt.Errorf("rule %s: at most %d rules", id, maxRules)
		}
		if u.Metric == nil || u.Op == nil {
			return nil, Rule{}, fmt.Errorf("rule %s does not exist: a new rule needs a metric and an op", id)
		}
		out = append(out, Rule{ID: id, Severity: Warning, Enabled: true})
		i = len(out) - 1
	}
	out[i] = u.Apply(out[i])
	if err := out[i].Check(); err != nil {
		return nil, Rule{}, err
	}
	return out, out[i], nil
}
