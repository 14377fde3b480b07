package pool

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// Refusals of a record, each wrapped with the rule that refused it; also
// ErrRemoved (join.go) and ErrNoMember (manager.go).
var (
	// ErrForged means a record's signature, key or pool is not what it claims.
	ErrForged = errors.New("forged record")
	// ErrReplayed means a record is no newer than what is known of its subject.
	ErrReplayed = errors.New("replayed record")
	// ErrOutOfRole means the signer's role does not allow the change.
	ErrOutOfRole = errors.New("out of role")
	// ErrFuture means a record's version is too far ahead of the clock.
	ErrFuture = errors.New("version in the future")
	// ErrInvite means an invite cannot be used: unknown, expired, used up or revoked.
	ErrInvite = errors.New("invite not usable")
	// ErrUnknownInvite means no invite of the pool has the key that signed
	// a join: most likely a wrong code. It wraps ErrInvite.
	ErrUnknownInvite = fmt.Errorf("unknown invite: %w", ErrInvite)
	// ErrNoGenesis means there is no genesis record (yet) for the pool.
	ErrNoGenesis = errors.New("no genesis record")
	// ErrMalformed means a record's fields do not fit its kind.
	ErrMalformed = errors.New("malformed record")
	// ErrBadRole means a string is not a role.
	ErrBadRole = errors.New("invalid role")
)

// MaxSkew is how far ahead of the local clock a record's version may be, so
// that nobody can push versions to their maximum.
const MaxSkew = 10 * time.Minute

// Domain labels: a signature or hash made for one purpose is never valid
// for another.
const (
	recordLabel    = "labpool pool record v1"
	recordLabelV2  = "labpool pool record v2: prev, proof"
	personLabel    = "labpool pool record v3: as, person"
	joinProofLabel = "labpool join proof v1"
	poolIDLabel    = "labpool pool id v1\x00"
	inviteKeyLabel = "labpool invite key v1\x00"
	invitePrefix   = "invite:" // Signer of a join: the invite's key signed it
	saltLen        = 16
	maxInviteUses  = 1 << 20
)

// Role is what a device may do in the pool.
type Role string

// Roles, from most to least trusted.
const (
	RoleOwner  Role = "owner"  // as admin, plus manages admins and owners
	RoleAdmin  Role = "admin"  // as member, plus manages members, viewers and their invites
	RoleMember Role = "member" // launches jobs, copies, shares folders
	RoleViewer Role = "viewer" // watches
)

// ParseRole parses a role name ("owner", "admin", "member", "viewer").
func ParseRole(s string) (Role, error) {
	r := Role(strings.ToLower(strings.TrimSpace(s)))
	if r.rank() == 0 {
		return "", fmt.Errorf("parse role %q: %w", s, ErrBadRole)
	}
	return r, nil
}

// rank orders roles: viewer 1 < member 2 < admin 3 < owner 4; 0 for no role.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleMember:
		return 2
	case RoleAdmin:
		return 3
	case RoleOwner:
		return 4
	}
	return 0
}

// article returns the role with its indefinite article, for messages.
func (r Role) article() string {
	if r == RoleOwner || r == RoleAdmin {
		return "an " + string(r)
	}
	return "a " + string(r)
}

// Kind is what a record changes.
type Kind string

// Kinds of records.
const (
	KindGenesis Kind = "genesis" // the creator makes the pool
	KindJoin    Kind = "join"    // a device joins with an invite
	KindRole    Kind = "role"    // a member's role changes
	KindRemove  Kind = "remove"  // a device leaves or is removed, for good
	KindInvite  Kind = "invite"  // an owner or admin makes an invite
	KindRevoke  Kind = "revoke"  // an invite ends, for good
	KindRules   Kind = "rules"   // an owner makes admins and owners the only admitters
	KindReadmit Kind = "readmit" // an owner or admin takes a removed device back, under its name
	KindMerge   Kind = "merge"   // an owner makes two people one: the subject's person joins Person
)

// Record is one signed change to the pool. Records are replicated by every
// member and checked by each one with Log.Apply.
type Record struct {
	Pool    ID     `json:"pool"`
	Kind    Kind   `json:"kind"`
	Subject string `json:"subject"`        // device ID (genesis, join, role, remove, readmit; rules: its signer) or invite ID (invite, revoke)
	Version uint64 `json:"v"`              // hybrid clock in unix ms: max(now, highest version known + 1)
	Role    Role   `json:"role,omitempty"` // genesis (owner), role, invite, readmit (the role it comes back with); join: the invite's, or "" for whatever it grants; rules: admin, the least role that admits
	Name    string `json:"name,omitempty"` // genesis, join: the device's name
	// As is the name of the person a genesis or join makes ("" for the
	// device's name): a device that does not join an existing person is
	// the first device of a person of its own.
	As string `json:"as,omitempty"`
	// Person is a person's ID, the device ID of its first device: invite,
	// the person whose device it admits ("" for a new person); join, its
	// invite's; merge, the person the subject's person becomes.
	Person  string `json:"person,omitempty"`
	Key     []byte `json:"key,omitempty"`     // genesis, join: the subject's Ed25519 public key; invite: the invite's
	Salt    []byte `json:"salt,omitempty"`    // genesis: 16 random bytes that make the pool ID
	Invite  string `json:"invite,omitempty"`  // join: the invite used; remove: the invite the device joined with
	Uses    int    `json:"uses,omitempty"`    // invite: how many joins it allows, 0 = unlimited
	Expires int64  `json:"expires,omitempty"` // invite: unix ms after which it admits nobody
	Signer  string `json:"signer"`            // device ID (a join: the admitting member); "invite:<invite ID>" for a legacy join
	// Prev names the state the signer saw: the hashes (hex) of the heads of
	// its log, the records nothing else it held extended. Every record but
	// the genesis carries it; a record without it is of the legacy format,
	// accepted only from a log that holds no linked record yet.
	Prev  []string `json:"prev,omitempty"`
	Proof []byte   `json:"proof,omitempty"` // join: the invite key's signature over JoinProofBytes
	Sig   []byte   `json:"sig"`             // Ed25519 over SigningBytes
}

// Linked reports whether r names the state its signer saw (Prev): the
// format of every record but the genesis since the legacy one.
func (r Record) Linked() bool { return len(r.Prev) > 0 || len(r.Proof) > 0 }

// SigningBytes returns what the signature covers: a domain label and every
// field but Sig, each length-prefixed, so two different records never
// share their signing bytes. A record of a person (As or Person set)
// extends them with both under a label of its own, so the records of
// before people sign the same bytes as they did.
func (r Record) SigningBytes() []byte {
	b := r.legacySigningBytes()
	if r.Linked() {
		b = appendField(b, recordLabelV2)
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Prev)))
		for _, p := range r.Prev {
			b = appendField(b, p)
		}
		b = appendField(b, r.Proof)
	}
	if r.As != "" || r.Person != "" {
		b = appendField(b, personLabel)
		b = appendField(b, r.As)
		b = appendField(b, r.Person)
	}
	return b
}

// legacySigningBytes are the signing bytes of the legacy format, which a
// linked record extends.
func (r Record) legacySigningBytes() []byte {
	n := 9*4 + len(recordLabel) + len(r.Pool) + 3*8 + len(r.Kind) + len(r.Subject) + len(r.Role) +
		len(r.Name) + len(r.Key) + len(r.Salt) + len(r.Invite) + len(r.Signer)
	b := make([]byte, 0, n)
	b = appendField(b, recordLabel)
	b = append(b, r.Pool[:]...)
	b = appendField(b, r.Kind)
	b = appendField(b, r.Subject)
	b = binary.BigEndian.AppendUint64(b, r.Version)
	b = appendField(b, r.Role)
	b = appendField(b, r.Name)
	b = appendField(b, r.Key)
	b = appendField(b, r.Salt)
	b = appendField(b, r.Invite)
	b = binary.BigEndian.AppendUint64(b, uint64(int64(r.Uses)))
	b = binary.BigEndian.AppendUint64(b, uint64(r.Expires))
	return appendField(b, r.Signer)
}

func appendField[T ~string | ~[]byte](b []byte, v T) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// Hash returns the record's identity: the SHA-256 of its signing bytes and
// signature.
func (r Record) Hash() [32]byte {
	h := sha256.New()
	h.Write(r.SigningBytes())
	h.Write(r.Sig)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// PoolIDFor returns the ID of the pool that creator makes with salt. A join
// code carries it, so a joiner who knows only the code can check the genesis.
func PoolIDFor(creator peer.ID, salt []byte) ID {
	h := sha256.New()
	h.Write([]byte(poolIDLabel))
	h.Write(creator[:])
	h.Write(salt)
	var id ID
	copy(id[:], h.Sum(nil))
	return id
}

// MarshalText implements encoding.TextMarshaler with the hex form.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it accepts what ParseID accepts.
func (id *ID) UnmarshalText(b []byte) error {
	parsed, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// NewGenesis makes the record that creates a pool: the device of key, named
// name, is its creator and the first device of its first owner, the person
// named as ("" for the device's name). The new pool's ID is the record's Pool.
func NewGenesis(key ed25519.PrivateKey, name, as string, now time.Time) (Record, error) {
	if err := checkName(name); err != nil {
		return Record{}, fmt.Errorf("make genesis: %w", err)
	}
	if err := checkPersonName(as); err != nil {
		return Record{}, fmt.Errorf("make genesis: %w", err)
	}
	signer, err := signerID(key)
	if err != nil {
		return Record{}, fmt.Errorf("make genesis: %w", err)
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return Record{}, fmt.Errorf("make genesis salt: %w", err)
	}
	id, _ := peer.ParseID(signer)
	r := Record{
		Pool: PoolIDFor(id, salt), Kind: KindGenesis, Subject: signer, Version: unixMS(now),
		Role: RoleOwner, Name: name, As: as, Key: bytes.Clone(key.Public().(ed25519.PublicKey)), Salt: salt,
		Signer: signer,
	}
	r.Sig = ed25519.Sign(key, r.SigningBytes())
	return r, nil
}

// JoinProofBytes returns what a joiner signs with the invite key of its
// code, so that the member admitting it can show every other member that
// the device held the code: the pool, the device, its name and key, the
// invite, and the name of the person it makes (only when it names one, so
// proofs of before people verify as they did).
func JoinProofBytes(pool ID, subject, name string, key []byte, invite, as string) []byte {
	b := appendField(nil, joinProofLabel)
	b = append(b, pool[:]...)
	b = appendField(b, subject)
	b = appendField(b, name)
	b = appendField(b, key)
	b = appendField(b, invite)
	if as != "" {
		b = appendField(b, personLabel)
		b = appendField(b, as)
	}
	return b
}

// NewJoinRequest makes what the device of joinerPub, named name, sends a
// member to be admitted with code: its key and the proof, signed with the
// invite's key, that it holds the code. as names the person it makes ("":
// the device's name); a code that adds a device to a person ignores it.
func NewJoinRequest(code Code, joinerPub ed25519.PublicKey, name, as string) (JoinRequest, error) {
	if len(joinerPub) != ed25519.PublicKeySize {
		return JoinRequest{}, fmt.Errorf("make join request: public key of %d bytes: %w", len(joinerPub), ErrMalformed)
	}
	if err := checkName(name); err != nil {
		return JoinRequest{}, fmt.Errorf("make join request: %w", err)
	}
	if err := checkPersonName(as); err != nil {
		return JoinRequest{}, fmt.Errorf("make join request: %w", err)
	}
	key := InviteKey(code.Secret)
	invite := InviteID(key.Public().(ed25519.PublicKey))
	subject := peer.NewID(joinerPub).String()
	proof := ed25519.Sign(key, JoinProofBytes(code.Pool, subject, name, joinerPub, invite, as))
	return JoinRequest{PoolID: code.Pool.String(), Name: name, As: as, Key: bytes.Clone(joinerPub), Invite: invite, Proof: proof}, nil
}

// NewLegacyJoin makes a join of the legacy format: signed by the invite's
// key, judged at the version the joiner chose. Only logs that predate
// admissions hold them; tests make them to stand for such logs.
func NewLegacyJoin(code Code, joinerPub ed25519.PublicKey, name string, role Role, now time.Time) (Record, error) {
	if len(joinerPub) != ed25519.PublicKeySize {
		return Record{}, fmt.Errorf("make join: public key of %d bytes: %w", len(joinerPub), ErrMalformed)
	}
	if err := checkName(name); err != nil {
		return Record{}, fmt.Errorf("make join: %w", err)
	}
	key := InviteKey(code.Secret)
	invite := InviteID(key.Public().(ed25519.PublicKey))
	r := Record{
		Pool: code.Pool, Kind: KindJoin, Subject: peer.NewID(joinerPub).String(), Version: unixMS(now),
		Role: role, Name: name, Key: bytes.Clone(joinerPub), Invite: invite, Signer: invitePrefix + invite,
	}
	r.Sig = ed25519.Sign(key, r.SigningBytes())
	return r, nil
}

// signerID returns the device ID text of a private key.
func signerID(key ed25519.PrivateKey) (string, error) {
	if len(key) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("private key of %d bytes: %w", len(key), ErrMalformed)
	}
	return peer.NewID(key.Public().(ed25519.PublicKey)).String(), nil
}

// unixMS returns t in unix milliseconds, 0 before 1970.
func unixMS(t time.Time) uint64 {
	return uint64(max(t.UnixMilli(), 0))
}

// short returns the display form of a device or invite ID in messages.
func short(id string) string {
	return id[:min(len(id), 9)]
}

// refuse returns the error of a refused record: the rule, then the sentinel.
func refuse(sentinel error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, sentinel)...)
}
