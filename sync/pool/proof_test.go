package pool_test

import (
	"testing"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
)

func TestVerifyProof(t *testing.T) {
	secret, ekm := []byte("0123456789abcdef"), []byte("session exporter, 32 bytes long!")
	joiner := peer.NewID([]byte("joiner"))
	proof := pool.Proof(secret, ekm, joiner)
	tests := []struct {
		name   string
		secret []byte
		ekm    []byte
		joiner peer.ID
		proof  []byte
		want   bool
	}{
		{"right", secret, ekm, joiner, proof, true},
		{"other secret", []byte("0123456789abcdeF"), ekm, joiner, proof, false},
		{"other session", secret, []byte("another session's exporter....."), joiner, proof, false},
		{"other joiner", secret, ekm, peer.NewID([]byte("thief")), proof, false},
		{"truncated", secret, ekm, joiner, proof[:16], false},
		{"empty", secret, ekm, joiner, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pool.VerifyProof(tt.secret, tt.ekm, tt.joiner, tt.proof); got != tt.want {
				t.Errorf("VerifyProof = %v; want %v", got, tt.want)
			}
		})
	}
}
