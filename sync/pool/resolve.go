package pool

import (
	"fmt"
	"slices"
	"time"
)

// state is a membership: what a set of records makes.
type state struct {
	creator string
	members map[string]*MemberState
	persons map[string]*personState
	invites map[string]*InviteState
	void    map[[32]byte]string // records held without effect, and why
	// rules is the rules record in effect (the first to take effect): no
	// record it extends signs an admission unless its signer is an admin
	// or owner. nil before one.
	rules *entry
	// ruled are the rules records that no standing restriction voids: an
	// admission signed by a member or viewer has no effect unless every
	// one of them extends it.
	ruled []*entry
}

func newState() *state {
	return &state{members: map[string]*MemberState{}, persons: map[string]*personState{}, invites: map[string]*InviteState{}, void: map[[32]byte]string{}}
}

// resolve returns the membership that the entries of set make, set being
// closed under ancestry. It depends on the set alone, never on the order
// records arrived in, so every replica holding the same records resolves
// the same membership:
//
//  1. Records are ordered parents first, then by (version, hash).
//  2. Restrictions (a removal, a demotion, a revocation) are taken in the
//     seniority of their signers (the creator first, then by the place of
//     the record that made each a member); one is void when a restriction
//     standing already, concurrent with it, restricts its signer. The rest
//     stand.
//  3. Every record concurrent with a standing restriction of its signer
//     (or, for an admission, of its admitter, its invite or the invite's
//     maker; for a readmission, a removal of its subject) is void: a restricted device or invite acts only through
//     records that extend its restriction, and those are refused at
//     acceptance.
//  4. The others take effect in order, each checked again against the
//     membership so far (a change signed by a device a void record had
//     made an admin has no effect either). An admission signed by a
//     member or viewer has none unless every standing rules record
//     extends it: a member that names a state from before the rules
//     admits nobody.
func (l *Log) resolve(set bitset) *state {
	ord := l.order(set)
	pos := make(map[int]int, len(ord))
	seniority := map[string]int{}
	invites := map[string]*entry{}
	for i, e := range ord {
		pos[e.idx] = i
		switch e.r.Kind {
		case KindGenesis, KindJoin:
			if _, ok := seniority[e.r.Subject]; !ok {
				seniority[e.r.Subject] = i
			}
		case KindInvite:
			invites[e.r.Subject] = e
		}
	}
	senior := func(id string) int {
		if s, ok := seniority[id]; ok {
			return s
		}
		return len(ord)
	}
	st := newState()
	sc := scope{invites: invites, person: personOf(ord, invites)}
	var restrictions []*entry
	for _, e := range ord {
		if restrictive(e) {
			restrictions = append(restrictions, e)
		}
	}
	slices.SortStableFunc(restrictions, func(a, b *entry) int {
		if c := senior(a.r.Signer) - senior(b.r.Signer); c != 0 {
			return c
		}
		return pos[a.idx] - pos[b.idx]
	})
	var standing []*entry
	for _, d := range restrictions {
		if by := restrictedBy(standing, d, sc); by != nil {
			st.void[d.h] = voidWhy(by)
			continue
		}
		standing = append(standing, d)
	}
	for _, d := range standing {
		if d.r.Kind == KindRules && restrictedBy(standing, d, sc) == nil {
			st.ruled = append(st.ruled, d) // step 3 leaves it be
		}
	}
	for _, e := range ord {
		if _, ok := st.void[e.h]; ok {
			continue
		}
		if by := restrictedBy(standing, e, sc); by != nil {
			st.void[e.h] = voidWhy(by)
			continue
		}
		if why := st.effect(e); why != "" {
			st.void[e.h] = why
		}
	}
	return st
}

// voidWhy says why a record concurrent with restriction by has no effect.
func voidWhy(by *entry) string {
	return fmt.Sprintf("concurrent with record %x (%s of %s), which it does not extend", by.h[:4], by.r.Kind, short(by.r.Subject))
}

// restrictive reports whether e takes a right away: a removal, a demotion
// (by a role change or a merge), a revocation, the rule that members admit
// nobody.
func restrictive(e *entry) bool {
	return e.r.Kind == KindRemove || e.r.Kind == KindRevoke || e.r.Kind == KindRules ||
		((e.r.Kind == KindRole || e.r.Kind == KindMerge) && e.demotes)
}

// scope is what resolve knows of a set of records before it applies them:
// its invites by ID, and the person of each device.
type scope struct {
	invites map[string]*entry
	person  func(device string) string
}

// restrictedBy returns the first of standing that is concurrent with e and
// takes away a right e acts by, or nil.
func restrictedBy(standing []*entry, e *entry, sc scope) *entry {
	if e.r.Kind == KindRemove && (e.r.Signer == e.r.Subject || (e.r.Person != "" && sc.person(e.r.Signer) == sc.person(e.r.Subject))) {
		return nil // leaving needs no right
	}
	for _, d := range standing {
		if d == e || !concurrent(d, e) {
			continue
		}
		if restricts(d, e, sc) {
			return d
		}
	}
	return nil
}

// restricts reports whether standing restriction d takes a right that e,
// concurrent with it, acts by. A removal restricts its device; a demotion
// (a role change or merge) every device of its person.
func restricts(d, e *entry, sc scope) bool {
	switch d.r.Kind {
	case KindRemove, KindRole, KindMerge:
		if d.r.Kind == KindRemove && d.r.Person != "" {
			return restrictsPerson(d, e, sc)
		}
		if d.r.Subject == e.r.Signer || (d.r.Kind != KindRemove && sc.person(d.r.Subject) == sc.person(e.r.Signer)) {
			return true
		}
		if e.r.Kind == KindReadmit {
			// A removal its readmission did not see stands.
			return d.r.Kind == KindRemove && d.r.Subject == e.r.Subject
		}
		if e.r.Kind != KindJoin {
			return false
		}
		inv, ok := sc.invites[e.r.Invite]
		if !ok {
			return false
		}
		switch {
		case d.r.Kind == KindRemove:
			return inv.r.Signer == d.r.Subject
		case sc.person(inv.r.Signer) != sc.person(d.r.Subject):
			return false
		case inv.r.Person != "" && sc.person(inv.r.Person) == sc.person(d.r.Subject):
			return false // a person adds their own devices whatever their role
		}
		return d.r.Kind == KindMerge || !canGrant(d.r.Role, inv.r.Role)
	case KindRevoke:
		return e.r.Kind == KindJoin && e.r.Invite == d.r.Subject
	}
	return false
}

// effect applies e to the membership, checked against it, and returns why
// it has no effect ("" when it has, or when it changes nothing).
func (st *state) effect(e *entry) string {
	r := &e.r
	at := time.UnixMilli(int64(r.Version))
	switch r.Kind {
	case KindGenesis:
		st.creator = r.Subject
		st.members[r.Subject] = &MemberState{ID: r.Subject, Name: r.Name, Role: RoleOwner, Person: st.newPerson(r),
			AddedAt: at, AddedBy: r.Subject, Version: r.Version, Key: r.Key, setBy: -1}
		return ""
	case KindJoin:
		return st.join(e, at)
	case KindInvite:
		why := ""
		if r.Person != "" {
			why = st.addDeviceEffect(r.Signer, r.Person, "add a device to")
		} else {
			why = st.authority(r.Signer, func(s Role) bool { return canGrant(s, r.Role) })
		}
		if why != "" {
			return why
		}
		if _, ok := st.invites[r.Subject]; !ok {
			st.invites[r.Subject] = &InviteState{ID: r.Subject, Role: r.Role, Uses: r.Uses,
				Expires: time.UnixMilli(r.Expires), CreatedBy: r.Signer, CreatedAt: at, Key: r.Key, Version: r.Version,
				Person: r.Person}
		}
		return ""
	case KindRevoke:
		inv, ok := st.invites[r.Subject]
		if !ok {
			return "its invite has no effect"
		}
		if why := st.mayRevoke(r.Signer, inv); why != "" {
			return why
		}
		inv.Revoked, inv.revokeHeld, inv.Version = true, true, max(inv.Version, r.Version)
		return ""
	case KindRules:
		return st.setRules(e)
	case KindReadmit:
		return st.readmit(e)
	case KindMerge:
		return st.merge(e)
	}
	m, ok := st.members[r.Subject]
	if !ok {
		return "its subject's admission has no effect"
	}
	if m.Removed {
		return "" // removed already: nothing changes
	}
	if r.Kind == KindRemove && r.Person != "" {
		return st.removePerson(e, m)
	}
	if r.Kind == KindRemove {
		if r.Signer != r.Subject {
			if why := st.authority(r.Signer, func(s Role) bool { return canManage(s, m.Role) }); why != "" {
				return why
			}
		}
		m.Removed, m.Version = true, max(m.Version, r.Version)
		st.revokeInvitesOf(r.Subject, m.Role, true)
		if inv, ok := st.invites[r.Invite]; ok && r.Signer != r.Subject {
			inv.Revoked = true // the door it came in by closes behind it
		}
		return ""
	}
	if why := st.authority(r.Signer, func(s Role) bool { return canManage(s, m.Role) && canManage(s, r.Role) }); why != "" {
		return why
	}
	role := r.Role
	if m.setBy >= 0 && m.setBy != e.idx && !e.anc.has(m.setBy) && m.Role.rank() < role.rank() {
		role = m.Role // concurrent role changes: the lower role holds
	}
	m.Version = max(m.Version, r.Version)
	st.setPersonRole(m.Person, role, e.idx)
	return ""
}

// readmit applies a readmission: the removed device is a member again,
// with the role the record gives it, its name, key and the time it first
// joined (its history is its own). The invites it made stay revoked.
func (st *state) readmit(e *entry) string {
	r := &e.r
	m, ok := st.members[r.Subject]
	if !ok {
		return "its subject's admission has no effect"
	}
	if !m.Removed {
		return "" // readmitted twice, concurrently: a member once
	}
	if why := st.authority(r.Signer, func(s Role) bool { return canManage(s, m.Role) && canManage(s, r.Role) }); why != "" {
		return why
	}
	m.Removed, m.Version = false, max(m.Version, r.Version)
	if p := st.activeDevice(m.Person); p != nil && p != m {
		m.Role, m.setBy = p.Role, p.setBy // back to a person in the pool: the person's role
		return ""
	}
	st.setPersonRole(m.Person, r.Role, e.idx)
	return ""
}

// join applies an admission (or a legacy join).
func (st *state) join(e *entry, at time.Time) string {
	r := &e.r
	inv, ok := st.invites[r.Invite]
	if !ok {
		return "its invite has no effect"
	}
	if r.Linked() {
		if why := st.authority(r.Signer, func(Role) bool { return true }); why != "" {
			return why
		}
		if by := st.unruled(e); by != nil {
			return fmt.Sprintf("signed by %s, which is %s, and not extended by record %x (rules of %s): only admins and owners sign admissions",
				short(r.Signer), st.members[r.Signer].Role.article(), by.h[:4], short(by.r.Signer))
		}
	}
	if m, ok := st.members[r.Subject]; ok {
		if m.Removed {
			return "its device was removed"
		}
		return "" // admitted twice, concurrently: a member once
	}
	person, role, setBy, why := st.joinPerson(r, inv)
	if why != "" {
		return why
	}
	inv.Used++
	admitter := ""
	if r.Linked() {
		admitter = r.Signer
	}
	st.members[r.Subject] = &MemberState{ID: r.Subject, Name: r.Name, Role: role, Person: person, Invite: r.Invite,
		AddedAt: at, AddedBy: inv.CreatedBy, Version: r.Version, Key: r.Key, AdmittedBy: admitter, setBy: setBy}
	return ""
}

// authority returns why signer cannot act (not an active member, or its
// role fails ok), or "".
func (st *state) authority(signer string, ok func(Role) bool) string {
	s, found := st.members[signer]
	switch {
	case !found:
		return fmt.Sprintf("its signer %s has no effective admission", short(signer))
	case s.Removed:
		return fmt.Sprintf("its signer %s was removed", short(signer))
	case !ok(s.Role):
		return fmt.Sprintf("its signer %s is %s now", short(signer), s.Role.article())
	}
	return ""
}

// revokeInvitesOf revokes the invites created by id that its new role no
// longer allows it to make (all of them when it is removed), so that a
// device demoted or removed cannot come back through its own invites.
func (st *state) revokeInvitesOf(id string, role Role, removed bool) {
	for _, inv := range st.invites {
		if inv.CreatedBy == id && (removed || !st.mayStillInvite(id, role, inv)) {
			inv.Revoked = true
		}
	}
}

// mayStillInvite reports whether device id, now of role, may still have
// made inv: an invite for a role it grants, or one adding a device to its
// own person or to a person it may manage.
func (st *state) mayStillInvite(id string, role Role, inv *InviteState) bool {
	if inv.Person == "" {
		return canGrant(role, inv.Role)
	}
	if m := st.members[id]; m != nil && m.Person == inv.Person {
		return true
	}
	p := st.activeDevice(inv.Person)
	return p != nil && role.rank() >= RoleAdmin.rank() && canManage(role, p.Role)
}

// mayRevoke returns why signer may not revoke inv, or "".
func (st *state) mayRevoke(signer string, inv *InviteState) string {
	if inv.Person == "" {
		return st.authority(signer, func(s Role) bool { return canGrant(s, inv.Role) })
	}
	return st.addDeviceEffect(signer, inv.Person, "revoke an invite that adds a device to")
}

// setRules applies a rules record: from it on, only admins and owners sign
// admissions.
func (st *state) setRules(e *entry) string {
	if why := st.authority(e.r.Signer, func(s Role) bool { return s == RoleOwner }); why != "" {
		return why
	}
	if !slices.Contains(st.ruled, e) {
		st.ruled = append(st.ruled, e) // applied alone, extending every entry
	}
	if st.rules == nil {
		st.rules = e
	}
	return ""
}

// unruled returns a standing rules record that admission e, signed by a
// member or viewer, is not extended by, or nil: the rules take from
// members' admissions that their signer did not see.
func (st *state) unruled(e *entry) *entry {
	if s := st.members[e.r.Signer]; s.Role.rank() >= RoleAdmin.rank() {
		return nil
	}
	for _, d := range st.ruled {
		if !d.anc.has(e.idx) {
			return d
		}
	}
	return nil
}
