package folders

import (
	"errors"
	"fmt"
	"slices"
)

// RuleMembers is the rule a refusal of a change of a share's members
// names (ErrMembers).
const RuleMembers = "only the pool's owners and admins and the folder's sharer change its members"

// ErrMembers refuses a change of a share's members to a device that is
// neither an owner nor an admin of the pool nor the share's sharer.
var ErrMembers = errors.New("refused: " + RuleMembers)

// ErrBadMembers is a change of members that cannot be made as asked.
var ErrBadMembers = errors.New("invalid change of members")

// Bounds of a change of members, as sent by a member.
const (
	MaxMembers  = 256 // device IDs on one share's list
	maxMemberID = 128 // bytes of one device ID
)

// MembersChange changes who may use a share. Set replaces the list (an
// empty Set with Every: every member of the pool); Add and Remove edit it.
// Set with Add or Remove is refused. Every identity in it is a device ID.
type MembersChange struct {
	Set    []string `json:"set,omitempty"`
	Every  bool     `json:"every,omitempty"` // the share is for every member: no list
	Add    []string `json:"add,omitempty"`
	Remove []string `json:"remove,omitempty"`
}

// apply returns the list old becomes, or why it cannot.
func (c MembersChange) apply(name string, old []string) ([]string, error) {
	edit := len(c.Add) > 0 || len(c.Remove) > 0
	for _, l := range [][]string{c.Set, c.Add, c.Remove} {
		if len(l) > MaxMembers {
			return nil, fmt.Errorf("%w: more than %d devices", ErrBadMembers, MaxMembers)
		}
		for _, id := range l {
			if id == "" || len(id) > maxMemberID {
				return nil, fmt.Errorf("%w: a device ID is empty or longer than %d bytes", ErrBadMembers, maxMemberID)
			}
		}
	}
	switch {
	case c.Every && (len(c.Set) > 0 || edit):
		return nil, fmt.Errorf("%w: every member, or a list: not both", ErrBadMembers)
	case c.Every:
		return nil, nil
	case len(c.Set) > 0 && edit:
		return nil, fmt.Errorf("%w: set the list, or add and remove: not both", ErrBadMembers)
	case len(c.Set) > 0:
		out := slices.Clone(c.Set)
		slices.Sort(out)
		return slices.Compact(out), nil
	case !edit:
		return nil, fmt.Errorf("%w: no change named: set, every, add or remove", ErrBadMembers)
	case len(old) == 0:
		return nil, fmt.Errorf("%w: %s is for every member: set its list of members first", ErrBadMembers, name)
	}
	out := slices.Clone(old)
	for _, id := range c.Add {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	out = slices.DeleteFunc(out, func(id string) bool { return slices.Contains(c.Remove, id) })
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: removing every member of %s would open it to the whole pool: share it with every member instead", ErrBadMembers, name)
	}
	if len(out) > MaxMembers {
		return nil, fmt.Errorf("%w: more than %d devices", ErrBadMembers, MaxMembers)
	}
	slices.Sort(out)
	return out, nil
}

// mayManage refuses who, unless this machine, an owner or an admin of the
// pool, or the device that shared s.
func (r *Registry) mayManage(s Share, who Caller) error {
	switch {
	case r.cfg.Self != "" && who.ID == r.cfg.Self:
	case who.Role == RoleOwner || who.Role == RoleAdmin:
	case who.ID != "" && who.ID == s.Sharer && who.Role != "":
	default:
		return fmt.Errorf("%w: this device is %s of the pool and did not share %s", ErrMembers, roleName(who.Role), s.Name)
	}
	return nil
}

func roleName(role string) string {
	switch role {
	case "":
		return "not a member"
	case RoleAdmin:
		return "an admin"
	}
	return "a " + role
}

// ChangeMembers changes who may use the share name, for who (proven by
// TLS, or this machine): the pool's owners and admins and the share's
// sharer may, and add only devices known says are of the pool. It returns the share before and after the change, which is
// saved.
func (r *Registry) ChangeMembers(name string, who Caller, c MembersChange, known func(id string) bool) (prev, s Share, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.shares[name]
	if !ok || s.Transient {
		if who.Role == RoleOwner || who.Role == RoleAdmin || (r.cfg.Self != "" && who.ID == r.cfg.Self) {
			return Share{}, Share{}, fmt.Errorf("%w: %q", ErrNoShare, name)
		}
		// A device that may change no share learns nothing of which exist.
		return Share{}, Share{}, fmt.Errorf("%w: this device is %s of the pool", ErrMembers, roleName(who.Role))
	}
	if err := r.mayManage(s, who); err != nil {
		return Share{}, Share{}, err
	}
	for _, id := range append(slices.Clone(c.Set), c.Add...) {
		if !known(id) {
			return Share{}, Share{}, fmt.Errorf("%w: %s is not a device of the pool", ErrBadMembers, id)
		}
	}
	members, err := c.apply(name, s.Members)
	if err != nil {
		return Share{}, Share{}, err
	}
	prev = s
	s.Members = members
	r.shares[name] = s
	if err := r.saveLocked(); err != nil {
		r.shares[name] = prev
		return Share{}, Share{}, fmt.Errorf("save the members of %s: %w", name, err)
	}
	return prev, s, nil
}

// Restore puts back a share as it was before a change the pool could not
// be told of (its record was refused).
func (r *Registry) Restore(s Share) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.shares[s.Name]; !ok {
		return fmt.Errorf("%w: %q", ErrNoShare, s.Name)
	}
	r.shares[s.Name] = s
	return r.saveLocked()
}
