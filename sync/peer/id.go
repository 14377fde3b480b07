// Package peer holds a labpool device's identity: its device ID and the
// Ed25519 key and self-signed certificate it presents in every TLS handshake.
//
// A device ID is the SHA-256 of the raw Ed25519 public key, so a certificate
// may be re-issued for the same key without changing the ID. Its canonical
// text is base32 (RFC 4648 alphabet, uppercase, no padding) in 13 groups of
// 4 characters joined by dashes; the short form is the first two groups,
// e.g. "K7Q2-MX4P".
//
// LoadOrCreate creates the key and certificate once per data directory and
// reuses them afterwards; a damaged file is reported, never replaced.
package peer

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// ErrInvalid means a string is not a device ID.
var ErrInvalid = errors.New("invalid device id")

// ID identifies a device: the SHA-256 of its Ed25519 public key.
type ID [32]byte

const (
	groupLen   = 4
	encodedLen = 52 // base32 characters for 32 bytes, without padding
)

var encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewID returns the ID of the device holding the given raw Ed25519 public key.
func NewID(publicKey []byte) ID {
	return ID(sha256.Sum256(publicKey))
}

// String returns the canonical form: 13 dash-separated groups of 4 characters.
func (id ID) String() string {
	plain := encoding.EncodeToString(id[:])
	var b strings.Builder
	b.Grow(encodedLen + encodedLen/groupLen - 1)
	for i := 0; i < len(plain); i += groupLen {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(plain[i:min(i+groupLen, len(plain))])
	}
	return b.String()
}

// Short returns the first 8 characters of the ID as "XXXX-XXXX", for display.
func (id ID) Short() string {
	return id.String()[:2*groupLen+1]
}

// IsZero reports whether id is the zero ID (no device).
func (id ID) IsZero() bool {
	return id == ID{}
}

// LogValue logs the short form.
func (id ID) LogValue() slog.Value {
	return slog.StringValue(id.Short())
}

// MarshalText implements encoding.TextMarshaler with the canonical form.
func (id ID) MarshalText() ([]byte, error) {
	return []byte(id.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts what ParseID accepts.
func (id *ID) UnmarshalText(b []byte) error {
	parsed, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// ParseID parses a device ID in canonical form, in lower case, or without
// dashes. Surrounding white space is ignored.
func ParseID(s string) (ID, error) {
	plain := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	if len(plain) != encodedLen {
		return ID{}, fmt.Errorf("parse %q: want %d characters, got %d: %w", s, encodedLen, len(plain), ErrInvalid)
	}
	var id ID
	n, err := encoding.Decode(id[:], []byte(plain))
	if err != nil || n != len(id) {
		return ID{}, fmt.Errorf("parse %q: not base32: %w", s, ErrInvalid)
	}
	// The last character carries 4 unused bits; accept only the one
	// encoding that String produces, so one ID has one text form.
	if encoding.EncodeToString(id[:]) != plain {
		return ID{}, fmt.Errorf("parse %q: non-canonical last character: %w", s, ErrInvalid)
	}
	return id, nil
}
