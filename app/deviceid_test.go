package app

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/sync/peer"
)

// TestGrantDeviceID: the device ID node/folders derives from a grant's key
// is the one sync/peer derives from the same key (a copy's source compares
// it with its members).
func TestGrantDeviceID(t *testing.T) {
	for range 20 {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := folders.DeviceID(pub), peer.NewID(pub).String(); got != want {
			t.Fatalf("folders.DeviceID = %s; peer.NewID = %s", got, want)
		}
	}
}
