package pool

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/labpool/labpool/sync/peer"
)

// Domain labels keep the joiner's and the member's proofs apart.
const (
	joinerLabel = "labpool join proof v1: joiner\x00"
	memberLabel = "labpool join proof v1: member\x00"
)

// Proof is the joiner's proof that it knows the pool secret, bound to the
// TLS session (ekm, its exporter keying material) and to its device ID.
func Proof(secret, ekm []byte, joiner peer.ID) []byte {
	return mac(secret, joinerLabel, ekm, joiner[:])
}

// VerifyProof checks a joiner's proof in constant time.
func VerifyProof(secret, ekm []byte, joiner peer.ID, proof []byte) bool {
	return hmac.Equal(proof, Proof(secret, ekm, joiner))
}

// memberProof is the answering member's proof that it knows the secret.
func memberProof(secret, ekm []byte) []byte {
	return mac(secret, memberLabel, ekm)
}

func mac(secret []byte, label string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	for _, p := range parts {
		// Length-prefix each part so no two inputs share a MAC input.
		m.Write([]byte{byte(len(p) >> 8), byte(len(p))})
		m.Write(p)
	}
	return m.Sum(nil)
}
