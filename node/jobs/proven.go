package jobs

import (
	"errors"
	"fmt"
)

// proofID checks a launch's proof (see SubmitProven) and returns the ID
// of the job it launches; "" for a launch of this machine's own user
// without one. A peer's launch without one is refused (RuleProofMissing):
// every machine of the pool signs its launches.
func (m *Manager) proofID(c Caller, spec Spec, proof string) (string, error) {
	if proof == "" && m.local(c) {
		m.log.Info("local launch without an owner proof: its record will read as unverified", "owner", c.ID)
		return "", nil
	}
	if proof == "" {
		return "", forbid(RuleProofMissing, "a launch from another machine must carry its owner's signature (%s header)", ProofHeader)
	}
	p, err := DecodeProof(proof)
	if err == nil && p.Owner() != c.ID {
		err = &ProofError{Rule: RuleProofKey, Detail: "signed by " + short(p.Owner()) + ", asked by " + short(c.ID)}
	}
	if err == nil {
		err = p.Check(m.cfg.Node, spec)
	}
	var pe *ProofError
	if errors.As(err, &pe) {
		return "", &RefusedError{Rule: pe.Rule, Detail: cmpOr(pe.Detail, "the launch's proof is not its caller's signature on this spec for this machine"),
			Forbidden: pe.Rule == RuleProofKey}
	}
	return p.JobID(), err
}

// claim marks the launch of job id under way until done is called; a
// second launch of the same proof meanwhile is refused (ErrConflict).
func (m *Manager) claim(id string) (done func(), err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.launching[id] {
		return nil, fmt.Errorf("%w: job %s is being launched by an earlier request with the same proof", ErrConflict, id)
	}
	m.launching[id] = true
	return func() {
		m.mu.Lock()
		delete(m.launching, id)
		m.mu.Unlock()
	}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
