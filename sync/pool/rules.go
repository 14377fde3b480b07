package pool

import (
	"crypto/ed25519"
	"encoding/hex"
	"strings"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// check judges r against the current state: its form, its version, its
// signature (unless verifySig is false, for a record accepted before) and
// the rules of its kind.
func (l *Log) check(r *Record, now time.Time, verifySig bool) error {
	if r.Pool != l.pool {
		return refuse(ErrForged, "record of pool %s, not %s", r.Pool, l.pool)
	}
	if err := r.checkShape(); err != nil {
		return err
	}
	if limit := unixMS(now.Add(MaxSkew)); r.Version > limit {
		return refuse(ErrFuture, "version %d is more than %s ahead of the clock", r.Version, MaxSkew)
	}
	if r.Kind == KindGenesis {
		return l.checkGenesis(r, verifySig)
	}
	if l.creator == "" {
		return refuse(ErrNoGenesis, "a %s record before the pool's genesis", r.Kind)
	}
	if r.Kind == KindJoin {
		return l.checkJoin(r, verifySig)
	}
	s, err := l.signer(r, verifySig)
	if err != nil {
		return err
	}
	switch r.Kind {
	case KindRole:
		return l.checkRole(r, s)
	case KindRemove:
		return l.checkRemove(r, s)
	case KindInvite:
		return l.checkInvite(r, s)
	default: // KindRevoke: checkShape knows no other
		return l.checkRevoke(r, s)
	}
}

// checkFresh refuses a record that is no newer than what the current
// state holds of its subject, before it is slotted in among older records.
func (l *Log) checkFresh(r *Record) error {
	switch r.Kind {
	case KindJoin, KindRole, KindRemove:
		m, ok := l.members[r.Subject]
		switch {
		case !ok:
			return nil
		case m.Removed:
			return refuse(ErrRemoved, "device %s", short(r.Subject))
		case r.Kind == KindJoin:
			return refuse(ErrReplayed, "device %s is already a member", short(r.Subject))
		case r.Version <= m.Version:
			return refuse(ErrReplayed, "version %d of device %s is not above %d", r.Version, short(r.Subject), m.Version)
		}
	case KindInvite, KindRevoke:
		if inv, ok := l.invites[r.Subject]; ok && r.Version <= inv.Version {
			return refuse(ErrReplayed, "version %d of invite %s is not above %d", r.Version, r.Subject, inv.Version)
		}
	}
	return nil
}

// checkGenesis applies the rules of a genesis: the only one, self-signed,
// and making this pool's ID.
func (l *Log) checkGenesis(r *Record, verifySig bool) error {
	id := peer.NewID(r.Key)
	switch {
	case l.creator != "":
		return refuse(ErrReplayed, "the pool has its genesis already")
	case id.String() != r.Subject:
		return refuse(ErrForged, "key of the genesis is not that of device %s", short(r.Subject))
	case PoolIDFor(id, r.Salt) != l.pool:
		return refuse(ErrForged, "genesis of device %s does not make pool %s", short(r.Subject), l.pool)
	case verifySig && !ed25519.Verify(r.Key, r.SigningBytes(), r.Sig):
		return refuse(ErrForged, "bad signature on the genesis")
	}
	return nil
}

// checkJoin applies the rules of a join: signed by a usable invite, for a
// device that is new to the pool, with the invite's role.
func (l *Log) checkJoin(r *Record, verifySig bool) error {
	inv, ok := l.invites[r.Invite]
	if !ok {
		return refuse(ErrUnknownInvite, "invite %s", r.Invite)
	}
	if verifySig && !ed25519.Verify(inv.Key, r.SigningBytes(), r.Sig) {
		return refuse(ErrForged, "bad signature by invite %s", r.Invite)
	}
	if peer.NewID(r.Key).String() != r.Subject {
		return refuse(ErrForged, "key of the join is not that of device %s", short(r.Subject))
	}
	if m, ok := l.members[r.Subject]; ok {
		if m.Removed {
			return refuse(ErrRemoved, "device %s", short(r.Subject))
		}
		return refuse(ErrReplayed, "device %s is already a member", short(r.Subject))
	}
	return l.checkJoinInvite(r, inv)
}

// signer returns the member that signed r, after checking its signature.
func (l *Log) signer(r *Record, verifySig bool) (*MemberState, error) {
	s, ok := l.members[r.Signer]
	switch {
	case !ok:
		return nil, refuse(ErrForged, "signer %s is not a member", short(r.Signer))
	case verifySig && !ed25519.Verify(s.Key, r.SigningBytes(), r.Sig):
		return nil, refuse(ErrForged, "bad signature by %s", short(r.Signer))
	case s.Removed:
		return nil, refuse(ErrRemoved, "signer %s", short(r.Signer))
	}
	return s, nil
}

// subject returns the member that r is about, if it is still in the pool
// and r is newer than what is known of it.
func (l *Log) subject(r *Record) (*MemberState, error) {
	m, ok := l.members[r.Subject]
	switch {
	case !ok:
		return nil, refuse(ErrNoMember, "device %s is not in the pool", short(r.Subject))
	case m.Removed:
		return nil, refuse(ErrRemoved, "device %s", short(r.Subject))
	case r.Version <= m.Version:
		return nil, refuse(ErrReplayed, "version %d of device %s is not above %d", r.Version, short(r.Subject), m.Version)
	}
	return m, nil
}

// checkRole applies the rules of a role change signed by s.
func (l *Log) checkRole(r *Record, s *MemberState) error {
	m, err := l.subject(r)
	if err != nil {
		return err
	}
	if r.Subject == l.creator {
		return refuse(ErrOutOfRole, "nobody changes the role of the pool's creator")
	}
	if err := manageRule(s.Role, m.Role, "change the role of"); err != nil {
		return err
	}
	return manageRule(s.Role, r.Role, "make a device")
}

// checkRemove applies the rules of a removal signed by s.
func (l *Log) checkRemove(r *Record, s *MemberState) error {
	m, err := l.subject(r)
	if err != nil {
		return err
	}
	switch {
	case r.Subject == l.creator:
		return refuse(ErrOutOfRole, "nobody removes the pool's creator")
	case r.Invite != "" && r.Invite != m.Invite:
		return refuse(ErrMalformed, "device %s joined with invite %q, not %s", short(r.Subject), m.Invite, r.Invite)
	case r.Signer == r.Subject:
		return nil // leaving
	}
	return manageRule(s.Role, m.Role, "remove")
}

// canManage reports whether a device of role by may change or remove a
// device of role target, or give that role: owners anyone (but the
// creator, a rule of its own), admins members and viewers.
func canManage(by, target Role) bool {
	switch by {
	case RoleOwner:
		return true
	case RoleAdmin:
		return target.rank() <= RoleMember.rank()
	}
	return false
}

func manageRule(by, target Role, verb string) error {
	switch {
	case canManage(by, target):
		return nil
	case by.rank() < RoleAdmin.rank():
		return refuse(ErrOutOfRole, "only admins and owners manage members")
	}
	return refuse(ErrOutOfRole, "%s cannot %s %s", by.article(), verb, target.article())
}

// checkShape refuses a record whose fields do not fit its kind, so that
// each change has one form.
func (r *Record) checkShape() error {
	var want shape
	switch r.Kind {
	case KindGenesis:
		want = shape{subject: deviceSubject, role: true, name: true, key: true, salt: true}
	case KindJoin:
		want = shape{subject: deviceSubject, role: r.Role != "", name: true, key: true, invite: true}
	case KindRole:
		want = shape{subject: deviceSubject, role: true}
	case KindRemove:
		want = shape{subject: deviceSubject, invite: r.Invite != ""}
	case KindInvite:
		want = shape{subject: inviteSubject, role: true, key: true, uses: true, expires: true}
	case KindRevoke:
		want = shape{subject: inviteSubject}
	default:
		return refuse(ErrMalformed, "unknown kind %q", r.Kind)
	}
	if msg := want.mismatch(r); msg != "" {
		return refuse(ErrMalformed, "%s record: %s", r.Kind, msg)
	}
	return nil
}

type subjectKind int

const (
	deviceSubject subjectKind = iota
	inviteSubject
)

// shape says which fields a kind of record carries.
type shape struct {
	subject                                      subjectKind
	role, name, key, salt, invite, uses, expires bool
}

// mismatch returns what is wrong with r for shape s, or "".
func (s shape) mismatch(r *Record) string {
	switch {
	case r.Version == 0:
		return "no version"
	case s.subject == deviceSubject && !isDeviceID(r.Subject):
		return "subject is not a device id"
	case s.subject == inviteSubject && !isInviteID(r.Subject):
		return "subject is not an invite id"
	case s.role != (r.Role != ""), s.role && r.Role.rank() == 0:
		return "role " + quoteField(string(r.Role))
	case s.name && checkName(r.Name) != nil, !s.name && r.Name != "":
		return "name " + quoteField(r.Name)
	case s.key != (len(r.Key) != 0), s.key && len(r.Key) != ed25519.PublicKeySize:
		return "key of wrong size"
	case s.salt != (len(r.Salt) != 0), s.salt && len(r.Salt) != saltLen:
		return "salt of wrong size"
	case s.invite != (r.Invite != ""), s.invite && !isInviteID(r.Invite):
		return "invite " + quoteField(r.Invite)
	case !s.uses && r.Uses != 0, r.Uses < 0 || r.Uses > maxInviteUses:
		return "uses out of range"
	case s.expires != (r.Expires != 0), r.Expires < 0:
		return "expiry out of range"
	case len(r.Sig) != ed25519.SignatureSize:
		return "signature of wrong size"
	}
	return s.signerMismatch(r)
}

func (s shape) signerMismatch(r *Record) string {
	switch r.Kind {
	case KindGenesis:
		if r.Signer != r.Subject || r.Role != RoleOwner {
			return "not the creator signing as owner"
		}
	case KindJoin:
		if r.Signer != invitePrefix+r.Invite {
			return "not signed by its invite"
		}
	default:
		if !isDeviceID(r.Signer) {
			return "signer is not a device id"
		}
	}
	if r.Kind == KindInvite && InviteID(r.Key) != r.Subject {
		return "invite id is not that of its key"
	}
	return ""
}

// isDeviceID reports whether s is a device ID in canonical text form.
func isDeviceID(s string) bool {
	id, err := peer.ParseID(s)
	return err == nil && id.String() == s
}

// isInviteID reports whether s is an invite ID: 16 lowercase hex digits.
func isInviteID(s string) bool {
	if len(s) != inviteIDLen || strings.ToLower(s) != s {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// quoteField quotes a field for a message, cut to a readable length.
func quoteField(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}
