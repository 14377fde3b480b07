package alerts

import (
	"fmt"
	"net/http"
	"slices"
	"time"
)

// The limits of mutes: a machine checks every mute it is asked for, so
// that no member silences an alert forever, mutes what is not here, or
// grows the state this machine publishes (the alert.rules record) past
// its cap.
const (
	maxMuteFor  = 30 * 24 * time.Hour // the latest a mute may end, from now
	muteSkew    = time.Minute         // the asker's clock may run this far ahead
	maxMutes    = 64                  // mutes in force on one machine
	maxMuteNode = 128                 // bytes of a mute's node (a device ID is 63)
)

// Rules a mute may break, as a refusal names them.
const (
	ruleMuteExpiry  = "a mute ends within 30 days"
	ruleMuteMachine = "a mute is for this machine, or the offline alert of a member"
	ruleMuteGPU     = "a mute names a GPU of this machine"
	ruleMuteCount   = "at most 64 mutes on a machine"
	ruleMuteAuthor  = "a mute is renewed or lifted by its author, an admin or owner of the pool, or the machine's owner"
	ruleMutePinned  = "a rule the machine's owner pinned is muted by the machine's owner only"
)

// RulePinOwner is the rule a pin by anyone but the machine's own user
// breaks (the app refuses a pin of another machine by it too).
const RulePinOwner = "only the machine's owner pins its rules"

func muteRefusal(rule, format string, a ...any) error {
	return &refusal{status: http.StatusBadRequest, code: "invalid",
		msg: fmt.Sprintf("refused: "+format+" (rule: %s)", append(a, rule)...)}
}

// checkMute refuses a mute (its node filled in) that ends more than 30
// days from now, is about another machine (but the offline alert of a
// member, which this machine observes), or names a GPU this machine does
// not have (or any GPU, for the offline alert).
func (m *Machine) checkMute(mu Mute, now time.Time) error {
	if mu.Until.After(now.Add(maxMuteFor + muteSkew)) {
		return muteRefusal(ruleMuteExpiry, "mute until %s: more than 30 days ahead", mu.Until.UTC().Format(time.RFC3339))
	}
	self := m.Eval.node
	switch {
	case len(mu.Node) > maxMuteNode:
		return muteRefusal(ruleMuteMachine, "mute of a %d-byte node: not a device ID", len(mu.Node))
	case mu.Rule == RuleOffline && (mu.Node == self || m.Member == nil || !m.Member(mu.Node)):
		return muteRefusal(ruleMuteMachine, "mute of %s offline: not another member of the pool", shortNode(mu.Node))
	case mu.Rule != RuleOffline && mu.Node != self:
		return muteRefusal(ruleMuteMachine, "mute of %s on %s: this machine evaluates its own only", mu.Rule, shortNode(mu.Node))
	}
	if mu.GPU == nil {
		return nil
	}
	if mu.Rule == RuleOffline || !m.Eval.hasGPU(*mu.GPU) {
		return muteRefusal(ruleMuteGPU, "mute of %s on GPU %d: no such GPU here", mu.Rule, *mu.GPU)
	}
	return nil
}

// mayChangeMute refuses c's mute mu (m.mu held): of a rule this machine's
// owner pinned, by anyone else; over a mute in force of another author, by
// a member who is not its author.
func (m *Machine) mayChangeMute(c Caller, mu Mute, now time.Time) error {
	if c.Local {
		return nil
	}
	if slices.Contains(m.pinned, mu.Rule) {
		return forbidden(ruleMutePinned, "%s is pinned on this machine", mu.Rule)
	}
	if c.Role == RoleOwner || c.Role == RoleAdmin {
		return nil
	}
	for _, o := range m.Eval.Mutes(now) {
		if o.Node == mu.Node && o.Rule == mu.Rule && eqGPU(o.GPU, mu.GPU) && o.By != c.ID {
			by := o.By
			if by == "" {
				by = "an unrecorded author"
			}
			return forbidden(ruleMuteAuthor, "the mute of %s is %s's", mu.Rule, shortNode(by))
		}
	}
	return nil
}

// Pin pins (or unpins) rule on this machine (its own user only): others'
// mutes of it end, and no one else mutes it until it is unpinned.
func (m *Machine) Pin(c Caller, rule string, on bool) ([]string, error) {
	if !c.Local {
		return nil, forbidden(RulePinOwner, "this device is not this machine's own")
	}
	if !ruleID.MatchString(rule) {
		return nil, &refusal{status: http.StatusBadRequest, code: "invalid", msg: fmt.Sprintf("pin: rule %q is not a rule ID", rule)}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pins := slices.DeleteFunc(slices.Clone(m.pinned), func(r string) bool { return r == rule })
	if on {
		if len(pins) >= maxRules {
			return nil, &refusal{status: http.StatusBadRequest, code: "invalid", msg: fmt.Sprintf("pin %s: at most %d pins", rule, maxRules)}
		}
		pins = append(pins, rule)
	}
	if err := m.Settings.SavePins(pins); err != nil {
		return nil, err
	}
	m.pinned = pins
	if on {
		if err := m.liftOthersLocked(rule); err != nil {
			return nil, err
		}
	}
	return slices.Clone(pins), m.Settings.Publish(m.stateLocked())
}

// liftOthersLocked ends the mutes of rule that others than this machine's
// own user asked for (m.mu held).
func (m *Machine) liftOthersLocked(rule string) error {
	now := time.Now()
	for _, o := range m.Eval.Mutes(now) {
		if o.Rule == rule && o.By != m.Eval.node {
			o.Until = time.Time{}
			if err := m.Eval.Mute(o); err != nil {
				return err
			}
		}
	}
	return m.Settings.SaveMutes(m.Eval.Mutes(now))
}

// RestoredPins takes the pins read from the local settings.
func (m *Machine) RestoredPins(pins []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pinned = nil
	for _, r := range pins {
		if ruleID.MatchString(r) && !slices.Contains(m.pinned, r) && len(m.pinned) < maxRules {
			m.pinned = append(m.pinned, r)
		}
	}
}

// shortNode is a node as a refusal quotes it.
func shortNode(node string) string { return fmt.Sprintf("%.24q", node) }

// RestoredMutes takes the mutes read from the local settings, checked as
// a new mute is, but for GPUs (none is seen yet) and with an expiry past
// 30 days brought back to 30 days: a mute kept by an older labpool may be
// anything.
func (m *Machine) RestoredMutes(mutes []Mute) {
	now := time.Now()
	for _, mu := range mutes {
		if mu.Until.After(now.Add(maxMuteFor)) {
			mu.Until = now.Add(maxMuteFor)
		}
		if mu.Until.IsZero() || !now.Before(mu.Until) {
			continue
		}
		gpu := mu.GPU
		mu.GPU = nil
		if m.checkMute(mu, now) != nil {
			continue
		}
		mu.GPU = gpu
		m.Eval.Mute(mu) // past maxMutes: refused, and dropped
	}
}

// hasGPU says whether the last reading had GPU index.
func (e *Evaluator) hasGPU(index int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Contains(e.gpus, index)
}
