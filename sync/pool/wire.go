package pool

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrBadMessage means a message from the network is malformed or too big.
var ErrBadMessage = errors.New("malformed pool message")

// Bounds on what a peer may send.
const (
	MaxNameLen      = 64       // bytes of a device name
	maxRecordSize   = 8 << 10  // bytes of one signed record
	maxRequestSize  = 16 << 10 // bytes of a JoinRequest
	maxResponseSize = 16 << 20 // bytes of a JoinResponse
	maxRecords      = 100000   // records in a JoinResponse
)

// decodeBounded unmarshals one JSON value of at most limit bytes.
func decodeBounded(r io.Reader, limit int64, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if int64(len(b)) > limit {
		return fmt.Errorf("larger than %d bytes: %w", limit, ErrBadMessage)
	}
	if !utf8.Valid(b) { // json would quietly turn it into U+FFFD
		return fmt.Errorf("not utf-8: %w", ErrBadMessage)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadMessage, err)
	}
	return nil
}

// checkName accepts a device name of at most MaxNameLen bytes of printable UTF-8.
func checkName(name string) error {
	switch {
	case len(name) > MaxNameLen:
		return fmt.Errorf("name longer than %d bytes: %w", MaxNameLen, ErrBadMessage)
	case !utf8.ValidString(name):
		return fmt.Errorf("name is not utf-8: %w", ErrBadMessage)
	case strings.IndexFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("name has unprintable characters: %w", ErrBadMessage)
	}
	return nil
}

// checkPersonName refuses a person's name that checkName refuses, or one
// with spaces around it ("" is no name: the device's stands).
func checkPersonName(as string) error {
	if strings.TrimSpace(as) != as {
		return fmt.Errorf("person's name %q has spaces around it: %w", as, ErrBadMessage)
	}
	if err := checkName(as); err != nil {
		return fmt.Errorf("person's %w", err)
	}
	return nil
}
