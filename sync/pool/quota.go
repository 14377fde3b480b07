package pool

import (
	"maps"
	"slices"
	"time"
)

// checkRoomForKind refuses, before any work, a record that cannot fit in
// a full log whatever its signer: a full log cannot be made to resolve
// old states at no cost.
func (l *Log) checkRoomForKind(r *Record) error {
	n := len(l.entries)
	switch {
	case n >= maxLog+reserveAdmin+reserveOwner:
		return refuse(ErrReplayed, "the log holds %d records, its limit", n)
	case n >= maxLog && r.Kind != KindRemove && r.Kind != KindRevoke && r.Kind != KindRole && r.Kind != KindRules:
		return refuse(ErrReplayed, "the log holds %d records, its limit for all but the removals, demotions and revocations of admins and owners (and an owner's rules)", n)
	}
	return nil
}

// checkRoom applies the limit on the log's size to e, judged already
// against past: past maxLog, only the restrictions of admins and owners
// fit, and past their reserve the owners' alone.
func (l *Log) checkRoom(e *entry, past *state) error {
	n := len(l.entries)
	if n < maxLog {
		return nil
	}
	role := Role("")
	if s, ok := past.members[e.r.Signer]; ok {
		role = s.Role
	}
	restricts := restrictive(e) && !(e.r.Kind == KindRemove && e.r.Signer == e.r.Subject)
	switch {
	case restricts && role == RoleOwner && n < maxLog+reserveAdmin+reserveOwner:
		return nil
	case restricts && role == RoleAdmin && n < maxLog+reserveAdmin:
		return nil
	}
	return refuse(ErrReplayed, "the log holds %d records: past %d it takes only the removals, demotions and revocations of admins and owners, and past %d only an owner's",
		n, maxLog, maxLog+reserveAdmin)
}

// checkAdmissionQuota applies the rules on admissions that the whole log
// judges, not the state the admitter names: how many one device signs, how
// many one invite makes, and, for one received now, the invite's expiry on
// this machine's clock.
func (l *Log) checkAdmissionQuota(w waiting, past *state) error {
	r := &w.r
	if r.Kind != KindJoin {
		return nil
	}
	inv := past.invites[r.Invite] // judge found it
	if w.fresh && w.arrived.After(inv.Expires.Add(lateGrace)) {
		return refuse(ErrInvite, "invite %s expired at %s, before this machine received the admission of device %s (at %s): an expired invite admits nobody, whatever state its admitter names",
			inv.ID, inv.Expires.UTC().Format(time.RFC3339), short(r.Subject), w.arrived.UTC().Format(time.RFC3339))
	}
	limit := MaxInviteUses
	if inv.Uses > 0 {
		limit = inv.Uses + maxInviteSlack
	}
	if n := l.used[r.Invite]; n >= limit {
		return refuse(ErrInvite, "invite %s made %d admissions, the most it makes (its uses and %d made at once)", inv.ID, n, maxInviteSlack)
	}
	if !r.Linked() {
		return nil
	}
	limit = maxAdmitsMember
	if s := past.members[r.Signer]; s.Role.rank() >= RoleAdmin.rank() {
		limit = maxAdmitsAdmin
	}
	if n := l.admits[r.Signer]; n >= limit {
		return refuse(ErrOutOfRole, "device %s signed %d admissions, the most %s signs", short(r.Signer), n, past.members[r.Signer].Role.article())
	}
	return nil
}

// clone returns a copy of st that shares nothing mutable with it.
func (st *state) clone() *state {
	c := &state{creator: st.creator, members: make(map[string]*MemberState, len(st.members)),
		invites: make(map[string]*InviteState, len(st.invites)), void: maps.Clone(st.void),
		rules: st.rules, ruled: slices.Clone(st.ruled), persons: make(map[string]*personState, len(st.persons))}
	for id, p := range st.persons {
		cp := *p
		c.persons[id] = &cp
	}
	for id, m := range st.members {
		cp := *m
		c.members[id] = &cp
	}
	for id, inv := range st.invites {
		cp := *inv
		c.invites[id] = &cp
	}
	return c
}
