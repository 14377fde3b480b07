package app

import (
	"crypto/ed25519"
	"errors"
	"time"

	"github.com/labpool/labpool/node/folders"
	"github.com/labpool/labpool/node/folders/copies"
	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/sync/peer"
)

var (
	_ copies.Signer = DeviceSigner{}
	_ LaunchSigner  = DeviceSigner{}
)

// DeviceSigner signs this machine's copy grants (copies.Signer) and its
// member's launches (LaunchSigner) with its device key.
type DeviceSigner struct{ ID *peer.Identity }

// key is this machine's device key and its public half.
func (s DeviceSigner) key() (ed25519.PrivateKey, ed25519.PublicKey, error) {
	key, ok := s.ID.Cert.PrivateKey.(ed25519.PrivateKey)
	if !ok {
		return nil, nil, errors.New("this machine's key is not an Ed25519 key")
	}
	return key, key.Public().(ed25519.PublicKey), nil
}

// Grant implements copies.Signer.
func (s DeviceSigner) Grant(src, folder, p, receiver string, now time.Time) (string, error) {
	key, pub, err := s.key()
	if err != nil {
		return "", err
	}
	fs := folders.Signer{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }}
	return fs.Grant(src, folder, p, receiver, now)
}

// ProveLaunch implements LaunchSigner: this member's signature on a
// launch of spec on node (this machine's own launches included: its key is
// its local user's).
func (s DeviceSigner) ProveLaunch(node string, spec jobs.Spec) (string, error) {
	key, pub, err := s.key()
	if err != nil {
		return "", err
	}
	return jobs.LaunchSigner{Key: pub, Sign: func(m []byte) []byte { return ed25519.Sign(key, m) }}.Prove(node, spec)
}
