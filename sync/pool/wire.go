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

// ErrBadMessage means a join message from the network is malformed or too big.
var ErrBadMessage = errors.New("malformed join message")

// Bounds on what a peer may send.
const (
	MaxNameLen      = 64      // bytes of a device name
	maxRequestSize  = 4 << 10 // bytes of a JoinRequest
	maxResponseSize = 4 << 20 // bytes of a JoinResponse
	maxMembers      = 10000   // records in a JoinResponse
	proofLen        = 32      // bytes of an HMAC-SHA256
)

// JoinRequest is what a joiner posts to JoinPath.
type JoinRequest struct {
	PoolID string `json:"pool_id"` // the pool the joiner means, to tell "other pool" from "wrong code"
	Proof  []byte `json:"proof"`   // Proof(secret, ekm, joiner)
	Name   string `json:"name"`    // the joiner's device name
}

// JoinResponse is the answer of a member that admitted the joiner.
type JoinResponse struct {
	PoolID  string   `json:"pool_id"`
	Proof   []byte   `json:"proof"`   // the member's proof that it knows the secret
	Members []Member `json:"members"` // the whole set, tombstones included
	Name    string   `json:"name"`    // the answering member's device name
}

// DecodeJoinRequest reads and checks a JoinRequest of at most 4 KiB.
func DecodeJoinRequest(r io.Reader) (JoinRequest, error) {
	var req JoinRequest
	if err := decodeBounded(r, maxRequestSize, &req); err != nil {
		return JoinRequest{}, fmt.Errorf("decode join request: %w", err)
	}
	if len(req.Proof) != proofLen {
		return JoinRequest{}, fmt.Errorf("decode join request: proof of %d bytes: %w", len(req.Proof), ErrBadMessage)
	}
	if err := checkName(req.Name); err != nil {
		return JoinRequest{}, fmt.Errorf("decode join request: %w", err)
	}
	return req, nil
}

// DecodeJoinResponse reads and checks a JoinResponse of at most 4 MiB.
func DecodeJoinResponse(r io.Reader) (JoinResponse, error) {
	var resp JoinResponse
	if err := decodeBounded(r, maxResponseSize, &resp); err != nil {
		return JoinResponse{}, fmt.Errorf("decode join response: %w", err)
	}
	if _, err := ParseID(resp.PoolID); err != nil {
		return JoinResponse{}, fmt.Errorf("decode join response: %w: %w", ErrBadMessage, err)
	}
	if len(resp.Members) > maxMembers {
		return JoinResponse{}, fmt.Errorf("decode join response: %d members: %w", len(resp.Members), ErrBadMessage)
	}
	if err := checkName(resp.Name); err != nil {
		return JoinResponse{}, fmt.Errorf("decode join response: %w", err)
	}
	for _, m := range resp.Members {
		if err := checkName(m.Name); err != nil {
			return JoinResponse{}, fmt.Errorf("decode join response: member %s: %w", m.ID.Short(), err)
		}
	}
	return resp, nil
}

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
