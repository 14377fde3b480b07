package app

import (
	"context"
	"fmt"
	"slices"

	"github.com/labpool/labpool/node/alerts"
)

// AlertMutes is what a machine published of its mutes: those in force,
// each with its author, and the rules its owner pinned.
type AlertMutes struct {
	Node     string          `json:"node"`
	NodeName string          `json:"node_name"`
	Mutes    []AlertMuteView `json:"mutes"`
	Pinned   []string        `json:"pinned"`
}

// AlertMuteView is a mute and the name of its author (alerts.Mute.By):
// a member's name, or the short device ID of a device that is no member;
// "" for a mute kept by an older labpool, which records none.
type AlertMuteView struct {
	AlertMute
	ByName string `json:"by_name,omitempty"`
}

// PinRequest pins (or, with Pinned false, unpins) Rule on Node (this
// machine when empty): no one but the machine's owner mutes it there.
// Only the machine's own user pins its rules (rule alerts.RulePinOwner).
type PinRequest struct {
	Rule   string `json:"-"` // from the path
	Node   string `json:"node,omitempty"`
	Pinned bool   `json:"pinned"`
}

// AlertMutes returns the mutes in force and the pins a machine (this one
// when node is empty) last published. A machine's state is its own record:
// a mute's author is the device its transport proved.
func (s *Service) AlertMutes(ctx context.Context, node string) (AlertMutes, error) {
	n, err := s.machineOrSelf(ctx, node)
	if err != nil {
		return AlertMutes{}, err
	}
	st, err := s.alertState(ctx, n.ID)
	if err != nil {
		return AlertMutes{}, err
	}
	names, err := s.peopleNames(ctx, nil)
	if err != nil {
		return AlertMutes{}, err
	}
	out := AlertMutes{Node: n.ID, NodeName: n.Name, Mutes: []AlertMuteView{}, Pinned: slices.Clone(st.Pinned)}
	if out.Pinned == nil {
		out.Pinned = []string{}
	}
	now := s.now()
	for _, m := range st.Mutes {
		if !m.Until.After(now) {
			continue // ended
		}
		v := AlertMuteView{AlertMute: m}
		if m.By != "" {
			v.ByName = ownerName(names, m.By)
		}
		out.Mutes = append(out.Mutes, v)
	}
	return out, nil
}

// PinAlert pins or unpins a rule on this machine, for its own user (the
// local API's caller); a pin of another machine is refused naming the
// rule, as that machine's agent would refuse it.
func (s *Service) PinAlert(ctx context.Context, req PinRequest) ([]string, error) {
	if req.Rule == "" {
		return nil, fmt.Errorf("%w: pin a rule: name its ID", ErrInvalid)
	}
	n, err := s.machineOrSelf(ctx, req.Node)
	if err != nil {
		return nil, err
	}
	if n.ID != s.self.ID {
		return nil, fmt.Errorf("%w: refused by rule %q: %s is not this machine; pin its rules on it", ErrForbidden, alerts.RulePinOwner, n.Name)
	}
	return alerts.Client{Conn: s.Peer(n.ID)}.Pin(ctx, req.Rule, req.Pinned)
}

// machineOrSelf is the machine ref names (by name, device ID or its
// prefix), this one when ref is empty.
func (s *Service) machineOrSelf(ctx context.Context, ref string) (Node, error) {
	if ref == "" {
		return Node{ID: s.self.ID, Name: s.self.Name}, nil
	}
	return s.NodeByRef(ctx, ref)
}
