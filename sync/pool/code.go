// Package pool is pool membership: a log of signed records (genesis, join,
// role, remove, invite, revoke) that every member checks back to the
// pool's creator, the Manager that keeps it, and the join endpoint.
//
// A pool's ID binds its creator (PoolIDFor: a hash of the creator's device
// ID and a salt), so a join code, which carries the pool ID and an invite's
// 16-byte secret, is enough to check the whole log a member answers. The
// secret seeds the invite's Ed25519 key: a joiner proves with it that it
// holds the code, and the member it asks signs its admission after checking
// the invite now; members verify the proof against the invite record an
// admin signed, never learning the secret. Every other change is signed by
// the device key of an owner or admin whose role allows it.
//
// Records name the heads of the log their signer saw (Record.Prev): they
// form a DAG and each is judged against its ancestors (log.go), and the
// membership is resolved from the whole set (resolve.go), so replicas that
// hold the same records agree, whatever order they came in. Members relay
// the records on their replication streams; a refused one is logged once.
package pool

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrBadCode means a string is not a join code (mistyped or truncated).
var ErrBadCode = errors.New("invalid join code")

// ErrBadPoolID means a string is not a pool ID.
var ErrBadPoolID = errors.New("invalid pool id")

// ID names a pool. Its text form is 16 lowercase hex digits.
type ID [8]byte

// String returns the hex form, as advertised in mDNS TXT records.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// ParseID parses the hex form of a pool ID.
func ParseID(s string) (ID, error) {
	var id ID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return ID{}, fmt.Errorf("parse pool id %q: %w", s, ErrBadPoolID)
	}
	copy(id[:], b)
	return id, nil
}

// Code is what a member prints and a joiner types: the pool and its secret.
type Code struct {
	Pool   ID
	Secret [16]byte
}

// PoolID returns the pool's ID in text, as in mDNS TXT records.
func (c Code) PoolID() string { return c.Pool.String() }

// Layout of an encoded code: pool ID, secret, checksum; 26 bytes make 42
// base32 characters, shown as 6 groups of 7.
const (
	checkLen      = 2
	codeBytes     = len(ID{}) + 16 + checkLen
	codeChars     = 42
	codeGroupSize = 7
)

var codeEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewCode makes a new pool: a random ID and secret.
func NewCode() (Code, error) {
	var c Code
	if _, err := rand.Read(c.Pool[:]); err != nil {
		return Code{}, fmt.Errorf("make pool id: %w", err)
	}
	if _, err := rand.Read(c.Secret[:]); err != nil {
		return Code{}, fmt.Errorf("make pool secret: %w", err)
	}
	return c, nil
}

// String returns the code as typed by people, e.g.
// "ABCDEFG-HIJKLMN-OPQRSTU-VWXYZ23-4567ABC-DEFGHIA".
func (c Code) String() string {
	plain := codeEncoding.EncodeToString(c.bytes())
	groups := make([]string, 0, codeChars/codeGroupSize)
	for i := 0; i < len(plain); i += codeGroupSize {
		groups = append(groups, plain[i:i+codeGroupSize])
	}
	return strings.Join(groups, "-")
}

func (c Code) bytes() []byte {
	b := make([]byte, 0, codeBytes)
	b = append(b, c.Pool[:]...)
	b = append(b, c.Secret[:]...)
	return append(b, checksum(b)...)
}

// checksum is the CRC-16/CCITT-FALSE of payload, big-endian. A CRC of
// degree 16 detects every burst of up to 16 flipped bits in the code, so
// every mistyped character (5 bits) and every swap of two neighbours
// (10 bits) is caught, not merely most of them.
func checksum(payload []byte) []byte {
	crc := uint16(0xffff)
	for _, b := range payload {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return []byte{byte(crc >> 8), byte(crc)}
}

// ParseCode parses a join code. It ignores case, dashes and spaces, and
// reads the digits 0, 1 and 8 as the letters O, I and B they are mistaken
// for; the checksum catches any other typo.
func ParseCode(s string) (Code, error) {
	plain := normalizeCode(s)
	if len(plain) != codeChars {
		return Code{}, fmt.Errorf("parse join code: want %d characters, got %d: %w", codeChars, len(plain), ErrBadCode)
	}
	b, err := codeEncoding.DecodeString(plain)
	if err != nil || len(b) != codeBytes || codeEncoding.EncodeToString(b) != plain {
		return Code{}, fmt.Errorf("parse join code: not a code: %w", ErrBadCode)
	}
	payload := b[:codeBytes-checkLen]
	if string(checksum(payload)) != string(b[codeBytes-checkLen:]) {
		return Code{}, fmt.Errorf("parse join code: checksum mismatch (a typo?): %w", ErrBadCode)
	}
	var c Code
	copy(c.Pool[:], payload)
	copy(c.Secret[:], payload[len(c.Pool):])
	return c, nil
}

var codeReplacer = strings.NewReplacer("-", "", " ", "", "\t", "", "0", "O", "1", "I", "8", "B")

func normalizeCode(s string) string {
	return codeReplacer.Replace(strings.ToUpper(strings.TrimSpace(s)))
}
