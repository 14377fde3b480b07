package folders

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrGrant means a copy's source was asked without a valid grant: none, a
// forged or damaged one, an expired one, or one that does not name this
// request. The message says which rule was broken.
var ErrGrant = errors.New("refused: " + RuleGrant + " from the member who asked for it")

// RuleGrant is the rule a refusal of a copy's request names (ErrGrant).
const RuleGrant = "a copy needs a valid grant"

// GrantHeader carries a grant with each request a copy's receiver sends to
// its source.
const GrantHeader = "Labpool-Grant"

// GrantTTL is how long a grant may start a copy after it is signed; a copy
// under way keeps its grant while it makes progress (see Config.GrantIdle).
const GrantTTL = 5 * time.Minute

// A Grant is one member's authority for one copy: member M (the holder of
// Key) lets the device Receiver read Path of the share Folder on the node
// Src. M's daemon signs it; the receiver forwards it to the source with
// every request; the source checks the signature, M's rights on the share,
// that the request comes from Receiver and stays under Path, and Expires.
//
// Wire form (then base64url without padding in GrantHeader), at most
// maxGrant bytes:
//
//	version  1 byte (grantVersion)
//	key      32 bytes, M's Ed25519 public key (M's device ID is its SHA-256)
//	expires  8 bytes, big-endian Unix seconds
//	nonce    16 bytes
//	src, folder, path, receiver: each a 2-byte big-endian length and UTF-8
//	sig      64 bytes, Ed25519 over grantDomain followed by every byte above
type Grant struct {
	Key      ed25519.PublicKey
	Expires  time.Time // second precision
	Nonce    [16]byte
	Src      string // the source node's device ID
	Folder   string
	Path     string // inside Folder; "" for the whole folder
	Receiver string // the device that reads, its device ID
	Sig      []byte
}

const (
	grantVersion = 1
	grantDomain  = "labpool copy grant\x00"
	maxGrant     = 8 << 10
	grantFixed   = 1 + ed25519.PublicKeySize + 8 + 16
)

// Member is the device ID of the member who signed g.
func (g Grant) Member() string { return DeviceID(g.Key) }

// signed is the part of the wire form the signature covers.
func (g Grant) signed() ([]byte, error) {
	if len(g.Key) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: the key is not an Ed25519 public key", ErrGrant)
	}
	b := make([]byte, 0, grantFixed+8+len(g.Src)+len(g.Folder)+len(g.Path)+len(g.Receiver)+ed25519.SignatureSize)
	b = append(b, grantVersion)
	b = append(b, g.Key...)
	b = binary.BigEndian.AppendUint64(b, uint64(g.Expires.Unix()))
	b = append(b, g.Nonce[:]...)
	for _, s := range []string{g.Src, g.Folder, g.Path, g.Receiver} {
		if len(s) > maxPath {
			return nil, fmt.Errorf("%w: a field is longer than %d bytes", ErrGrant, maxPath)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// Sign sets g.Sig with sign, which signs with the private key of g.Key
// (ed25519.Sign). The message is domain-separated.
func (g Grant) Sign(sign func(msg []byte) []byte) (Grant, error) {
	b, err := g.signed()
	if err != nil {
		return Grant{}, err
	}
	g.Sig = sign(append([]byte(grantDomain), b...))
	return g, nil
}

// Encode returns the text form of a signed grant.
func (g Grant) Encode() (string, error) {
	b, err := g.signed()
	if err != nil {
		return "", err
	}
	if len(g.Sig) != ed25519.SignatureSize {
		return "", fmt.Errorf("%w: not signed", ErrGrant)
	}
	return base64.RawURLEncoding.EncodeToString(append(b, g.Sig...)), nil
}

// DecodeGrant parses the text form and checks the signature; it does not
// check expiry or what the grant names (see Registry.OpenGranted).
func DecodeGrant(s string) (Grant, error) {
	if s == "" {
		return Grant{}, fmt.Errorf("%w: the request carries none", ErrGrant)
	}
	if len(s) > base64.RawURLEncoding.EncodedLen(maxGrant) {
		return Grant{}, fmt.Errorf("%w: longer than %d bytes", ErrGrant, maxGrant)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Grant{}, fmt.Errorf("%w: not base64url", ErrGrant)
	}
	if len(b) < grantFixed+8+ed25519.SignatureSize || b[0] != grantVersion {
		return Grant{}, fmt.Errorf("%w: unknown version or too short", ErrGrant)
	}
	g := Grant{Key: ed25519.PublicKey(b[1:33]), Expires: time.Unix(int64(binary.BigEndian.Uint64(b[33:41])), 0)}
	copy(g.Nonce[:], b[41:57])
	rest := b[grantFixed:]
	fields := []*string{&g.Src, &g.Folder, &g.Path, &g.Receiver}
	for _, f := range fields {
		if len(rest) < 2 {
			return Grant{}, fmt.Errorf("%w: truncated", ErrGrant)
		}
		n := int(binary.BigEndian.Uint16(rest))
		if n > maxPath || len(rest) < 2+n {
			return Grant{}, fmt.Errorf("%w: truncated", ErrGrant)
		}
		*f, rest = string(rest[2:2+n]), rest[2+n:]
	}
	if len(rest) != ed25519.SignatureSize {
		return Grant{}, fmt.Errorf("%w: the signature is missing or followed by extra bytes", ErrGrant)
	}
	g.Key = append(ed25519.PublicKey(nil), g.Key...)
	g.Sig = append([]byte(nil), rest...)
	msg := append([]byte(grantDomain), b[:len(b)-ed25519.SignatureSize]...)
	if !ed25519.Verify(g.Key, msg, g.Sig) {
		return Grant{}, fmt.Errorf("%w: the signature does not verify", ErrGrant)
	}
	return g, nil
}

// idEncoding is the device ID's text encoding (sync/peer): base32, no
// padding, in groups of 4 joined by dashes.
var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// DeviceID returns the text form of the device ID of the holder of the
// Ed25519 public key pub: the same string as peer.NewID(pub).String()
// (node packages do not import sync/peer; a test in app checks they agree).
func DeviceID(pub []byte) string {
	sum := sha256.Sum256(pub)
	plain := idEncoding.EncodeToString(sum[:])
	var b strings.Builder
	for i := 0; i < len(plain); i += 4 {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(plain[i:min(i+4, len(plain))])
	}
	return b.String()
}

// within reports whether the clean path p is the granted path or under it.
func (g Grant) within(p string) bool {
	top, err := CleanPath(g.Path)
	if err != nil {
		return false
	}
	return top == "." || p == top || strings.HasPrefix(p, top+"/")
}

// Signer mints the grants of one member: this machine's device, whose
// daemon holds the key.
type Signer struct {
	Key  ed25519.PublicKey
	Sign func(msg []byte) []byte // ed25519.Sign with Key's private key
}

// Grant returns the encoded grant for receiver to read p of folder on the
// node src, valid from now for GrantTTL.
func (s Signer) Grant(src, folder, p, receiver string, now time.Time) (string, error) {
	g := Grant{Key: s.Key, Expires: now.Add(GrantTTL), Src: src, Folder: folder, Path: p, Receiver: receiver}
	rand.Read(g.Nonce[:])
	g, err := g.Sign(s.Sign)
	if err != nil {
		return "", err
	}
	return g.Encode()
}
