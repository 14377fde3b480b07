package pool

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labpool/labpool/internal/httperr"
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
	ErrImpostor  = errors.New("peer is not a member of the pool")
	ErrRemoved   = errors.New("this device was removed from the pool")
)

// Error codes of a refused join, in the {"code", "message"} body.
const (
	codeWrongCode  = "wrong_code"
	codeInvite     = "invite_ended" // expired, used up or revoked: the message says which
	codeNotInPool  = "not_in_pool"
	codeOtherPool  = "other_pool"
	codeRemoved    = "removed"
	codeNotAdmit   = "not_admitter" // a member's machine: ask an admin's or owner's
	codeBadRequest = "bad_request"
	codeInternal   = "internal"
)

// JoinRequest is what a joiner posts to JoinPath: who it is and the proof
// that it holds a code. The member it asks judges the invite now and signs
// the admission (NewJoinRequest, Log.Admit).
type JoinRequest struct {
	PoolID string `json:"pool_id"`      // the pool the joiner means, to tell "other pool" from "wrong code"
	Name   string `json:"name"`         // the joiner's device name
	As     string `json:"as,omitempty"` // the name of the person it makes ("": its device name)
	Key    []byte `json:"key"`          // the joiner's Ed25519 public key: that of its TLS certificate
	Invite string `json:"invite"`       // the invite of its code
	Proof  []byte `json:"proof"`        // the invite key's signature over JoinProofBytes
}

// JoinResponse is the answer of a member that admitted the joiner.
type JoinResponse struct {
	PoolID  string            `json:"pool_id"`
	Records []json.RawMessage `json:"records"` // the whole signed log, the joiner's record included
	Name    string            `json:"name"`    // the answering member's device name
}

// JoinHandler admits a device whose join record is signed with the key of
// a live invite: it adds the record to the log and answers the whole log,
// which the joiner checks back to the pool's creator.
func (m *Manager) JoinHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			httperr.Write(w, http.StatusMethodNotAllowed, codeBadRequest, "use POST")
			return
		}
		resp, status, code, err := m.admit(r)
		if err != nil {
			msg := err.Error()
			if status == http.StatusInternalServerError {
				m.cfg.Log.Error("serve join", "err", err)
				msg = "internal error"
			}
			httperr.Write(w, status, code, msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	})
}

// admit checks a join request and applies its record; on failure it returns
// the HTTP status, the error code and the message for the joiner.
func (m *Manager) admit(r *http.Request) (JoinResponse, int, string, error) {
	pool, ok := m.PoolID()
	if !ok {
		return JoinResponse{}, http.StatusNotFound, codeNotInPool, ErrNotInPool
	}
	joiner, ok := transport.PeerID(r)
	if !ok {
		return JoinResponse{}, http.StatusBadRequest, codeBadRequest, errors.New("no device certificate")
	}
	var req JoinRequest
	if err := decodeBounded(r.Body, maxRequestSize, &req); err != nil {
		return JoinResponse{}, http.StatusBadRequest, codeBadRequest, fmt.Errorf("decode join request: %w", err)
	}
	if req.PoolID != pool.String() {
		return JoinResponse{}, http.StatusConflict, codeOtherPool,
			fmt.Errorf("%w (%s, not %s)", ErrOtherPool, pool, req.PoolID)
	}
	pub, ok := peerKey(r)
	if !ok || peer.NewID(pub) != joiner {
		return JoinResponse{}, http.StatusBadRequest, codeBadRequest, errors.New("no device key")
	}
	m.mu.Lock()
	rec, err := m.log.Admit(m.key, req, pub, m.cfg.Now())
	if err == nil {
		m.gen++
		_, err = m.log.Apply(rec, m.cfg.Now())
	}
	m.mu.Unlock()
	switch {
	case errors.Is(err, ErrNotAdmitter):
		return JoinResponse{}, http.StatusForbidden, codeNotAdmit, err
	case errors.Is(err, ErrRemoved):
		return JoinResponse{}, http.StatusForbidden, codeRemoved, err
	case errors.Is(err, ErrInvite) && errors.Is(err, ErrUnknownInvite):
		m.cfg.Log.Warn("join refused: wrong code", "peer", joiner)
		return JoinResponse{}, http.StatusForbidden, codeWrongCode, ErrWrongCode
	case errors.Is(err, ErrInvite):
		m.cfg.Log.Warn("join refused", "peer", joiner, "err", err)
		return JoinResponse{}, http.StatusForbidden, codeInvite, err
	case errors.Is(err, ErrReplayed):
		// Already a member (a join retried): answer the log again.
	case err != nil:
		m.cfg.Log.Warn("join refused", "peer", joiner, "err", err)
		return JoinResponse{}, http.StatusForbidden, codeWrongCode, fmt.Errorf("%w: %v", ErrWrongCode, err)
	default:
		if err := m.commit(r.Context(), []Record{rec}); err != nil {
			return JoinResponse{}, http.StatusInternalServerError, codeInternal, err
		}
		m.cfg.Log.Info("admitted to pool", "peer", joiner, "name", rec.Name, "role", rec.Role)
	}
	recs, _ := m.Records()
	return JoinResponse{PoolID: pool.String(), Records: recs, Name: m.cfg.Name()}, http.StatusOK, "", nil
}

// Join joins the pool of code: through the member at addr, or through
// every machine announcing the pool on the local network. It reports a
// wrong code only after every address it found refused it.
func (m *Manager) Join(ctx context.Context, code Code, addr, as string) error {
	if cur, ok := m.PoolID(); ok {
		_, member := m.Role(m.Self())
		if cur != code.Pool && member {
			return fmt.Errorf("%w (%s)", ErrInPool, cur)
		}
		// A device removed from its pool may join another: the new pool's
		// log replaces the old one once its answer checks out (joinAt).
		if cur == code.Pool && !member {
			return ErrRemoved // the log this device holds says so; members refuse it
		}
		// This log may not know yet that this device was removed (members
		// cut a removed device off at once): ask a member all the same.
	}
	deadline := m.cfg.Now().Add(m.cfg.FindWait)
	var out outcomes
	var rescanUntil time.Time
	for {
		addrs, err := m.find(ctx, code.Pool.String(), addr, deadline)
		if err != nil && len(out.tried) == 0 {
			return err
		}
		for _, a := range addrs {
			if out.tried[a] {
				continue
			}
			if err := m.joinPatiently(ctx, code, a, as, deadline); out.add(a, err) {
				return nil
			}
		}
		if rescanUntil.IsZero() {
			rescanUntil = m.cfg.Now().Add(rescanWait)
			if rescanUntil.After(deadline) {
				rescanUntil = deadline
			}
		}
		if addr != "" || err != nil || m.cfg.Now().After(rescanUntil) {
			break
		}
		select { // more members may answer mDNS: try them too
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return out.verdict(code.Pool)
}

// outcomes collects the answers of the addresses a join tried. A refusal
// may come from a stranger that answers for the pool: none ends the join
// before every address was tried.
type outcomes struct {
	tried          map[string]bool
	errs           []error
	removed, ended error
	wrong, members int
}

// add records the answer of addr and reports whether the join succeeded.
func (o *outcomes) add(addr string, err error) bool {
	if o.tried == nil {
		o.tried = map[string]bool{}
	}
	o.tried[addr] = true
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrRemoved):
		o.removed = err
	case errors.Is(err, ErrWrongCode):
		o.wrong++
	case errors.Is(err, ErrNotAdmitter):
		o.members++
	case errors.Is(err, ErrInvite):
		o.ended = err
	}
	o.errs = append(o.errs, fmt.Errorf("%s: %w", addr, err))
	return false
}

// verdict is the error of a join that every address refused: the pool's
// most telling answer first.
func (o *outcomes) verdict(pool ID) error {
	switch {
	case o.removed != nil:
		return o.removed
	case o.ended != nil:
		return o.ended
	case o.wrong == len(o.tried):
		return ErrWrongCode
	case o.members > 0 && o.members+o.wrong == len(o.tried):
		return fmt.Errorf("join pool %s: the machines that answered are members': give the address of an admin's or owner's machine, `labpool pool join CODE HOST:PORT`: %w", pool, ErrNotAdmitter)
	}
	return fmt.Errorf("join pool %s: %w", pool, errors.Join(o.errs...))
}

// rescanWait is how long a join that found the pool by mDNS keeps looking
// for more of its members once those it found refused it.
const rescanWait = 2 * time.Second

// find returns the addresses to try: the one given, or those of the pool's
// members found by mDNS by deadline.
func (m *Manager) find(ctx context.Context, poolID, addr string, deadline time.Time) ([]string, error) {
	if addr != "" {
		return []string{addr}, nil
	}
	for {
		if m.cfg.Candidates != nil {
			if addrs := m.cfg.Candidates(poolID); len(addrs) > 0 {
				return addrs, nil
			}
		}
		if m.cfg.Now().After(deadline) {
			return nil, fmt.Errorf("%w on the local network in %s (pool %s): give an address, `labpool pool join CODE HOST:PORT`",
				ErrNotFound, m.cfg.FindWait, poolID)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// joinPatiently runs the join with the machine at addr, again while that
// machine refuses the handshake (it takes a limited number from new devices
// a second: many joining at once wait their turn), until deadline.
func (m *Manager) joinPatiently(ctx context.Context, code Code, addr, as string, deadline time.Time) error {
	for {
		err := m.joinAt(ctx, code, addr, as)
		if !transport.Refused(err) {
			return err
		}
		if m.cfg.Now().After(deadline) {
			return fmt.Errorf("%s refused the connection until %s: it takes a limited number of new devices a second; try again: %w",
				addr, deadline.Format(time.TimeOnly), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// joinAt runs the join with the machine at addr and, once its answer is
// checked back to the pool's creator, enters the pool.
func (m *Manager) joinAt(ctx context.Context, code Code, addr, as string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := m.cfg.Dial(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	req, err := NewJoinRequest(code, m.key.Public().(ed25519.PublicKey), m.cfg.Name(), as)
	if err != nil {
		return err
	}
	resp, err := postJoin(ctx, conn.Client(), req)
	if err != nil {
		return err
	}
	l, raws, err := m.checkAnswer(code.Pool, conn.PeerID(), resp)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.log != nil && m.log.Pool() == code.Pool {
		m.mu.Unlock()
		return m.Receive(ctx, conn.PeerID(), resp.Records) // a member already: catch up
	}
	if m.log != nil {
		// Removed from its old pool (Join checked): forget that pool's
		// log; commit replaces its records and members in the store.
		m.cfg.Log.Info("leaving the pool this machine was removed from", "pool", m.log.Pool().String())
		m.forgetLogLocked()
	}
	m.log = l
	m.gen++
	m.raw = raws
	m.mu.Unlock()
	if err := m.forgetOthers(ctx); err != nil {
		return err
	}
	if err := m.commit(ctx, l.Records()); err != nil {
		return err
	}
	if err := m.enter(ctx, code.Pool); err != nil {
		return err
	}
	if m.cfg.Hint != nil {
		m.cfg.Hint(conn.PeerID().String(), addr)
	}
	m.cfg.Log.Info("joined pool", "pool", code.Pool.String(), "via", conn.PeerID())
	return nil
}

// checkAnswer verifies a member's answer to this device's join: the whole
// log back to the pool's creator, the answering device a member of it, and
// this device admitted. It returns the log and each record's bytes.
func (m *Manager) checkAnswer(pool ID, from peer.ID, resp JoinResponse) (*Log, map[[32]byte][]byte, error) {
	recs := make([]Record, 0, len(resp.Records))
	raws := map[[32]byte][]byte{}
	for _, b := range resp.Records {
		r, err := DecodeRecord(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrImpostor, err)
		}
		recs = append(recs, r)
		raws[r.Hash()] = b
	}
	l, err := verify(pool, recs, m.cfg.Now(), m.arrivingAdmission)
	if errors.Is(err, ErrInvite) {
		return nil, nil, fmt.Errorf("the admission that %s answered with: %w", from.Short(), err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the pool's log does not check out: %v", ErrImpostor, err)
	}
	if ms, ok := l.Member(from.String()); !ok || ms.Removed {
		return nil, nil, fmt.Errorf("%w: %s answered but is not a member", ErrImpostor, from.Short())
	}
	if ms, ok := l.Member(m.Self().String()); !ok || ms.Removed {
		return nil, nil, fmt.Errorf("%w: the answer does not admit this device", ErrImpostor)
	}
	return l, raws, nil
}

// arrivingAdmission reports whether r, of hash h, in a member's answer to
// this device's join, is this device's admission, arriving now: one its
// log does not hold from an earlier join. Its invite's expiry is judged on
// this machine's clock, as every member judges an admission it receives.
func (m *Manager) arrivingAdmission(r *Record, h [32]byte) bool {
	if r.Kind != KindJoin || r.Subject != m.Self().String() {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.log == nil || m.log.Pool() != r.Pool || !m.log.Has(h)
}

func postJoin(ctx context.Context, client *http.Client, jr JoinRequest) (JoinResponse, error) {
	body, err := json.Marshal(jr)
	if err != nil {
		return JoinResponse{}, fmt.Errorf("encode join request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://peer"+JoinPath, bytes.NewReader(body))
	if err != nil {
		return JoinResponse{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return JoinResponse{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return JoinResponse{}, refusal(resp)
	}
	var out JoinResponse
	if err := decodeBounded(resp.Body, maxResponseSize, &out); err != nil {
		return JoinResponse{}, fmt.Errorf("decode join response: %w", err)
	}
	if len(out.Records) > maxRecords {
		return JoinResponse{}, fmt.Errorf("decode join response: %d records: %w", len(out.Records), ErrBadMessage)
	}
	return out, nil
}

// refusal turns an error answer into the matching sentinel.
func refusal(resp *http.Response) error {
	e := httperr.Read(resp) // a body that is not JSON leaves e empty
	switch {
	case e.Code == codeRemoved:
		return ErrRemoved
	case e.Code == codeNotAdmit:
		return ErrNotAdmitter
	case e.Code == codeInvite:
		return fmt.Errorf("%w: %s", ErrInvite, e.Message)
	case e.Code == codeWrongCode:
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

func sumOf(b []byte) [32]byte { return sha256.Sum256(b) }

// peerKey returns the Ed25519 key of the certificate the TLS session of r
// proved.
func peerKey(r *http.Request) (ed25519.PublicKey, bool) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false
	}
	pub, ok := r.TLS.PeerCertificates[0].PublicKey.(ed25519.PublicKey)
	return pub, ok
}
