package jobs

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/labpool/labpool/node/folders"
)

// ProofHeader carries a launch's Proof with POST /v1/jobs. A node of an
// older labpool ignores it; its records carry no proof and read as
// unverified.
const ProofHeader = "Labpool-Job-Proof"

// A Proof is the owner's signature on a launch: the member who holds Key
// asks the node Node to run the spec Spec. The member's device signs it; the
// node checks it, names the job after it (ProofJobID: a proof sent twice
// lands on one job) and keeps it in the job's record (Job.OwnerProof), so
// that every reader checks that the record's owner asked for that job on
// that node (Job.VerifyOwner), whatever node wrote the record.
//
// Wire form (base64url without padding), proofLen bytes:
//
//	version  1 byte (proofVersion)
//	key      32 bytes, the owner's Ed25519 public key (its device ID is its SHA-256)
//	nonce    16 bytes, the signer's random
//	sig      64 bytes, Ed25519 over proofDomain, the 49 bytes above, the
//	         node's device ID (2-byte big-endian length, then its text) and
//	         SpecDigest of the spec
//
// The node and the spec are not in the wire form: a reader takes them from
// the record it checks.
type Proof struct {
	Key   ed25519.PublicKey
	Nonce [16]byte
	Sig   []byte
}

const (
	proofVersion = 1
	proofDomain  = "labpool job launch\x00"
	proofFixed   = 1 + ed25519.PublicKeySize + 16
	proofLen     = proofFixed + ed25519.SignatureSize
	maxProofNode = 256 // bytes of a node ID the message takes; a device ID is 64
)

// Rules a proof breaks, named in ProofError.
const (
	RuleProofMissing = "owner proof: none"                   // a record of an older node, or a launch without one
	RuleProofForm    = "owner proof: malformed"              // not the wire form
	RuleProofKey     = "owner proof: key is not the owner's" // the key hashes to another device than the owner
	RuleProofJob     = "owner proof: job ID is not the proof's"
	RuleProofSig     = "owner proof: signature does not cover this node and spec"
)

// ProofError says which rule a proof breaks.
type ProofError struct{ Rule, Detail string }

func (e *ProofError) Error() string {
	if e.Detail == "" {
		return "refused by rule \"" + e.Rule + "\""
	}
	return "refused by rule \"" + e.Rule + "\": " + e.Detail
}

// Refusal is e as the refusal a launch gets.
func (e *ProofError) Refusal() error {
	return forbid(e.Rule, "%s", e.Detail)
}

// SpecDigest is what a proof signs of spec: the spec as its record carries
// it. The values of its environment and its command line never leave the
// node (Job.Public), and the memory limit is the machine's policy to fill
// (Policy.DefaultMemoryBytes), so all three are left out.
func SpecDigest(s Spec) [32]byte {
	b, _ := json.Marshal(SignedSpec(s))
	return sha256.Sum256(b)
}

// SignedSpec is s as a proof covers it (see SpecDigest): without its
// environment, its command line and its memory limit. A task keeps it in
// its labels (LabelSpec), so that a record rebuilt from them still
// verifies.
func SignedSpec(s Spec) Spec {
	s.Env, s.Cmd, s.MemoryBytes, s.PrivateSalt = nil, nil, 0, ""
	return s
}

// message is what the signature covers.
func (p Proof) message(node string, spec Spec) []byte {
	d := SpecDigest(spec)
	if len(node) > maxProofNode {
		node = node[:maxProofNode]
	}
	b := make([]byte, 0, len(proofDomain)+proofFixed+2+len(node)+len(d))
	b = append(b, proofDomain...)
	b = append(b, proofVersion)
	b = append(b, p.Key...)
	b = append(b, p.Nonce[:]...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(node)))
	b = append(b, node...)
	return append(b, d[:]...)
}

// Owner is the device ID of the proof's signer.
func (p Proof) Owner() string { return folders.DeviceID(p.Key) }

// JobID is the ID of the job the proof launches: the first 8 bytes of the
// SHA-256 of its signature, in hex.
func (p Proof) JobID() string {
	sum := sha256.Sum256(p.Sig)
	return hex.EncodeToString(sum[:8])
}

// Encode returns the wire form.
func (p Proof) Encode() string {
	b := make([]byte, 0, proofLen)
	b = append(b, proofVersion)
	b = append(b, p.Key...)
	b = append(b, p.Nonce[:]...)
	b = append(b, p.Sig...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeProof parses the wire form; it checks no signature (see Check).
func DecodeProof(s string) (Proof, error) {
	if s == "" {
		return Proof{}, &ProofError{Rule: RuleProofMissing}
	}
	if len(s) != base64.RawURLEncoding.EncodedLen(proofLen) {
		return Proof{}, &ProofError{Rule: RuleProofForm, Detail: fmt.Sprintf("%d characters, want %d", len(s), base64.RawURLEncoding.EncodedLen(proofLen))}
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != proofLen {
		return Proof{}, &ProofError{Rule: RuleProofForm, Detail: "not base64url"}
	}
	if b[0] != proofVersion {
		return Proof{}, &ProofError{Rule: RuleProofForm, Detail: fmt.Sprintf("version %d, want %d", b[0], proofVersion)}
	}
	p := Proof{Key: ed25519.PublicKey(append([]byte(nil), b[1:33]...)), Sig: append([]byte(nil), b[proofFixed:]...)}
	copy(p.Nonce[:], b[33:proofFixed])
	return p, nil
}

// Check says whether p is the signature of its key's holder on a launch of
// spec on node.
func (p Proof) Check(node string, spec Spec) error {
	if len(p.Key) != ed25519.PublicKeySize || len(p.Sig) != ed25519.SignatureSize {
		return &ProofError{Rule: RuleProofForm, Detail: "wrong key or signature size"}
	}
	if len(node) > maxProofNode || !ed25519.Verify(p.Key, p.message(node, spec), p.Sig) {
		return &ProofError{Rule: RuleProofSig}
	}
	return nil
}

// VerifyOwner says whether j's owner proof shows that j.Owner asked for
// j: the key is j.Owner's, j's ID is the proof's, and the signature covers
// j's node and spec. It says nothing of whether j.Owner is a member (the
// reader knows the pool). Run it on a record whose Node is its origin. A
// job handed over (Home set) verifies against its home, which the proof
// names, and only where its owner queued it pool-wide (Spec.Anywhere).
func (j Job) VerifyOwner() error {
	p, err := DecodeProof(j.OwnerProof)
	if err != nil {
		return err
	}
	if p.Owner() != j.Owner {
		return &ProofError{Rule: RuleProofKey, Detail: "signed by " + short(p.Owner())}
	}
	if p.JobID() != j.ID {
		return &ProofError{Rule: RuleProofJob, Detail: "the proof names job " + p.JobID()}
	}
	node := j.Node
	if j.Home != "" && j.Home != j.Node {
		if !j.Spec.Anywhere {
			return &ProofError{Rule: RuleProofSig, Detail: "handed over from " + short(j.Home) + ", but its owner pinned it there"}
		}
		node = j.Home
	}
	return p.Check(node, j.Spec)
}

// short is the first 9 characters of a device ID ("XXXX-XXXX").
func short(id string) string { return id[:min(9, len(id))] }

// LaunchSigner signs the launches of one member: this machine's device,
// whose daemon holds the key.
type LaunchSigner struct {
	Key  ed25519.PublicKey
	Sign func(msg []byte) []byte // ed25519.Sign with Key's private key
}

// Prove returns the wire form of a new proof that the signer asks node to
// run spec.
func (s LaunchSigner) Prove(node string, spec Spec) (string, error) {
	if len(s.Key) != ed25519.PublicKeySize || s.Sign == nil {
		return "", fmt.Errorf("sign a launch: no Ed25519 key")
	}
	if len(node) > maxProofNode {
		return "", fmt.Errorf("sign a launch: node ID longer than %d bytes", maxProofNode)
	}
	p := Proof{Key: s.Key}
	rand.Read(p.Nonce[:])
	p.Sig = s.Sign(p.message(node, spec))
	return p.Encode(), nil
}
