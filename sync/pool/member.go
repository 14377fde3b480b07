package pool

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// Member is one version of one device's membership record. Records are
// replicated by every member and merged with Merge.
type Member struct {
	ID      peer.ID   `json:"id"`
	Name    string    `json:"name"`
	Version uint64    `json:"version"`
	Removed bool      `json:"removed,omitempty"` // a tombstone: the device is refused everywhere
	AddedAt time.Time `json:"added_at"`          // when this version was written
	AddedBy peer.ID   `json:"added_by"`          // the device that wrote this version
}

// Merge returns the winning record of two versions of one device's record:
// the higher Version, then the higher AddedBy; remaining ties (which only
// a buggy writer makes) are settled on the other fields, so that Merge is
// commutative, associative and idempotent and every replica converges.
func Merge(a, b Member) Member {
	if compare(a, b) >= 0 {
		return a
	}
	return b
}

func compare(a, b Member) int {
	if c := cmp.Compare(a.Version, b.Version); c != 0 {
		return c
	}
	if c := bytes.Compare(a.AddedBy[:], b.AddedBy[:]); c != 0 {
		return c
	}
	if a.Removed != b.Removed { // the tombstone wins
		if a.Removed {
			return 1
		}
		return -1
	}
	if c := a.AddedAt.Compare(b.AddedAt); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// Set is the member set: the winning record of each device, tombstones included.
type Set map[peer.ID]Member

// NewSet returns the set holding the merge of ms.
func NewSet(ms ...Member) Set {
	s := make(Set, len(ms))
	s.Apply(ms...)
	return s
}

// Apply merges records into s and returns those that changed it, i.e. the
// ones to store and pass on.
func (s Set) Apply(ms ...Member) []Member {
	var changed []Member
	for _, m := range ms {
		old, ok := s[m.ID]
		if ok && compare(old, m) >= 0 {
			continue
		}
		s[m.ID] = m
		changed = append(changed, m)
	}
	return changed
}

// Allowed reports whether id is a member that has not been removed.
func (s Set) Allowed(id peer.ID) bool {
	m, ok := s[id]
	return ok && !m.Removed
}

// NextVersion returns a version above every record in s, for a new write.
func (s Set) NextVersion() uint64 {
	var v uint64
	for _, m := range s {
		v = max(v, m.Version)
	}
	return v + 1
}

// All returns every record, tombstones included, sorted by device ID.
func (s Set) All() []Member {
	all := make([]Member, 0, len(s))
	for _, m := range s {
		all = append(all, m)
	}
	slices.SortFunc(all, func(a, b Member) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return all
}

// Active returns the members that are not removed, sorted by device ID.
func (s Set) Active() []Member {
	return slices.DeleteFunc(s.All(), func(m Member) bool { return m.Removed })
}

// Admit records id as a member, written by by at now, and returns the record.
func (s Set) Admit(id peer.ID, name string, by peer.ID, now time.Time) Member {
	m := Member{ID: id, Name: name, Version: s.NextVersion(), AddedAt: now, AddedBy: by}
	s[id] = m
	return m
}

// Remove writes a tombstone for id, by by at now, and returns it.
func (s Set) Remove(id peer.ID, by peer.ID, now time.Time) Member {
	m := Member{ID: id, Name: s[id].Name, Version: s.NextVersion(), Removed: true, AddedAt: now, AddedBy: by}
	s[id] = m
	return m
}
