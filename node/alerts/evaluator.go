package alerts

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/node/agent"
)

// Sink records alerts: the daemon appends each to the replicated log.
type Sink interface {
	SaveAlert(Alert) error
}

// Evaluator evaluates this machine's rules on each reading.
type Evaluator struct {
	node  string // this machine's device ID
	sink  Sink
	log   *slog.Logger
	hooks []func(Alert) // told of every firing and clearing that is not muted; must not block

	mu         sync.Mutex // guards the fields below
	rules      []Rule
	mutes      []Mute
	gpus       []int // the GPU indexes of the last reading
	conds      map[condKey]*cond
	incidents  map[string]*incident // the alerts recorded, by incident (see incident.go)
	superseded []Alert              // restored alerts folded into another of their incident, to clear
}

type condKey struct{ rule, subject string }

// cond is how long one rule's condition has held on one subject.
type cond struct {
	since      time.Time // when the condition started to hold; zero when it does not
	falseSince time.Time // when it stopped holding, while since is set
	identity   string
	alert      *Alert // firing; recorded only as part of its incident

	// Set when it fires, for its incident's message.
	metric, op         string
	jobName, ownerName string // the job holding the GPU and its owner, by name
	holder             string // a scheduler's job holding it ("slurm job 123")
	condition, held    string // "under 5%", " for 30m0s"
}

// NewEvaluator returns an evaluator for machine node with the default
// rules; hooks are told of every firing and clearing that no mute covers
// (Webhook.Send, for one) and must not block.
func NewEvaluator(node string, sink Sink, log *slog.Logger, hooks ...func(Alert)) *Evaluator {
	return &Evaluator{node: node, sink: sink, log: log, hooks: hooks, rules: DefaultRules(), conds: map[condKey]*cond{},
		incidents: map[string]*incident{}}
}

// Rules returns the rules evaluated.
func (e *Evaluator) Rules() []Rule {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.rules)
}

// SetRules replaces the rules; each must pass Check. An alert of a rule
// removed or disabled clears at the next evaluation.
func (e *Evaluator) SetRules(rules []Rule) error {
	for _, r := range rules {
		if err := r.Check(); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rules = slices.Clone(rules)
	return nil
}

// Mutes returns the mutes in force at now.
func (e *Evaluator) Mutes(now time.Time) []Mute {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []Mute{}
	for _, m := range e.mutes {
		if now.Before(m.Until) {
			out = append(out, m)
		}
	}
	return out
}

// Mute adds m (or, with a zero Until, ends the mutes of its rule and GPU)
// and marks the active alerts it covers, saving them again. A new mute
// past maxMutes in force is refused.
func (e *Evaluator) Mute(m Mute) error {
	now := time.Now()
	e.mu.Lock()
	same := func(o Mute) bool { return o.Node == m.Node && o.Rule == m.Rule && eqGPU(o.GPU, m.GPU) }
	e.mutes = slices.DeleteFunc(e.mutes, func(o Mute) bool { return !now.Before(o.Until) })
	if !m.Until.IsZero() && !slices.ContainsFunc(e.mutes, same) && len(e.mutes) >= maxMutes {
		e.mu.Unlock()
		return muteRefusal(ruleMuteCount, "a mute of %s on %s: %d mutes are in force", m.Rule, shortNode(m.Node), len(e.mutes))
	}
	e.mutes = slices.DeleteFunc(e.mutes, same)
	if !m.Until.IsZero() {
		e.mutes = append(e.mutes, m)
	}
	for k, c := range e.conds {
		if c.alert == nil || k.rule != m.Rule || (m.Node != "" && c.alert.Node != m.Node) {
			continue
		}
		c.alert.Muted = e.mutedLocked(c.alert, now)
	}
	changed := e.incidentsLocked(now)
	e.mu.Unlock()
	e.record(changed)
	return nil
}

func eqGPU(a, b *int) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// mutedLocked says whether a mute covers a; e.mu is held.
func (e *Evaluator) mutedLocked(a *Alert, now time.Time) bool {
	for _, m := range e.mutes {
		if m.Node == a.Node && m.covers(a.Rule, a.GPU, now) {
			return true
		}
	}
	return false
}

// Restore takes over the alerts an earlier run left firing (read from the
// replica): they clear like any other once their condition stops holding,
// or at the first evaluation when their rule is gone.
func (e *Evaluator) Restore(active []Alert) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range active {
		if !a.Active() {
			continue
		}
		r, _ := e.ruleLocked(a.Rule)
		id := a.Job
		if r.Metric == MetricHealth {
			id = healthName(a.Value)
		}
		gpus := a.GPUs
		if len(gpus) == 0 && a.GPU != nil {
			gpus = []int{*a.GPU}
		}
		var subjects []string
		for _, g := range gpus { // an idle job's incident: a condition per GPU
			subjects = append(subjects, fmt.Sprintf("gpu%d", g))
		}
		if len(gpus) == 0 {
			subjects = []string{e.subjectOf(a)}
		}
		in := &incident{seen: map[condKey]*cond{}}
		var key string
		for i, sub := range subjects {
			c := a
			if len(gpus) > 0 {
				c.GPU = &gpus[i]
			}
			c.GPUs, c.Folded, c.Was = nil, nil, ""
			// The condition's own message: fold adds the folded ones'
			// again as their conditions fire again.
			c.Message, _, _ = strings.Cut(c.Message, alsoSep)
			held, ok := heldOf(a.Message)
			if !ok {
				held = heldFor(r, r.For())
			}
			k := condKey{a.Rule, sub}
			e.conds[k] = &cond{since: a.FiredAt, alert: &c, identity: id, metric: r.Metric, op: r.Op,
				condition: condition(r), held: held}
			key = incidentKey(k, e.conds[k])
			in.see(k, e.conds[k])
		}
		if old := e.incidents[key]; old != nil {
			// Two alerts of one incident (an earlier version recorded one
			// per rule): the first keeps it, with this one's condition
			// folded in; this one clears at the next evaluation.
			for k, c := range in.seen {
				old.seen[k] = c
			}
			e.superseded = append(e.superseded, a)
			continue
		}
		in.alert = fold(key, slices.Collect(maps.Values(in.seen)), a.Muted)
		in.alert.ID, in.alert.FiredAt, in.alert.Folded = a.ID, a.FiredAt, a.Folded
		e.incidents[key] = in
	}
}

// heldOf is the " for 8m25s" that an idle incident's message ends with
// (describeIdle): how long the job had held its GPUs idle when it fired,
// which a restart keeps.
func heldOf(msg string) (string, bool) {
	const word = " utilization"
	i := strings.LastIndex(msg, word+" for ")
	if i < 0 {
		return "", false
	}
	held := msg[i+len(word):]
	if _, err := time.ParseDuration(strings.TrimPrefix(held, " for ")); err != nil {
		return "", false
	}
	return held, true
}

// condition is r's condition for people: "over 85 °C".
func condition(r Rule) string {
	return fmt.Sprintf("%s %g%s", opWord(r.Op), r.Threshold, metrics[r.Metric])
}

// subjectOf is the subject an alert was about (see obs.subject).
func (e *Evaluator) subjectOf(a Alert) string {
	switch {
	case a.GPU != nil:
		return fmt.Sprintf("gpu%d", *a.GPU)
	case a.Folder != "":
		return "folder:" + a.Folder
	case a.Node != e.node:
		return peerSubject + a.Node
	}
	return "host"
}

// Run evaluates each sample, with in's grants, folders and peers, until
// ctx is cancelled or samples is closed.
func (e *Evaluator) Run(ctx context.Context, samples <-chan agent.Sample, in Inputs) error {
	agent.Consume(ctx, samples, 0, func(s agent.Sample) {
		rd := ReadingOf(s, in.Grants(), in.Folders())
		rd.Peers = in.Peers()
		if names, ok := in.(JobNames); ok {
			withNames(&rd, names)
		}
		e.Evaluate(rd)
	}, nil)
	return nil
}

// Evaluate updates every rule's conditions with rd, firing and clearing
// alerts (saved to the sink, told to the hooks).
func (e *Evaluator) Evaluate(rd Reading) {
	now := rd.Time
	if now.IsZero() {
		now = time.Now()
	}
	e.mu.Lock()
	e.gpus = e.gpus[:0]
	for _, g := range rd.GPUs {
		e.gpus = append(e.gpus, g.Index)
	}
	seen := map[condKey]bool{}
	for _, r := range e.rules {
		if !r.Enabled {
			continue
		}
		for _, o := range observe(r, rd) {
			k := condKey{r.ID, o.subject}
			seen[k] = true
			e.stepLocked(r, k, o, now)
		}
	}
	for k, c := range e.conds {
		if seen[k] {
			continue
		}
		r, ok := e.ruleLocked(k.rule)
		if !ok || !r.Enabled {
			r = Rule{ID: k.rule} // gone: clear at once
		}
		// A machine no longer among the peers left the pool (or this one
		// did): nothing will say it is back, so its condition ends at once.
		gone := strings.HasPrefix(k.subject, peerSubject)
		e.falseLocked(r, k, c, now, !ok || !r.Enabled || gone)
	}
	out := e.incidentsLocked(now)
	e.mu.Unlock()
	e.record(out)
}

func (e *Evaluator) ruleLocked(id string) (Rule, bool) {
	for _, r := range e.rules {
		if r.ID == id {
			return r, true
		}
	}
	return Rule{}, false
}

// stepLocked moves one condition with observation o, firing or clearing
// it.
func (e *Evaluator) stepLocked(r Rule, k condKey, o obs, now time.Time) {
	c := e.conds[k]
	if c == nil {
		c = &cond{identity: o.identity}
		e.conds[k] = c
	}
	if c.identity != o.identity && r.Metric == MetricHealth {
		// Another health of one GPU: the condition goes on, at its new
		// level (a rise to quarantined is one incident that escalates,
		// never an alert that clears and another that fires).
		c.identity = o.identity
		if c.alert != nil && r.holds(o.value) {
			c.alert.Severity, c.alert.Message = severity(r, o), describe(r, o, now.Sub(c.since))
		}
	}
	if c.identity != o.identity { // another job: the old condition ends
		c.alert = nil
		c.since, c.falseSince, c.identity = time.Time{}, time.Time{}, o.identity
	}
	if !r.holds(o.value) {
		e.falseLocked(r, k, c, now, false)
		return
	}
	c.falseSince = time.Time{}
	if c.since.IsZero() {
		c.since = now
	}
	if c.alert != nil {
		c.alert.Value = extreme(r, c.alert.Value, o.value)
		c.jobName, c.ownerName, c.holder = o.jobName, o.ownerName, o.holder // a restored one learns them
		return
	}
	if now.Sub(c.since) < r.For() {
		return
	}
	node := o.node
	if node == "" {
		node = e.node
	}
	a := &Alert{ID: alertID(r.ID, o.subject, now), Node: node, Rule: r.ID, Severity: severity(r, o), GPU: o.gpu,
		Folder: o.folder, Job: o.job, Holder: o.holder, Message: describe(r, o, now.Sub(c.since)), Value: o.value, FiredAt: now.UTC()}
	a.Muted = e.mutedLocked(a, now)
	c.alert = a
	c.metric, c.op, c.jobName, c.ownerName, c.holder = r.Metric, r.Op, o.jobName, o.ownerName, o.holder
	c.condition, c.held = condition(r), heldFor(r, now.Sub(c.since))
}

// falseLocked records that k's condition does not hold at now: a pending
// condition starts over at once; a firing one ends once the condition has
// been false for the rule's Hold (at once when at is set).
func (e *Evaluator) falseLocked(r Rule, k condKey, c *cond, now time.Time, at bool) {
	if c.falseSince.IsZero() {
		c.falseSince = now
	}
	if !at && c.alert != nil && now.Sub(c.falseSince) < r.Hold() {
		return
	}
	delete(e.conds, k)
}

// extreme keeps the value furthest past r's threshold.
func extreme(r Rule, a, b float64) float64 {
	if r.Op == "<" || r.Op == "<=" {
		return min(a, b)
	}
	return max(a, b)
}

// record saves each changed incident alert and tells the hooks of those
// they hear of, unless muted.
func (e *Evaluator) record(cs []change) {
	for _, c := range cs {
		a := c.alert
		if err := e.sink.SaveAlert(a); err != nil {
			e.log.Error("record alert", "alert", a.ID, "err", err)
		}
		if a.Muted || !c.hear {
			continue
		}
		for _, h := range e.hooks {
			h(a)
		}
	}
}

// Active returns the alerts firing now, one per incident.
func (e *Evaluator) Active() []Alert {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []Alert{}
	for _, in := range e.incidents {
		out = append(out, in.alert)
	}
	slices.SortFunc(out, func(a, b Alert) int { return strings.Compare(a.ID, b.ID) })
	return out
}
