package pool

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// JoinPath is where a member serves JoinHandler; list it among
// transport.Authorize's open paths.
const JoinPath = "/v1/pool/join"

// Conditions a joiner branches on.
var (
	ErrWrongCode = errors.New("wrong join code")
	ErrNotInPool = errors.New("this machine is not in a pool")
	ErrOtherPool = errors.New("this machine is in another pool")
	ErrRemoved   = errors.New("this device was removed from the pool")
	ErrImpostor  = errors.New("peer does not know the pool secret")
)

// Error codes of a refused join, in the {"code", "message"} body.
const (
	codeWrongCode  = "wrong_code"
	codeNotInPool  = "not_in_pool"
	codeOtherPool  = "other_pool"
	codeRemoved    = "removed"
	codeBadRequest = "bad_request"
	codeInternal   = "internal"
)

// JoinConfig is what JoinHandler needs from the member it runs on. Pool,
// Members and Admit are required.
type JoinConfig struct {
	Self    peer.ID             // this device: AddedBy of the records it writes
	Name    func() string       // this device's name, told to the joiner; nil means none
	Pool    func() (Code, bool) // the pool this device is in; false when none
	Members func() []Member     // the current member set, tombstones included
	Admit   func(Member) error  // stores (and replicates) a new member record

	// Exporter and PeerID read the TLS session of a request; nil means
	// transport.KeyingMaterial and transport.PeerID.
	Exporter func(*http.Request) ([]byte, error)
	PeerID   func(*http.Request) (peer.ID, bool)
	Now      func() time.Time // nil means time.Now
	Log      *slog.Logger     // nil means slog.Default()
}

func (c JoinConfig) withDefaults() JoinConfig {
	if c.Exporter == nil {
		c.Exporter = transport.KeyingMaterial
	}
	if c.PeerID == nil {
		c.PeerID = transport.PeerID
	}
	if c.Name == nil {
		c.Name = func() string { return "" }
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// JoinHandler admits a device that proves, over this TLS session, that it
// knows the pool secret: it writes the joiner's member record (version
// above every other) and answers a JoinResponse.
func JoinHandler(cfg JoinConfig) http.Handler {
	cfg = cfg.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, codeBadRequest, "use POST")
			return
		}
		resp, status, code, err := cfg.join(r)
		if err != nil {
			msg := err.Error()
			if status == http.StatusInternalServerError {
				cfg.Log.Error("serve join", "err", err)
				msg = "internal error"
			}
			writeError(w, status, code, msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	})
}

// join checks the request and admits the joiner; on failure it returns the
// HTTP status, the error code and the message for the joiner.
func (c JoinConfig) join(r *http.Request) (JoinResponse, int, string, error) {
	pool, ok := c.Pool()
	if !ok {
		return JoinResponse{}, http.StatusNotFound, codeNotInPool, ErrNotInPool
	}
	joiner, ok := c.PeerID(r)
	if !ok {
		return JoinResponse{}, http.StatusBadRequest, codeBadRequest, errors.New("no device certificate")
	}
	req, err := DecodeJoinRequest(r.Body)
	if err != nil {
		return JoinResponse{}, http.StatusBadRequest, codeBadRequest, err
	}
	if req.PoolID != "" && req.PoolID != pool.PoolID() {
		return JoinResponse{}, http.StatusConflict, codeOtherPool,
			fmt.Errorf("%w (%s, not %s)", ErrOtherPool, pool.PoolID(), req.PoolID)
	}
	ekm, err := c.Exporter(r)
	if err != nil {
		return JoinResponse{}, http.StatusInternalServerError, codeInternal, err
	}
	if !VerifyProof(pool.Secret[:], ekm, joiner, req.Proof) {
		c.Log.Warn("join refused: wrong code", "peer", joiner)
		return JoinResponse{}, http.StatusForbidden, codeWrongCode, ErrWrongCode
	}
	members, err := c.admit(joiner, req.Name)
	if errors.Is(err, ErrRemoved) {
		return JoinResponse{}, http.StatusForbidden, codeRemoved, err
	} else if err != nil {
		return JoinResponse{}, http.StatusInternalServerError, codeInternal, err
	}
	return JoinResponse{
		PoolID:  pool.PoolID(),
		Proof:   memberProof(pool.Secret[:], ekm),
		Members: members,
		Name:    c.Name(),
	}, http.StatusOK, "", nil
}

// admit adds joiner unless it is a member already, and returns the set.
func (c JoinConfig) admit(joiner peer.ID, name string) ([]Member, error) {
	set := NewSet(c.Members()...)
	if m, ok := set[joiner]; ok {
		if m.Removed {
			return nil, ErrRemoved
		}
		return set.All(), nil
	}
	m := set.Admit(joiner, name, c.Self, c.Now().UTC())
	if err := c.Admit(m); err != nil {
		return nil, fmt.Errorf("admit %s: %w", joiner.Short(), err)
	}
	c.Log.Info("admitted to pool", "peer", joiner, "name", name)
	return set.All(), nil
}

// writeError answers {"code": ..., "message": ...}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(errorBody{code, msg})
}

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Join asks the member behind client (see transport.Endpoint.DialAny) to
// admit this device. ekm is the session's exporter (transport.Conn's
// KeyingMaterial) and self this device's ID, as in its certificate. A
// refusal is one of ErrWrongCode, ErrNotInPool, ErrOtherPool, ErrRemoved;
// ErrImpostor means the answer did not come from a member.
func Join(ctx context.Context, client *http.Client, ekm []byte, code Code, self peer.ID, name string) (JoinResponse, error) {
	body, err := json.Marshal(JoinRequest{
		PoolID: code.PoolID(),
		Proof:  Proof(code.Secret[:], ekm, self),
		Name:   name,
	})
	if err != nil {
		return JoinResponse{}, fmt.Errorf("encode join request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://peer"+JoinPath, bytes.NewReader(body))
	if err != nil {
		return JoinResponse{}, fmt.Errorf("join pool %s: %w", code.PoolID(), err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return JoinResponse{}, fmt.Errorf("join pool %s: %w", code.PoolID(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return JoinResponse{}, fmt.Errorf("join pool %s: %w", code.PoolID(), refusal(resp))
	}
	jr, err := DecodeJoinResponse(resp.Body)
	if err != nil {
		return JoinResponse{}, fmt.Errorf("join pool %s: %w", code.PoolID(), err)
	}
	if jr.PoolID != code.PoolID() || !hmac.Equal(jr.Proof, memberProof(code.Secret[:], ekm)) {
		return JoinResponse{}, fmt.Errorf("join pool %s: %w", code.PoolID(), ErrImpostor)
	}
	return jr, nil
}

// refusal turns an error answer into the matching sentinel.
func refusal(resp *http.Response) error {
	var e errorBody
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	json.Unmarshal(b, &e) // a body that is not JSON leaves e empty
	switch {
	case e.Code == codeRemoved:
		return ErrRemoved
	case resp.StatusCode == http.StatusForbidden:
		return ErrWrongCode
	case e.Code == codeNotInPool || resp.StatusCode == http.StatusNotFound:
		return ErrNotInPool
	case e.Code == codeOtherPool:
		return fmt.Errorf("%w: %s", ErrOtherPool, e.Message)
	case e.Message != "":
		return fmt.Errorf("refused (%s): %s", resp.Status, e.Message)
	}
	return fmt.Errorf("refused: %s", resp.Status)
}
