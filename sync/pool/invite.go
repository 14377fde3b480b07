package pool

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// An invite is a key pair derived from the secret of a join code. Its
// record in the log holds only the public key, so members who read the
// log learn no secret, and yet every one of them can check that a join was
// signed by someone who held the code.

// inviteIDLen is the length of an invite ID's text: 8 bytes in hex.
const inviteIDLen = 16

// InviteKey returns the invite key that a join code's secret seeds.
func InviteKey(secret [16]byte) ed25519.PrivateKey {
	seed := sha256.Sum256(append([]byte(inviteKeyLabel), secret[:]...))
	return ed25519.NewKeyFromSeed(seed[:])
}

// InviteID returns the ID of the invite with public key pub: the hex of the
// first 8 bytes of its SHA-256.
func InviteID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:inviteIDLen/2])
}

// InviteState is an invite as the log knows it.
type InviteState struct {
	ID        string
	Role      Role   // the role it grants (one adding a device to a person: the person's, when made)
	Person    string // the person whose device it admits; "" for a new person
	Uses      int    // joins it allows, 0 = unlimited
	Used      int    // joins it made
	Expires   time.Time
	Revoked   bool // revoked, or its creator was removed or lost the right to make it
	CreatedBy string
	CreatedAt time.Time
	Key       []byte // its Ed25519 public key
	Version   uint64 // of its latest record

	revokeHeld bool // a revoke record ended it (not merely its creator's or user's removal)
}

// State returns "revoked", "used up", "expired" or "active", in that order of precedence.
func (i InviteState) State(now time.Time) string {
	switch {
	case i.Revoked:
		return "revoked"
	case i.Uses > 0 && i.Used >= i.Uses:
		return "used up"
	case now.After(i.Expires):
		return "expired"
	}
	return "active"
}

// NewInvite makes and signs, with key, an invite to join as role, good for
// uses joins (0 = unlimited) until expires, and returns the record and the
// code to hand out. It returns the rule that refuses it, if any.
func (l *Log) NewInvite(key ed25519.PrivateKey, role Role, uses int, expires, now time.Time) (Record, Code, error) {
	return l.newInvite(key, role, "", uses, expires, now)
}

// NewDeviceInvite makes and signs, with key, an invite that adds a device
// to person (its ID), with the person's role, good for uses joins until
// expires; it returns the record and the code for the new device. It
// returns the rule that refuses it, if any.
func (l *Log) NewDeviceInvite(key ed25519.PrivateKey, person string, uses int, expires, now time.Time) (Record, Code, error) {
	p := l.state().activeDevice(person)
	if p == nil {
		return Record{}, Code{}, fmt.Errorf("make invite: %w", refuse(ErrNoMember, "person %s has no device in the pool", short(person)))
	}
	return l.newInvite(key, p.Role, person, uses, expires, now)
}

func (l *Log) newInvite(key ed25519.PrivateKey, role Role, person string, uses int, expires, now time.Time) (Record, Code, error) {
	signer, err := signerID(key)
	if err != nil {
		return Record{}, Code{}, fmt.Errorf("make invite: %w", err)
	}
	code := Code{Pool: l.pool}
	if _, err := rand.Read(code.Secret[:]); err != nil {
		return Record{}, Code{}, fmt.Errorf("make invite secret: %w", err)
	}
	pub := InviteKey(code.Secret).Public().(ed25519.PublicKey)
	r := Record{
		Pool: l.pool, Kind: KindInvite, Subject: InviteID(pub), Version: l.NextVersion(now),
		Role: role, Person: person, Key: bytes.Clone(pub), Uses: uses, Expires: expires.UnixMilli(), Signer: signer, Prev: l.Heads(),
	}
	r.Sig = ed25519.Sign(key, r.SigningBytes())
	if err := l.Check(r, now); err != nil {
		return Record{}, Code{}, fmt.Errorf("make invite: %w", err)
	}
	return r, code, nil
}

// NewRevoke makes and signs, with key, the record that ends invite id.
func (l *Log) NewRevoke(key ed25519.PrivateKey, id string, now time.Time) (Record, error) {
	return l.newRecord(key, Record{Kind: KindRevoke, Subject: id}, now)
}

// Invite returns the invite with ID id.
func (l *Log) Invite(id string) (InviteState, bool) {
	i, ok := l.state().invites[id]
	if !ok {
		return InviteState{}, false
	}
	return *i, true
}

// Invites returns every invite, revoked ones included, newest first.
func (l *Log) Invites() []InviteState {
	st := l.state()
	all := make([]InviteState, 0, len(st.invites))
	for _, i := range st.invites {
		all = append(all, *i)
	}
	sortInvites(all)
	return all
}

// ErrNotAdmitter means this machine's role signs no admission: only admins'
// and owners' machines admit devices. It wraps ErrOutOfRole.
var ErrNotAdmitter = fmt.Errorf("only the machines of admins and owners admit devices: %w", ErrOutOfRole)

// Admit checks the request of a device (joinerPub, as its TLS session
// proved) to join, against the current log and the time now, and returns
// the admission this admin or owner (key) signs: the invite must be usable
// now, not merely at some time the joiner names. Uses are counted here.
func (l *Log) Admit(key ed25519.PrivateKey, req JoinRequest, joinerPub ed25519.PublicKey, now time.Time) (Record, error) {
	if id, err := signerID(key); err == nil {
		if me, ok := l.state().members[id]; ok && !me.Removed && me.Role.rank() < RoleAdmin.rank() {
			return Record{}, fmt.Errorf("this machine is %s: %w", me.Role.article(), ErrNotAdmitter)
		}
	}
	if !bytes.Equal(req.Key, joinerPub) {
		return Record{}, refuse(ErrForged, "the join request's key is not that of the device asking")
	}
	inv, ok := l.state().invites[req.Invite]
	if !ok {
		return Record{}, refuse(ErrUnknownInvite, "invite %s", quoteField(req.Invite))
	}
	if now.After(inv.Expires) {
		return Record{}, refuse(ErrInvite, "invite %s expired at %s", inv.ID, inv.Expires.UTC().Format(time.RFC3339))
	}
	signer, err := signerID(key)
	if err != nil {
		return Record{}, fmt.Errorf("make admission: %w", err)
	}
	r := Record{
		Pool: l.pool, Kind: KindJoin, Subject: peer.NewID(joinerPub).String(), Version: l.NextVersion(now),
		Role: inv.Role, Name: req.Name, As: req.As, Person: inv.Person, Key: bytes.Clone(joinerPub), Invite: req.Invite,
		Signer: signer, Prev: l.Heads(), Proof: bytes.Clone(req.Proof),
	}
	r.Sig = ed25519.Sign(key, r.SigningBytes())
	if err := l.Check(r, now); err != nil {
		return Record{}, err
	}
	return r, nil
}

// checkInvite applies the rules of an invite record signed by s.
func (st *state) checkInvite(r *Record, s *MemberState) error {
	if _, ok := st.invites[r.Subject]; ok {
		return refuse(ErrReplayed, "invite %s exists", r.Subject)
	}
	if r.Person != "" {
		return st.checkDeviceInvite(r, s)
	}
	return grantRule(s.Role, r.Role, "make")
}

// checkRevoke applies the rules of a revoke record signed by s.
func (st *state) checkRevoke(r *Record, s *MemberState) error {
	inv, ok := st.invites[r.Subject]
	switch {
	case !ok:
		return refuse(ErrUnknownInvite, "invite %s", r.Subject)
	case inv.revokeHeld:
		return refuse(ErrInvite, "invite %s is already revoked", r.Subject)
	case inv.Person != "":
		return st.addDeviceRule(s, inv.Person, "revoke an invite that adds a device to")
	}
	return grantRule(s.Role, inv.Role, "revoke")
}

// canGrant reports whether a device of role by may make or revoke invites
// for role: owners for any role but owner, admins for members and viewers.
func canGrant(by, role Role) bool {
	switch by {
	case RoleOwner:
		return role != RoleOwner
	case RoleAdmin:
		return role.rank() <= RoleMember.rank()
	}
	return false
}

func grantRule(by, role Role, verb string) error {
	switch {
	case canGrant(by, role):
		return nil
	case by.rank() < RoleAdmin.rank():
		return refuse(ErrOutOfRole, "only admins and owners manage invites")
	case role == RoleOwner:
		return refuse(ErrOutOfRole, "no invite makes an owner: an owner makes one with a role change")
	}
	return refuse(ErrOutOfRole, "%s cannot %s an invite for %s", by.article(), verb, role.article())
}
