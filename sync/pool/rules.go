package pool

import (
	"crypto/ed25519"
	"encoding/hex"
	"strings"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// judge applies the rules of r's kind against st, the state of the records
// r extends: the signature, the signer's role, the subject. It reports
// whether r demotes its subject.
func (st *state) judge(r *Record, pool ID) (demotes bool, err error) {
	if r.Kind == KindGenesis {
		return false, st.checkGenesis(r, pool)
	}
	if st.creator == "" {
		return false, refuse(ErrNoGenesis, "a %s record before the pool's genesis", r.Kind)
	}
	if r.Kind == KindJoin {
		if !r.Linked() {
			return false, st.checkLegacyJoin(r)
		}
		return false, st.checkAdmission(r, pool)
	}
	s, err := st.signer(r)
	if err != nil {
		return false, err
	}
	switch r.Kind {
	case KindRole:
		m, err := st.checkRole(r, s)
		return err == nil && r.Role.rank() < m.Role.rank(), err
	case KindRemove:
		return false, st.checkRemove(r, s)
	case KindInvite:
		return false, st.checkInvite(r, s)
	case KindRules:
		return false, st.checkRules(s)
	case KindReadmit:
		return false, st.checkReadmit(r, s)
	case KindMerge:
		return st.checkMerge(r, s)
	default: // KindRevoke: checkShape knows no other
		return false, st.checkRevoke(r, s)
	}
}

// checkGenesis applies the rules of a genesis: the only one, self-signed,
// and making this pool's ID.
func (st *state) checkGenesis(r *Record, pool ID) error {
	id := peer.NewID(r.Key)
	switch {
	case st.creator != "":
		return refuse(ErrReplayed, "the pool has its genesis already")
	case id.String() != r.Subject:
		return refuse(ErrForged, "key of the genesis is not that of device %s", short(r.Subject))
	case PoolIDFor(id, r.Salt) != pool:
		return refuse(ErrForged, "genesis of device %s does not make pool %s", short(r.Subject), pool)
	case !ed25519.Verify(r.Key, r.SigningBytes(), r.Sig):
		return refuse(ErrForged, "bad signature on the genesis")
	}
	return nil
}

// checkNewDevice refuses a join of a device the state knows, and one whose
// key is not its subject's.
func (st *state) checkNewDevice(r *Record) error {
	if peer.NewID(r.Key).String() != r.Subject {
		return refuse(ErrForged, "key of the join is not that of device %s", short(r.Subject))
	}
	if m, ok := st.members[r.Subject]; ok {
		if m.Removed {
			return refuse(ErrRemoved, "device %s", short(r.Subject))
		}
		return refuse(ErrReplayed, "device %s is already a member", short(r.Subject))
	}
	return nil
}

// checkLegacyJoin applies the rules of a join of the legacy format: signed
// by a usable invite, judged at its version.
func (st *state) checkLegacyJoin(r *Record) error {
	inv, ok := st.invites[r.Invite]
	if !ok {
		return refuse(ErrUnknownInvite, "invite %s", r.Invite)
	}
	if !ed25519.Verify(inv.Key, r.SigningBytes(), r.Sig) {
		return refuse(ErrForged, "bad signature by invite %s", r.Invite)
	}
	if err := st.checkNewDevice(r); err != nil {
		return err
	}
	return checkInviteUsable(r, inv)
}

// checkAdmission applies the rules of an admission: signed by a member,
// with the proof that the device held a code of an invite that was usable
// in the state the member saw, at the time the member signed it.
func (st *state) checkAdmission(r *Record, pool ID) error {
	s, err := st.signer(r)
	if err != nil {
		return err
	}
	if st.rules != nil && s.Role.rank() < RoleAdmin.rank() {
		return refuse(ErrOutOfRole, "only admins and owners sign admissions (the rule of record %x, which this one extends), and device %s is %s",
			st.rules.h[:4], short(r.Signer), s.Role.article())
	}
	inv, ok := st.invites[r.Invite]
	if !ok {
		return refuse(ErrUnknownInvite, "invite %s", r.Invite)
	}
	if err := checkJoinPerson(r, inv); err != nil {
		return err
	}
	if !ed25519.Verify(inv.Key, JoinProofBytes(pool, r.Subject, r.Name, r.Key, r.Invite, r.As), r.Proof) {
		return refuse(ErrForged, "the device's proof of invite %s does not verify", r.Invite)
	}
	if err := st.checkNewDevice(r); err != nil {
		return err
	}
	return checkInviteUsable(r, inv)
}

// checkInviteUsable applies the rules of the invite that a join uses.
func checkInviteUsable(r *Record, inv *InviteState) error {
	switch {
	case inv.Revoked:
		return refuse(ErrInvite, "invite %s was revoked", inv.ID)
	case int64(r.Version) > inv.Expires.UnixMilli():
		return refuse(ErrInvite, "invite %s expired at %s", inv.ID, inv.Expires.UTC().Format(time.RFC3339))
	case inv.Uses > 0 && inv.Used >= inv.Uses:
		return refuse(ErrInvite, "invite %s is used up (%d of %d)", inv.ID, inv.Used, inv.Uses)
	case r.Role != "" && r.Role != inv.Role:
		return refuse(ErrOutOfRole, "invite %s grants %s, not %s", inv.ID, inv.Role, r.Role)
	}
	return nil
}

// signer returns the member that signed r, after checking its signature.
func (st *state) signer(r *Record) (*MemberState, error) {
	s, ok := st.members[r.Signer]
	switch {
	case !ok:
		return nil, refuse(ErrForged, "signer %s is not a member", short(r.Signer))
	case !ed25519.Verify(s.Key, r.SigningBytes(), r.Sig):
		return nil, refuse(ErrForged, "bad signature by %s", short(r.Signer))
	case s.Removed:
		return nil, refuse(ErrRemoved, "signer %s", short(r.Signer))
	}
	return s, nil
}

// subject returns the member that r is about, if it is still in the pool.
func (st *state) subject(r *Record) (*MemberState, error) {
	m, ok := st.members[r.Subject]
	switch {
	case !ok:
		return nil, refuse(ErrNoMember, "device %s is not in the pool", short(r.Subject))
	case m.Removed:
		return nil, refuse(ErrRemoved, "device %s", short(r.Subject))
	}
	return m, nil
}

// checkRole applies the rules of a role change signed by s.
func (st *state) checkRole(r *Record, s *MemberState) (*MemberState, error) {
	m, err := st.subject(r)
	if err != nil {
		return nil, err
	}
	if c := st.members[st.creator]; r.Subject == st.creator || (c != nil && m.Person == c.Person) {
		return nil, refuse(ErrOutOfRole, "nobody changes the role of the pool's creator")
	}
	if err := manageRule(s.Role, m.Role, "change the role of"); err != nil {
		return nil, err
	}
	return m, manageRule(s.Role, r.Role, "make a device")
}

// checkRemove applies the rules of a removal signed by s.
func (st *state) checkRemove(r *Record, s *MemberState) error {
	m, err := st.subject(r)
	if err != nil {
		return err
	}
	if r.Person != "" {
		return st.checkRemovePerson(r, s, m)
	}
	switch {
	case r.Subject == st.creator:
		return refuse(ErrOutOfRole, "nobody removes the pool's creator")
	case r.Invite != "" && r.Invite != m.Invite:
		return refuse(ErrMalformed, "device %s joined with invite %q, not %s", short(r.Subject), m.Invite, r.Invite)
	case r.Signer == r.Subject:
		return nil // leaving
	}
	return manageRule(s.Role, m.Role, "remove")
}

// checkReadmit applies the rules of a readmission signed by s: an owner
// or admin takes back a device removed in the state the record extends,
// one it may manage, with a role it may give.
func (st *state) checkReadmit(r *Record, s *MemberState) error {
	m, ok := st.members[r.Subject]
	switch {
	case !ok:
		return refuse(ErrNoMember, "device %s is not in the pool: only a removed device is readmitted", short(r.Subject))
	case !m.Removed:
		return refuse(ErrReplayed, "device %s is a member: only a removed device is readmitted", short(r.Subject))
	case s.Role.rank() < RoleAdmin.rank():
		return refuse(ErrOutOfRole, "only admins and owners readmit, and device %s is %s", short(r.Signer), s.Role.article())
	}
	if err := manageRule(s.Role, m.Role, "readmit"); err != nil {
		return err
	}
	if p := st.activeDevice(m.Person); p != nil && r.Role != p.Role {
		return refuse(ErrMalformed, "device %s comes back to %s, who is %s: a device has its person's role, not %s",
			short(r.Subject), st.personLabel(m.Person), p.Role.article(), r.Role)
	}
	return manageRule(s.Role, r.Role, "make a device")
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
		want = shape{subject: deviceSubject, role: true, name: true, key: true, salt: true, as: true}
	case KindJoin:
		want = shape{subject: deviceSubject, role: r.Role != "" || r.Linked(), name: true, key: true, invite: true, proof: r.Linked(),
			as: r.Linked(), person: r.Linked()}
	case KindRole:
		want = shape{subject: deviceSubject, role: true}
	case KindRemove:
		want = shape{subject: deviceSubject, invite: r.Invite != "", person: r.Linked() && r.Invite == ""}
	case KindInvite:
		want = shape{subject: inviteSubject, role: true, key: true, uses: true, expires: true, person: r.Linked()}
	case KindRevoke:
		want = shape{subject: inviteSubject}
	case KindRules:
		want = shape{subject: deviceSubject, role: true}
	case KindReadmit:
		want = shape{subject: deviceSubject, role: true}
	case KindMerge:
		want = shape{subject: deviceSubject, person: true, personNeeded: true}
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
	proof                                        bool
	as, person                                   bool // may carry As, Person
	personNeeded                                 bool // must carry Person
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
	case s.proof != (len(r.Proof) != 0), s.proof && len(r.Proof) != ed25519.SignatureSize:
		return "proof of wrong size"
	case !s.as && r.As != "", s.as && checkPersonName(r.As) != nil:
		return "person's name " + quoteField(r.As)
	case !s.person && r.Person != "", r.Person != "" && !isDeviceID(r.Person), s.personNeeded && r.Person == "":
		return "person " + quoteField(r.Person)
	case r.Kind == KindGenesis && len(r.Prev) != 0:
		return "a genesis extends nothing"
	case (r.Kind == KindRules || r.Kind == KindReadmit || r.Kind == KindMerge) && len(r.Prev) == 0:
		return "it names no state"
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
		if !r.Linked() && r.Signer != invitePrefix+r.Invite {
			return "not signed by its invite"
		}
		if r.Linked() && !isDeviceID(r.Signer) {
			return "not signed by the member that admitted it"
		}
	default:
		if !isDeviceID(r.Signer) {
			return "signer is not a device id"
		}
	}
	if r.Kind == KindInvite && InviteID(r.Key) != r.Subject {
		return "invite id is not that of its key"
	}
	if r.Kind == KindRules && (r.Signer != r.Subject || r.Role != RoleAdmin) {
		return "not its signer's, making admins and owners the admitters"
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

// checkRules applies the rules of a rules record signed by s: an owner's,
// once.
func (st *state) checkRules(s *MemberState) error {
	switch {
	case s.Role != RoleOwner:
		return refuse(ErrOutOfRole, "only owners set the pool's rules")
	case st.rules != nil:
		return refuse(ErrReplayed, "only admins and owners sign admissions already (record %x)", st.rules.h[:4])
	}
	return nil
}
