package peer

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// ErrNotEd25519 means a certificate does not carry an Ed25519 public key, so
// it names no labpool device.
var ErrNotEd25519 = errors.New("certificate key is not ed25519")

// certLifetime is long: the certificate is pinned by key, never by expiry.
const certLifetime = 100 * 365 * 24 * time.Hour

// IDFromCert returns the device ID of the key in cert.
func IDFromCert(cert *x509.Certificate) (ID, error) {
	if cert == nil {
		return ID{}, fmt.Errorf("read device id: no certificate: %w", ErrNotEd25519)
	}
	pub, ok := cert.PublicKey.(ed25519.PublicKey)
	if !ok {
		return ID{}, fmt.Errorf("read device id: %w", ErrNotEd25519)
	}
	return NewID(pub), nil
}

// newCertDER makes a self-signed certificate for key, in DER.
func newCertDER(key ed25519.PrivateKey, now time.Time) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("make serial number: %w", err)
	}
	pub := key.Public().(ed25519.PublicKey)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "labpool " + NewID(pub).Short()},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, fmt.Errorf("create certificate: %w", err)
	}
	return der, nil
}
