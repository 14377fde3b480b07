package discovery

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidTXT means a TXT record is not a valid labpool record.
var ErrInvalidTXT = errors.New("invalid txt record")

// TXT is what a labpool announcement says about the machine. It arrives from
// the network, so every field is a claim until the TLS handshake proves it.
type TXT struct {
	ID         string // device ID in canonical form, "XXXX-XXXX-...-XXXX" (sync/peer)
	APIVersion int    // wire protocol version, 1 to 9999
	Port       int    // UDP port of the QUIC endpoint
	Pool       string // pool ID, empty when not in a pool
}

// Limits on a TXT record, far above what a labpool record needs.
const (
	maxTXTEntries = 16  // entries per record
	maxTXTEntry   = 255 // bytes per entry: the longest DNS character-string
	idGroups      = 13  // a device ID has 13 groups ...
	idGroupLen    = 4   // ... of 4 base32 characters
	maxPool       = 64  // bytes of a pool ID
	maxAPIVersion = 9999
)

// Encode returns the TXT entries: "id=", "v=", "port=" and, when Pool is set,
// "pool=".
func (t TXT) Encode() ([]string, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	recs := []string{
		"id=" + t.ID,
		"v=" + strconv.Itoa(t.APIVersion),
		"port=" + strconv.Itoa(t.Port),
	}
	if t.Pool != "" {
		recs = append(recs, "pool="+t.Pool)
	}
	return recs, nil
}

// Validate reports whether t can be announced and parsed back unchanged.
func (t TXT) Validate() error {
	switch {
	case !validID(t.ID):
		return fmt.Errorf("check txt id %q: want a device id in canonical form: %w", t.ID, ErrInvalidTXT)
	case t.APIVersion < 1 || t.APIVersion > maxAPIVersion:
		return fmt.Errorf("check txt version %d: want 1 to %d: %w", t.APIVersion, maxAPIVersion, ErrInvalidTXT)
	case t.Port < 1 || t.Port > 65535:
		return fmt.Errorf("check txt port %d: want 1 to 65535: %w", t.Port, ErrInvalidTXT)
	case !validPool(t.Pool):
		return fmt.Errorf("check txt pool %q: want up to %d letters, digits, '-' or '_': %w", t.Pool, maxPool, ErrInvalidTXT)
	}
	return nil
}

// ParseTXT decodes the entries of a TXT record received from the network.
// It is strict: every entry must be "key=value" within DNS limits, "id",
// "v" and "port" must each appear exactly once with a canonical value, and
// "pool" at most once. Empty entries and other well-formed keys are ignored,
// so that a newer peer may add keys.
func ParseTXT(recs []string) (TXT, error) {
	if len(recs) > maxTXTEntries {
		return TXT{}, fmt.Errorf("parse txt: %d entries, want at most %d: %w", len(recs), maxTXTEntries, ErrInvalidTXT)
	}
	var t TXT
	seen := make(map[string]bool, 4)
	for _, rec := range recs {
		if err := t.parseEntry(rec, seen); err != nil {
			return TXT{}, err
		}
	}
	for _, key := range []string{"id", "v", "port"} {
		if !seen[key] {
			return TXT{}, fmt.Errorf("parse txt: no %q entry: %w", key, ErrInvalidTXT)
		}
	}
	return t, nil
}

// parseEntry sets the field that one entry names; seen records known keys.
func (t *TXT) parseEntry(rec string, seen map[string]bool) error {
	if rec == "" {
		return nil
	}
	if len(rec) > maxTXTEntry {
		return fmt.Errorf("parse txt entry of %d bytes: want at most %d: %w", len(rec), maxTXTEntry, ErrInvalidTXT)
	}
	key, val, ok := strings.Cut(rec, "=")
	if !ok || !validKey(key) {
		return fmt.Errorf("parse txt entry %q: want key=value: %w", rec, ErrInvalidTXT)
	}
	switch key {
	case "id", "v", "port", "pool":
	default:
		return nil
	}
	if seen[key] {
		return fmt.Errorf("parse txt entry %q: duplicate key: %w", rec, ErrInvalidTXT)
	}
	seen[key] = true
	return t.setField(key, val)
}

func (t *TXT) setField(key, val string) error {
	var ok bool
	switch key {
	case "id":
		t.ID, ok = val, validID(val)
	case "v":
		t.APIVersion, ok = parseDecimal(val, maxAPIVersion)
	case "port":
		t.Port, ok = parseDecimal(val, 65535)
	case "pool":
		t.Pool, ok = val, validPool(val)
	}
	if !ok {
		return fmt.Errorf("parse txt entry %q: bad value: %w", key+"="+val, ErrInvalidTXT)
	}
	return nil
}

// validKey follows RFC 6763 section 6.4: printable US-ASCII but '=', at
// least one character; labpool keys are at most 9.
func validKey(k string) bool {
	if len(k) < 1 || len(k) > 9 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// parseDecimal accepts 1 to max written in canonical decimal: digits only,
// no sign, no leading zero.
func parseDecimal(s string, max int) (int, bool) {
	if s == "" || len(s) > len(strconv.Itoa(max)) || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, n <= max
}

// validID checks the shape of a canonical device ID: 13 groups of 4
// characters of the base32 alphabet, joined by '-'. sync/peer checks the rest.
func validID(s string) bool {
	if len(s) != idGroups*idGroupLen+idGroups-1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i%(idGroupLen+1) == idGroupLen {
			if c != '-' {
				return false
			}
		} else if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

func validPool(s string) bool {
	return len(s) <= maxPool && labelChars(s, "_") == s
}
