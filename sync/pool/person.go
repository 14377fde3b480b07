package pool

import (
	"crypto/ed25519"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A person is who a member is: one name and one role across the devices
// they use. Its ID is the device ID of its first device, the device whose
// genesis or join made it; every later device comes in by an invite that
// names the person (made by one of the person's own devices, or by an
// admin or owner who may manage them), and has the person's role from the
// moment it joins. A device of before people is the first device of a
// person of its own, named after it; an owner merges two such people.

// Person is a person as the log knows it.
type Person struct {
	ID      string // the device ID of its first device
	Name    string
	Role    Role
	Devices []string // its devices in the pool, sorted
	Removed []string // its devices removed from it, sorted
}

// Active reports whether the person has a device in the pool.
func (p Person) Active() bool { return len(p.Devices) > 0 }

// personState is what a person's first device made: its name.
type personState struct {
	id, name string
}

// newPerson records the person a genesis or join of a device of its own
// makes: named as, or after the device.
func (st *state) newPerson(r *Record) string {
	if _, ok := st.persons[r.Subject]; !ok {
		st.persons[r.Subject] = &personState{id: r.Subject, name: personName(r)}
	}
	return r.Subject
}

// personName is the name of the person a genesis or join makes.
func personName(r *Record) string {
	if r.As != "" {
		return r.As
	}
	return r.Name
}

// devicesOf returns the devices of person id, removed ones included, in
// no order.
func (st *state) devicesOf(id string) []*MemberState {
	var out []*MemberState
	for _, m := range st.members {
		if m.Person == id {
			out = append(out, m)
		}
	}
	return out
}

// activeDevice returns a device of person id in the pool, or nil: it holds
// the person's role.
func (st *state) activeDevice(id string) *MemberState {
	var found *MemberState
	for _, m := range st.members {
		if m.Person == id && !m.Removed && (found == nil || m.ID < found.ID) {
			found = m
		}
	}
	return found
}

// setPersonRole gives every device of person id role, set by entry by.
func (st *state) setPersonRole(id string, role Role, by int) {
	for _, m := range st.devicesOf(id) {
		m.Role, m.setBy = role, by
		st.revokeInvitesOf(m.ID, role, m.Removed)
	}
}

// addDeviceRule applies the rule of who adds a device to person id (or
// revokes such an invite): a device of the person itself, or an admin or
// owner who may manage the person.
func (st *state) addDeviceRule(s *MemberState, id string, verb string) error {
	if s.Person == id {
		return nil
	}
	p := st.activeDevice(id)
	if p == nil {
		return refuse(ErrNoMember, "person %s has no device in the pool", st.personLabel(id))
	}
	if s.Role.rank() < RoleAdmin.rank() || !canManage(s.Role, p.Role) {
		return refuse(ErrOutOfRole, "only a person's own devices, or an admin or owner who may manage %s, %s them: %s is %s, and device %s is %s",
			p.Role.article(), verb, st.personLabel(id), p.Role.article(), short(s.ID), s.Role.article())
	}
	return nil
}

// personLabel names person id in messages: its name and short ID.
func (st *state) personLabel(id string) string {
	if p, ok := st.persons[id]; ok && p.name != "" {
		return fmt.Sprintf("%q (%s)", p.name, short(id))
	}
	return short(id)
}

// checkDeviceInvite applies the rules of an invite that adds a device to
// a person: made by someone addDeviceRule allows, for the person's role.
func (st *state) checkDeviceInvite(r *Record, s *MemberState) error {
	if err := st.addDeviceRule(s, r.Person, "add a device to"); err != nil {
		return err
	}
	p := st.activeDevice(r.Person)
	if p == nil {
		return refuse(ErrNoMember, "person %s has no device in the pool", st.personLabel(r.Person))
	}
	if r.Role != p.Role {
		return refuse(ErrMalformed, "an invite adding a device to %s grants the person's role, %s, not %s", st.personLabel(r.Person), p.Role, r.Role)
	}
	return nil
}

// addDeviceEffect is addDeviceRule in resolve, for a record of signer
// that makes or revokes an invite adding a device to person: why it has
// no effect, or "".
func (st *state) addDeviceEffect(signer, person, verb string) string {
	if why := st.authority(signer, func(Role) bool { return true }); why != "" {
		return why
	}
	if err := st.addDeviceRule(st.members[signer], person, verb); err != nil {
		return err.Error()
	}
	return ""
}

// joinPerson applies what a join makes of its device's person: a person
// of its own, or (its invite naming one) a device of that person, with the
// person's role now. It returns the person and role, or why the join has
// no effect.
func (st *state) joinPerson(r *Record, inv *InviteState) (person string, role Role, setBy int, why string) {
	if inv.Person == "" {
		return st.newPerson(r), inv.Role, -1, ""
	}
	p := st.activeDevice(inv.Person)
	if p == nil {
		return "", "", 0, fmt.Sprintf("its person %s has no device in the pool", short(inv.Person))
	}
	return inv.Person, p.Role, p.setBy, ""
}

// checkJoinPerson applies the person rule of an admission: it names its
// invite's person. (The name a joiner gives its person counts only when
// the invite makes a new one: a joiner cannot tell from its code.)
func checkJoinPerson(r *Record, inv *InviteState) error {
	if r.Person != inv.Person {
		return refuse(ErrForged, "the join of device %s names person %q; its invite %s adds a device to %q",
			short(r.Subject), short(r.Person), inv.ID, short(inv.Person))
	}
	return nil
}

// checkMerge applies the rules of a merge signed by s: an owner makes the
// subject device's person one with person r.Person, both in the pool. It
// reports whether the merge demotes the subject's devices.
func (st *state) checkMerge(r *Record, s *MemberState) (demotes bool, err error) {
	m, err := st.subject(r)
	if err != nil {
		return false, err
	}
	into := st.activeDevice(r.Person)
	creator := st.members[st.creator]
	switch {
	case s.Role != RoleOwner:
		return false, refuse(ErrOutOfRole, "only owners merge people, and device %s is %s", short(s.ID), s.Role.article())
	case into == nil:
		return false, refuse(ErrNoMember, "person %s has no device in the pool", st.personLabel(r.Person))
	case m.Person == r.Person:
		return false, refuse(ErrReplayed, "device %s is a device of %s already", short(m.ID), st.personLabel(r.Person))
	case creator != nil && m.Person == creator.Person:
		return false, refuse(ErrOutOfRole, "the pool's creator's person is merged into nobody: merge the other person into %s", st.personLabel(m.Person))
	}
	return into.Role.rank() < m.Role.rank(), nil
}

// merge applies a merge: every device of the subject's person becomes a
// device of r.Person, with its role.
func (st *state) merge(e *entry) string {
	r := &e.r
	if why := st.authority(r.Signer, func(s Role) bool { return s == RoleOwner }); why != "" {
		return why
	}
	m, ok := st.members[r.Subject]
	if !ok || m.Removed {
		return "its subject is not in the pool"
	}
	into := st.activeDevice(r.Person)
	if into == nil {
		return fmt.Sprintf("person %s has no device in the pool", short(r.Person))
	}
	if m.Person == r.Person {
		return ""
	}
	if c := st.members[st.creator]; c != nil && m.Person == c.Person {
		return "the pool's creator's person is merged into nobody"
	}
	role, setBy := into.Role, into.setBy
	for _, d := range st.devicesOf(m.Person) {
		d.Person = r.Person
	}
	st.setPersonRole(r.Person, role, setBy)
	return ""
}

// checkRemovePerson applies the rules of the removal of a person, every
// device of theirs (subject m, one of them, names them): by the person
// themselves (leaving) or by someone who may remove m; never the creator's.
func (st *state) checkRemovePerson(r *Record, s, m *MemberState) error {
	creator := st.members[st.creator]
	switch {
	case r.Person != m.Person:
		return refuse(ErrMalformed, "the removal of person %s names device %s, a device of %s", short(r.Person), short(m.ID), short(m.Person))
	case creator != nil && m.Person == creator.Person:
		return refuse(ErrOutOfRole, "nobody removes the pool's creator")
	case s.Person == m.Person:
		return nil // leaving
	}
	return manageRule(s.Role, m.Role, "remove")
}

// removePerson applies the removal of a person: every device of theirs
// leaves the pool, their invites end, and the invites their devices came
// in by close behind them.
func (st *state) removePerson(e *entry, m *MemberState) string {
	r := &e.r
	s, ok := st.members[r.Signer]
	if !ok || s.Removed {
		return fmt.Sprintf("its signer %s is not in the pool", short(r.Signer))
	}
	if s.Person != m.Person && !canManage(s.Role, m.Role) {
		return fmt.Sprintf("its signer %s is %s now", short(r.Signer), s.Role.article())
	}
	for _, d := range st.devicesOf(m.Person) {
		if d.Removed {
			continue
		}
		d.Removed, d.Version = true, max(d.Version, r.Version)
		st.revokeInvitesOf(d.ID, d.Role, true)
		if inv, ok := st.invites[d.Invite]; ok && s.Person != m.Person {
			inv.Revoked = true
		}
	}
	for _, inv := range st.invites {
		if inv.Person == m.Person {
			inv.Revoked = true // no device joins a person who left
		}
	}
	return ""
}

// restrictsPerson reports whether d, the removal of a person, takes a
// right that e, concurrent with it, acts by: every record a device of
// theirs signed, every join into them or by an invite of theirs, every
// readmission of a device of theirs.
func restrictsPerson(d, e *entry, sc scope) bool {
	gone := sc.person(d.r.Subject)
	if sc.person(e.r.Signer) == gone {
		return true
	}
	switch e.r.Kind {
	case KindJoin:
		inv, ok := sc.invites[e.r.Invite]
		return ok && (sc.person(inv.r.Signer) == gone || (inv.r.Person != "" && sc.person(inv.r.Person) == gone))
	case KindReadmit:
		return sc.person(e.r.Subject) == gone
	}
	return false
}

// personOf maps each device of ord to a person, by the joins and merges
// among them whatever their effect: records concurrent with a demotion of
// a person are restricted when signed by any of its devices. A merge
// without effect joins two people here still, which restricts more, never
// less.
func personOf(ord []*entry, invites map[string]*entry) func(string) string {
	parent := map[string]string{}
	var find func(string) string
	find = func(id string) string {
		p, ok := parent[id]
		if !ok || p == id {
			return id
		}
		root := find(p)
		parent[id] = root
		return root
	}
	for _, e := range ord {
		switch e.r.Kind {
		case KindJoin:
			if inv, ok := invites[e.r.Invite]; ok && inv.r.Person != "" {
				parent[find(e.r.Subject)] = find(inv.r.Person)
			}
		case KindMerge:
			if a, b := find(e.r.Subject), find(e.r.Person); a != b {
				parent[a] = b
			}
		}
	}
	return find
}

// Persons returns every person the log knows, by name then ID; a person
// whose devices were all removed is listed with none active.
func (l *Log) Persons() []Person {
	st := l.state()
	byID := map[string]*Person{}
	for _, m := range st.members {
		p, ok := byID[m.Person]
		if !ok {
			p = &Person{ID: m.Person, Role: m.Role}
			if ps, ok := st.persons[m.Person]; ok {
				p.Name = ps.name
			}
			byID[m.Person] = p
		}
		if m.Removed {
			p.Removed = append(p.Removed, m.ID)
		} else {
			p.Devices = append(p.Devices, m.ID)
			p.Role = m.Role
		}
	}
	out := make([]Person, 0, len(byID))
	for _, p := range byID {
		slices.Sort(p.Devices)
		slices.Sort(p.Removed)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Person) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// NewRemovePerson makes and signs, with key, the record that removes the
// person of device subject, every device of theirs, for good (or, signed
// by one of them, makes the person leave).
func (l *Log) NewRemovePerson(key ed25519.PrivateKey, subject string, now time.Time) (Record, error) {
	m, ok := l.Member(subject)
	if !ok {
		return Record{}, fmt.Errorf("make remove record: %w", refuse(ErrNoMember, "device %s is not in the pool", short(subject)))
	}
	return l.newRecord(key, Record{Kind: KindRemove, Subject: subject, Person: m.Person}, now)
}

// NewMerge makes and signs, with key, an owner's, the record that makes
// the person of device subject one with person into: its devices become
// into's, with into's name and role.
func (l *Log) NewMerge(key ed25519.PrivateKey, subject, into string, now time.Time) (Record, error) {
	return l.newRecord(key, Record{Kind: KindMerge, Subject: subject, Person: into}, now)
}
